"""AVA's TAP reporter (``ava --tap``): one ``ok`` / ``not ok`` line per test.

Test ids are AVA's titles as its TAP reporter prints them: ``<file> › <title>`` when the run has
several test files (the file without its extension, relative to the test folder AVA found,
e.g. ``a › adds`` for ``test/a.js``), the bare ``<title>`` for a run of one file -- the same
files run on both sides, so both sides use the same form.

| TAP line                                         | TestStatus / meaning            |
|--------------------------------------------------|---------------------------------|
| ``ok N - title``                                 | PASSED                          |
| ``ok N - title # SKIP``                          | SKIPPED                         |
| ``not ok N - title``                             | FAILED                          |
| ``not ok N - title # TODO``                      | not a result (``test.todo``)    |
| ``not ok N - <file> exited with a non-zero ...`` | the file failed: a unit error   |
| ``not ok N - SomeError: message``                | an uncaught exception: unit error |
| ``not ok N - file:///path/x.js:LINE``            | an error while the file loads (AVA 6): unit error |
| ``not ok N - No tests found in <file>, ...``     | a file with no test: unit error   |

``# tests N`` (results without todos and unit errors) is cross-checked; ``1..N`` ends the run.
Source: AVA's ``lib/reporters/tap.js`` (``supertap``), seen with ava 6.4.

**The reporter's crash.** AVA 6's TAP reporter dies on a timeout (`ava_console.tap_crashed`: no
plan, a ``lib/reporters/tap.js`` stack frame); the node test command then prints
`ava_console.RERUN_MARKER` and runs the same tests with AVA's default reporter. Output whose TAP
part (before the first marker line) crashed is parsed after the marker by
`ava_console.parse_ava_console` (same ids); a marker after a TAP stream that did not crash is an
anomaly (something printed it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from envpool.testrun.outcome import TestStatus
from envpool.testrun.polyglot.ava_console import RERUN_MARKER, parse_ava_console, tap_crashed
from envpool.testrun.polyglot.common import Result, count_mismatch, report_parser

_LINE = re.compile(r"^(not )?ok \d+ - (.*?)\s*$")
_DIRECTIVE = re.compile(r"^(.*?)\s+# (SKIP|TODO)\b.*$", re.I)
_EXITED = re.compile(r"^(.+?) exited with a non-zero exit code: -?\d+$|^(.+?) exited due to \w+$")
_UNCAUGHT = re.compile(r"^(?:[A-Z][a-z0-9]*)*(?:Error|Exception): ")
_NO_TESTS = re.compile(r"^No tests found in (\S+?),")  # a file that declares no test (an `_` helper named to AVA)
_AT_LOAD = re.compile(r"^file://\S+:\d+$")  # AVA 6: an error thrown while a file loads, titled by its location
_TESTS = re.compile(r"^# tests (\d+)\s*$")
_PLAN = re.compile(r"^1\.\.\d+\s*$")


@report_parser()
def parse_ava_tap(text: str, known_tests: Iterable[str] | None = None) -> Result:
    """Parse ``ava --tap`` output (module docstring), or after `RERUN_MARKER` the console rerun
    of a crashed TAP run (`known_tests` passed on to `parse_ava_console`). A run without the
    closing ``1..N`` plan (AVA killed midway, or its reporter dead with no rerun) is an anomaly."""
    lines = text.splitlines()
    mark = next((i for i, ln in enumerate(lines) if ln.strip() == RERUN_MARKER), None)
    if mark is not None:  # the first: what a test prints in the console run cannot move it
        tap = "\n".join(lines[:mark])
        if tap_crashed(tap):
            return parse_ava_console.core("\n".join(lines[mark + 1:]), known_tests=known_tests)
        res = _parse_tap(tap)
        res.anomalies.append("ava: a console-rerun marker after a TAP stream whose reporter did not crash")
        return res
    return _parse_tap(text)


def _parse_tap(text: str) -> Result:
    res = Result(source="log")
    total: int | None = None
    parsed, planned = 0, False
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            failed, title = bool(m.group(1)), m.group(2)
            d = _DIRECTIVE.match(title)
            if d and d.group(2).upper() == "TODO":
                continue
            if d:
                res.add(d.group(1), TestStatus.SKIPPED)
                parsed += 1
                continue
            exited = _EXITED.match(title)
            if failed and exited:
                res.unit_failed(exited.group(1) or exited.group(2))
                continue
            if failed and (nt := _NO_TESTS.match(title)):
                res.unit_failed(nt.group(1))
                continue
            if failed and (_UNCAUGHT.match(title) or _AT_LOAD.match(title)):
                res.unit_failed(f"uncaught: {title[:200]}")
                continue
            res.add(title, TestStatus.FAILED if failed else TestStatus.PASSED)
            parsed += 1
            continue
        t = _TESTS.match(line)
        if t:
            total = int(t.group(1))
        elif _PLAN.match(line):
            planned = True
    if (parsed or res.collection_errors) and not planned:
        crashed = " (AVA's TAP reporter crashed)" if tap_crashed(text) else ""
        res.anomalies.append(f"ava: the TAP stream has no closing plan (1..N): the run was cut short{crashed}")
    count_mismatch(res, "ava tests", total, parsed)
    return res


PARSERS = {"ava_tap": parse_ava_tap}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
