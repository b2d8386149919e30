"""CTest tests whose output is a TAP stream (libuv's `uv_test` runs `uv_run_tests`: 513 TAP
tests in one CTest test), on goldens recorded from ctest 3.25 (regenerate.sh), and the TAP
stream reader itself."""

from __future__ import annotations

import re

from envpool.testrun.outcome import TestStatus
from envpool.testrun.polyglot.cfamily import parse_ctest_junit, parse_ctest_log
from envpool.testrun.polyglot.tapstream import read_tap

P, F, S = TestStatus.PASSED, TestStatus.FAILED, TestStatus.SKIPPED

INNER = {"uv_test::platform_output": P, "uv_test::udp_mmsg_single_drain_cb": F, "uv_test::tcp_ping_pong": S,
         "uv_test::fs_todo": TestStatus.XFAIL, "uv_test::name with # hash": P, "uv_test::udp_mmsg": P}
ALL_PASS = {f"all_pass::loop_{i}": P for i in range(1, 121)}


def test_libuv_5133_one_ctest_test_of_many_tap_tests_reports_the_tap_tests(golden):
    """libuv-5133: the whole suite is one CTest test failing on both sides; the TAP tests in its
    output are the results (JUnit `<system-out>`), a test without TAP keeps its CTest name."""
    raw = golden("ctest_tap_junit.xml")
    rep = parse_ctest_junit(raw)
    assert rep.statuses == {**INNER, **ALL_PASS, "plain": P}
    assert rep.tests_ran and parse_ctest_junit.check(raw) == []
    assert "uv_test" not in rep.statuses and "all_pass" not in rep.statuses


def test_ctest_verbose_console_gives_the_same_ids(golden):
    raw = golden("ctest_tap_verbose.log")
    rep = parse_ctest_log(raw)
    assert rep.statuses == {**INNER, **ALL_PASS, "plain": P}
    assert parse_ctest_log.check(raw) == []  # "1 tests failed out of 3" counts CTest tests


def test_output_on_failure_blocks_are_not_read():
    """Without -V ctest prints only failing tests' output: reading it would give a failing TAP
    test inner ids and the same test passing on the other side its CTest name."""
    log = ("1/1 Test #1: uv_test ....***Failed    0.01 sec\n1..2\nok 1 - a\nnot ok 2 - b\n"
           "0% tests passed, 1 tests failed out of 1\n")
    assert parse_ctest_log(log).statuses == {"uv_test": F}


def _junit(name: str, status: str, out: str, extra: str = "") -> str:
    out = out.replace("&", "&amp;").replace("<", "&lt;")
    return (f'<?xml version="1.0"?>\n<testsuite tests="1"><testcase name="{name}" classname="{name}" '
            f'status="{status}">{extra}<system-out>{out}</system-out></testcase></testsuite>\n')


def test_a_stream_ctest_cut_or_the_runner_stopped_is_an_anomaly(golden):
    raw = golden("ctest_tap_junit.xml").decode()
    cut = re.sub(r"ok 65 - loop_65\n.*?</system-out>", "ok 65 - lo...\n[This part of the test output was removed "
                 "since it exceeds the threshold of 1024 bytes.]\n</system-out>", raw, flags=re.S)
    assert cut != raw
    found = parse_ctest_junit.check(cut)
    assert any("all_pass: ctest cut its output" in a for a in found)
    assert any("all_pass: TAP: the plan says 120 tests, 65 reported" in a for a in found)
    assert not parse_ctest_junit(cut).tests_ran
    # ctest's timeout killed the runner after 1 of 3 tests
    killed = _junit("uv_test", "fail", "1..3\nok 1 - a\n", '<failure message="Timeout"/>')
    assert parse_ctest_junit.check(killed) == ["ctest test uv_test: TAP: the plan says 3 tests, 1 reported"]


def test_a_failed_ctest_test_whose_complete_stream_has_no_failure_is_an_anomaly():
    raw = _junit("uv_test", "fail", "1..2\nok 1 - a\nok 2 - b # SKIP x\n", '<failure message=""/>')
    assert parse_ctest_junit(raw).statuses == {"uv_test::a": P, "uv_test::b": S}
    assert parse_ctest_junit.check(raw) == ["ctest test uv_test failed, but its TAP stream of 2 tests reports no failure"]
    # the other way round is fine: a runner that exits 0 despite failing tests
    ok = _junit("uv_test", "run", "1..1\nnot ok 1 - a\n")
    assert parse_ctest_junit(ok).statuses == {"uv_test::a": F} and parse_ctest_junit.check(ok) == []


def test_a_known_tap_test_that_prints_no_stream_fails_its_known_ids():
    """The test binary did not build before the fix: ctest has no output for it. With the
    other side's ids its TAP tests are FAILED (a unit that failed), not an id `uv_test`."""
    raw = _junit("uv_test", "notrun", "", '<skipped message="Unable to find executable: uv_run_tests"/>')
    known = ["uv_test::a", "uv_test::b", "uv_test_a::a", "other"]
    rep = parse_ctest_junit(raw, known_tests=known)
    assert rep.statuses == {"uv_test::a": F, "uv_test::b": F}
    assert rep.collection_errors == ["uv_test [no TAP output]"] and not rep.tests_ran
    assert parse_ctest_junit(raw).statuses == {"uv_test": F}  # without known ids: as before
    skipped = _junit("uv_test", "notrun", "", '<skipped message="SKIP_RETURN_CODE=77"/>')
    assert parse_ctest_junit(skipped, known_tests=known).statuses == {"uv_test::a": S, "uv_test::b": S}


def test_ctest_xml_escapes_of_colour_codes_are_stripped():
    raw = _junit("c", "run", "1..1\n[NON-XML-CHAR-0x1B][32mok 1 - green[NON-XML-CHAR-0x1B][0m\n")
    assert parse_ctest_junit(raw).statuses == {"c::green": P}


# -- the TAP stream reader ----------------------------------------------------------------------

def test_read_tap_statuses_names_and_what_is_not_a_result():
    s = read_tap(["TAP version 14", "1..7", "ok 1 - a", "not ok 2 b", "ok 3 - c # skip why", "not ok 4 - d # TODO",
                  "ok 5 - e # todo", "ok 6", "    ok 1 - indented subtest", "# ok 9 - comment",
                  "ok 7 - f # a comment, not a directive"])
    assert s is not None and s.planned == 7 and s.anomalies == []
    assert s.results == [("a", P), ("b", F), ("c", S), ("d", TestStatus.XFAIL), ("e", TestStatus.XPASS),
                         ("6", P), ("f", P)]


def test_read_tap_needs_a_plan_or_a_version_line():
    assert read_tap(["ok, done", "ok 1 - looks like TAP"]) is None
    assert read_tap(["1..0 # SKIP nothing here"]) is None  # no results
    s = read_tap(["TAP version 13", "ok 1 - a"])
    assert s is not None and s.anomalies == ["TAP: no plan line (1..N) in a stream of 1 results: "
                                             "the program was cut short"]


def test_read_tap_plan_at_the_end_and_bail_out():
    s = read_tap(["ok 1 - a", "ok 2 - b", "1..2"])
    assert s is not None and s.anomalies == [] and [n for n, _ in s.results] == ["a", "b"]
    s = read_tap(["1..3", "ok 1 - a", "Bail out! database gone"])
    assert s is not None and s.anomalies == ["TAP: the plan says 3 tests, 1 reported", "TAP: Bail out! database gone"]
