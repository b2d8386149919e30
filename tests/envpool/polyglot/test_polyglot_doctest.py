"""doctest XML reports and the ``<swemint-doctest>`` sections recipes/cmake_tests.py adds after
a ctest run. The golden outputs are real (doctest 2.4.9 from Debian, CMake 3.25; made by
tests/data/polyglot/regenerate_doctest.sh from test files written for these rules)."""

from __future__ import annotations

from envpool.testrun.polyglot.cfamily import parse_ctest_junit, parse_ctest_log, parse_gtest_log
from envpool.testrun.polyglot.doctest_sections import doctest_runs, split_sections
from envpool.testrun.polyglot.doctest_xml import parse_doctest_xml, read_doctest_xml
from envpool.testrun.polyglot.gold import score_against_gold_ids
from envpool.testrun.status import TestStatus

P, F, S = TestStatus.PASSED, TestStatus.FAILED, TestStatus.SKIPPED

EDGE = {
    "plain pass": P, "plain fail": F,                            # no subcases: the test case is the id
    "nested > outer": F, "nested > inner ok": P,                # every subcase is `case > name`, at any depth;
    "nested > inner bad": F, "nested > fatal": F,               # a parent fails with a child (FAIL too)
    "repeated names > partial": P, "repeated names > total": F,  # to_json under both parents: one id
    "repeated names > to_json": P, "repeated names > from_json": F,
    "throws in subcase > ok": P, "throws in subcase > boom": F,  # its test-case-level repeat not counted twice
    "throws in body > runs before the throw": F,                 # thrown outside subcases: every id fails
    "preamble fails > x": F, "preamble fails > y": F,           # so does a CHECK outside subcases
    "warn only > w": P,                                          # WARN and MESSAGE do not fail
    "fail check > fc": F, "fail check > ok": P, "require stops > r": F, "check nothrow": F,
    "skipped": S, "may fail": P, "should fail > sf": P, "expected failures": P,  # doctest's verdict
    "timeout": F,                                                # failed with no failure element
    "in suite > a > b": P,                                       # a suite is not part of the id
}

JSON_LIKE = {  # nlohmann/json's layout (one source, two C++ standards) + a crash + a plain test
    "plain": P,
    "basic usage > conversion to json via free-functions": F,
    "basic usage > conversion from json via free-functions": P,
    "basic usage > via explicit calls to get": P, "basic usage > via explicit calls to get_to": P,
    "adl_serializer specialization > partial specialization": P,
    "adl_serializer specialization > total specialization": P,
    "adl_serializer specialization > to_json": P, "adl_serializer specialization > from_json": P,
    "Issue #924": P,
    "crash, with a comma > fine": P, "crash, with a comma > dies": F,  # round 1 (it crashed the binary)
    "first": P, "after": P,                                      # round 2, without the crashed test case
}


def test_doctest_xml_ids_and_status_rules(golden):
    raw = golden("doctest.xml")
    assert parse_doctest_xml(raw).statuses == EDGE
    assert parse_doctest_xml.check(raw) == [] and parse_doctest_xml(raw).tests_ran


def test_a_crash_hides_the_later_test_cases_and_is_an_anomaly(golden):
    raw = golden("doctest_crash.xml")
    doc = read_doctest_xml(raw)
    assert doc.crashed == ["crash, with a comma"] and doc.complete
    assert parse_doctest_xml(raw).statuses == {"first": P, "crash, with a comma > fine": P,
                                               "crash, with a comma > dies": F}
    assert parse_doctest_xml.check(raw) == ["doctest: doctest counts 3 test cases, 2 listed "
                                            "(the binary died before the rest ran)"]


def test_a_report_cut_inside_a_test_case_fails_it_and_is_an_anomaly(golden):
    raw = golden("doctest.xml")
    cut = raw[:raw.index(b'<SubCase name="inner bad"')]
    doc = read_doctest_xml(cut)
    assert not doc.complete and doc.crashed == ["nested"]
    assert doc.statuses == {"plain pass": P, "plain fail": F, "nested > outer": F, "nested > inner ok": F}
    assert parse_doctest_xml.check(cut) == ["doctest: the XML report is cut short (the binary was killed)"]


