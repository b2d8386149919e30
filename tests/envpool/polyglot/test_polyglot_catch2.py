"""Catch2 XML reports and the ``<swemint-catch2>`` sections recipes/cmake_tests.py adds after a
ctest run. The golden outputs are real (Catch2 2.13.10 from Debian and Catch2 3.7.1, CMake 3.25;
made by tests/data/polyglot/regenerate_catch2.sh from test files written for these rules)."""

from __future__ import annotations

from envpool.testrun.polyglot.catch2_xml import catch2_runs, parse_catch2_xml, read_catch2_xml, split_catch2_sections
from envpool.testrun.polyglot.cfamily import parse_ctest_junit, parse_ctest_log, parse_gtest_log
from envpool.testrun.status import TestStatus

P, F, S = TestStatus.PASSED, TestStatus.FAILED, TestStatus.SKIPPED

EDGE = {
    "plain pass": P, "plain fail": F,                          # no sections: the test case is the id
    "sections > outer": F, "sections > inner ok": P,          # every section is `case > name`, at any depth;
    "sections > inner bad": F, "sections > fatal": F,         # a parent fails with a child (FAIL too)
    "repeated names > partial": P, "repeated names > total": F,  # to_json under both parents: one id
    "repeated names > to_json": P, "repeated names > from_json": F,
    "throws in section > ok": P, "throws in section > boom": F,
    "throws in body > runs before the throw": F,               # thrown outside sections: every id fails
    "preamble fails > x": F, "preamble fails > y": F,         # so does a CHECK outside sections
    "require stops > r": F, "check nothrow": F,
    "may fail": P, "should fail > sf": P,                      # Catch2's verdict: expected failures
    "should fail but passes": F,
    "warn only > w": P,                                        # WARN does not fail
    'std::string / names, with <chars> & "quotes"': P,         # `hidden` ([.]) is not run: no id
    "prints": P,
}
EDGE_V3 = {**EDGE, "skipped case": S, "skipped section > runs": P, "skipped section > skips": S}  # SKIP()

SPDLOG_LIKE = {  # ids the helper's ctest run gives (regenerate_catch2.sh's CMake project)
    "spdlog-utests::pattern formatter > short level": P, "spdlog-utests::pattern formatter > full level": F,
    "spdlog-utests::to_file_1": P, "spdlog-utests::fmt::join / ranges": P, "spdlog-utests::level names": F,
    # the same binary built twice: the CTest name keeps its ids apart (its command's `-r console` is replaced)
    "spdlog-utests-ho::pattern formatter > short level": P, "spdlog-utests-ho::pattern formatter > full level": F,
    "spdlog-utests-ho::to_file_1": P, "spdlog-utests-ho::fmt::join / ranges": P, "spdlog-utests-ho::level names": F,
    # it died in `dies`: the test cases before keep their ids, the CTest result stands for `after`
    "crash-utests::first": P, "crash-utests::dies > fine": P, "crash-utests::dies > aborts": F, "crash-utests": F,
    "one discovered": P, "two discovered": P,                  # catch_discover_tests: already one case each
    "plain": P,
}
STOPPED = ["crash-utests [Catch2 run stopped early]"]


def test_catch2_v2_xml_ids_and_status_rules(golden):
    raw = golden("catch2.xml")
    assert parse_catch2_xml(raw).statuses == EDGE
    assert parse_catch2_xml.check(raw) == [] and parse_catch2_xml(raw).tests_ran


def test_catch2_v3_xml_gives_the_same_ids_and_skips(golden):
    raw = golden("catch2_v3.xml")
    assert raw.lstrip().startswith(b"<?xml") and b"<Catch2TestRun" in raw
    assert parse_catch2_xml(raw).statuses == EDGE_V3 and parse_catch2_xml.check(raw) == []


def test_a_crash_ends_the_run_and_is_an_anomaly_of_a_standalone_report(golden):
    for name in ("catch2_crash.xml", "catch2_v3_crash.xml"):
        raw = golden(name)
        doc = read_catch2_xml(raw)
        assert doc.crashed == ["dies"] and doc.complete and doc.stopped_early
        assert parse_catch2_xml(raw).statuses == {"first": P, "dies > fine": P, "dies > aborts": F}
        assert parse_catch2_xml.check(raw) == ["catch2: the binary died in test case 'dies': "
                                               "the test cases after it did not run"]


def test_a_report_cut_inside_a_test_case_gives_it_no_id(golden):
    """A binary killed mid-run (no chance to close the report): the test cases that ended keep
    their ids; the one it was in has none (no case is invented)."""
    raw = golden("catch2.xml")
    cut = raw[:raw.index(b'<Section name="inner bad"')]
    doc = read_catch2_xml(cut)
    assert not doc.complete and doc.cut == "sections" and doc.stopped_early
    assert doc.statuses == {"plain pass": P, "plain fail": F}
    assert parse_catch2_xml.check(cut) == ["catch2: the XML report is cut short (the binary was killed) "
                                           "inside test case 'sections'"]


def test_ctest_junit_with_catch2_sections_gives_case_ids(golden):
    """gabime/spdlog: `spdlog-utests` is one CTest test of hundreds of Catch2 test cases, so
    FAIL_TO_PASS was `spdlog-utests`. Its Catch2 binary now gives `<ctest test>::<case>` ids."""
    raw = golden("ctest_junit_catch2.xml")
    rep = parse_ctest_junit(raw)
    assert rep.statuses == SPDLOG_LIKE and rep.tests_ran and parse_ctest_junit.check(raw) == []
    assert rep.collection_errors == STOPPED
    assert not {"spdlog-utests", "spdlog-utests-ho"} & set(rep.statuses)


