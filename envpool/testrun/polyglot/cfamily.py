"""C/C++: CTest (``--output-junit`` and console), GoogleTest console, automake ``make check``.

Test ids:
- CTest: the test name given to ``add_test`` (``format-test``, ``tests/shtest``). In fmt one
  CTest test is one GoogleTest binary, so gold ids at case level need the GoogleTest parser.
- A CTest test whose output is a TAP stream (`envpool.testrun.polyglot.tapstream`: a plan
  ``1..N`` and ``ok`` / ``not ok`` lines; libuv's ``uv_test`` runs ``uv_run_tests``, 513 tests)
  is replaced by the tests of that stream, ``<ctest test>::<TAP name>``
  (``uv_test::udp_mmsg``), with the TAP statuses; ctest's own status of it is not a result.
  The output is read from the JUnit ``<system-out>`` (the helper lifts ctest's size limits on
  it) or from ``ctest -V``'s ``N: `` lines (``--output-on-failure`` shows only failing tests'
  output, so its blocks are not read: the two sides would have different ids).
- GoogleTest: ``Suite.Case`` as GoogleTest prints it, with typed/parameterised prefixes and
  suffixes (``is_string_test/0.is_string``, ``Values/ParamTest.works/1``); SWE-bench
  Multilingual's fmt gold form.
- doctest: a CTest test whose binary is a doctest binary gets ids per test case and subcase
  (``basic usage > conversion to json via free-functions``; `doctest_xml`, `doctest_sections`)
  instead of its CTest name: ``recipes/cmake_tests.py`` runs it again with doctest's XML reporter and adds
  ``<swemint-doctest>`` sections after ctest's report (in the JUnit file, or after the console
  output: only sections after ctest's last summary line count there, so a test printing one
  cannot add results). Read by `ctest_junit`, `ctest_log` and `gtest_log`.
- Catch2: a CTest test whose binary is a Catch2 (v2 or v3) binary (gabime/spdlog's
  ``spdlog-utests``) gets ids per test case and section behind its name, in doctest's form,
  ``<ctest test>::<test case>`` and ``<ctest test>::<test case> > <section>``
  (``spdlog-utests::pattern formatter``; `catch2_xml`): the helper runs it again with Catch2's
  XML reporter and adds ``<swemint-catch2>`` sections, read as the doctest ones. A binary that
  stopped early (a crash inside a test case) keeps its test cases before the stop and its own
  CTest result, and reports ``<ctest test> [Catch2 run stopped early]`` as a unit that stopped;
  the ``known_tests`` rule below is not applied to a test with a Catch2 report.
- Boost.Test (class S36): a CTest test whose binary is a Boost.Test binary gets ids per test
  case in Boost.Test's own form, ``suite/sub/case`` (``calc/adds``, a data case's
  ``calc/sizes/_0``; `boost_junit`): the helper runs it again with Boost.Test's JUnit logger and
  adds ``<swemint-boost>`` sections, read as the doctest ones (a crash's rounds included).
- A target owning the touched files that failed to build (class S34: the test_patch's test uses
  the fix's new API): ``recipes/cmake_tests.py`` writes an ``<swemint-unbuilt target="T">``
  section (`UNBUILT`) of the collectors of the tests it would have run -- the GoogleTest ids the
  touched files declare (``S.N``; ``P/S.N`` and ``S`` cover parameterised and typed ids with
  ``/``), and the CTest tests running it whole -- each a collection error, so a test passing
  after is FAIL_TO_PASS. Read as the doctest sections (after the JUnit declaration; on a
  console only after the helper's `UNBUILT_ANCHOR` line, itself after ctest's last summary).
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
tests from M test suites ran`` and automake's ``# TOTAL: N`` differ from the lines parsed; a
TAP stream's own anomalies (plan versus results: the program was cut short), TAP output that
ctest cut (its ``[This part of the test output was removed ...]`` marker), and a CTest test
that failed while its complete TAP stream reports no failure (a crash after the last test, a
leak check: the inner results do not explain ctest's verdict). With ``known_tests``, a CTest
test known as a TAP stream from another run that prints none here (its binary did not build)
is a unit that failed (``<test> [no TAP output]``) and its known TAP ids get its status
(SKIPPED when ctest skipped it, else FAILED).
Sources: CTest docs (``--output-junit``), GoogleTest's `PrettyUnitTestResultPrinter`,
automake manual (Parallel Test Harness, Testsuite summary).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from xml.sax.saxutils import unescape as xml_unescape

from envpool.testrun.polyglot.boost_junit import boost_runs, split_boost_sections
from envpool.testrun.polyglot.catch2_xml import catch2_runs, split_catch2_sections
from envpool.testrun.polyglot.common import Result, count_mismatch, junit_cases, report_parser, to_text
from envpool.testrun.polyglot.doctest_sections import DoctestRuns, doctest_runs, section_pattern, split_sections
from envpool.testrun.polyglot.tapstream import read_tap
from envpool.testrun.outcome import TestStatus

_CUT = "[This part of the test output was removed since it exceeds the threshold"
_TAP_LINE = re.compile(r"^(?:not )?ok\b", re.M)
TAP_SEP = "::"
"""Between a CTest test's name and the name of a TAP test inside it (``uv_test::udp_mmsg``)."""


