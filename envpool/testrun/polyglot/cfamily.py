"""C/C++: CTest (``--output-junit`` and console), GoogleTest console, automake ``make check``.

Test ids:
- CTest: the test name given to ``add_test`` (``format-test``, ``tests/shtest``). In fmt one
  CTest test is one GoogleTest binary, so gold ids at case level need the GoogleTest parser.
- GoogleTest: ``Suite.Case`` as GoogleTest prints it, with typed/parameterised prefixes and
  suffixes (``is_string_test/0.is_string``, ``Values/ParamTest.works/1``); SWE-bench
  Multilingual's fmt gold form.
- automake (jq's ``make check``): the test script path (``tests/shtest``): a script that runs
  many cases counts as one test. `script_results` does the same for scripts run one by one.

Status mapping:

| CTest (console / JUnit `status`)                 | GoogleTest     | automake      | TestStatus |
|--------------------------------------------------|----------------|---------------|------------|
| `Passed` / `run`                                 | `[       OK ]` | `PASS:`       | PASSED     |
| `***Failed`, `***Timeout`, `***Exception: ...` / `fail` | `[  FAILED  ]` | `FAIL:`, `XPASS:` | FAILED |
| `***Not Run` (executable missing: build failed) / `notrun` without skip | -- | -- | FAILED |
| `***Skipped`, `Not Run (Disabled)` / `notrun` with skip | `[  SKIPPED ]` | `SKIP:` | SKIPPED |
| --                                               | --             | `XFAIL:`      | XFAIL      |
| --                                               | --             | `ERROR:`      | ERROR      |

automake's XPASS (expected to fail, passed) fails ``make check``, so it is FAILED here.
Anomalies: CTest's ``N% tests passed, F tests failed out of T``, GoogleTest's ``[==========] N
tests from M test suites ran`` and automake's ``# TOTAL: N`` differ from the lines parsed.
Sources: CTest docs (``--output-junit``), GoogleTest's `PrettyUnitTestResultPrinter`,
automake manual (Parallel Test Harness, Testsuite summary).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from envpool.testrun.polyglot.common import Result, count_mismatch, junit_cases, report_parser
from envpool.testrun.outcome import TestStatus


@report_parser(raw=True)
def parse_ctest_junit(raw: bytes) -> Result:
    """Parse ``ctest --output-junit file.xml`` (CMake >= 3.21).

    Shape: ``<testsuite><testcase name="t" classname="t" status="run|fail|notrun">`` with
    ``<failure>`` or ``<skipped message=...>``. ``notrun`` with ``Unable to find executable``
    (its binary did not build) is FAILED; other ``notrun`` (``SKIP_RETURN_CODE``, disabled)
    SKIPPED.
    """
    res = Result(source="junit")
    for case in junit_cases(raw):
        st = case.status
        if case.attrs.get("status") == "notrun" and "Unable to find executable" in case.message:
            st = TestStatus.FAILED
        res.add(case.name, st)
    return res


_CTEST = re.compile(r"^\s*\d+/\d+\s+Test\s+#\d+:\s+(?P<name>.+?)\s+\.+\s*(?P<rest>.*?)\s+"
                    r"(?P<secs>\d+(?:\.\d+)?) sec\s*$")
_CTEST_SUMMARY = re.compile(r"^\d+% tests passed, (\d+) tests? failed out of (\d+)")


def _ctest_status(rest: str) -> TestStatus:
    rest = rest.lstrip("*").strip()
    if rest.startswith("Passed"):
        return TestStatus.PASSED
    if rest.startswith("Skipped") or rest.startswith("Not Run (Disabled)"):
        return TestStatus.SKIPPED
    return TestStatus.FAILED  # Failed, Timeout, Exception: ..., Not Run (missing executable)


@report_parser()
def parse_ctest_log(text: str) -> Result:
    """Parse CTest's console lines ``1/27 Test  #1: name ......   Passed    0.01 sec``.

    Cross-checked against ``N% tests passed, F tests failed out of T`` (summed over runs).
    """
    res = Result(source="log")
    parsed = 0
    total: int | None = None
    for line in text.splitlines():
        m = _CTEST.match(line)
        if m:
            res.add(m.group("name"), _ctest_status(m.group("rest")))
            parsed += 1
            continue
        m = _CTEST_SUMMARY.match(line.strip())
        if m:
            total = (total or 0) + int(m.group(2))
    count_mismatch(res, "ctest total", total, parsed)
    return res


_GTEST = re.compile(r"^(?:\d+: )?\[ *(?P<tag>RUN|OK|FAILED|SKIPPED) *\] (?P<name>\S+?)"
                    r"(?:, where .*)?(?: \(\d+ ms\))?\s*$")
_GTEST_RAN = re.compile(r"^(?:\d+: )?\[=+\] (\d+) tests? from \d+ test (?:suites?|cases?) ran")
_GTEST_WORD = {"OK": TestStatus.PASSED, "FAILED": TestStatus.FAILED, "SKIPPED": TestStatus.SKIPPED}


@report_parser()
def parse_gtest_log(text: str) -> Result:
    """Parse GoogleTest console output (binaries run directly, or under ``ctest -V`` whose
    ``N: `` line prefixes are accepted).

    GoogleTest runs one test at a time: a result line counts only for the test named by the
    last ``[ RUN      ]`` line (a test printing ``[       OK ] X`` cannot add X). The summary
    lists after ``[==========]`` repeat names and are not read. A test with ``[ RUN ]`` and no
    result (the binary crashed) is FAILED. ``[==========] N tests from M test suites ran`` is
    cross-checked (summed over binaries).
    """
    res = Result(source="log")
    running: str | None = None
    parsed = 0
    ran: int | None = None
    for line in text.splitlines():
        m = _GTEST_RAN.match(line)
        if m:
            ran = (ran or 0) + int(m.group(1))
            if running is not None:
                res.add(running, TestStatus.FAILED)
                parsed += 1
            running = None
            continue
        m = _GTEST.match(line)
        if not m:
            continue
        tag, name = m.group("tag"), m.group("name")
        if tag == "RUN":
            if running is not None:  # previous test never finished: crashed
                res.add(running, TestStatus.FAILED)
                parsed += 1
            running = name
        elif name == running:
            res.add(name, _GTEST_WORD[tag])
            parsed += 1
            running = None
    if running is not None:
        res.add(running, TestStatus.FAILED)
        parsed += 1
    count_mismatch(res, "googletest tests ran", ran, parsed)
    return res


_AUTOMAKE = re.compile(r"^(PASS|FAIL|SKIP|XFAIL|XPASS|ERROR): (\S.*?)\s*$")
_AM_TOTAL = re.compile(r"^# TOTAL: +(\d+)\s*$")
_AM_WORD = {"PASS": TestStatus.PASSED, "FAIL": TestStatus.FAILED, "SKIP": TestStatus.SKIPPED,
            "XFAIL": TestStatus.XFAIL, "XPASS": TestStatus.FAILED, "ERROR": TestStatus.ERROR}


@report_parser()
def parse_automake_log(text: str) -> Result:
    """Parse ``make check`` with automake's parallel harness: ``PASS: tests/shtest`` per script.

    The scripts' own output goes to ``<script>.log`` files, not the console, so it cannot add
    results. ``# TOTAL: N`` of each ``Testsuite summary`` (jq also checks its bundled oniguruma)
    is summed and cross-checked.
    """
    res = Result(source="log")
    parsed = 0
    total: int | None = None
    for line in text.splitlines():
        m = _AUTOMAKE.match(line)
        if m:
            res.add(m.group(2), _AM_WORD[m.group(1)])
            parsed += 1
            continue
        m = _AM_TOTAL.match(line)
        if m:
            total = (total or 0) + int(m.group(1))
    count_mismatch(res, "automake # TOTAL", total, parsed)
    return res


def script_results(exit_codes: Mapping[str, int | None], skip_code: int = 77) -> Result:
    """Test scripts run one by one: ``{script: exit code}`` -> a `Result` (``.report()``).

    0 -> PASSED, `skip_code` (automake's 77) -> SKIPPED, None (killed) or other -> FAILED.
    """
    res = Result(source="log")
    for script, code in exit_codes.items():
        res.add(script, TestStatus.PASSED if code == 0 else
                TestStatus.SKIPPED if code == skip_code else TestStatus.FAILED)
    return res
