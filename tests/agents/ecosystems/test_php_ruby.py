"""PHP and Ruby plans with their registries unreachable (no Docker): the Debian route when every
needed dependency is packaged (suite chosen by era, then by what Debian has), the vendored
route, and the early, clear EnvBuildError -- raised before any image is built -- otherwise."""

from __future__ import annotations

import json
import subprocess
from functools import partial

import pytest

import agents.ecosystems.php as php_mod
import agents.ecosystems.ruby as ruby_mod
from agents.gitrepo import GitTree
from agents.ecosystems.debian import era_suite, satisfies, suites_from
from agents.ecosystems.base import PlanRequest
from agents.ecosystems.php import ECOSYSTEM as PHP
from agents.ecosystems.ruby import ECOSYSTEM as RUBY, gem_dependencies
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig
from tests.agents.ecosystems.conftest import make_instance, make_tree, toolchain_layers

inst = partial(make_instance, instance_id="acme__widget-7", repo="acme/widget", created_at="2023-02-10 16:24:10")


class Built:
    """(name, version, suite) of the Ruby and PHP toolchain images a fake image store made, in
    order; compares and indexes like that list."""

    def __init__(self, store):
        self.store = store

    def _list(self) -> list[tuple[str, str, str]]:
        return toolchain_layers(self.store, "ruby", "php")

    def __eq__(self, other) -> bool:
        return self._list() == other

    def __getitem__(self, i):
        return self._list()[i]

    def __repr__(self) -> str:
        return repr(self._list())


@pytest.fixture
def built(image_store):
    """The toolchain images the Ruby and PHP plans make, in a fake image store (no Docker)."""
    return Built(image_store)


# --- shared Debian helpers ---------------------------------------------------------------------

@pytest.mark.parametrize("version,req,ok", [
    ("1.8.8", ">= 1.8.11, < 2", False), ("1.10.0", ">= 1.8.11, < 2", True),
    ("5.4.53", "^3.4 || ^4.0 || ^5.0 || ^6.0", True), ("9.5.2", "^9.5.20", False),
    ("0.3.5", "^0.4", False), ("2.7.2", "~> 2.7", True), ("3.0", "~> 2.7", False),
    ("1.2.9", "1.2.*", True), ("7.0", "*", True), ("1.0", "", True), ("weird", ">= 1", True)])
def test_satisfies(version, req, ok):
    assert satisfies(version, req) is ok


def test_era_suite_order():
    from datetime import date
    assert era_suite(date(2022, 9, 2)) == "bullseye" and era_suite(date(2023, 7, 1)) == "bookworm"
    assert era_suite(date(2019, 1, 1)) == "bullseye" and era_suite(None) == "bookworm"
    assert suites_from("bookworm") == ["bookworm", "trixie", "bullseye"]


# --- Ruby --------------------------------------------------------------------------------------

FAKER_GEMSPEC = """Gem::Specification.new do |spec|
  spec.name = 'faker'
  spec.required_ruby_version = '>= 2.7'
  spec.add_dependency('i18n', '>= 1.8.11', '< 2')
  spec.add_development_dependency('minitest', '5.18.0')
  spec.add_development_dependency('rubocop', '1.48.1')
  spec.add_development_dependency('test-unit', '3.5.7')
  spec.add_development_dependency('timecop', '0.9.6')
  spec.add_development_dependency('yard', '0.9.27')
end
"""
FAKER_2970_GEMSPEC = """Gem::Specification.new do |spec|
  spec.name = 'faker'
  spec.add_dependency('i18n', '>= 1.8.11', '< 2')
end
"""  # its development pins moved to the Gemfile
FAKER = {"Gemfile": "source 'https://rubygems.org'\ngemspec\n", "faker.gemspec": FAKER_GEMSPEC,
         "lib/faker.rb": "module Faker; end\n",
         "test/test_helper.rb": "require 'test/unit'\n",
         "test/faker/default/test_faker_internet.rb": "class TestFakerInternet < Test::Unit::TestCase; end\n"}


