"""Rust: `cargo test` (libtest) console output, checked against each binary's totals; nextest JUnit.

Test ids: the path libtest prints, ``a::b::tests::c`` (unit tests: module path inside the crate;
integration tests: path inside the test file, e.g. ``regression::r2208``; doc tests:
``src/lib.rs - add (line 5)``). The ``- should panic`` marker is not part of the id. The binary
is not part of the id (SWE-bench's gold ids omit it); the same name in two binaries combines
with `worse`.

Status mapping:

| libtest                       | TestStatus |
|-------------------------------|------------|
| `ok`                          | PASSED     |
| `FAILED`                      | FAILED     |
| `ignored` (with a reason too) | SKIPPED    |
| crate fails to compile: known ids | FAILED |

Anomalies (the report then has `tests_ran=False`): a binary whose ``test result: ... N passed;
M failed; K ignored`` totals differ from the lines parsed (a test printing ``test x ... ok``
under ``--nocapture``, a mangled line); a binary with no result line (crashed); cargo stopping
at the first failing binary (without ``--no-fail-fast`` later binaries never ran, so their tests
would look absent before and new after): the rerun hint right after a binary that failed or has
no result line, with no binary after it (cargo before 1.6x prints its one hint of a
``--no-fail-fast`` run at the very end, after binaries that passed: no anomaly). Sources: libtest's `formatters/pretty.rs`, cargo's
`ops/cargo_test.rs`, nextest's JUnit docs (nexte.st/docs/machine-readable/junit).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from envpool.testrun.polyglot.common import Result, junit_cases, report_parser
from envpool.testrun.outcome import TestStatus

_TEST = re.compile(r"^test (?P<name>.+?) \.\.\. ?(?P<rest>.*)$")
_TEST_INSIDE = re.compile(r"(?:^|(?<=\s))test (?P<name>\S.*?) \.\.\. (?P<st>ok|FAILED|ignored)")
_STATUS = re.compile(r"^(ok|FAILED|ignored(?:, .*)?)$")
_TOTALS = re.compile(r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored;")
_BINARY = re.compile(r"^\s*(Running|Doc-tests) (.+?)\s*$")
_NO_COMPILE = re.compile(r"^error: could not compile `([^`]+)`(?: \(([^)]*)\))?")
_WORD = {"ok": TestStatus.PASSED, "FAILED": TestStatus.FAILED, "ignored": TestStatus.SKIPPED}


def _word(rest: str) -> TestStatus | None:
    m = _STATUS.match(rest.strip())
    return _WORD[m.group(1).split(",")[0]] if m else None


def libtest_name(name: str) -> str:
    """The test id from a libtest line's name part (drops `` - should panic``)."""
    name = name.strip()
    for suffix in (" - should panic", " - should panic with message"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


@report_parser()
def parse_cargo_test(text: str, known_tests: Iterable[str] | None = None, no_fail_fast: bool = False) -> Result:
    """Parse the console output of ``cargo test [--no-fail-fast] [-- --nocapture]``.

    Per binary (``Running <target>`` / ``Doc-tests <crate>``): ``test <name> ... <status>`` lines
    until ``failures:`` (the captured output of failed tests follows and is not read), then
    ``test result:``. With ``--nocapture`` output interleaves: a test's own output can sit
    between ``test <name> ...`` and its status (which then ends that or a later line), and a
    result line can appear in the middle of another line; the totals catch what goes wrong.
    ``error: could not compile `crate` (test "x")`` lists ``crate (test "x") [build failed]`` and
    gives every known id without a result FAILED (cargo runs no binary when any fails to build),
    once the whole output is read: several `cargo test` runs joined in one command (one per
    package) may report a known id as passing after another package failed to build.
    `no_fail_fast` (parser option: every ``cargo test`` of the command has ``--no-fail-fast``,
    as swemint's Rust plans do): a failing binary never stops the run, so no rerun hint is read
    as one -- old cargo prints the hint of its one failed target at the end whether or not the
    run stopped there.
    """
    res = Result(source="log")
    binary = None
    counts = [0, 0, 0]
    in_run: bool | str = False  # True: reading results; "failures": skipping captured output
    pending: str | None = None
    last_failed_binary = None
    binary_failed = False  # the current binary's result line said FAILED
    build_failed = False
    for line in text.splitlines():
        m = _BINARY.match(line)
        if m:
            if in_run and binary:
                res.anomalies.append(f"cargo test: {binary} printed no `test result` line")
            binary, counts, in_run, pending, last_failed_binary = m.group(2), [0, 0, 0], True, None, None
            binary_failed = False
            continue
        m = _NO_COMPILE.match(line)
        if m:
            label = m.group(1) + (f" ({m.group(2)})" if m.group(2) else "")
            res.unit_failed(f"{label} [build failed]")
            build_failed = True  # known ids are failed at the end: a later cargo run may report them
            continue
        if line.startswith("error: test failed, to rerun pass"):
            if binary_failed or in_run:  # else old cargo's summary of an earlier binary, at the end
                last_failed_binary = binary
            continue
        if re.match(r"^error: \d+ targets? failed", line):
            last_failed_binary = None
            continue
        if not in_run:
            continue
        m = _TOTALS.match(line)
        if m:
            expected = tuple(int(g) for g in m.groups())
            binary_failed = line.startswith("test result: FAILED")
            if expected != tuple(counts):
                res.anomalies.append(
                    f"cargo test: {binary}: totals {expected[0]} passed, {expected[1]} failed, "
                    f"{expected[2]} ignored, but {counts[0]}/{counts[1]}/{counts[2]} parsed")
            in_run = False
            continue
        if line.strip() == "failures:":
            pending, in_run = None, "failures"
            continue
        if in_run == "failures":
            continue
        m = _TEST.match(line)
        if m and not line.startswith("test result:"):
            st = _word(m.group("rest"))
            tail = re.search(r"(ok|FAILED|ignored)$", m.group("rest"))
            if st is None and tail:  # the test's output, then its status, on this line
                st = _WORD[tail.group(1)]
            if st is None:
                pending = libtest_name(m.group("name"))
                continue
            _record(res, counts, libtest_name(m.group("name")), st)
            continue
        m = _TEST_INSIDE.search(line)
        if m:  # --nocapture: a result line printed in the middle of a test's output
            _record(res, counts, libtest_name(m.group("name")), _WORD[m.group("st")])
            continue
        if pending is not None:
            st = _word(line)
            tail = re.search(r"(ok|FAILED|ignored)$", line)
            if st is None and tail:
                st = _WORD[tail.group(1)]
            if st is not None:
                _record(res, counts, pending, st)
                pending = None
    if build_failed:
        res.fail_known(known_tests, TestStatus.FAILED)
    if in_run and binary:
        res.anomalies.append(f"cargo test: {binary} printed no `test result` line (run cut short)")
    if last_failed_binary is not None and not no_fail_fast:
        res.anomalies.append(f"cargo test stopped after the failing binary {last_failed_binary}: "
                             "later binaries never ran (run with --no-fail-fast)")
    return res


def _record(res: Result, counts: list[int], name: str, st: TestStatus) -> None:
    res.add(name, st)
    counts[{TestStatus.PASSED: 0, TestStatus.FAILED: 1, TestStatus.SKIPPED: 2}[st]] += 1


@report_parser(raw=True)
def parse_nextest_junit(raw: bytes) -> Result:
    """Parse cargo-nextest's JUnit XML (``[profile.ci.junit] path = "junit.xml"``).

    Shape: ``<testsuites><testsuite name="<binary id>"><testcase name="<test path>"
    classname="<binary id>">`` with ``<failure>``/``<error>``/``<skipped>``; retries appear as
    ``<flakyFailure>`` (final pass) or ``<rerunFailure>`` (still failing) and do not change the
    final status. Id = the testcase name (same form as `parse_cargo_test`).
    """
    res = Result(source="junit")
    for case in junit_cases(raw):
        res.add(libtest_name(case.name), case.status)
    return res


PARSERS = {"cargo_test": parse_cargo_test, "nextest_junit": parse_nextest_junit}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
