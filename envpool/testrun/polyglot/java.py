"""Java: Surefire / Gradle JUnit XML, Gradle's console test events, Maven's console per class,
Ant's junit reports (XML, else its plain console; ids ``method(pkg.Class)``, `parse_ant_junit`).

Test ids: ``<fully qualified class>#<method>`` (Surefire's ``-Dtest=Class#method`` form and
SWE-bench Multilingual's gson gold form), e.g. ``com.google.gson.stream.JsonWriterTest#testX``.
Nested classes keep ``$`` (``com.example.CalcTest$Inner#testInner``); JUnit 5 method names lose a
trailing ``()`` (Gradle writes ``testAdd()``, Surefire ``testAdd``); parameterised invocations
keep their suffix (``testParam(int)[2]``). Gold ids that list only classes (javaparser:
``NodeTest``) match through `gold.gold_match`. The Maven console fallback gives class ids
(``com.example.CalcTest``) plus ``Class#method`` ids for the failures it names.

Status mapping:

| JUnit XML          | Gradle console | Maven console (per class)            | TestStatus |
|--------------------|----------------|--------------------------------------|------------|
| no child           | `PASSED`       | no failure/error, not all skipped    | PASSED     |
| `<failure>`        | `FAILED`       | `Failures: n>0` / `<<< FAILURE!`     | FAILED     |
| `<error>`          | --             | `Errors: n>0` / `<<< ERROR!`         | ERROR      |
| `<skipped>`        | `SKIPPED`      | `Skipped` == `Tests run`             | SKIPPED    |
| test sources fail to compile: known ids | FAILED                       |            |

Sources: Surefire XSD (surefire-test-report-3.0.xsd), Gradle `TestLogging` events, Maven
Surefire console (`-- in Class`, 3.x; `- in Class`, 2.x).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from envpool.testrun.polyglot.common import Result, count_mismatch, junit_cases, report_parser, to_text
from envpool.testrun.outcome import TestStatus


def java_id(classname: str, method: str) -> str:
    """``Class#method`` with a trailing ``()`` removed from the method."""
    method = method.strip()
    if method.endswith("()"):
        method = method[:-2]
    return f"{classname.strip()}#{method}" if classname.strip() else method


BUILD_FAILED_MARK = "<!-- swemint: maven build failed -->"
"""The line the Maven route's test command appends to the report when Maven's console shows a
compile or testCompile failure (no Surefire XML is written for that module)."""


@report_parser(raw=True)
def parse_java_junit(raw: bytes, known_tests: Iterable[str] | None = None) -> Result:
    """Parse Surefire (``target/surefire-reports/TEST-*.xml``) or Gradle
    (``build/test-results/test/TEST-*.xml``) JUnit XML; several files may be concatenated.

    Shape: ``<testsuite name=...><testcase name="method" classname="pkg.Class">`` with
    ``<failure>``/``<error>``/``<skipped>``. The testcase's ``classname`` is used, not the suite
    name (Surefire files a @Nested class's run under one suite name). Surefire reruns
    (``<flakyFailure>``, ``<rerunFailure>``) do not change the final outcome. A
    `BUILD_FAILED_MARK` line (the test sources did not compile: google/gson-2024, whose new
    tests use the fix's enum constant) is a unit that failed to build, ``test sources [build
    failed]``, and gives every known id without a result FAILED -- as `parse_maven_log` does.
    """
    res = Result(source="junit")
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if BUILD_FAILED_MARK in text:
        res.unit_failed("test sources [build failed]")
        raw = text.replace(BUILD_FAILED_MARK, "").encode()
    for case in junit_cases(raw):
        res.add(java_id(case.classname or case.suite, case.name), case.status)
    if res.collection_errors:
        res.fail_known(known_tests, TestStatus.FAILED)
    return res


_GRADLE_WORDS = {"PASSED": TestStatus.PASSED, "FAILED": TestStatus.FAILED,
                 "SKIPPED": TestStatus.SKIPPED}
_GRADLE_EVENT = re.compile(r"^(?P<name>[\w$.]+(?: > .+?)+?) (?P<st>PASSED|FAILED|SKIPPED)(?P<glued>.*)$")
_GRADLE_NAME = re.compile(r"^(?P<name>[\w$.]+(?: > .+)+?)\s*$")
_GRADLE_STATUS = re.compile(r"^\s*(PASSED|FAILED|SKIPPED)")
_GRADLE_TOTALS = re.compile(r"^(\d+) tests? completed(?:, (\d+) failed)?(?:, (\d+) skipped)?")
MAVEN_COMPILE_FAILED = r"^\[ERROR\] (COMPILATION ERROR|Failed to execute goal [^ ]+:(testCompile|compile) )"
"""Maven's console line of a failed (test) compile: a POSIX extended regex (the Maven route's
test command greps for it, `BUILD_FAILED_MARK`) that is a Python regex too."""
_COMPILE_FAILED = re.compile(r"^> Task \S*:compile\w* FAILED|" + MAVEN_COMPILE_FAILED)


