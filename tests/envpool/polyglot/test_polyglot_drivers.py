"""Parsers of repositories' own test drivers (envpool.testrun.polyglot.driver_logs): ids as each driver
prints them, statuses, and the counts they are cross-checked against (golden outputs in
tests/data/polyglot, written for these tests in each driver's format)."""

from __future__ import annotations

from envpool.testrun.outcome import TestStatus
from envpool.testrun.registry import PARSERS, anomalies
from envpool.testrun.polyglot.driver_logs import parse_script_status_log, parse_tcl_helper_log, parse_unittest_log
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
    assert {"script_status_log", "tcl_helper_log", "unittest_log"} <= set(PARSERS)


def test_sympy_bin_test_lines_bare_names_and_the_finished_count():
    """SymPy's `bin/test --verbose` (sympy/utilities/runtests.py `PyTestReporter`), in its format
    with this test's own names: bare function names (SWE-bench's sympy ids), every status letter,
    a skip's message before its letter, the file's closing [OK]/[FAIL], a file that failed to
    import as a failed unit, and the finished line's passed count."""
    from envpool.testrun.polyglot.driver_logs import parse_sympy_test_log

    raw = (DATA / "sympy_bin_test.log").read_text()
    res = parse_sympy_test_log.run(raw)
    assert res.anomalies == []
    rep = res.report()
    S = TestStatus
    assert rep.statuses == {"test_add_ints": S.PASSED, "test_add_floats": S.FAILED, "test_add_strings": S.ERROR,
                            "test_add_known_bug": S.XFAIL, "test_add_fixed_bug": S.XPASS, "test_add_slow": S.SKIPPED,
                            "test_sub_ints": S.PASSED, "test_sub_numpy": S.SKIPPED, "test_sub_plain": S.SKIPPED}
    assert rep.collection_errors == ["pkg/calc/tests/test_mul.py"] and rep.tests_ran
    # a passed count that disagrees with the lines is an anomaly
    bad = raw.replace("tests finished: 2 passed", "tests finished: 5 passed")
    assert parse_sympy_test_log.run(bad).anomalies
    # the traceback's `File ..., line 7, in test_add_floats` line is not a result
    assert "in" not in rep.statuses