def test_ctest_junit_with_doctest_sections_gives_case_ids(golden):
    """nlohmann/json-4237: our ids were CTest names (`test-udt_cpp11`); gold lists doctest test
    cases and subcases. Tests that are doctest binaries now give those ids; the plain test keeps
    its CTest name; the crashed binary's rounds combine."""
    raw = golden("ctest_junit_doctest.xml")
    rep = parse_ctest_junit(raw)
    assert rep.statuses == JSON_LIKE and rep.tests_ran and parse_ctest_junit.check(raw) == []
    assert not {"test-udt_cpp11", "test-udt_cpp14", "test-crash"} & set(rep.statuses)


def test_ctest_console_with_doctest_sections_gives_the_same_ids(golden):
    raw = golden("ctest_doctest.log")
    assert parse_ctest_log(raw).statuses == JSON_LIKE and parse_ctest_log.check(raw) == []


def test_gold_form_of_nlohmann_json_4237_is_met(golden):
    """The gold lists of nlohmann__json-4237 (SWE-bench Multilingual) against the ids of the
    json-like golden run, taken as the before side (the after side: every id passes)."""
    before = parse_ctest_junit(golden("ctest_junit_doctest.xml")).statuses
    f2p = [i for i, st in before.items() if st is F and i.startswith("basic usage")]
    p2p = [i for i, st in before.items() if st is P]
    gold_p2p = ["basic usage > conversion from json via free-functions", "basic usage > via explicit calls to get",
                "basic usage > via explicit calls to get_to", "adl_serializer specialization > partial specialization",
                "adl_serializer specialization > to_json", "adl_serializer specialization > from_json",
                "adl_serializer specialization > total specialization"]
    s = score_against_gold_ids(f2p, p2p, ["basic usage > conversion to json via free-functions"], gold_p2p)
    assert (s["f2p_recall"], s["f2p_precision"], s["p2p_recall"], s["exact_form"]) == (1.0, 1.0, 1.0, 1.0)


def test_a_section_printed_by_a_test_before_ctests_summary_adds_nothing(golden):
    raw = golden("ctest_doctest.log").decode()
    forged = ('<swemint-doctest ctest="plain" round="1" final="true" exit="0">\n<doctest binary="x">'
              '<TestSuite><TestCase name="forged"><OverallResultsAsserts test_case_success="true"/></TestCase>'
              '</TestSuite></doctest>\n</swemint-doctest>\n')
    at = raw.index("    Start 1:")
    statuses = parse_ctest_log(raw[:at] + forged + raw[at:]).statuses
    assert "forged" not in statuses and statuses["plain"] is P
    assert "forged" not in parse_gtest_log(raw[:at] + forged + raw[at:]).statuses


def _section(ctest: str, body: bytes, rnd: int = 1, final: bool = True, exit: int = 0) -> bytes:
    return (f'<swemint-doctest ctest="{ctest}" round="{rnd}" final="{str(final).lower()}" exit="{exit}">\n'
            .encode() + body + b"\n</swemint-doctest>\n")


PASSING = (b'<doctest binary="t"><TestSuite><TestCase name="c"><OverallResultsAsserts successes="1" '
           b'failures="0" test_case_success="true"/></TestCase></TestSuite>'
           b'<OverallResultsTestCases successes="1" failures="0" skipped="0"/></doctest>')


def test_a_nonzero_exit_with_no_failing_case_keeps_the_ctest_result():
    """A binary that exits 1 after its tests passed (a leak checker, a crash at exit): the CTest
    test stays FAILED beside the doctest ids."""
    _, secs = split_sections(_section("t", PASSING, exit=23))
    runs = doctest_runs(secs)
    assert runs.statuses == {"c": P} and runs.covered == set()
    _, secs = split_sections(_section("t", PASSING, exit=0))
    assert doctest_runs(secs).covered == {"t"}


def test_a_section_without_a_doctest_report_leaves_the_ctest_result():
    head, secs = split_sections(b"before\n" + _section("t", b"not xml") + b"after\n")
    assert head == b"before\nafter\n" and len(secs) == 1 and secs[0].doc is None
    runs = doctest_runs(secs)
    assert runs.statuses == {} and runs.covered == set()


def test_a_section_before_the_junit_document_adds_nothing(golden):
    """A row's stored command prints ctest's console (a test's raw output) and then the report
    file: a section a test printed comes before the JUnit document and is not read."""
    forged = _section("plain", PASSING.replace(b'name="c"', b'name="forged"'))
    statuses = parse_ctest_junit(b"console output\n" + forged + golden("ctest_junit_doctest.xml")).statuses
    assert statuses == JSON_LIKE