def test_gem_dependencies_from_gemspec_and_gemfile(tmp_path):
    tree = make_tree(tmp_path / "a", {**FAKER, "Gemfile": "gem 'rack', '~> 2.0'\ngroup :test do\n"
                                      "  gem 'webmock'\nend\ngem 'simplecov', group: :test\n"})
    deps = {g.name: (g.kind, g.requirement) for g in gem_dependencies(tree)}
    assert deps["i18n"] == ("runtime", ">= 1.8.11, < 2")
    assert deps["minitest"] == ("dev", "5.18.0")
    assert deps["rack"] == ("runtime", "~> 2.0")  # an application's Gemfile: its gems are runtime ones
    assert deps["webmock"][0] == "dev" and deps["simplecov"][0] == "dev"


def test_gemfile_of_a_gem_is_its_development_bundle(tmp_path):
    """A Gemfile that loads the gemspec (``gemspec``) lists the gem's development bundle: the
    runtime dependencies are the gemspec's (faker-2970 pins minitest 5.23.1 there)."""
    tree = make_tree(tmp_path, {**FAKER, "faker.gemspec": FAKER_2970_GEMSPEC,
                                "Gemfile": "source 'x'\ngemspec\ngem 'rack', '~> 2.0'\ngem 'minitest', '5.23.1'\n"})
    deps = {g.name: (g.kind, g.requirement) for g in gem_dependencies(tree)}
    assert deps["rack"] == ("dev", "~> 2.0") and deps["minitest"] == ("dev", "5.23.1")
    assert deps["i18n"] == ("runtime", ">= 1.8.11, < 2")


def test_array_requirements_are_read(tmp_path):
    """Regression: ``add_runtime_dependency("msgpack", [">= 1.3.1", "< 2.0.0"])`` (fluentd's
    form) lost its requirement, so no Debian version was ever checked against it."""
    spec = ("Gem::Specification.new do |gem|\n  gem.add_runtime_dependency(\"msgpack\", [\">= 1.3.1\", \"< 2.0.0\"])\n"
            "  gem.add_development_dependency 'rr', ['~> 3.0']\nend\n")
    tree = make_tree(tmp_path, {"x.gemspec": spec, "Gemfile": "gem 'oj', ['>= 2.14', '< 4']\n"})
    deps = {g.name: (g.kind, g.requirement) for g in gem_dependencies(tree)}
    assert deps == {"msgpack": ("runtime", ">= 1.3.1, < 2.0.0"), "rr": ("dev", "~> 3.0"),
                    "oj": ("runtime", ">= 2.14, < 4")}


OTHER_PLATFORMS_GEMFILE = """source 'https://rubygems.org'
gem 'i18n'
platforms :mswin, :mingw, :x64_mingw do
  gem 'win32-process'
end
platforms :ruby, :mswin do
  gem 'yajl-ruby', '~> 1.4'
end
platform :jruby do
  gem 'jruby-openssl'
end
gem 'wdm', '>= 0.1.0', platforms: [:mingw, :x64_mingw, :mswin]
gem 'tzinfo-data', :platforms => [:jruby, :windows]
gem 'memory_profiler', platform: :mri
install_if -> { Gem.win_platform? } do
  gem 'win32-api'
end
install_if -> { RUBY_PLATFORM =~ %r!darwin! } do
  gem 'terminal-notifier'
end
gem 'rb-inotify', install_if: -> { RUBY_PLATFORM =~ /linux/ }
gem 'rb-fsevent', install_if: -> { RUBY_PLATFORM =~ /darwin/ }
gem 'win32console' if Gem.win_platform?
group :test do
  gem 'test-unit' if RUBY_PLATFORM =~ %r!cygwin!
  gem 'minitest' unless RUBY_ENGINE == 'jruby'
  if RUBY_ENGINE == "jruby"
    gem 'jruby-launcher'
  end
end
group :benchmark do
  if ENV["BENCHMARK"]
    gem 'stackprof-webnav'
  end
end
"""
OTHER_PLATFORMS_GEMSPEC = """Gem::Specification.new do |gem|
  gem.name = 'agent'
  gem.description = <<~EOS
    if this heredoc line were code it would open a block
  EOS
  gem.add_runtime_dependency("tzinfo", [">= 1.0", "< 3.0"])
  fake_platform = ENV['GEM_BUILD_FAKE_PLATFORM'].to_s
  if /mswin|mingw/ =~ fake_platform || (/mswin|mingw/ =~ RUBY_PLATFORM && fake_platform.empty?)
    gem.add_runtime_dependency("win32-service", ["~> 2.1.5"])
    gem.add_runtime_dependency("certstore_c", ["~> 0.1.7"])
  end
  if Gem.win_platform?
    gem.add_runtime_dependency("windows-pr")
  else
    gem.add_runtime_dependency("sigdump")
  end
  unless RUBY_PLATFORM =~ /java/
    gem.add_runtime_dependency("cool.io")
  else
    gem.add_runtime_dependency("jruby-coolio")
  end
  gem.add_runtime_dependency("ffi-win32-extensions") if RUBY_PLATFORM =~ /mingw/
  gem.add_development_dependency("test-unit", ["~> 3.3"])
end
"""


