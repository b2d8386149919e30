"""Parsers of repositories' own test drivers (envpool.testrun.polyglot.drivers): ids as each driver
prints them, statuses, and the counts they are cross-checked against (golden outputs in
tests/data/polyglot, written for these tests in each driver's format)."""

from __future__ import annotations

from envpool.testrun.outcome import TestStatus
from envpool.testrun.polyglot import POLYGLOT_PARSERS, anomalies
from envpool.testrun.polyglot.drivers import parse_script_status_log, parse_tcl_helper_log, parse_unittest_log
from tests.envpool.polyglot.conftest import DATA

SCRIPTS = (DATA / "script_status.log").read_text()
TCL = (DATA / "tcl_helper.log").read_text()
UNITTEST = (DATA / "unittest_verbose.log").read_text()



def test_script_status_lines():
    rep = parse_script_status_log(SCRIPTS)
    assert rep.statuses == {"basics/fun1.py": TestStatus.PASSED, "basics/fun_calldblstar.py": TestStatus.FAILED,
                            "basics/btree1.py": TestStatus.SKIPPED, "thread/thread_ident1.py": TestStatus.PASSED}
    assert rep.tests_ran and not anomalies("script_status_log", SCRIPTS)


def test_script_status_count_mismatch_is_an_anomaly():
    forged = SCRIPTS.replace("2 tests passed", "3 tests passed")
    assert anomalies("script_status_log", forged) == ["tests passed: the runner reports 3, 2 parsed"]
    assert not parse_script_status_log(forged).tests_ran




def test_tcl_helper_statuses_and_names():
    rep = parse_tcl_helper_log("\x1b[32m" + TCL)
    assert rep.statuses == {
        "Connections start with the default user": TestStatus.PASSED,
        "It is possible to create new users": TestStatus.PASSED,
        "Validate subset of channels is prefixed with resetchannels flag": TestStatus.FAILED,
        "Needs a debug build": TestStatus.SKIPPED}
    assert rep.tests_ran and rep.collection_errors == []


def test_tcl_helper_exception_is_a_failed_unit():
    rep = parse_tcl_helper_log("[ok]: A\n[exception]: Executing test client: I/O error reading reply\n")
    assert rep.statuses == {"A": TestStatus.PASSED}
    assert rep.collection_errors == ["[exception] Executing test client: I/O error reading reply"]




def test_unittest_verbose_ids_as_printed():
    rep = parse_unittest_log(UNITTEST)
    assert rep.statuses == {
        "test_add (calc_app.tests.CalcTests)": TestStatus.PASSED,
        "test_sub (calc_app.tests.CalcTests)": TestStatus.FAILED,
        "test_docs (calc_app.tests.CalcTests)": TestStatus.ERROR,
        "test_later (calc_app.tests.CalcTests)": TestStatus.SKIPPED,
        "test_known (calc_app.tests.CalcTests)": TestStatus.XFAIL,
        "test_new (calc_app.tests.OtherTests.test_new)": TestStatus.PASSED}
    assert rep.tests_ran and not anomalies("unittest_log", UNITTEST)


def test_unittest_ran_count_checked():
    assert anomalies("unittest_log", UNITTEST.replace("Ran 6 tests", "Ran 7 tests")) == \
        ["unittest Ran: the runner reports 7, 6 parsed"]


def test_registered_by_name():
    assert {"script_status_log", "tcl_helper_log", "unittest_log"} <= set(POLYGLOT_PARSERS)
