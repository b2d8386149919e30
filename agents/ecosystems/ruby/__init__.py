"""Ruby projects (Gemfile / *.gemspec) with RubyGems unreachable: vendored gems or Debian.

Routes, decided in `plan` before any container is built:
- **vendored**: ``vendor/cache/*.gem`` or ``vendor/bundle`` committed -> ``bundle install
  --local`` from them;
- **debian**: every runtime dependency (gemspec ``add_dependency``; Gemfile gems outside
  development/test groups when the Gemfile loads no gemspec -- a gem's own Gemfile is its
  development bundle) and every test dependency that is not a development tool
  (``recipes/rubyphp.yaml`` ``tooling``, never installed) is shipped by the suite's Ruby
  (``recipes/ruby_stdgems.tsv``: default and bundled gems, from Debian's libruby file lists) or
  has a Debian package (``ruby-<gem>``, or an alias; ``replaced``: another package doing its job,
  e.g. tzdata for tzinfo-data) in one suite, runtime ones at a version meeting their requirement
  (a development one's mismatch is a substitution: Debian's version is used): the era's suite
  (newest released by ``created_at``) is tried first, then newer, then older ones; gems declared
  for other platforms only (``platforms: [:mingw, :jruby]``, ``install_if -> {
  Gem.win_platform? }``, ``if RUBY_PLATFORM =~ /mswin/`` in a gemspec) or behind an environment
  variable are not needed (noted); tools Debian lacks are dropped, coverage formatters Debian
  lacks get no-op shims;
- otherwise EnvBuildError("RubyGems (rubygems.org) is unreachable and <repo> has no vendored
  dependencies: bundle install cannot run; not in Debian: ...").

Tests: RSpec (``spec/`` files) -> ``rspec --format json --out FILE`` (parser ``rspec_json``);
minitest / test-unit -> ``recipes/ruby_tests.rb`` (parser ``minitest_log``, ids
``TestClass#test_name``) on the test files the test patch touches.

Modules: `gemfile` (what the Gemfile declares), `gem_packages` (the Debian suite and packages
that provide it); this package holds the Ecosystem (its data: `recipes/rubyphp.yaml`, shared
with PHP through `agents.ecosystems.debian`; the test helper `recipes/ruby_tests.rb`).
"""

from __future__ import annotations

import base64
import shlex
from pathlib import Path
from agents.gitrepo import GitTree
from agents.models import Instance
from agents.ecosystems.base import Ecosystem, PlanRequest, PolyPlan
from agents.ecosystems.debian import era_suite, era_time, from_debian, rubyphp_recipes, suites_from, suites_of_request
from envpool.errors import EnvBuildError
from envpool.testpaths import role
from envpool.images import ImageConfig
from envpool.toolchains import apt_script, layer_image
from agents.ecosystems.ruby.gemfile import Gem, gem_dependencies
from agents.ecosystems.ruby.gem_packages import _from_interpreter, _resolve


__all__ = ["ECOSYSTEM", "Gem", "HELPER", "RSPEC_JSON", "Ruby", "SHIMS", "gem_dependencies", "test_files"]

HELPER = "/usr/local/libexec/swemint/ruby_tests.rb"


SHIMS = "/usr/local/lib/swemint/ruby-shims"


RSPEC_JSON = "/tmp/swemint-rspec.json"


RECIPES = Path(__file__).parent.parent / "recipes"


def test_files(touched: list[str]) -> tuple[list[str], list[str]]:
    """(tests, specs): the touched files the plan runs -- the Ruby group's `run` role of the one
    test-path rule set (`envpool.testpaths`: ``*_spec.rb``/``*_test.rb`` files and Ruby files in
    test/spec folders, not helpers, support or fixture files) -- and those of them RSpec runs
    (its `rspec` role, ``*_spec.rb``; with none, minitest runs every test), in touched order."""
    tests = role("ruby", "run").select(touched)
    return tests, role("ruby", "rspec").select(tests)


def _ensure_image(suite: str, images: ImageConfig) -> str:
    rec = rubyphp_recipes()["ruby"]
    return layer_image("ruby", rec["interpreters"][suite], suite,
                       apt_script(["ruby", "ruby-dev", "build-essential", "git", "ca-certificates"]), images)


def _b64_file(content: str, path: str, mode: str = "") -> str:
    data = base64.b64encode(content.encode()).decode()
    chmod = f" && chmod {mode} {path}" if mode else ""
    return f"mkdir -p {Path(path).parent} && echo {data} | base64 -d > {path}{chmod}"


