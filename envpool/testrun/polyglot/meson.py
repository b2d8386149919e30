"""Meson: ``meson test``'s JSON log, ``<builddir>/meson-logs/testlog.json`` (class S35).

Shape: one JSON object per line, one line per test as it ends (mesonbuild/mtest.py
`JsonLogfileBuilder`)::

    {"name": "unit - calc:add", "stdout": "...", "result": "OK", "is_fail": false,
     "starttime": ..., "duration": ..., "returncode": 0, "env": {...}, "command": [...]}

Test ids: the ``name`` field as meson writes it, which is how ``meson test --list`` and its
console print the test (`TestHarness.get_pretty_suite`); its form depends on meson's release:
``<project>:<test name>`` behind ``<suite>[+<suite>...] - `` when the test has suites of its own
(newer releases: ``unit - calc:add``, ``unit+slow - calc:skipme``, ``calc:mul``), or
``<project>[:<suite>+...] / <test name>`` when the build has several suites, else the bare test
name (older ones, e.g. Debian bookworm's 1.0.1: ``calc:unit / add``, ``calc / mul``). One build
uses one meson, so both sides of a row have the same form. A test that runs a TAP or GoogleTest
program is one id (meson's own verdict of the whole program).

Status mapping (mtest's `TestResult`):

| meson ``result``                 | TestStatus |
|----------------------------------|------------|
| ``OK``                           | PASSED     |
| ``FAIL``, ``TIMEOUT``, ``INTERRUPT``, ``UNEXPECTEDPASS`` | FAILED |
| ``ERROR``                        | ERROR      |
| ``SKIP``, ``IGNORED``            | SKIPPED    |
| ``EXPECTEDFAIL``                 | XFAIL      |

``UNEXPECTEDPASS`` (a ``should_fail`` test that passed) fails ``meson test``, so it is FAILED
here, as automake's XPASS. A test whose output (``stdout`` / ``stderr``) holds the line of the stub
swemint's helper (``recipes/meson_tests.py``) puts in place of a program that did not build
(`UNBUILT`; class S34 under Meson: the test_patch's test uses the fix's new API, and meson refuses
to run a test whose program does not exist) is also a unit that failed to build: ``<id> [build
failed]`` is a collection error (a label no id matches), its status meson's (the stub fails).
A line ``swemint-meson-tests: not built: <path> [compiled by no target]`` (`NOT_BUILT`; class
S38: a touched test source no target of the build compiles, so the helper ran nothing and wrote
these lines, on its console and as the log) is a collection error ``<path> [compiled by no
target]``: the side reports those tests as not built. Other lines that are not such JSON
objects (console output before a ``cat`` of the log: a row's stored command) are skipped; the
helper prints ninja's and meson's output behind ``| `` and its own lines behind
``swemint-meson-tests: ``, so no line the code under test prints (meson repeats a failing test's
output) starts with ``{`` or is such a line. In the log itself a test's output is a JSON string
inside its record: only meson's top-level records are read.
Anomalies: a line that starts like a test record (``{"name": ``) but is not JSON (the log was
cut). Source: mesonbuild/mtest.py (`TestResult`, `JsonLogfileBuilder`,
`get_pretty_suite`), meson's Unit-tests documentation.
"""

from __future__ import annotations

import json

from envpool.testrun.outcome import TestStatus
from envpool.testrun.polyglot.common import Result, report_parser

RESULTS = {"OK": TestStatus.PASSED, "FAIL": TestStatus.FAILED, "TIMEOUT": TestStatus.FAILED,
           "INTERRUPT": TestStatus.FAILED, "UNEXPECTEDPASS": TestStatus.FAILED, "ERROR": TestStatus.ERROR,
           "SKIP": TestStatus.SKIPPED, "IGNORED": TestStatus.SKIPPED, "EXPECTEDFAIL": TestStatus.XFAIL}
"""meson's ``result`` -> TestStatus (module table)."""

UNBUILT = "swemint-meson-tests: unbuilt"
"""The line the helper's stub for a program that did not build prints."""
NOT_BUILT = "swemint-meson-tests: not built: "
"""The line the helper prints (and writes as the log) for each touched source no target compiles (S38)."""


@report_parser()
def parse_meson_testlog(text: str) -> Result:
    """Parse ``meson-logs/testlog.json`` (module doc: ids, statuses, the helper's unbuilt stubs).
    Results meson has not finished (``PENDING`` / ``RUNNING``, never written by meson) and
    unknown results are skipped."""
    res = Result(source="json")
    for line in text.split("\n"):
        line = line.strip()
        if line.startswith(NOT_BUILT):  # S38: only the helper starts a line so (meson's output is quoted)
            res.unit_failed(line[len(NOT_BUILT):].strip())
            continue
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            if line.startswith('{"name": '):
                res.anomalies.append(f"meson testlog: a test record that is not JSON (cut?): {line[:120]}")
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not isinstance(obj.get("result"), str):
            continue
        status = RESULTS.get(obj["result"])
        if status is None:
            continue
        res.add(obj["name"], status)
        if any(isinstance(obj.get(k), str) and UNBUILT in obj[k] for k in ("stdout", "stderr")):
            res.unit_failed(f"{obj['name'].strip()} [build failed]")
    return res


PARSERS = {"meson_testlog": parse_meson_testlog}
