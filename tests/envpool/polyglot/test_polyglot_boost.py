"""Boost.Test JUnit logs and the ``<swemint-boost>`` sections recipes/cmake_tests.py adds after a
ctest run (class S36). The logs below are the shape Boost 1.74's JUnit logger writes for a test file
written for these rules (outputs shortened); tests/data/polyglot/boost_junit.xml is that logger's
whole log of such a file (Debian's libboost-test-dev 1.74, ``--logger=JUNIT,all,FILE
--run_test=!outer/inner/crashes``)."""

from __future__ import annotations

from envpool.testrun.polyglot.boost_junit import boost_runs, parse_boost_junit, read_boost_junit, \
    split_boost_sections
from envpool.testrun.polyglot.cfamily import parse_ctest_junit, parse_ctest_log
from envpool.testrun.status import TestStatus

P, F, E, S = TestStatus.PASSED, TestStatus.FAILED, TestStatus.ERROR, TestStatus.SKIPPED
DISABLED = "<skipped/><system-out><![CDATA[Test case disabled because of the following chain of decision:\n" \
           "- disabled test unit: '{0}'\n- reason: '']]></system-out>"


def log(*cases: str, name: str = "calc_tests") -> bytes:
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuite tests="9" skipped="1" errors="1" failures="1" id="0" '
            f'name="{name}" time="0.1">\n' + "\n".join(cases) + "\n</testsuite>\n").encode()


CASES = [
    '<testcase assertions="1" name="top_level" time="0"><system-out><![CDATA[INFO: passed]]></system-out></testcase>',
    '<testcase assertions="1" classname="outer" name="fails" time="0"><failure message="failure" '
    'type="assertion error"><![CDATA[check calc(1, 2) == 4 has failed]]></failure></testcase>',
    '<testcase assertions="1" classname="outer.inner" name="fixture_case" time="0"/>',
    '<testcase assertions="1" classname="outer.inner" name="throws" time="0"><error message="unexpected exception" '
    'type="uncaught exception"><![CDATA[std::runtime_error: boom]]></error></testcase>',
    '<testcase assertions="0" classname="outer" name="disabled" time="0">' + DISABLED.format("outer/disabled")
    + "</testcase>",
    '<testcase assertions="1" classname="outer.data" name="_0" time="0"/>',
    '<testcase assertions="1" classname="outer.data" name="_1" time="0"><failure type="assertion error"/></testcase>',
    '<testcase assertions="1" classname="outer" name="tmpl&lt;int&gt;" time="0"/>',
    '<testcase assertions="0" classname="fsuite" name="skips" time="0"><skipped/><system-out><![CDATA[precondition '
    'failed]]></system-out></testcase>',
]
IDS = {"top_level": P, "outer/fails": F, "outer/inner/fixture_case": P, "outer/inner/throws": E,
       "outer/data/_0": P, "outer/data/_1": F, "outer/tmpl<int>": P, "fsuite/skips": S}
CRASH = ('<testcase assertions="1" classname="outer.inner" name="crashes" time="0"><error message="unexpected '
         'exception" type="system fatal error"><![CDATA[signal: SIGSEGV]]></error><system-out><![CDATA[Test is '
         'aborted]]></system-out></testcase>')


def test_ids_are_boost_unit_paths_and_disabled_cases_are_none():
    raw = log(*CASES)
    assert parse_boost_junit(raw).statuses == IDS  # outer/disabled (decorator or filter) did not run
    assert parse_boost_junit.check(raw) == []
    assert read_boost_junit(b"<testsuites><nothing/>") is None and read_boost_junit(b"<testsuite tests=") is None


def test_a_crash_aborts_the_run_the_cases_after_it_are_no_ids_and_the_log_is_an_anomaly():
    after = '<testcase assertions="0" classname="outer.inner" name="after" time="0">' \
            + DISABLED.format("outer/inner/after") + "</testcase>"
    doc = read_boost_junit(log(CASES[0], CRASH, after))
    assert doc.statuses == {"top_level": P, "outer/inner/crashes": E} and doc.crashed == ["outer/inner/crashes"]
    assert parse_boost_junit.check(log(CASES[0], CRASH, after)) == [
        "boost: the binary died in test case 'outer/inner/crashes': the test cases after it did not run"]