def gradle_id(event_name: str) -> str:
    """``com.x.CalcTest > testAdd()`` -> ``com.x.CalcTest#testAdd``; deeper levels (nested
    class, parameterised invocation) stay joined by `` > `` after the ``#``."""
    parts = [p.strip() for p in event_name.split(" > ")]
    return java_id(parts[0], " > ".join(p[:-2] if p.endswith("()") else p for p in parts[1:]))


@report_parser()
def parse_gradle_log(text: str, known_tests: Iterable[str] | None = None) -> Result:
    """Parse Gradle console test events (``testLogging { events "passed", "skipped", "failed" }``).

    Lines ``com.x.CalcTest > testAdd PASSED``; the status may be glued to the next output
    (``... PASSEDPicked up JAVA_TOOL_OPTIONS: ...``), or sit on the line after the name when
    output interleaves. ``STANDARD_OUT``/``STANDARD_ERROR`` event headers are not results.
    ``N tests completed, F failed, S skipped`` (printed when something failed) is cross-checked.
    A failed compile task (main or test sources) gives every known id FAILED.
    """
    res = Result(source="log")
    pending: str | None = None
    counts = {"total": 0, "failed": 0, "skipped": 0}
    totals: tuple[int, int, int] | None = None
    for line in text.splitlines():
        if line.startswith("> Task ") or " STANDARD_OUT" in line or " STANDARD_ERROR" in line:
            pending = None
            if _COMPILE_FAILED.match(line):
                res.unit_failed(line[len("> Task "):].split()[0] + " [build failed]")
                res.fail_known(known_tests, TestStatus.FAILED)
            continue
        m = _GRADLE_TOTALS.match(line.strip())
        if m:
            totals = (int(m.group(1)), int(m.group(2) or 0), int(m.group(3) or 0))
            continue
        m = _GRADLE_EVENT.match(line)
        name, word = (m.group("name"), m.group("st")) if m else (None, None)
        if m is None and pending is not None:
            sm = _GRADLE_STATUS.match(line)
            if sm:
                name, word = pending, sm.group(1)
        if name is None:
            nm = _GRADLE_NAME.match(line)
            pending = nm.group("name") if nm else pending if not line.strip() else None
            continue
        pending = None
        st = _GRADLE_WORDS[word]
        res.add(gradle_id(name), st)
        counts["total"] += 1
        counts["failed"] += st is TestStatus.FAILED
        counts["skipped"] += st is TestStatus.SKIPPED
    if totals is not None:
        count_mismatch(res, "gradle tests completed", totals[0], counts["total"])
        count_mismatch(res, "gradle failed", totals[1], counts["failed"])
        count_mismatch(res, "gradle skipped", totals[2], counts["skipped"])
    return res


_MVN = r"^(?:\[(?:INFO|ERROR|WARNING)\] )?"
_COUNTS = r"Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: (\d+)(?:, Flakes: \d+)?"
_CLASS_LINE = re.compile(_MVN + _COUNTS + r"(?:, Time elapsed: [^-<]*)?(?:<<< \w+!)?\s*-{1,2} in (\S+)\s*$")
_TOTAL_LINE = re.compile(_MVN + _COUNTS + r"\s*$")
_METHOD3 = re.compile(_MVN + r"(\S+?)\.([^.\s(]+(?:\(.*?\))?(?:\[[^\]]*\])*) -- Time elapsed: .*"
                      r"<<< (FAILURE|ERROR)!")
_METHOD2 = re.compile(_MVN + r"(\S+?)\((\S+)\)\s+Time elapsed: .*<<< (FAILURE|ERROR)!")


