"""Debian as the package source for ecosystems whose registry cannot be reached (RubyGems,
Packagist): which suite, which Debian package provides a gem / composer package, and its version.

Data: ``recipes/debian_ruby_php.tsv`` (ruby-*, php-* and a few tools per suite, from
``apt-cache dumpavail`` of each suite), ``recipes/ruby_stdgems.tsv`` (the default and bundled gems
each suite's Ruby ships, from its libruby package's file list) and ``recipes/rubyphp.yaml`` (name
aliases, tooling that tests do not need, shims).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from datetime import date, datetime
from functools import lru_cache
from pathlib import Path

import yaml
from packaging.version import InvalidVersion, Version

__all__ = ["SUITES", "debian_table", "era_suite", "interpreter_gems", "era_time", "first_suite", "provider", "rubyphp_recipes",
           "satisfies", "suites_from"]

RECIPES = Path(__file__).parent / "recipes"
SUITES = ("bullseye", "bookworm", "trixie")
RELEASED = {"bullseye": date(2021, 8, 14), "bookworm": date(2023, 6, 10), "trixie": date(2025, 8, 9)}


def _suite_table(fname: str) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for line in (RECIPES / fname).read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        name, *versions = line.split("\t")
        out[name] = {s: v for s, v in zip(SUITES, versions) if v != "-"}
    return out


@lru_cache(maxsize=1)
def debian_table() -> dict[str, dict[str, str]]:
    """{debian package: {suite: upstream version}} (absent suites left out)."""
    return _suite_table("debian_ruby_php.tsv")


@lru_cache(maxsize=1)
def interpreter_gems() -> dict[str, dict[str, str]]:
    """{gem: {suite: version}}: the default and bundled gems the Ruby of each suite ships
    (``recipes/ruby_stdgems.tsv``); version "lib" for a library of Ruby 2.7's standard library
    that was not a gem yet (base64, set, drb...)."""
    return _suite_table("ruby_stdgems.tsv")


@lru_cache(maxsize=1)
def rubyphp_recipes() -> dict:
    """`recipes/rubyphp.yaml`, parsed once."""
    return yaml.safe_load((RECIPES / "rubyphp.yaml").read_text())


def era_suite(when: datetime | date | None) -> str:
    """The newest suite released on or before `when`; the oldest when none was; bookworm for
    None."""
    if when is None:
        return "bookworm"
    d = when.date() if isinstance(when, datetime) else when
    chosen = SUITES[0]
    for s in SUITES:
        if RELEASED[s] <= d:
            chosen = s
    return chosen


def era_time(instance, tree) -> datetime | None:
    """The date an era choice reads: the instance's `created_at` (its first 19 characters, naive:
    the zone is dropped), else the base commit's time (`tree.commit_time`), else None."""
    if instance.created_at:
        try:
            return datetime.fromisoformat(instance.created_at.replace("Z", "+00:00").replace(" ", "T")[:19])
        except ValueError:
            pass
    try:
        return tree.commit_time
    except Exception:  # noqa: BLE001 -- the date is a hint only
        return None


def suites_from(first: str) -> list[str]:
    """`first`, then the newer suites, then the older ones (the order suites are tried in)."""
    i = SUITES.index(first)
    return [*SUITES[i:], *reversed(SUITES[:i])]


def suites_for(interpreters: dict[str, str], constraint: str | None, avoid: list[str] | None = None) -> set[str]:
    """The suites whose interpreter (`interpreters`: suite -> version, e.g. ruby 3.1 in bookworm)
    meets a plan request's `constraint` and is not in `avoid`; every suite without either."""
    from agents.ecosystems.toolchain import allowed

    return {s for s, v in interpreters.items() if allowed([v], constraint, avoid)}


def suites_of_request(eco: str, interpreters: dict[str, str], request, instance_id: str | None) -> set[str] | None:
    """The suites a plan request allows for `eco` (`suites_for`); None without a constraint.
    Raises EnvBuildError when it allows none."""
    from envpool.errors import EnvBuildError

    if request is None or not (request.toolchain or request.avoid):
        return None
    only = suites_for(interpreters, request.toolchain, request.avoid)
    if not only:
        raise EnvBuildError(f"{eco}: no Debian suite here has a {eco} satisfying {request.toolchain!r} "
                            f"({interpreters})", instance_id=instance_id)
    return only


def first_suite(era: str, resolve: Callable[[str], tuple[list[str], list[str], list[str], list[str]]],
                only: set[str] | None = None
                ) -> tuple[str | None, tuple[list[str], list[str], list[str], list[str]], list[str]]:
    """The first suite from `era` on (`suites_from`; only those in `only` when given) where
    `resolve(suite)` -> (packages, missing, dropped, notes) misses nothing: (suite, its answer,
    []); (None, the last answer, ["<suite>: <missing, ...>" per suite tried]) when every suite
    misses something."""
    tried: list[str] = []
    found: tuple[list[str], list[str], list[str], list[str]] = ([], [], [], [])
    for suite in [x for x in suites_from(era) if only is None or x in only]:
        found = resolve(suite)
        if not found[1]:
            return suite, found, []
        tried.append(f"{suite}: {', '.join(found[1])}")
    return None, found, tried