def test_gems_for_other_platforms_are_not_needed_on_linux(tmp_path):
    tree = make_tree(tmp_path, {"Gemfile": OTHER_PLATFORMS_GEMFILE, "agent.gemspec": OTHER_PLATFORMS_GEMSPEC})
    kinds = {g.name: g.kind for g in gem_dependencies(tree)}
    other = {n for n, k in kinds.items() if k == "other"}
    assert other == {"win32-process", "jruby-openssl", "wdm", "tzinfo-data", "win32-api", "terminal-notifier",
                     "rb-fsevent", "win32console", "jruby-launcher", "stackprof-webnav",
                     "win32-service", "certstore_c", "windows-pr", "jruby-coolio", "ffi-win32-extensions"}
    assert kinds["test-unit"] == "dev"  # cygwin-only in the Gemfile, but a gemspec development dependency too
    assert kinds["yajl-ruby"] == "runtime" and kinds["memory_profiler"] == "runtime"  # :ruby / :mri include Linux
    assert kinds["rb-inotify"] == "runtime" and kinds["minitest"] == "dev"
    assert kinds["sigdump"] == "runtime" and kinds["cool.io"] == "runtime" and kinds["tzinfo"] == "runtime"


def test_other_platform_gems_do_not_block_the_debian_route(tmp_path, built):
    tree = make_tree(tmp_path, {"Gemfile": OTHER_PLATFORMS_GEMFILE, "agent.gemspec": OTHER_PLATFORMS_GEMSPEC,
                                "lib/agent.rb": "", "test/test_agent.rb": "class TestAgent; end\n"})
    plan = RUBY.plan(tree, inst(tree, "ruby"), ["test/test_agent.rb"], ImageConfig())
    apt = plan.setup_commands[0]
    assert "ruby-yajl" in apt and "ruby-sigdump" in apt and "win32" not in apt
    note = next(n for n in plan.notes if n.startswith("gems for other platforms"))
    assert "win32-service" in note and "jruby-openssl" in note and "stackprof-webnav" in note


def test_gems_the_interpreter_ships_need_no_package(tmp_path, built):
    """benchmark ships with every Ruby here (a default gem of 3.1): no Debian package needed."""
    gemfile = "source 'x'\ngemspec\ngem 'benchmark'\ngem 'set'\ngem 'bigdecimal', '>= 3.0'\n"
    tree = make_tree(tmp_path, {**FAKER, "Gemfile": gemfile})
    plan = RUBY.plan(tree, inst(tree, "ruby", created_at="2024-06-19 17:27:35"),
                     ["test/faker/default/test_faker_internet.rb"], ImageConfig())
    assert plan.toolchain == "ruby 3.1"
    assert "benchmark" not in plan.setup_commands[0] and "bigdecimal" not in plan.setup_commands[0]
    assert "gems Ruby 3.1 ships, no package needed: benchmark 0.2.0, set 1.0.2, bigdecimal 3.1.1" in plan.notes


