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
"""

from __future__ import annotations

import base64
import re
import shlex
from pathlib import Path
from typing import NamedTuple

from agents.gitrepo import GitTree
from agents.models import Instance
from agents.ecosystems.base import Ecosystem, PlanRequest, PolyPlan
from agents.ecosystems.debian import (era_suite, era_time, from_debian, interpreter_gems, provider, providers,
                                      rubyphp_recipes, satisfies, suites_from, suites_of_request)
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig
from envpool.toolchains import apt_script, layer_image

__all__ = ["ECOSYSTEM", "Gem", "Ruby", "gem_dependencies"]

HELPER = "/usr/local/libexec/swemint/ruby_tests.rb"
SHIMS = "/usr/local/lib/swemint/ruby-shims"
RSPEC_JSON = "/tmp/swemint-rspec.json"
RECIPES = Path(__file__).parent / "recipes"
_REQS = r"""((?:\s*,\s*\[?\s*['"][^'"]*['"]\s*\]?)*)"""  # , '>= 1', '< 2'  or  , ['>= 1', '< 2']
_GEM = re.compile(r"""^\s*gem\s*\(?\s*['"]([\w.-]+)['"]""" + _REQS)
_SPEC_DEP = re.compile(r"""\.add_(runtime_|development_)?dependency\s*\(?\s*['"]([\w.-]+)['"]""" + _REQS)
_QUOTED = re.compile(r"""['"]([^'"]*)['"]""")
_GROUP = re.compile(r"^\s*group\s*\(?\s*(.*?)\)?\s*do\b")
_PLATFORMS_BLOCK = re.compile(r"^\s*platforms?\s*\(?\s*([:\[%].*?)\)?\s*do\b")
_INSTALL_IF_BLOCK = re.compile(r"^\s*install_if\s*\(?\s*(?:->|lambda|proc)\s*\{(.*)\}\s*\)?\s*do\b")
_PLATFORMS_OPT = re.compile(r"""(?::platforms?\s*=>|\bplatforms?:)\s*(\[[^\]]*\]|:\w+|%i\[[^\]]*\])""")
_INSTALL_IF_OPT = re.compile(r"""(?::install_if\s*=>|\binstall_if:)\s*(?:->|lambda|proc)\s*\{(.*?)\}""")
_MODIFIER = re.compile(r"""\s(if|unless)\s+(.+)$""")
_OPENER = re.compile(r"^\s*(?:(?:if|unless|case|while|until|begin|def|class|module|for)\b|.*=\s*(?:if|unless|case|begin)\b)")
_HEREDOC = re.compile(r"""<<[~-]?(['"]?)([A-Z_a-z]\w*)\1""")
_ELSE_PLATFORM = re.compile(r"mswin|mingw|cygwin|win32|windows|win_platform\?|jruby|truffleruby|"
                            r"['\"/]java['\"/]|darwin|mac_?os", re.I)
_NEGATED = re.compile(r"!~|!=|!\s*[\w(/]|\bnot\b|linux", re.I)
_ENV_SET = re.compile(r"\bENV\s*(?:\[|\.key\?|\.include\?|\.has_key\?)")
_ENV_UNSET = re.compile(r"!|\bnot\b|nil\?|empty\?|blank\?|\bfetch\b|==\s*nil|\|\|")
_REGEXP = re.compile(r"%r([!{(|\[])(.*?)[!})|\]]")
LINUX_MRI = re.compile(r"^(?:ruby|mri)(?:_\d+)?$")
"""Bundler platform names (``platforms: [...]``) that include C Ruby on Linux: ``ruby``, ``mri``,
``ruby_31``, ``mri_27``...; every other name (``mswin``, ``mingw``, ``x64_mingw``, ``windows``,
``jruby``, ``truffleruby``) is another platform."""


class Gem(NamedTuple):
    """A direct dependency: `kind` "runtime", "dev" or "other" (needed only elsewhere: on other
    platforms -- Windows, JRuby, macOS -- or when an environment variable is set); `requirement`
    like ">= 1.8.11, < 2" ("" = any)."""

    name: str
    kind: str
    requirement: str = ""


def _condition(cond: str) -> str | None:
    """What a Ruby condition says about this run (C Ruby on Linux, no extra environment):
    "elsewhere" when it holds only on other platforms (``Gem.win_platform?``, ``RUBY_PLATFORM =~
    /mswin|mingw/``, ``RUBY_ENGINE == 'jruby'``; every ``||`` alternative such a test) or only
    with an environment variable set (``ENV['BENCHMARK']``); "here" for a negated platform test
    (``!Gem.win_platform?``, ``RUBY_PLATFORM !~ /mingw/``) or one naming linux; None otherwise."""
    cond = _REGEXP.sub(lambda m: f"/{m.group(2)}/", cond.split("#", 1)[0]).strip().removesuffix(" then").strip()
    if _ELSE_PLATFORM.search(cond) and _NEGATED.search(cond):
        return "here"
    alternatives = re.split(r"\|\||\bor\b", cond)
    if all(_ELSE_PLATFORM.search(a) or (_ENV_SET.search(a) and not _ENV_UNSET.search(a)) for a in alternatives):
        return "elsewhere"
    return None


def _other_platforms(spec: str) -> bool:
    """Whether a Bundler ``platforms`` list (``:jruby``, ``[:mingw, :x64_mingw]``, ``%i[mswin]``)
    names only platforms other than C Ruby on Linux."""
    names = re.findall(r"\w+", spec.replace("%i", ""))
    return bool(names) and not any(LINUX_MRI.match(n) for n in names)


class _Blocks:
    """Ruby block nesting of a Gemfile / gemspec read line by line: which enclosing blocks are
    ``group`` ones (development) and which hold only where this run is not ("elsewhere": a
    ``platforms :mswin do``, ``install_if -> { Gem.win_platform? } do``, ``if RUBY_ENGINE ==
    'jruby'`` block, or the ``else`` of a negated platform test)."""

    def __init__(self) -> None:
        self.stack: list[dict] = []  # {"group": bool, "elsewhere": bool, "cond": str | None}

    @property
    def group(self) -> bool:
        return any(f["group"] for f in self.stack)

    @property
    def elsewhere(self) -> bool:
        return any(f["elsewhere"] for f in self.stack)

    def feed(self, code: str) -> bool:
        """Track `code` (one line, comment stripped); True when it only opened or closed a block
        (no dependency on it)."""
        m = re.match(r"^\s*(elsif|else|end|if|unless)\b(.*)$", code)
        word, rest = (m.group(1), m.group(2)) if m else ("", "")
        if word == "end":
            if self.stack:
                self.stack.pop()
            return True
        if word in ("else", "elsif") and self.stack:
            top = self.stack[-1]
            was = top["cond"]
            top["elsewhere"] = was == "here" or (word == "elsif" and _condition(rest) == "elsewhere")
            top["cond"] = None if word == "else" else _condition(rest)
            return True
        if word in ("if", "unless") and not re.search(r"\bend\s*$", code):
            c = _condition(rest)
            if word == "unless":
                c = {"here": "elsewhere", "elsewhere": "here"}.get(c) if c else None
            self.stack.append({"group": False, "elsewhere": c == "elsewhere", "cond": c})
            return True
        if _GROUP.match(code):
            self.stack.append({"group": True, "elsewhere": False, "cond": None})
            return True
        pm, im = _PLATFORMS_BLOCK.match(code), _INSTALL_IF_BLOCK.match(code)
        if pm or im:
            away = _other_platforms(pm.group(1)) if pm else _condition(im.group(1)) == "elsewhere"
            self.stack.append({"group": False, "elsewhere": away, "cond": None})
            return True
        if _OPENER.match(code) and not re.search(r"\bend\s*$", code) or \
                re.search(r"\bdo\b(\s*\|[^|]*\|)?\s*$", code):
            self.stack.append({"group": False, "elsewhere": False, "cond": None})
        return False


def _lines(text: str):
    """Code lines of a Ruby file: comments stripped, heredoc bodies skipped."""
    until = None
    for line in text.splitlines():
        if until is not None:
            if line.strip() == until:
                until = None
            continue
        code = re.sub(r"\s#.*$|^#.*$", "", line)
        h = _HEREDOC.search(code)
        if h:
            until = h.group(2)
        yield code


def _elsewhere_here(code: str) -> bool:
    """Whether a dependency line holds only elsewhere: a trailing ``if`` / ``unless`` modifier,
    a ``platforms:`` or ``install_if:`` option."""
    mod = _MODIFIER.search(code)
    if mod:
        c = _condition(mod.group(2))
        if mod.group(1) == "unless":
            c = {"here": "elsewhere", "elsewhere": "here"}.get(c) if c else None
        if c == "elsewhere":
            return True
    p, i = _PLATFORMS_OPT.search(code), _INSTALL_IF_OPT.search(code)
    return bool(p and _other_platforms(p.group(1))) or bool(i and _condition(i.group(1)) == "elsewhere")


def gem_dependencies(tree: GitTree) -> list[Gem]:
    """Direct dependencies from the root Gemfile and *.gemspec files, in order, unique by name
    (runtime wins over dev, dev over other).

    gemspec ``add_dependency`` / ``add_runtime_dependency`` are "runtime",
    ``add_development_dependency`` "dev". Gemfile gems are "dev" inside ``group`` blocks, with a
    ``group:`` option, or when the Gemfile loads a gemspec (``gemspec``: the gem's runtime
    dependencies are the gemspec's, the Gemfile's own gems are its development bundle); "runtime"
    otherwise. Any of them is "other" when it is declared for other platforms only or behind an
    environment variable (`_Blocks`, `_elsewhere_here`)."""
    found: dict[str, Gem] = {}
    rank = {"runtime": 2, "dev": 1, "other": 0}

    def add(name: str, kind: str, req: str) -> None:
        if name not in found or rank[kind] > rank[found[name].kind]:
            found[name] = Gem(name, kind, ", ".join(_QUOTED.findall(req)))

    for spec in [f for f in tree.files if "/" not in f and f.endswith(".gemspec")]:
        blocks = _Blocks()
        for code in _lines(tree.read(spec) or ""):
            if blocks.feed(code):
                continue
            for kind, name, req in _SPEC_DEP.findall(code):
                other = blocks.elsewhere or _elsewhere_here(code)
                add(name, "other" if other else "dev" if kind == "development_" else "runtime", req)
    gemfile = tree.read("Gemfile") or ""
    with_gemspec = any(re.match(r"^\s*gemspec\b", c) for c in _lines(gemfile)) and \
        any("/" not in f and f.endswith(".gemspec") for f in tree.files)
    blocks = _Blocks()
    for code in _lines(gemfile):
        if blocks.feed(code):
            continue
        m = _GEM.match(code)
        if m:
            if blocks.elsewhere or _elsewhere_here(code):
                kind = "other"
            elif with_gemspec or blocks.group or re.search(r"group:|:group\s*=>", code):
                kind = "dev"
            else:
                kind = "runtime"
            add(m.group(1), kind, m.group(2) or "")
    return list(found.values())


def _candidates(gem: str) -> list[str]:
    rec = rubyphp_recipes()["ruby"]
    alias = rec["aliases"].get(gem)
    base = gem.replace("_", "-").lower()
    return [c for c in (alias, f"ruby-{base}", base) if c]


def _from_interpreter(gem: Gem, suite: str) -> str | None:
    """The version of `gem` that the Ruby of `suite` ships (`interpreter_gems`) when it meets
    the gem's requirement (a standard-library "lib" only a requirement-free one), else None."""
    have = interpreter_gems().get(gem.name, {}).get(suite)
    if have is None or (have == "lib" and gem.requirement):
        return None
    return have if have == "lib" or not gem.requirement or satisfies(have, gem.requirement) else None


def _resolve(gems: list[Gem], suite: str) -> tuple[list[str], list[str], list[str], list[str]]:
    """(Debian packages, missing gems, dropped tools, version notes) for `gems` in `suite`.

    Gems for other platforms ("other") are skipped, and so are gems the suite's Ruby ships at a
    version meeting the requirement (`_from_interpreter`). Development tools (recipe `tooling`,
    rubocop*) are never installed. A gem of recipe `replaced` gets the Debian package doing its
    job instead (noted). A runtime gem whose Debian version misses its requirement counts as
    missing; a dev gem's mismatch is noted, Debian's version used."""
    rec = rubyphp_recipes()["ruby"]
    pkgs, missing, dropped, versions = [], [], [], []
    wanted = []
    for g in gems:
        if g.kind == "other" or _from_interpreter(g, suite):
            continue
        if g.name in rec["tooling"] or g.name.startswith("rubocop"):
            dropped.append(g.name)
            continue
        if g.name in rec["replaced"]:
            pkg, why = rec["replaced"][g.name]["package"], rec["replaced"][g.name]["why"]
            if pkg not in pkgs:
                pkgs.append(pkg)
            versions.append(f"{' '.join(filter(None, (g.name, g.requirement)))}: Debian's {pkg} instead ({why})")
            continue
        have = interpreter_gems().get(g.name, {}).get(suite)
        if have and provider(_candidates(g.name), suite) is None:
            # the interpreter's own version misses the requirement and Debian has no newer one
            ruby = rec["interpreters"][suite]
            shipped = f"Ruby {ruby} has it in its standard library, not as a gem" if have == "lib" else \
                f"Ruby {ruby} ships {have}"
            if g.kind == "runtime":
                missing.append(f"{g.name} {g.requirement} ({shipped})")
            else:
                versions.append(f"{g.name} {g.requirement}: {shipped}")
            continue
        wanted.append((g.name, g.requirement or "", g.kind == "runtime"))
    providers(wanted, suite, _candidates, pkgs, missing, versions)
    return pkgs, missing, dropped, versions


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
        tests = [f for f in touched if f.endswith(".rb") and re.search(r"(^|/)(test|spec)s?/|_test\.rb$|_spec\.rb$", f)
                 and not re.search(r"(^|/)(test|spec)_helper\.rb$|/support/|/fixtures?/", f)]
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
        specs = [f for f in tests if f.endswith("_spec.rb")]
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