def add_ctest_result(res: Result, name: str, status: TestStatus, output: str,
                     known_tests: Iterable[str] | None = None) -> None:
    """Record CTest test `name` with ctest's `status` and its `output` (the test program's
    stdout/stderr) in `res`: the TAP tests of the output when it is a TAP stream, else `name`
    itself (module docstring: ids, anomalies, `known_tests`)."""
    stream = read_tap(output.splitlines()) if output else None
    if _CUT in output and (stream is not None or _TAP_LINE.search(output)):
        res.anomalies.append(f"ctest test {name}: ctest cut its output (the test output size limit), "
                             "so its TAP stream is incomplete")
    if stream is None:
        inner = [t for t in known_tests or () if t.startswith(name + TAP_SEP)]
        if not inner:
            res.add(name, status)
            return
        res.unit_failed(f"{name} [no TAP output]")
        res.fail_known(inner, TestStatus.SKIPPED if status is TestStatus.SKIPPED else TestStatus.FAILED)
        return
    for test, st in stream.results:
        res.add(name + TAP_SEP + test, st)
    res.anomalies.extend(f"ctest test {name}: {a}" for a in stream.anomalies)
    if (status is TestStatus.FAILED and not stream.anomalies
            and not any(st in (TestStatus.FAILED, TestStatus.ERROR) for _, st in stream.results)):
        res.anomalies.append(f"ctest test {name} failed, but its TAP stream of {len(stream.results)} "
                             "tests reports no failure")


_XML_ESC = "[NON-XML-CHAR-0x1B]"
"""How ctest writes an ESC byte into its XML (colour codes are then stripped as in consoles)."""


@report_parser(raw=True)
def parse_ctest_junit(raw: bytes, known_tests: Iterable[str] | None = None) -> Result:
    """Parse ``ctest --output-junit file.xml`` (CMake >= 3.21).

    Shape: ``<testcase name="t" classname="t" status="run|fail|notrun">`` with ``<failure>``
    or ``<skipped message=...>`` and the test's output in ``<system-out>``. ``notrun`` with
    ``Unable to find executable`` (its binary did not build) is FAILED; other ``notrun``
    (``SKIP_RETURN_CODE``, disabled) SKIPPED. A test whose ``<system-out>`` is a TAP stream
    gives its TAP tests instead (`add_ctest_result`); a test with doctest sections (module
    doc) gives their ids instead of its own; only sections after the last XML declaration
    count (the JUnit document's: a row's stored command prints ctest's console, where a test's
    output is raw, before it).
    """
    res = Result(source="junit")
    declaration = max(raw.rfind(b"<?xml"), 0)
    raw, unbuilt = unbuilt_units(raw, declaration)
    head, runs = _helper_runs(raw, declaration)
    runs.collection_errors += unbuilt
    for case in junit_cases(head):
        if case.name in runs.covered:
            continue
        st = case.status
        if case.attrs.get("status") == "notrun" and "Unable to find executable" in case.message:
            st = TestStatus.FAILED
        add_ctest_result(res, case.name, st, to_text(case.output.replace(_XML_ESC, "\x1b")),
                         None if case.name in runs.reported else known_tests)
    runs.add_to(res)
    return res


_CTEST = re.compile(r"^\s*\d+/\d+\s+Test\s+#(?P<num>\d+):\s+(?P<name>.+?)\s+\.+\s*(?P<rest>.*?)\s+"
                    r"(?P<secs>\d+(?:\.\d+)?) sec\s*$")
_VERBOSE = re.compile(r"^(\d+): ?(.*)$")
_CTEST_SUMMARY = re.compile(r"^\d+% tests passed, (\d+) tests? failed out of (\d+)")
_CTEST_SUMMARY_ANY = re.compile(r"^\s*\d+% tests passed, \d+ tests? failed out of \d+.*$", re.M)


def _helper_runs(raw: bytes | str, after: int) -> tuple[bytes | str, DoctestRuns]:
    """(`raw` without the helper's doctest, Catch2 and Boost.Test sections, what the sections from
    offset `after` on give, combined)."""
    head, sections = split_sections(raw, after=after)
    runs = doctest_runs(sections)
    for split, combine in ((split_catch2_sections, catch2_runs), (split_boost_sections, boost_runs)):
        head, more = split(head, after=after)  # the removed sections lay after `after`
        runs.merge(combine(more))
    return head, runs


UNBUILT = section_pattern(b"unbuilt")
"""``<swemint-unbuilt target="NAME">`` + one collector a line (XML-escaped) + ``</swemint-unbuilt>``:
what ``recipes/cmake_tests.py`` writes for an owner of the touched files that failed to build
(class S34; appended to the ``--output-junit`` file, else printed after `UNBUILT_ANCHOR`)."""
UNBUILT_ANCHOR = re.compile(r"^swemint-cmake-tests: the tests of the targets that failed to build follow$", re.M)
"""The helper's line right before its console sections (``cmake_tests.UNBUILT_ANCHOR``)."""