def test_interpreter_gem_below_the_requirement_moves_the_suite(tmp_path, built):
    """drb ~> 2.2 and base64 ~> 0.2 (fluentd 1.17): Ruby 3.1 ships 2.1.0 / 0.1.1 and Debian
    bookworm packages neither, Ruby 3.3 (trixie) ships 2.2.0 / 0.2.0."""
    spec = ("Gem::Specification.new do |s|\n  s.add_runtime_dependency('drb', ['~> 2.2'])\n"
            "  s.add_runtime_dependency('base64', '~> 0.2')\nend\n")
    tree = make_tree(tmp_path, {"x.gemspec": spec, "Gemfile": "gemspec\n", "test/test_x.rb": ""})
    plan = RUBY.plan(tree, inst(tree, "ruby", created_at="2024-06-19 17:27:35"), ["test/test_x.rb"], ImageConfig())
    assert plan.toolchain == "ruby 3.3" and built[-1][2] == "trixie"
    assert any("drb 2.2.0" in n for n in plan.notes)
    # and the refusal says what the interpreter has
    with pytest.raises(EnvBuildError) as e:
        RUBY.plan(tree, inst(tree, "ruby", created_at="2024-06-19 17:27:35"), ["test/test_x.rb"], ImageConfig(),
                  request=PlanRequest(toolchain="<3.2"))
    assert "drb ~> 2.2 (Ruby 3.1 ships 2.1.0)" in e.value.message
    assert "drb ~> 2.2 (Ruby 2.7 has it in its standard library, not as a gem)" in e.value.message


def test_interpreter_gems_data():
    from agents.ecosystems.debian import interpreter_gems
    gems = interpreter_gems()
    assert gems["benchmark"] == {"bullseye": "0.1.0", "bookworm": "0.2.0", "trixie": "0.3.0"}
    assert gems["drb"] == {"bullseye": "lib", "bookworm": "2.1.0", "trixie": "2.2.0"}
    assert "webrick" not in gems["json"] and gems["webrick"] == {"bullseye": "1.6.1"}  # left Ruby in 3.0


def test_development_pins_debian_misses_become_substitutions(tmp_path, built):
    """faker-2970: the Gemfile of the gem pins minitest 5.23.1, test-unit 3.6.2, timecop 0.9.10:
    Debian bookworm's versions are used and recorded; a runtime pin stays a hard requirement."""
    gemfile = ("source 'x'\ngemspec\ngem 'benchmark'\ngem 'minitest', '5.23.1'\ngem 'test-unit', '3.6.2'\n"
               "gem 'timecop', '0.9.10'\n")
    tree = make_tree(tmp_path / "gem", {**FAKER, "faker.gemspec": FAKER_2970_GEMSPEC, "Gemfile": gemfile})
    plan = RUBY.plan(tree, inst(tree, "ruby", created_at="2024-06-19 17:27:35"),
                     ["test/faker/default/test_faker_internet.rb"], ImageConfig())
    assert plan.toolchain == "ruby 3.1"
    assert {"minitest 5.23.1: Debian bookworm has 5.17.0", "test-unit 3.6.2: Debian bookworm has 3.5.7",
            "timecop 0.9.10: Debian bookworm has 0.9.6"} <= set(plan.substitutions)
    app = make_tree(tmp_path / "app", {"Gemfile": "source 'x'\ngem 'minitest', '5.23.1'\n", "test/test_a.rb": ""})
    with pytest.raises(EnvBuildError, match=r"minitest 5\.23\.1 \(Debian: 5\.17\.0\)"):
        RUBY.plan(app, inst(app, "ruby"), ["test/test_a.rb"], ImageConfig())


def test_debian_names_of_gems(tmp_path, built):
    """parser is Debian's ruby-whitequark-parser, yajl-ruby its ruby-yajl (each ships that
    gemspec); tzinfo-data's job is done by tzdata (a substitution)."""
    spec = ("Gem::Specification.new do |s|\n  s.add_dependency('parser', '>= 3.0')\n"
            "  s.add_dependency('yajl-ruby', '~> 1.0')\n  s.add_dependency('tzinfo-data', '~> 1.0')\n"
            "  s.add_dependency('unicode-display_width', '>= 1.6')\n  s.add_dependency('regexp_parser', '>= 2.0')\nend\n")
    tree = make_tree(tmp_path, {"x.gemspec": spec, "test/test_x.rb": ""})
    plan = RUBY.plan(tree, inst(tree, "ruby", created_at="2024-06-19 17:27:35"), ["test/test_x.rb"], ImageConfig())
    apt = plan.setup_commands[0].split()
    assert {"ruby-whitequark-parser", "ruby-yajl", "tzdata", "ruby-unicode-display-width",
            "ruby-regexp-parser"} <= set(apt)
    assert any(s.startswith("tzinfo-data ~> 1.0: Debian's tzdata instead") for s in plan.substitutions)


