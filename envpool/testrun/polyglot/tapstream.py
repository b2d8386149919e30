"""A TAP stream inside a program's output (Test Anything Protocol 12-14), runner independent.

Used where one test of an outer runner is itself a test program printing TAP, e.g. a CTest test
whose command is a runner of many tests (libuv's ``uv_run_tests`` prints ``1..513`` and one
``ok N - name`` line per test): `read_tap` finds the stream and its results, so the outer
parser can report the inner tests instead of the one outer test.

| TAP line (at the start of a line)   | TestStatus   |
|-------------------------------------|--------------|
| ``ok N - name``                     | PASSED       |
| ``not ok N - name``                 | FAILED       |
| ``ok|not ok N - name # SKIP why``   | SKIPPED      |
| ``not ok N - name # TODO``          | XFAIL        |
| ``ok N - name # TODO``              | XPASS        |

The name is the description without the ``-`` separator and without a ``# ...`` directive or
comment (``\\#`` is a literal ``#``); a line without a description is named by its number.
Indented lines (TAP 14 subtests, YAML diagnostics) and ``#`` comments are not results.
Output is a TAP stream when it has a plan line ``1..N`` (or a ``TAP version`` line) and at least
one result line. Anomalies: no plan, a plan that disagrees with the number of result lines
(the program was cut short, or printed more), ``Bail out!``.
Sources: testanything.org TAP 13 and TAP 14 specifications; libuv ``test/runner.c``
(`log_tap_result`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from envpool.testrun.outcome import TestStatus

__all__ = ["TapStream", "read_tap"]

_RESULT = re.compile(r"^(not )?ok\b(?:\s+(\d+))?\s*(?:-\s*)?(.*?)\s*$")
_PLAN = re.compile(r"^1\.\.(\d+)\s*(?:#.*)?$")
_VERSION = re.compile(r"^TAP version \d+\s*$", re.I)
_BAIL = re.compile(r"^Bail out!\s*(.*?)\s*$")
_COMMENT = re.compile(r"(?<!\\)#\s*(.*)$")


@dataclass
class TapStream:
    """The results of one TAP stream: ``(name, status)`` in order (a name may repeat), the
    planned count (None without a plan), and why the stream must not be trusted."""

    results: list[tuple[str, TestStatus]] = field(default_factory=list)
    planned: int | None = None
    anomalies: list[str] = field(default_factory=list)


def _result(failed: bool, number: str | None, text: str) -> tuple[str, TestStatus]:
    m = _COMMENT.search(text)
    name, directive = (text[:m.start()], m.group(1)) if m else (text, "")
    name = name.strip().replace("\\#", "#") or (number or "")
    word = directive.split(None, 1)[0].upper() if directive.strip() else ""
    if word.startswith("SKIP"):
        return name, TestStatus.SKIPPED
    if word.startswith("TODO"):
        return name, TestStatus.XFAIL if failed else TestStatus.XPASS
    return name, TestStatus.FAILED if failed else TestStatus.PASSED


def read_tap(lines: Iterable[str]) -> TapStream | None:
    """The TAP stream in `lines` (a program's output, one line each, no prefixes), or None when
    the output is no TAP stream (module docstring). Never raises."""
    stream = TapStream()
    versioned = False
    bailed: str | None = None
    for line in lines:
        line = line.rstrip("\r\n")
        m = _RESULT.match(line)
        if m:
            stream.results.append(_result(bool(m.group(1)), m.group(2), m.group(3)))
            continue
        p = _PLAN.match(line)
        if p and stream.planned is None:
            stream.planned = int(p.group(1))
        elif _VERSION.match(line):
            versioned = True
        elif bailed is None and (b := _BAIL.match(line)):
            bailed = b.group(1) or "no reason given"
    if not stream.results or (stream.planned is None and not versioned):
        return None
    if stream.planned is None:
        stream.anomalies.append(f"TAP: no plan line (1..N) in a stream of {len(stream.results)} results: "
                                "the program was cut short")
    elif stream.planned != len(stream.results):
        stream.anomalies.append(f"TAP: the plan says {stream.planned} tests, {len(stream.results)} reported")
    if bailed is not None:
        stream.anomalies.append(f"TAP: Bail out! {bailed}")
    return stream
