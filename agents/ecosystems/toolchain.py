"""Toolchain version constraints, as plan requests carry them (`PlanRequest.toolchain`).

A constraint is comma-separated comparators on dotted versions: `>=1.16`, `<3.12`, `>1.19.8`,
`<=17`, `==3.11`; a bare version (`11`, `3.11`) means that version (any patch level). A
comparison uses as many parts as the constraint names (`<3.12` holds for 3.11.9). Each
ecosystem with a version choice narrows its available versions with `allowed` and picks as it
always does among what remains.
"""

from __future__ import annotations

import re

from envpool.toolchains import version_key

_PART = re.compile(r"^\s*(>=|<=|==|!=|>|<|~=|\^)?\s*v?(\d+(?:\.\d+)*)\s*$")


def _cmp(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = len(b)
    a = (a + (0,) * n)[:n]
    return (a > b) - (a < b)


def satisfies(version: str, constraint: str | None) -> bool:
    """Whether `version` meets `constraint` (None or "" always holds; an unparsable comparator
    is ignored)."""
    if not constraint or not constraint.strip():
        return True
    have = version_key(version)
    if not have:
        return False
    for part in constraint.split(","):
        m = _PART.match(part)
        if not m:
            continue
        op, want = m.group(1) or "==", version_key(m.group(2))
        c = _cmp(have, want)
        ok = {">=": c >= 0, "<=": c <= 0, ">": c > 0, "<": c < 0, "==": c == 0, "!=": c != 0, "~=": c >= 0,
              "^": c >= 0 and have[0] == want[0]}[op]
        if not ok:
            return False
    return True


def allowed(versions: list[str], constraint: str | None, avoid: list[str] | None = None) -> list[str]:
    """`versions` (order kept) that satisfy `constraint` and are not in `avoid`."""
    skip = set(avoid or [])
    return [v for v in versions if v not in skip and satisfies(v, constraint)]


def floor_of(constraint: str | None) -> str | None:
    """The lowest version a constraint asks for (`>=1.16` -> `1.16`, `11` -> `11`), or None."""
    for part in (constraint or "").split(","):
        m = _PART.match(part)
        if m and (m.group(1) or "==") in (">=", "==", "~=", "^"):
            return m.group(2)
    return None


def constrained(available: list[str], wanted: str | None, constraint: str | None,
                avoid: list[str] | None = None) -> str | None:
    """The version to ask a toolchain module for under a plan request: among `available` (any
    order) those meeting `constraint` and not in `avoid`, the oldest at least `wanted` (the
    project's own request), else the newest below it. `wanted` unchanged when there is neither a
    constraint nor anything to avoid. Raises ValueError naming the constraint when nothing fits."""
    if not constraint and not avoid:
        return wanted
    fits = sorted(allowed(available, constraint, avoid), key=version_key)
    if not fits:
        raise ValueError(f"no toolchain here satisfies {constraint or 'the request'!r} "
                         f"(available: {', '.join(sorted(available, key=version_key))}; tried: "
                         f"{', '.join(avoid or []) or 'none'})")
    floor = version_key(wanted) if wanted else ()
    newer = [v for v in fits if version_key(v) >= floor]
    return newer[0] if newer else fits[-1]