def from_debian(era: str, resolve: Callable[[str], tuple[list[str], list[str], list[str], list[str]]], *,
                registry: str, installer: str, noun: str, repo: str, instance_id: str | None,
                only: set[str] | None = None) -> tuple[str, list[str], list[str], list[str]]:
    """Every dependency from Debian (`first_suite`, over the suites in `only` when given):
    (suite, Debian packages, substitutions, notes). Raises EnvBuildError naming the unreachable
    `registry` (e.g. "RubyGems (rubygems.org)"), the `installer` that cannot run and, per suite
    tried, the `noun`s (gems, packages) Debian lacks."""
    from envpool.errors import EnvBuildError

    found, (pkgs, _, dropped, versions), tried = first_suite(era, resolve, only)
    if found is None:
        raise EnvBuildError(
            f"{registry} is unreachable and {repo} has no vendored dependencies: {installer} cannot run; "
            f"{noun} without a Debian package: {'; '.join(tried)}", instance_id=instance_id)
    subs = [f"Debian {era} lacks some {noun}: {found} used"] if found != era else []
    notes = [f"dependencies from Debian {found}: {', '.join(pkgs) or 'none'}"]
    if dropped:
        notes.append(f"development tools, not installed: {', '.join(dropped)}")
    return found, pkgs, subs + versions, notes


def provider(candidates: list[str], suite: str) -> tuple[str, str] | None:
    """(Debian package, version) of the first of `candidates` that `suite` has, else None."""
    table = debian_table()
    for c in candidates:
        v = table.get(c, {}).get(suite)
        if v:
            return c, v
    return None


def providers(wanted: list[tuple[str, str, bool]], suite: str, candidates: Callable[[str], list[str]],
              pkgs: list[str], missing: list[str], versions: list[str]) -> None:
    """Map library requirements to Debian packages of `suite`, appending to the lists given.

    `wanted`: (name, version requirement or "", required). The first of `candidates(name)`
    that `suite` has is installed (once); a required one whose Debian version misses its
    requirement counts as missing (`name req (Debian: v)`), an optional one's mismatch is only
    noted in `versions`; a name no candidate provides is missing."""
    for name, req, required in wanted:
        hit = provider(candidates(name), suite)
        if hit and req and not satisfies(hit[1], req):
            if required:
                missing.append(f"{name} {req} (Debian: {hit[1]})")
                continue
            versions.append(f"{name} {req}: Debian {suite} has {hit[1]}")
        if hit:
            if hit[0] not in pkgs:
                pkgs.append(hit[0])
        else:
            missing.append(name)


def _v(text: str) -> Version | None:
    try:
        return Version(text.strip().lstrip("vV").split("+")[0].split("~")[0])
    except InvalidVersion:
        return None


def _one(op: str, want: str, have: Version) -> bool:
    w = _v(want.rstrip(".*").replace(".*", "")) if want not in ("", "*") else None
    if w is None:
        return True
    parts = [int(x) for x in re.findall(r"\d+", want)] or [0]
    if op in ("~>", "~"):  # ~> 1.2 : >= 1.2, < 2 ; ~> 1.2.3 : >= 1.2.3, < 1.3 (composer ~ the same)
        upper = parts[:-1] if len(parts) > 1 else parts
        upper = upper[:-1] + [upper[-1] + 1]
        return have >= w and have < Version(".".join(map(str, upper)))
    if op == "^":  # ^1.2 : >= 1.2, < 2 ; ^0.3 : >= 0.3, < 0.4
        i = next((k for k, x in enumerate(parts) if x != 0), len(parts) - 1)
        upper = parts[:i] + [parts[i] + 1]
        return have >= w and have < Version(".".join(map(str, upper)))
    if "*" in want:  # 1.2.* : same prefix
        prefix = [int(x) for x in re.findall(r"\d+", want.split("*")[0])]
        return list(have.release[:len(prefix)]) == prefix
    return {">=": have >= w, ">": have > w, "<=": have <= w, "<": have < w, "!=": have != w,
            "=": have == w, "==": have == w, "": have == w}[op]


def satisfies(version: str, requirement: str) -> bool:
    """Whether `version` meets a RubyGems or Composer `requirement`: comma- or space-separated
    clauses (``>= 1.8.11, < 2``, ``~> 1.2``, ``^7.1 || ^8.0``, ``1.2.*``, ``*``) all hold, in any
    ``||`` alternative. Unparsable versions or clauses count as met (never a false refusal)."""
    have = _v(version)
    if have is None:
        return True
    for alt in re.split(r"\s*\|\|?\s*", requirement.strip()):
        clauses = re.findall(r"(~>|>=|<=|!=|==|\^|~|>|<|=)?\s*v?([\d][\w.*-]*|\*)", alt)
        if all(_one(op, want, have) for op, want in clauses):
            return True
    return False


DEBIAN_NAME = re.compile(r"[a-z0-9][a-z0-9.+-]*(?::[a-z0-9]+)?")
"""A Debian package name (optionally `:arch`); anything else never reaches a shell."""


def apt_install(packages: list[str]) -> str:
    """The setup command installing Debian `packages` without recommends (names that are not
    Debian package names are dropped; each is quoted)."""
    names = [p for p in packages if DEBIAN_NAME.fullmatch(p)]
    return ("export DEBIAN_FRONTEND=noninteractive && apt-get update -qq && "
            f"apt-get install -y -qq --no-install-recommends {' '.join(shlex.quote(n) for n in names)} >/dev/null && "
            "rm -rf /var/lib/apt/lists/*")