@report_parser()
def parse_maven_log(text: str, known_tests: Iterable[str] | None = None) -> Result:
    """Parse Maven's console: Surefire's per-class ``Tests run: r, Failures: f, Errors: e,
    Skipped: s, ... -- in pkg.Class`` lines (the fallback when no XML report is left).

    Class ids get the class's worst outcome (see the table) -- as Surefire prints them, so with
    JUnit 5 ``@Nested`` classes the outer class's counts may appear under the nested one; failure lines
    ``pkg.Class.method -- Time elapsed ... <<< FAILURE!`` (Surefire 3) or
    ``method(pkg.Class)  Time elapsed ... <<< FAILURE!`` (2.x) add ``Class#method`` ids. Classes
    with ``Tests run: 0`` get no id. The per-class runs must add up to the module's final
    ``Tests run:`` line (one per module; all of them are summed). ``COMPILATION ERROR`` /
    ``testCompile`` failures give every known id FAILED.
    """
    res = Result(source="log")
    per_class_total = 0
    final_total: int | None = None
    for line in text.splitlines():
        if _COMPILE_FAILED.match(line):
            res.unit_failed("test sources [build failed]")
            res.fail_known(known_tests, TestStatus.FAILED)
            continue
        m = _CLASS_LINE.match(line)
        if m:
            run, failures, errors, skipped = (int(g) for g in m.groups()[:4])
            per_class_total += run
            if run:
                st = (TestStatus.ERROR if errors else TestStatus.FAILED if failures else
                      TestStatus.SKIPPED if skipped == run else TestStatus.PASSED)
                res.add(m.group(5), st)
            continue
        m = _TOTAL_LINE.match(line)
        if m:
            final_total = (final_total or 0) + int(m.group(1))
            continue
        m = _METHOD3.match(line)
        if m:
            res.add(java_id(m.group(1), m.group(2)), _maven_word(m.group(3)))
            continue
        m = _METHOD2.match(line)
        if m:
            res.add(java_id(m.group(2), m.group(1)), _maven_word(m.group(3)))
    count_mismatch(res, "maven Tests run", final_total, per_class_total)
    return res


def _maven_word(word: str) -> TestStatus:
    return TestStatus.ERROR if word == "ERROR" else TestStatus.FAILED


def junit4_id(classname: str, method: str) -> str:
    """JUnit 4's display name ``method(pkg.Class)`` (the form Ant's junit task and lombok's gold
    ids use); the bare method when there is no class."""
    method = method.strip()
    return f"{method}({classname.strip()})" if classname.strip() else method


_ANT_PREFIX = re.compile(r"^\s*\[junit\] ?")
_ANT_SUITE = re.compile(r"^Testsuite: (\S+)")
_ANT_CASE = re.compile(r"^Testcase: (.+?)(?:\((\S+)\))? took [\d.,]+ ?sec")
_ANT_WORDS = {"FAILED": TestStatus.FAILED, "Caused an ERROR": TestStatus.ERROR, "SKIPPED": TestStatus.SKIPPED}
_ANT_SUITE_COUNTS = re.compile(r"^Tests run: (\d+), Failures: (\d+), Errors: (\d+)")


@report_parser(raw=True)
def parse_ant_junit(raw: bytes) -> Result:
    """Parse what Ant's ``<junit>`` / ``<junitlauncher>`` left: JUnit XML (``TEST-*.xml`` of the
    ``xml`` formatter, concatenable; read with `junit_cases`), preferred; else the console of
    the ``plain`` / ``brief`` formatter (``[junit] Testsuite: pkg.Class``, ``Testcase: m took
    0.01 sec`` followed by ``FAILED`` / ``Caused an ERROR`` / ``SKIPPED``).

    Ids: ``method(pkg.Class)`` (`junit4_id`, JUnit 4's display name). Console suites are
    cross-checked against their ``Tests run:`` line. Source: Ant manual, JUnit task, formatters.
    """
    if b"<testcase" in raw or b"<testsuite" in raw:
        res = Result(source="junit")
        for case in junit_cases(raw):
            res.add(junit4_id(case.classname or case.suite, case.name), case.status)
        return res
    res = Result(source="log")
    suite = ""
    last: str | None = None
    expected: int | None = None
    seen = 0
    for line in to_text(raw).splitlines():
        line = _ANT_PREFIX.sub("", line, count=1)
        m = _ANT_SUITE.match(line)
        if m:
            if expected is not None:
                count_mismatch(res, f"ant suite {suite}", expected, seen)
            suite, last, expected, seen = m.group(1), None, None, 0
            continue
        m = _ANT_SUITE_COUNTS.match(line)
        if m and suite and expected is None:
            expected = int(m.group(1))
            continue
        m = _ANT_CASE.match(line)
        if m:
            last = junit4_id(m.group(2) or suite, m.group(1))
            res.add(last, TestStatus.PASSED)
            seen += 1
            continue
        word = line.strip()
        if last is not None and word in _ANT_WORDS:
            res.add(last, _ANT_WORDS[word])
            last = None
    if expected is not None:
        count_mismatch(res, f"ant suite {suite}", expected, seen)
    return res


PARSERS = {"java_junit": parse_java_junit,
           "gradle_log": parse_gradle_log,
           "maven_log": parse_maven_log,
           "ant_junit": parse_ant_junit}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