class Ruby(Ecosystem):
    """The Ruby ecosystem (`agents.ecosystems.base.Ecosystem`)."""

    name = "ruby"
    languages = ("ruby",)
    parsers = ("rspec_json", "minitest_log")
    toolchain_module = "envpool.toolchains"

    def detect(self, tree: GitTree, language: str | None) -> int:
        """12 for a Ruby-labelled tree with a Gemfile / gemspec at the root, 10 without the label,
        0 otherwise (or when another language is named)."""
        lang = (language or "").lower()
        if lang and lang != "ruby":
            return 0
        if tree.exists("Gemfile") or any("/" not in f and f.endswith(".gemspec") for f in tree.files):
            return 12 if lang == "ruby" else 10
        return 0

    def plan(self, tree: GitTree, instance: Instance, touched: list[str], images: ImageConfig,
             request: PlanRequest | None = None) -> PolyPlan:
        """See the module doc. Raises EnvBuildError (before any image is built) when RubyGems
        would be needed."""
        rec = rubyphp_recipes()["ruby"]
        only = suites_of_request("ruby", rec["interpreters"], request, instance.instance_id)
        vendored = any(f.startswith(("vendor/cache/", "vendor/bundle/")) for f in tree.files)
        gems = gem_dependencies(tree)
        era = era_suite(era_time(instance, tree))
        notes: list[str] = []
        subs: list[str] = []
        if vendored:
            suite, pkgs = next(x for x in suites_from(era) if only is None or x in only), ["bundler"]
            setup_deps = ["bundle config set --local deploy false && bundle install --local"]
            notes.append("vendored gems: bundle install --local")
        else:
            suite, pkgs, found_subs, found_notes = from_debian(
                era, lambda s: _resolve(gems, s), registry="RubyGems (rubygems.org)",
                installer="bundle install", noun="gems", repo=instance.repo, instance_id=instance.instance_id,
                only=only)
            setup_deps = []
            subs += found_subs
            notes += found_notes
            shipped = [f"{g.name} {v}" for g in gems if g.kind != "other" and (v := _from_interpreter(g, suite))]
            if shipped:
                notes.append(f"gems Ruby {rec['interpreters'][suite]} ships, no package needed: {', '.join(shipped)}")
        elsewhere = [g.name for g in gems if g.kind == "other"]
        if elsewhere:
            notes.append("gems for other platforms or behind an environment variable, not installed: "
                         + ", ".join(elsewhere))
        tests, specs = test_files(touched)
        if not tests:
            raise EnvBuildError(f"the test patch of {instance.instance_id} touches no Ruby test file "
                                f"({', '.join(touched[:5])})", instance_id=instance.instance_id)
        ruby = rec["interpreters"][suite]
        image = _ensure_image(suite, images)
        setup: list[str] = []
        if pkgs:
            setup.append("export DEBIAN_FRONTEND=noninteractive && apt-get update -qq && apt-get install -y -qq "
                         f"--no-install-recommends {' '.join(pkgs)} >/dev/null && rm -rf /var/lib/apt/lists/*")
        setup += setup_deps
        env = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
        if not vendored:
            for fname, code in rec["shims"].items():
                setup.append(_b64_file(code, f"{SHIMS}/{fname}"))
            env["RUBYLIB"] = SHIMS
            notes.append(f"no-op shims for coverage gems Debian lacks: {', '.join(rec['shims'])}")
        bundle = "bundle exec " if vendored else ""
        if specs:
            test_command = (f"{bundle}rspec --format progress --format json --out {RSPEC_JSON} "
                            + " ".join(shlex.quote(f) for f in specs))
            parser, report = "rspec_json", RSPEC_JSON
        else:
            setup.append(_b64_file((RECIPES / "ruby_tests.rb").read_text(), HELPER))
            test_command = (f"{bundle}ruby -Ilib -Itest {HELPER} " + " ".join(shlex.quote(f) for f in tests))
            parser, report = "minitest_log", None
        return PolyPlan(ecosystem=self.name, toolchain=f"ruby {ruby}", image=image, route="debootstrap",
                        substitutions=subs, setup_commands=setup, env=env,
                        test_command=test_command, parser=parser, report_path=report, test_files=tests,
                        notes=notes)

    def repair(self, plan: PolyPlan, command: str, output: str, tried: set[str]) -> list[str] | None:
        """No automatic repairs: a missing gem cannot be fetched here."""
        return None


ECOSYSTEM = Ruby()

