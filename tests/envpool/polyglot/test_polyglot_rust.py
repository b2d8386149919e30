"""cargo test / nextest parsers, pinned by real cargo 1.95 output (tests/data/polyglot).

The crate has unit tests in nested modules, a failing test that prints a fake ``test ... ok``
line, an ignored and a ``should_panic`` test, an integration test file with a ``regression``
module, a passing and a failing doc test; plus runs with ``--nocapture``, with one thread, without
``--no-fail-fast``, and with an integration test that does not compile.
"""

from __future__ import annotations

from envpool.testrun.polyglot.rust import libtest_name, parse_cargo_test, parse_nextest_junit
from envpool.testrun.status import TestStatus

P, F, S = TestStatus.PASSED, TestStatus.FAILED, TestStatus.SKIPPED
EXPECTED = {
    "a::b::tests::c": P, "tests::adds": P, "tests::ignored_one": S, "tests::fails": F,
    "tests::panics_as_expected": P, "top_level": P, "regression::r2208": P,
    "src/lib.rs - add (line 5)": P, "src/lib.rs - sub (line 14)": F,
}


def test_cargo_test_gives_unit_integration_and_doc_tests(golden):
    raw = golden("cargo_test.log")
    rep = parse_cargo_test(raw)
    assert rep.statuses == EXPECTED
    assert rep.tests_ran and parse_cargo_test.check(raw) == []


def test_fake_result_line_in_captured_output_of_a_failure_is_not_read(golden):
    assert "tests::forged" not in parse_cargo_test(golden("cargo_test.log")).statuses


def test_nocapture_fake_line_breaks_the_totals_and_the_run_is_not_trusted(golden):
    raw = golden("cargo_test_nocapture.log")
    anomalies = parse_cargo_test.check(raw)
    assert len(anomalies) == 1 and "3 passed, 1 failed, 1 ignored, but 4/1/1 parsed" in anomalies[0]
    rep = parse_cargo_test(raw)
    assert not rep.tests_ran
    # the doc test's result line was printed inside another line of output, and still counts
    assert rep.statuses["src/lib.rs - add (line 5)"] is P


def test_status_on_the_line_after_the_name_with_one_thread(golden):
    raw = golden("cargo_test_threads1.log")
    assert parse_cargo_test(raw).statuses == {"regression::r2208": P, "top_level": P}
    assert parse_cargo_test.check(raw) == []


def test_status_glued_after_test_output():
    log = ("running 1 test\ntest t::a ... printing without newline ok\ntest t::b ... \n"
           "more outputFAILED\n\ntest result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; "
           "0 filtered out\n")
    assert parse_cargo_test("     Running unittests src/lib.rs\n\n" + log).statuses == {
        "t::a": P, "t::b": F}


def test_crate_that_fails_to_compile_fails_the_known_tests(golden):
    raw = golden("cargo_test_compile_error.log")
    rep = parse_cargo_test(raw, known_tests=["regression::r2208", "tests::adds"])
    assert rep.collection_errors == ['poly (test "integration") [build failed]']
    assert rep.statuses == {"regression::r2208": F, "tests::adds": F}
    assert not rep.tests_ran  # nothing ran; the synthetic failures are for grading


def test_stopping_at_the_first_failing_binary_is_an_anomaly(golden):
    # without --no-fail-fast the integration and doc tests never ran: they would look absent
    # before the fix and new after it
    raw = golden("cargo_test_fail_fast.log")
    assert any("--no-fail-fast" in a for a in parse_cargo_test.check(raw))
    assert "regression::r2208" not in parse_cargo_test(raw).statuses