def test_aliases_name_real_debian_packages():
    from agents.ecosystems.debian import debian_table, rubyphp_recipes
    table = debian_table()
    for gem, pkg in rubyphp_recipes()["ruby"]["aliases"].items():
        assert pkg in table, (gem, pkg)


def test_faker_like_project_builds_from_debian(tmp_path, built):
    tree = make_tree(tmp_path, FAKER)
    assert RUBY.detect(tree, "ruby") == 12 and RUBY.detect(tree, "php") == 0
    plan = RUBY.plan(tree, inst(tree, "ruby"), ["test/faker/default/test_faker_internet.rb"], ImageConfig())
    # Feb 2023 is bullseye's era, but its ruby-i18n (1.8.8) misses '>= 1.8.11': bookworm is used
    assert built == [("ruby", "3.1", "bookworm")] and plan.toolchain == "ruby 3.1"
    assert any("bullseye lacks" in s for s in plan.substitutions)
    assert any("minitest 5.18.0: Debian bookworm has" in s for s in plan.substitutions)
    apt = plan.setup_commands[0]
    assert all(p in apt for p in ("ruby-i18n", "ruby-minitest", "ruby-test-unit", "ruby-timecop"))
    assert "rubocop" not in apt and "yard" not in apt  # tools are never installed
    assert plan.parser == "minitest_log" and plan.report_path is None
    assert plan.test_command == (f"ruby -Ilib -Itest {ruby_mod.HELPER} test/faker/default/test_faker_internet.rb")
    assert plan.env["RUBYLIB"] == ruby_mod.SHIMS
    assert sum(ruby_mod.SHIMS in c for c in plan.setup_commands) == 3


def test_rspec_project_uses_json_report(tmp_path, built):
    tree = make_tree(tmp_path, {"Gemfile": "source 'x'\ngem 'rspec', '~> 3.0'\n", "lib/calc.rb": "",
                                "spec/calc_spec.rb": "describe 'x' do; end\n"})
    plan = RUBY.plan(tree, inst(tree, "ruby"), ["spec/calc_spec.rb"], ImageConfig())
    assert plan.parser == "rspec_json" and plan.report_path == ruby_mod.RSPEC_JSON
    assert plan.test_command.startswith("rspec --format progress --format json --out ")
    assert "ruby-rspec" in plan.setup_commands[0]


def test_unpackaged_gem_fails_early_with_the_cause(tmp_path, built):
    tree = make_tree(tmp_path, {**FAKER, "Gemfile": "gemspec\ngem 'surely-not-in-debian-gem'\n"})
    with pytest.raises(EnvBuildError) as e:
        RUBY.plan(tree, inst(tree, "ruby"), ["test/faker/default/test_faker_internet.rb"], ImageConfig())
    msg = e.value.message
    assert msg.startswith("RubyGems (rubygems.org) is unreachable and acme/widget has no vendored dependencies: "
                          "bundle install cannot run")
    assert "surely-not-in-debian-gem" in msg and e.value.instance_id == "acme__widget-7"
    assert built == []  # decided before any image build


def test_vendored_gems_use_bundler_locally(tmp_path, built):
    tree = make_tree(tmp_path, {**FAKER, "Gemfile": "gemspec\ngem 'surely-not-in-debian-gem'\n",
                                "vendor/cache/surely-not-in-debian-gem-1.0.gem": "x"})
    plan = RUBY.plan(tree, inst(tree, "ruby"), ["test/faker/default/test_faker_internet.rb"], ImageConfig())
    assert any("bundle install --local" in c for c in plan.setup_commands)
    assert plan.test_command.startswith("bundle exec ruby ")


