"""A Lua project's rockspec (LuaRocks' package description): the Lua versions it accepts and the
rocks it depends on, mapped to Debian packages (luarocks.org is unreachable here; Debian ships
common rocks as ``lua-<name>``).

A rockspec is Lua source; only its ``dependencies = { "name op version", ... }`` table is read, by
pattern, never executed. Source: LuaRocks' rockspec format 3.0
(github.com/luarocks/luarocks/wiki/Rockspec-format).
"""

from __future__ import annotations

import posixpath
import re

from agents.gitrepo import GitTree

LUA_VERSIONS: tuple[str, ...] = ("5.4", "5.3", "5.2", "5.1")
"""Lua versions Debian bookworm ships with busted, newest first."""

_DEPS = re.compile(r"\bdependencies\s*=\s*\{(.*?)\}", re.S)
_STRING = re.compile(r"""["']([^"']+)["']""")
_CONSTRAINT = re.compile(r"(>=|<=|==|~=|>|<|=)?\s*([0-9]+(?:\.[0-9]+)*)")
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]*")


def rockspec_path(tree: GitTree) -> str | None:
    """The project's rockspec: one at the root, else the newest-named one under ``rockspecs/``
    (where projects keep one per release); None without one."""
    files = [f for f in tree.files if f.endswith(".rockspec")]
    root = sorted(f for f in files if "/" not in f)
    if root:
        return root[-1]
    kept = sorted((f for f in files if posixpath.dirname(f) == "rockspecs"), key=_version_key)
    return kept[-1] if kept else None


def _version_key(path: str) -> tuple:
    return tuple(int(n) for n in re.findall(r"\d+", posixpath.basename(path)))


def dependencies(text: str) -> list[tuple[str, str]]:
    """(rock name, constraint text) of a rockspec's ``dependencies`` table, in order."""
    m = _DEPS.search(text)
    if not m:
        return []
    out = []
    for dep in _STRING.findall(m.group(1)):
        name, _, rest = dep.strip().partition(" ")
        if _NAME.fullmatch(name.lower()):
            out.append((name.lower(), rest.strip()))
    return out


def _satisfies(version: str, constraint: str) -> bool:
    """Whether `version` (``5.4``) meets every ``op X.Y`` of `constraint` (``>= 5.1, < 5.4``);
    ``~>`` and unknown forms are not constraining."""
    v = tuple(int(n) for n in version.split("."))
    for part in constraint.split(","):
        m = _CONSTRAINT.fullmatch(part.strip())
        if not m:
            continue
        op, want = m.group(1) or "==", tuple(int(n) for n in m.group(2).split("."))
        have = v[:len(want)]
        ok = {">=": have >= want, "<=": have <= want, ">": have > want, "<": have < want,
              "==": have == want, "=": have == want, "~=": have != want}[op]
        if not ok:
            return False
    return True


def lua_version(deps: list[tuple[str, str]]) -> str:
    """The newest of `LUA_VERSIONS` the ``lua`` dependency accepts (the newest without one; the
    newest when none does: the run then says what fails)."""
    constraint = ", ".join(c for name, c in deps if name == "lua")
    return next((v for v in LUA_VERSIONS if _satisfies(v, constraint)), LUA_VERSIONS[0])


def debian_packages(deps: list[tuple[str, str]]) -> list[str]:
    """Debian packages for the rocks besides ``lua`` itself: ``lua-<name>`` (Debian's naming of
    rocks: lua-penlight, lua-dkjson, lua-lpeg, ...)."""
    return [f"lua-{name}" for name, _ in deps if name != "lua"]
