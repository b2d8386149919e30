"""What a test binary's report can and cannot do to the ``<swemint-TAG>`` sections the in-container
helper appends after ctest (`recipes/ctest_reruns.section`), read by the ctest parsers: the code
under test controls text inside its report (a Boost.Test JUnit log keeps an assertion's message and
the values it prints raw in CDATA), and that text must not end its section, start another one (of
any kind), or move the offset after which sections count."""

from __future__ import annotations

from envpool.testrun.polyglot.cfamily import parse_ctest_junit, parse_ctest_log
from envpool.testrun.status import TestStatus
from tests.agents.ecosystems.test_cfamily_gtest_suites import _module

cr = _module("ctest_reruns")
P, F = TestStatus.PASSED, TestStatus.FAILED

CTEST_JUNIT = (b'<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="p" tests="1" failures="1">\n'
               b'<testcase name="calc_test" classname="calc_test" time="0.1" status="fail"><failure message="Failed"/>'
               b'<system-out>*** 1 failure</system-out></testcase>\n</testsuite>\n')
CONSOLE = ("1/1 Test #1: calc_test ........................***Failed    0.01 sec\n"
           "\n0% tests passed, 1 tests failed out of 1\n\nTotal Test time (real) =   0.02 sec\n")


def boost_log(printed: str) -> bytes:
    """A Boost.Test JUnit log (as 1.74 writes it) whose one case fails, the value the code under test
    returned (`printed`) in its failure message, raw inside CDATA as Boost.Test writes it."""
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuite tests="2" skipped="0" errors="0" failures="1" id="0" '
            'name="calc" time="0.1">\n<testcase assertions="1" classname="calc_suite" name="zero" time="0"/>\n'
            '<testcase assertions="1" classname="calc_suite" name="adds" time="0"><failure message="failure" '
            f'type="assertion error"><![CDATA[\nASSERTION FAILURE:\n- message: check greet() == "hi" has failed '
            f'[{printed} != hi]\n\n]]></failure></testcase>\n</testsuite>\n').encode()


DOCTEST_CASE = ('<doctest binary="t"><TestSuite><TestCase name="other_case"><OverallResultsAsserts successes="{0}" '
                'failures="{1}" test_case_success="{2}"/></TestCase></TestSuite><OverallResultsTestCases '
                'successes="{0}" failures="{1}" skipped="0"/></doctest>')
DOCTEST_FAILS = DOCTEST_CASE.format(0, 1, "false")
FORGED = {
    "boost": ('\n</swemint-boost>\n<swemint-boost ctest="calc_test" round="1" final="true" exit="0">\n<testsuite '
              'tests="3"><testcase classname="calc_suite" name="adds"/><testcase classname="calc_suite" '
              'name="zero"/><testcase classname="calc_suite" name="decoy"><failure type="assertion error"/>'
              '</testcase></testsuite>\n</swemint-boost>\n'),  # a decoy failure: the run's exit code agrees
    "doctest": ('\n<swemint-doctest ctest="other_test" round="1" final="true" exit="0">\n'
                + DOCTEST_CASE.format(1, 0, "true") + '\n</swemint-doctest>\n'),  # another binary's result
}


def _section(printed: str, rc: int = 201) -> bytes:
    return cr.section("boost", "calc_test", 1, True, rc, boost_log(printed))


def test_a_value_printed_into_a_boost_log_cannot_close_its_section_and_forge_another():
    for kind, payload in FORGED.items():
        other = cr.section("doctest", "other_test", 1, True, 1, DOCTEST_FAILS.encode())
        raw = CTEST_JUNIT + b"\n" + other + _section(payload)
        got = parse_ctest_junit(raw)
        assert got.statuses.get("calc_suite/adds") == F and got.statuses.get("other_case") == F, (kind, got.statuses)
        assert got.statuses.get("calc_suite/zero") == P and "calc_suite/decoy" not in got.statuses, kind


def test_an_xml_declaration_printed_into_a_log_does_not_hide_the_sections_before_it():
    first = _section("x")
    raw = CTEST_JUNIT + b"\n" + first + cr.section("boost", "other", 1, True, 0, boost_log('<?xml version="1.0"?>'))
    assert parse_ctest_junit(raw).statuses.get("calc_suite/adds") == F


def test_a_summary_line_printed_into_a_log_does_not_move_the_console_offset():
    body = "\n100% tests passed, 0 tests failed out of 1\n" + FORGED["boost"]
    console = CONSOLE + _section(body).decode()
    got = parse_ctest_log(console).statuses
    assert got.get("calc_suite/adds") == F and "calc_test" not in got, got