# --- PHP ---------------------------------------------------------------------------------------

CARBON = {
    "require": {"php": "^7.1.8 || ^8.0", "ext-json": "*", "symfony/polyfill-mbstring": "^1.0",
                "symfony/translation": "^3.4 || ^4.0 || ^5.0 || ^6.0"},
    "require-dev": {"friendsofphp/php-cs-fixer": "^3.0", "phpstan/phpstan": "^1.7.14",
                    "phpunit/phpunit": "^7.5.20 || ^8.5.26 || ^9.5.20", "doctrine/dbal": "^2.0 || ^3.0"},
    "autoload": {"psr-4": {"Carbon\\": "src/Carbon/"}}}


def php_tree(tmp_path, composer: dict, extra: dict | None = None) -> GitTree:
    return make_tree(tmp_path, {"composer.json": json.dumps(composer), "src/Carbon/Carbon.php": "<?php\n",
                                "tests/Carbon/RoundTest.php": "<?php\n", **(extra or {})})


def test_carbon_like_project_builds_from_debian(tmp_path, built):
    tree = php_tree(tmp_path, CARBON)
    assert PHP.detect(tree, "php") == 12 and PHP.detect(tree, "ruby") == 0
    plan = PHP.plan(tree, inst(tree, "php", created_at="2022-09-02 23:09:21"), ["tests/Carbon/RoundTest.php"],
                    ImageConfig())
    assert built == [("php", "7.4", "bullseye")] and plan.toolchain == "php 7.4"
    apt = plan.setup_commands[0]
    assert all(p in apt for p in ("php-symfony-polyfill-mbstring", "php-symfony-translation", "phpunit",
                                  "php-doctrine-dbal"))
    assert "php-cs-fixer" not in apt and "phpstan" not in apt
    assert any("phpunit/phpunit" in s and "9.5.2" in s for s in plan.substitutions)  # dev mismatch: noted
    assert any("composer dump-autoload" in c for c in plan.setup_commands)
    assert any(php_mod.DEBIAN_AUTOLOAD in c and "vendor/autoload.php" in c for c in plan.setup_commands)
    assert plan.parser == "phpunit_junit" and plan.report_path == php_mod.JUNIT
    assert f"phpunit --log-junit {php_mod.JUNIT}.0 tests/Carbon/RoundTest.php" in plan.test_command


def test_unpackaged_composer_dependency_fails_early(tmp_path, built):
    composer = {**CARBON, "require": {**CARBON["require"], "acme/not-in-debian": "^1.0"}}
    tree = php_tree(tmp_path, composer)
    with pytest.raises(EnvBuildError) as e:
        PHP.plan(tree, inst(tree, "php"), ["tests/Carbon/RoundTest.php"], ImageConfig())
    assert e.value.message.startswith("Packagist (repo.packagist.org) is unreachable and acme/widget has no "
                                      "vendored dependencies: composer install cannot run")
    assert "acme/not-in-debian" in e.value.message and built == []


def test_runtime_version_constraint_moves_the_suite(tmp_path, built):
    composer = {"require": {"symfony/translation": "^6.0"}, "require-dev": {"phpunit/phpunit": "^9"}}
    tree = php_tree(tmp_path, composer)
    plan = PHP.plan(tree, inst(tree, "php", created_at="2022-09-02 23:09:21"), ["tests/Carbon/RoundTest.php"],
                    ImageConfig())
    assert built[-1][2] == "trixie"  # bullseye 4.4 and bookworm 5.4 miss ^6.0
    assert any("bullseye lacks" in s for s in plan.substitutions)


def test_vendored_php_tree_installs_nothing(tmp_path, built):
    composer = {**CARBON, "require": {**CARBON["require"], "acme/not-in-debian": "^1.0"}}
    tree = php_tree(tmp_path, composer, {"vendor/autoload.php": "<?php\n", "vendor/bin/phpunit": "#!/usr/bin/env php\n"})
    plan = PHP.plan(tree, inst(tree, "php"), ["tests/Carbon/RoundTest.php"], ImageConfig())
    assert plan.setup_commands == []
    assert "vendor/bin/phpunit --log-junit" in plan.test_command


