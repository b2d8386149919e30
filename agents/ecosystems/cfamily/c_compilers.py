"""The gcc a C/C++ build gets (`era_gcc`): the compiler of the commit's Debian suite, raised to
one that implements the C++ standard the build asks for."""

from __future__ import annotations

import re
from datetime import date, datetime


SUITE_RELEASES: list[tuple[date, str]] = [(date(2021, 8, 14), "10"), (date(2023, 6, 10), "12"),
                                          (date(2025, 8, 9), "14")]
"""Debian release date -> its gcc major (bullseye, bookworm, trixie)."""


CXX_STD_GCC = {"17": "10", "20": "10", "23": "12", "26": "14"}
"""C++ standard -> the oldest gcc major available here that implements enough of it."""


def era_gcc(when: datetime | date | None) -> str:
    """gcc major of the newest Debian suite released on or before `when` (the oldest when none
    was; None -> the bookworm default "12")."""
    if when is None:
        return "12"
    d = when.date() if isinstance(when, datetime) else when
    chosen = SUITE_RELEASES[0][1]
    for released, gcc in SUITE_RELEASES:
        if released <= d:
            chosen = gcc
    return chosen


SUITE_GCC = {"bullseye": "10", "bookworm": "12", "trixie": "14"}
"""Debian suite -> its gcc major (a memory `toolchain debian bookworm` action means gcc 12)."""


def _gcc_major(requested: str | None) -> str | None:
    """A gcc major from a request: a suite name, a major (`12`) or a constraint's version."""
    if not requested:
        return None
    if requested in SUITE_GCC:
        return SUITE_GCC[requested]
    m = re.search(r"\d+", requested)
    return m.group(0) if m else None