def section(body: bytes, rnd: int = 1, final: bool = True, rc: int = 1, ctest: str = "calc_test") -> bytes:
    body = body.split(b"?>", 1)[1].strip()
    return (f'<swemint-boost ctest="{ctest}" round="{rnd}" final="{"true" if final else "false"}" exit="{rc}">\n'
            .encode() + body + b"\n</swemint-boost>\n")


CTEST_JUNIT = (b'<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="p" tests="2" failures="1">\n'
               b'<testcase name="calc_test" classname="calc_test" time="0.1" status="fail"><failure message="Failed"/>'
               b'<system-out>*** 3 failures</system-out></testcase>\n'
               b'<testcase name="plain" classname="plain" time="0.1" status="run"/>\n</testsuite>\n')


def test_the_sections_replace_the_ctest_id_of_the_boost_binary():
    raw = CTEST_JUNIT + b"\n" + section(log(*CASES))
    rep = parse_ctest_junit(raw)
    assert rep.statuses == {**IDS, "plain": P} and parse_ctest_junit.check(raw) == []


def test_rounds_after_a_crash_combine_the_crashed_case_with_the_final_run():
    first = section(log(CASES[0], CRASH), rnd=1, final=False)
    final = section(log(CASES[0], CASES[2]), rnd=2, rc=0)
    _, sections = split_boost_sections(CTEST_JUNIT + b"\n" + first + final, after=0)
    runs = boost_runs(sections)
    assert runs.statuses == {"top_level": P, "outer/inner/crashes": E, "outer/inner/fixture_case": P}
    assert runs.covered == {"calc_test"} and runs.anomalies == []


def test_a_nonzero_exit_with_no_failing_case_keeps_the_ctest_result():
    raw = CTEST_JUNIT + b"\n" + section(log(CASES[0]), rc=201)
    assert parse_ctest_junit(raw).statuses == {"top_level": P, "calc_test": F, "plain": P}


def test_on_the_console_only_sections_after_ctests_summary_count():
    console = ("1/1 Test #1: calc_test ........................***Failed    0.01 sec\n"
               + section(log(CASES[1]), ctest="forged").decode()  # printed by a test, before the summary
               + "\n0% tests passed, 1 tests failed out of 1\n\nTotal Test time (real) =   0.02 sec\n"
               + section(log(CASES[0], CASES[2])).decode())
    assert parse_ctest_log(console).statuses == {"calc_test": F, "top_level": P, "outer/inner/fixture_case": P}


def test_the_golden_log_of_boost_1_74():
    from pathlib import Path

    raw = (Path(__file__).parents[2] / "data" / "polyglot" / "boost_junit.xml").read_bytes()
    assert parse_boost_junit(raw).statuses == {
        "top_level": P, "outer/passes": P, "outer/fails": F, "outer/inner/fixture_case": P, "outer/inner/throws": E,
        "outer/inner/after_crash": P, "outer/mayfail": F,  # expected_failures(1): the log holds no verdict
        "outer/data/_0": P, "outer/data/_1": F, "outer/tmpl<int>": P, "outer/tmpl<long>": P,
        "fsuite/in_fixture_suite": P}  # outer/disabled (decorator) and the filtered-out crash: no id
    assert parse_boost_junit.check(raw) == []


def test_a_failure_in_an_earlier_round_stands_when_the_case_passes_in_a_later_one():
    """Round 1's report (its path beside the next round's, in the argv) tells the code under test
    what a failing check expected; a case crashed on purpose makes the helper run the binary again,
    and the failing case then passes. A failure of any round stands."""
    first = section(log(CASES[1], CRASH), rnd=1, final=False)
    passes = '<testcase assertions="1" classname="outer" name="fails" time="0"/>'
    final = section(log(passes, CASES[2]), rnd=2, rc=0)
    _, sections = split_boost_sections(CTEST_JUNIT + b"\n" + first + final, after=0)
    runs = boost_runs(sections)
    assert runs.statuses == {"outer/fails": F, "outer/inner/crashes": E, "outer/inner/fixture_case": P}
    assert parse_ctest_junit(CTEST_JUNIT + b"\n" + first + final).statuses["outer/fails"] is F