def test_php_test_patch_without_test_files_is_an_error(tmp_path, built):
    tree = php_tree(tmp_path, CARBON)
    with pytest.raises(EnvBuildError, match="touches no PHPUnit"):
        PHP.plan(tree, inst(tree, "php"), ["tests/fixtures/data.json"], ImageConfig())


def test_setup_and_test_commands_are_valid_bash(tmp_path, built):
    """Regression: the Debian-autoload step once ended in a stray '}}' (bash: syntax error)."""
    php_plan = PHP.plan(php_tree(tmp_path / "p", CARBON), inst(make_tree(tmp_path / "q", {"a": ""}), "php"),
                        ["tests/Carbon/RoundTest.php"], ImageConfig())
    tree = make_tree(tmp_path / "r", FAKER)
    ruby_plan = RUBY.plan(tree, inst(tree, "ruby"), ["test/faker/default/test_faker_internet.rb"], ImageConfig())
    for cmd in [*php_plan.setup_commands, php_plan.test_command, *ruby_plan.setup_commands, ruby_plan.test_command]:
        r = subprocess.run(["bash", "-n", "-c", cmd], capture_output=True, text=True)
        assert r.returncode == 0, (cmd[:200], r.stderr)


def test_archive_keeps_export_ignored_tests(tmp_path):
    """Regression (briannesbitt/Carbon): `/tests export-ignore` in .gitattributes made git archive
    drop tests/, so the test patch could not apply in /testbed."""
    import io
    import tarfile
    tree = make_tree(tmp_path, {".gitattributes": "/tests export-ignore\n/phpunit.xml.dist export-ignore\n",
                                "composer.json": "{}", "phpunit.xml.dist": "<phpunit/>",
                                "tests/Carbon/RoundTest.php": "<?php\n"})
    names = tarfile.open(fileobj=io.BytesIO(tree.archive())).getnames()
    assert "tests/Carbon/RoundTest.php" in names and "phpunit.xml.dist" in names


def test_a_dependency_the_fix_adds_is_in_the_environment(tmp_path, built):
    """briannesbitt/carbon-2813: the fix adds psr/clock to composer.json and imports
    Psr\\Clock\\ClockInterface; only trixie packages it (php-psr-clock), so the plan takes
    trixie and installs it, and says so; without it the after side cannot load the fixed code.
    A polyfill trixie does not package is not missing when its PHP has what it fills in."""
    import difflib

    text = json.dumps(CARBON, indent=4) + "\n"
    tree = php_tree(tmp_path, {}, {"composer.json": text})
    after = text.replace('"symfony/polyfill-mbstring": "^1.0",', '"symfony/polyfill-mbstring": "^1.0",\n'
                                                                 '        "psr/clock": "^1.0",')
    patch = "diff --git a/composer.json b/composer.json\n" + "".join(difflib.unified_diff(
        text.splitlines(keepends=True), after.splitlines(keepends=True), "a/composer.json", "b/composer.json"))
    assert php_mod.patch_requires(tree, patch, php_mod.composer_dependencies(tree)[0]) == {"psr/clock": "^1.0"}
    plan = PHP.plan(tree, make_instance(tree, "php", "2022-09-02 23:09:21", instance_id="acme__widget-8",
                                        repo="acme/widget", patch=patch), ["tests/Carbon/RoundTest.php"],
                    ImageConfig())
    assert plan.toolchain == "php 8.4" and "php-psr-clock" in plan.setup_commands[0]
    assert "dependencies the fix adds to composer.json: psr/clock" in plan.notes
    # trixie packages no mbstring polyfill: PHP 8.4's own mbstring stands in, said as a substitution
    assert "php-symfony-polyfill-mbstring" not in plan.setup_commands[0]
    assert any(x.startswith("symfony/polyfill-mbstring: not packaged in Debian trixie") for x in plan.substitutions)
    assert php_mod._provided("symfony/polyfill-php80", (8, 4)) and not php_mod._provided("symfony/polyfill-php83", (8, 2))
    assert php_mod.patch_requires(tree, "", {}) == {}
