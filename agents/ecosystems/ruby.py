"""Ruby projects (Gemfile / *.gemspec) with RubyGems unreachable: vendored gems or Debian.

Routes, decided in `plan` before any container is built:
- **vendored**: ``vendor/cache/*.gem`` or ``vendor/bundle`` committed -> ``bundle install
  --local`` from them;
- **debian**: every runtime dependency (gemspec ``add_dependency``, Gemfile gems outside
  development/test groups) and every test dependency that is not a development tool
  (``recipes/rubyphp.yaml`` ``tooling``, never installed) has a Debian package (``ruby-<gem>``,
  or an alias) in one suite, runtime ones at a version meeting their requirement: the era's suite (newest released by ``created_at``) is tried first, then newer, then
  older ones; tools Debian lacks are dropped, coverage formatters Debian lacks get no-op shims;
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
from agents.ecosystems.base import PlanRequest, PolyPlan
from agents.ecosystems.debian import (era_suite, era_time, from_debian, providers, rubyphp_recipes, suites_from,
                                      suites_of_request)
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig
from envpool.toolchains import apt_script, layer_image

__all__ = ["ECOSYSTEM", "Gem", "Ruby", "gem_dependencies"]

HELPER = "/usr/local/libexec/swemint/ruby_tests.rb"
SHIMS = "/usr/local/lib/swemint/ruby-shims"
RSPEC_JSON = "/tmp/swemint-rspec.json"
RECIPES = Path(__file__).parent / "recipes"
_GEM = re.compile(r"""^\s*gem\s*\(?\s*['"]([\w.-]+)['"]((?:\s*,\s*['"][^'"]*['"])*)""")
_SPEC_DEP = re.compile(r"""\.add_(runtime_|development_)?dependency\s*\(?\s*['"]([\w.-]+)['"]((?:\s*,\s*['"][^'"]*['"])*)""")
_QUOTED = re.compile(r"""['"]([^'"]*)['"]""")
_GROUP = re.compile(r"^\s*group\s*\(?\s*(.*?)\)?\s*do\b")


class Gem(NamedTuple):
    """A direct dependency: `kind` "runtime" or "dev"; `requirement` like ">= 1.8.11, < 2"
    ("" = any)."""

    name: str
    kind: str
    requirement: str = ""


def gem_dependencies(tree: GitTree) -> list[Gem]:
    """Direct dependencies from the root Gemfile and *.gemspec files, in order, unique by name
    (runtime wins over dev). Gemfile gems inside ``group`` blocks are "dev"."""
    found: dict[str, Gem] = {}

    def add(name: str, kind: str, req: str) -> None:
        if name not in found or (found[name].kind != "runtime" and kind == "runtime"):
            found[name] = Gem(name, kind, ", ".join(_QUOTED.findall(req)))

    for spec in [f for f in tree.files if "/" not in f and f.endswith(".gemspec")]:
        for kind, name, req in _SPEC_DEP.findall(tree.read(spec) or ""):
            add(name, "dev" if kind == "development_" else "runtime", req)
    depth, group_depth = 0, None
    for line in (tree.read("Gemfile") or "").splitlines():
        code = line.split("#", 1)[0]
        if _GROUP.match(code):
            group_depth = depth
            depth += 1
            continue
        if re.search(r"\bdo\b(\s*\|.*\|)?\s*$", code):
            depth += 1
        if re.match(r"^\s*end\b", code):
            depth -= 1
            if group_depth is not None and depth == group_depth:
                group_depth = None
            continue
        m = _GEM.match(code)
        if m:
            kind = "dev" if group_depth is not None or re.search(r"group:|:group\s*=>", code) else "runtime"
            add(m.group(1), kind, m.group(2) or "")
    return list(found.values())


def _candidates(gem: str) -> list[str]:
    rec = rubyphp_recipes()["ruby"]
    alias = rec["aliases"].get(gem)
    base = gem.replace("_", "-").lower()
    return [c for c in (alias, f"ruby-{base}", base) if c]


def _resolve(gems: list[Gem], suite: str) -> tuple[list[str], list[str], list[str], list[str]]:
    """(Debian packages, missing gems, dropped tools, version notes) for `gems` in `suite`.

    Development tools (recipe `tooling`, rubocop*) are never installed. A runtime gem whose
    Debian version misses its requirement counts as missing; a dev gem's mismatch is noted."""
    rec = rubyphp_recipes()["ruby"]
    pkgs, missing, dropped, versions = [], [], [], []
    wanted = []
    for g in gems:
        if g.name in rec["builtin"]:
            continue
        if g.name in rec["tooling"] or g.name.startswith("rubocop"):
            dropped.append(g.name)
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


class Ruby:
    """The Ruby ecosystem (`agents.ecosystems.base.Ecosystem`)."""

    name = "ruby"
    languages = ("ruby",)

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