def unbuilt_units(raw: bytes | str, after: int | None) -> tuple[bytes | str, list[str]]:
    """(`raw` without the unbuilt sections read, their collectors in order): the sections from
    offset `after` on (None: none is read). Each collector is a collection error
    (`envpool.grading.in_failed_collector`: a GoogleTest id ``S.N``, a prefix its ids continue
    with ``/``, a CTest name), so the tests it covers fail on this side and pass-after ones are
    FAIL_TO_PASS; a test the other side does not report is never listed."""
    if after is None:
        return raw, []
    data = raw.encode("utf-8", errors="replace") if isinstance(raw, str) else raw
    if isinstance(raw, str):
        after = len(raw[:after].encode("utf-8", errors="replace"))
    out, labels, pos = [], [], 0
    for m in UNBUILT.finditer(data, after):
        out.append(data[pos:m.start()])
        pos = m.end()
        for line in m.group(2).decode("utf-8", errors="replace").splitlines():
            label = xml_unescape(line).strip()
            if label and label not in labels:
                labels.append(label)
    out.append(data[pos:])
    head = b"".join(out)
    return (head.decode("utf-8", errors="replace") if isinstance(raw, str) else head), labels


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The last match of `pattern` in `text`, None when there is none."""
    last = None
    for last in pattern.finditer(text):  # noqa: B007 (the last match is kept)
        pass
    return last


def _console_unbuilt(text: str, summary: re.Match[str] | None) -> tuple[str, list[str]]:
    """`unbuilt_units` of a console: only after the helper's last `UNBUILT_ANCHOR` line, and
    only when that lies after ctest's last summary line `summary` (a test's output, printed before
    it, cannot add a collector)."""
    anchor = _last(UNBUILT_ANCHOR, text)
    ok = anchor is not None and (summary is None or anchor.start() > summary.end())
    head, labels = unbuilt_units(text, anchor.end() if ok and anchor else None)
    return str(head), labels


def _console_doctest(text: str) -> tuple[str, DoctestRuns]:
    """(`text` without its doctest, Catch2 and unbuilt sections, what they give): only sections
    after ctest's last summary line count (a test's own output, printed before it, cannot add
    results). The log is searched for that line once: the unbuilt sections removed lie after it
    (after the helper's anchor), so it stands at the same offset without them."""
    summary = _last(_CTEST_SUMMARY_ANY, text)
    text, unbuilt = _console_unbuilt(text, summary)
    head, runs = _helper_runs(text, summary.end() if summary else len(text))
    runs.collection_errors += unbuilt
    return str(head), runs


def _ctest_status(rest: str) -> TestStatus:
    rest = rest.lstrip("*").strip()
    if rest.startswith("Passed"):
        return TestStatus.PASSED
    if rest.startswith("Skipped") or rest.startswith("Not Run (Disabled)"):
        return TestStatus.SKIPPED
    return TestStatus.FAILED  # Failed, Timeout, Exception: ..., Not Run (missing executable)


@report_parser()
def parse_ctest_log(text: str, known_tests: Iterable[str] | None = None) -> Result:
    """Parse CTest's console lines ``1/27 Test  #1: name ......   Passed    0.01 sec``.

    With ``ctest -V`` a test's output lines, ``N: <line>`` (N: its number, ``Test #N``), come
    before its result line; a test whose output is a TAP stream gives its TAP tests instead
    (`add_ctest_result`), a test with doctest sections (module doc) their ids. Cross-checked
    against ``N% tests passed, F tests failed out of T`` (summed over runs; it counts CTest
    tests).
    """
    res = Result(source="log")
    parsed = 0
    total: int | None = None
    output: dict[str, list[str]] = {}
    text, runs = _console_doctest(text)
    for line in text.splitlines():
        m = _CTEST.match(line)
        if m:
            out = "\n".join(output.pop(m.group("num"), []))
            if m.group("name") not in runs.covered:
                add_ctest_result(res, m.group("name"), _ctest_status(m.group("rest")), out,
                                 None if m.group("name") in runs.reported else known_tests)
            parsed += 1
            continue
        v = _VERBOSE.match(line)
        if v:
            output.setdefault(v.group(1), []).append(v.group(2))
            continue
        m = _CTEST_SUMMARY.match(line.strip())
        if m:
            total = (total or 0) + int(m.group(2))
    count_mismatch(res, "ctest total", total, parsed)
    runs.add_to(res)
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
    cross-checked (summed over binaries). Doctest sections after ctest's summary add their ids.
    """
    res = Result(source="log")
    running: str | None = None
    parsed = 0
    ran: int | None = None
    text, runs = _console_doctest(text)
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
    runs.add_to(res)
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


PARSERS = {"ctest_junit": parse_ctest_junit,
           "ctest_log": parse_ctest_log,
           "gtest_log": parse_gtest_log,
           "automake_log": parse_automake_log}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