def test_ctest_console_with_catch2_sections_gives_the_same_ids(golden):
    raw = golden("ctest_catch2.log")
    rep = parse_ctest_log(raw)
    assert rep.statuses == SPDLOG_LIKE and parse_ctest_log.check(raw) == [] and rep.collection_errors == STOPPED
    gt = parse_gtest_log(raw)  # the GoogleTest console parser reads the sections too
    assert {k: v for k, v in SPDLOG_LIKE.items() if "::" in k} == gt.statuses


def test_a_section_printed_by_a_test_adds_nothing(golden):
    """A test printing a `<swemint-catch2>` section before ctest's summary (console) or before
    the JUnit document (a row's stored command prints ctest's console first) adds no id."""
    forged = _section("plain", PASSING.replace(b'name="c"', b'name="forged"'))
    raw = golden("ctest_catch2.log")
    at = raw.index(b"    Start 1:")
    assert "plain::forged" not in parse_ctest_log(raw[:at] + forged + raw[at:]).statuses
    assert "plain::forged" not in parse_gtest_log(raw[:at] + forged + raw[at:]).statuses
    assert parse_ctest_junit(b"console output\n" + forged + golden("ctest_junit_catch2.xml")).statuses == SPDLOG_LIKE


def _section(ctest: str, body: bytes, exit: int | str = 0) -> bytes:
    return f'<swemint-catch2 ctest="{ctest}" round="1" final="true" exit="{exit}">\n'.encode() + body + \
        b"\n</swemint-catch2>\n"


PASSING = (b'<Catch name="t"><Group name="t"><TestCase name="c"><OverallResult success="true"/></TestCase>'
           b'<OverallResultsCases successes="1" failures="0" expectedFailures="0"/></Group>'
           b'<OverallResultsCases successes="1" failures="0" expectedFailures="0"/></Catch>')


def test_a_nonzero_exit_with_no_failing_case_keeps_the_ctest_result():
    """A binary that exits 1 after its test cases passed (a leak checker, a crash at exit): the
    CTest test stays FAILED beside the Catch2 ids; killed (no exit code) or a signal: it stopped early."""
    _, secs = split_catch2_sections(_section("t", PASSING, exit=1))
    runs = catch2_runs(secs)
    assert runs.statuses == {"t::c": P} and runs.covered == set() and runs.reported == {"t"}
    assert runs.collection_errors == []
    assert catch2_runs(split_catch2_sections(_section("t", PASSING))[1]).covered == {"t"}
    for rc in ("", -11):
        runs = catch2_runs(split_catch2_sections(_section("t", PASSING, exit=rc))[1])
        assert runs.covered == set() and runs.collection_errors == ["t [Catch2 run stopped early]"]


def test_a_section_without_a_catch2_report_leaves_the_ctest_result():
    head, secs = split_catch2_sections(b"before\n" + _section("t", b"not xml") + b"after\n")
    assert head == b"before\nafter\n" and len(secs) == 1 and secs[0].doc is None
    runs = catch2_runs(secs)
    assert runs.statuses == {} and runs.covered == set() and runs.reported == set()


def test_known_ids_of_a_crashed_binary_are_not_invented(golden):
    """The other side ran `crash-utests::after`; here the binary died before it: `after` gets
    no result here (its CTest test's FAILED stands for it), not a synthetic one."""
    raw = golden("ctest_junit_catch2.xml")
    known = set(SPDLOG_LIKE) - {"crash-utests"} | {"crash-utests::after"}
    rep = parse_ctest_junit(raw, known_tests=sorted(known))
    assert rep.statuses == SPDLOG_LIKE and rep.collection_errors == STOPPED


def test_cases_a_before_crash_hid_are_fail_to_pass_only_when_the_test_patch_names_them(golden):
    """spdlog-like: the test case the test_patch adds crashes the binary before the fix, so the
    test cases after it never run. The run reports the stop, so only the named test case (and
    one that ran and failed) is FAIL_TO_PASS; `after`, which the crash merely hid, is in neither."""
    from agents.verification import aborted_before_scope, judge
    from envpool.testrun.status import TestRunReport

    before = [parse_ctest_junit(golden("ctest_junit_catch2.xml"))] * 2
    after_ids = {k: P for k in SPDLOG_LIKE if k != "crash-utests"} | {"crash-utests::after": P}
    after = [TestRunReport(statuses=after_ids, tests_ran=True)] * 2
    patch = ("diff --git a/tests/crash.cpp b/tests/crash.cpp\n--- a/tests/crash.cpp\n+++ b/tests/crash.cpp\n"
             "@@ -1,2 +1,3 @@\n TEST_CASE(\"first\") { CHECK(1 == 1); }\n"
             "+TEST_CASE(\"dies\") { SECTION(\"fine\") { CHECK(true); } SECTION(\"aborts\") { std::abort(); } }\n"
             " TEST_CASE(\"after\") { CHECK(1 == 1); }\n")
    scope = aborted_before_scope(patch, before, after)
    assert "dies" in scope and "after" not in scope
    _, _, g = judge(before, after, absent_scope=scope)
    assert "crash-utests::after" not in g.FAIL_TO_PASS + g.PASS_TO_PASS
    assert "crash-utests::dies > aborts" in g.FAIL_TO_PASS and "spdlog-utests::level names" in g.FAIL_TO_PASS