OLD_CARGO_NO_FAIL_FAST = """     Running target/debug/deps/calc-cb7d05e3d3498d52

running 1 test
test tests::unit_bad ... FAILED

failures:

---- tests::unit_bad stdout ----
thread 'tests::unit_bad' panicked at 'assertion failed', src/lib.rs:8:21


failures:
    tests::unit_bad

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out

     Running target/debug/deps/basic-fa90ff29c8d6a114

running 1 test
test zero ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out

   Doc-tests calc

running 1 test
test src/lib.rs - add (line 1) ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out

error: test failed, to rerun pass '--lib'
"""


def test_old_cargos_one_hint_at_the_end_of_a_no_fail_fast_run_is_no_stop():
    """cargo 1.46 (Debian's rust 1.48) prints the hint for its one failed target after every
    binary ran; only a hint right after a failed binary means the run stopped there."""
    assert parse_cargo_test.check(OLD_CARGO_NO_FAIL_FAST) == []
    assert parse_cargo_test(OLD_CARGO_NO_FAIL_FAST).statuses == {"tests::unit_bad": F, "zero": P,
                                                                  "src/lib.rs - add (line 1)": P}
    stopped = OLD_CARGO_NO_FAIL_FAST.split("     Running target/debug/deps/basic")[0] + \
        "error: test failed, to rerun pass '--lib'\n"
    assert any("--no-fail-fast" in a for a in parse_cargo_test.check(stopped))
    # a command whose every cargo test has --no-fail-fast (parser option) never stopped there
    assert parse_cargo_test.check(stopped, no_fail_fast=True) == []
    assert parse_cargo_test(stopped, no_fail_fast=True).statuses == {"tests::unit_bad": F}


def test_binary_without_result_line_is_an_anomaly():
    log = ("     Running unittests src/lib.rs (target/debug/deps/x-1)\n\nrunning 2 tests\n"
           "test a ... ok\nerror: test failed, to rerun pass `--lib`\n\nCaused by:\n"
           "  process didn't exit successfully: (signal: 11, SIGSEGV: invalid memory reference)\n")
    assert any("no `test result`" in a for a in parse_cargo_test.check(log))


def test_should_panic_marker_and_ignore_reason_are_not_part_of_the_id():
    assert libtest_name("tests::p - should panic") == "tests::p"
    log = ("     Running tests/x.rs (target/debug/deps/x-1)\n\nrunning 2 tests\n"
           "test net::slow ... ignored, needs network\ntest p - should panic ... ok\n\n"
           "test result: ok. 1 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out\n")
    assert parse_cargo_test(log).statuses == {"net::slow": S, "p": P}


def test_no_output_is_not_a_pass():
    rep = parse_cargo_test(b"\xff\xfe")
    assert rep.statuses == {} and not rep.tests_ran


def test_nextest_junit_uses_the_libtest_path_and_final_outcome_of_retries(golden):
    rep = parse_nextest_junit(golden("nextest_junit.xml"))
    assert rep.statuses == {"a::b::tests::c": P, "tests::adds": P, "tests::fails": F,
                            "tests::ignored_one": S, "regression::r2208": P, "top_level": P}
    assert rep.source == "junit" and rep.tests_ran


def test_broken_xml_is_not_a_pass():
    rep = parse_nextest_junit("<testsuites><testsuite")
    assert rep.statuses == {} and not rep.tests_ran


def test_a_later_package_run_keeps_its_passes_after_another_failed_to_build():
    """One command, two `cargo test -p` runs joined with `;`: package a fails to compile, package
    b then runs; b's known test stays PASSED, a's known test is FAILED."""
    text = ("error[E0425]: cannot find function `f` in this scope\n"
            "error: could not compile `a` (test \"t\") due to 1 previous error\n"
            "     Running tests/u.rs (target/debug/deps/u-1)\n\nrunning 1 test\n"
            "test b_works ... ok\n\n"
            "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n")
    rep = parse_cargo_test(text, known_tests=["b_works", "a_works"])
    assert rep.statuses == {"b_works": TestStatus.PASSED, "a_works": TestStatus.FAILED}
    assert rep.collection_errors == ['a (test "t") [build failed]']
