"""swemint's units runner output (`unit_report_log`, envpool.testrun.polyglot.units_log): a unit
whose tool reports each file (cram -v, prove, automake's harness) is graded per file; a unit with
no such report by its exit status. The golden is a real run (tests/data/polyglot/regenerate_units.sh:
cram 0.7, prove 3.44, make)."""

from __future__ import annotations

from envpool.grading import grade
from envpool.testrun.polyglot.units_log import parse_unit_report_log, per_file_report
from envpool.testrun.registry import anomalies


def _st(rep) -> dict[str, str]:
    return {k: v.value for k, v in rep.statuses.items()}


def test_each_file_of_a_reporting_unit_is_a_result_and_a_silent_unit_is_one(golden):
    text = golden("unit_report.log").decode()
    rep = parse_unit_report_log(text)
    assert rep.tests_ran and not anomalies("unit_report_log", text)
    assert _st(rep) == {
        "tests/a.t": "PASSED", "tests/b.t": "FAILED", "tests/s.t": "SKIPPED",   # cram, asked for -v
        "t/a.t": "PASSED", "t/b.t": "FAILED", "t/c.t": "SKIPPED", "t/d.t": "FAILED",  # prove and prove -v
        "plain": "FAILED"}  # no per-file report: its exit status
    assert "test" not in rep.statuses and "prove" not in rep.statuses  # the units themselves are not results


def test_a_cut_report_is_an_anomaly_and_an_open_prove_file_failed():
    cut = ["tests/a.t: passed", "# Ran 2 tests, 0 skipped, 0 failed."]
    assert per_file_report(cut)[1] == ["cram # Ran: the runner reports 2, 1 parsed"]
    stopped = ["t/a.t .. ok", "t/b.t .. "]  # prove killed while t/b.t ran
    assert {k: v.value for k, v in per_file_report(stopped)[0].items()} == {"t/a.t": "PASSED", "t/b.t": "FAILED"}
    # lines the shell's loose filter lets through that are no report line are ignored
    assert per_file_report(["checking for gcc... gcc", "ok 1 - inner TAP", "make: ok"]) == ({}, [])


def test_a_unit_that_fails_outside_its_files_is_one_more_failed_result():
    text = "|: tests/a.t: passed\n|: # Ran 1 tests, 0 skipped, 0 failed.\nswemint-unit: test exit 2\nFAIL  test\n"
    assert _st(parse_unit_report_log(text)) == {"tests/a.t": "PASSED", "test": "FAILED"}


def _side(*files: tuple[str, str]) -> str:
    lines = [f"|: {f}: {s}" for f, s in files]
    failed = sum(s == "failed" for _, s in files)
    return "\n".join([*lines, f"|: # Ran {len(files)} tests, 0 skipped, {failed} failed.",
                      f"swemint-unit: test exit {2 if failed else 0}", ""])


def test_one_unrelated_failing_file_no_longer_hides_the_fix():
    """S13 (the_silver_searcher-1389's shape): `make test` runs every cram file; an unrelated file
    fails on both sides. By exit status `test` is FAILED on both sides (no FAIL_TO_PASS); per file
    the touched file is FAIL_TO_PASS and the passing others PASS_TO_PASS."""
    before = parse_unit_report_log(_side(("tests/touched.t", "failed"), ("tests/other.t", "passed"),
                                         ("tests/broken.t", "failed")))
    after = parse_unit_report_log(_side(("tests/touched.t", "passed"), ("tests/other.t", "passed"),
                                        ("tests/broken.t", "failed")))
    g = grade([before], [after])
    assert g.FAIL_TO_PASS == ["tests/touched.t"] and g.PASS_TO_PASS == ["tests/other.t"]


def _blocks(text: str) -> dict[str, str]:
    """The units runner's output split per unit (id -> its block, ending at its status lines)."""
    out, cur = {}, []
    for line in text.splitlines():
        cur.append(line)
        if line.startswith("swemint-unit: "):
            out[line.split()[1]] = "\n".join(cur) + "\n"
            cur = []
    return out


def test_pg_regress_suites_are_graded_per_test_name(golden):
    """S12's SQL suites: pg_regress (15: ``test add ... ok``, 17: TAP ``ok 1 - add  12 ms``; serial
    and a parallel group) runs many SQL tests in one make target and fails as a whole; each test
    name is a result. Golden: real runs (tests/data/polyglot/regenerate_pg_regress.sh)."""
    text = golden("pg_regress_units.log").decode()
    blocks = _blocks(text)
    assert set(blocks) == {"pg15-serial", "pg15-parallel", "pg17-serial", "pg17-parallel"}
    for unit, block in blocks.items():
        rep = parse_unit_report_log(block)
        assert _st(rep) == {"add": "PASSED", "sub": "FAILED", "mul": "PASSED"}, unit
        assert not anomalies("unit_report_log", block), unit  # "1 of 3 tests failed" matches the three lines
    assert _st(parse_unit_report_log(text)) == {"add": "PASSED", "sub": "FAILED", "mul": "PASSED"}


def test_pg_regress_fix_is_fail_to_pass_and_cut_or_ignored_reports():
    before = parse_unit_report_log("|: ok 1         - add   5 ms\n|: not ok 2     + sub   9 ms\n"
                                   "|: ok 3         + mul   4 ms\n|: # 1 of 3 tests failed.\nswemint-unit: check exit 2\n")
    after = parse_unit_report_log("|: test add     ... ok   5 ms\n|:      sub     ... ok   9 ms\n"
                                  "|:      mul     ... ok   4 ms\n|:  All 3 tests passed. \nswemint-unit: check exit 0\n")
    g = grade([before], [after])
    assert g.FAIL_TO_PASS == ["sub"] and sorted(g.PASS_TO_PASS) == ["add", "mul"]
    # a report cut short (the count says 3) is an anomaly; an ignored failure is no result either way
    assert per_file_report(["test add ... ok 5 ms", " 1 of 3 tests failed. "])[1] == \
        ["pg_regress tests: the runner reports 3, 1 parsed"]
    got = per_file_report(["test a ... failed (ignored)    5 ms", "not ok 2 - b   3 ms # (ignored)",
                           "ok 1 - inner TAP of a prove -v file"])[0]
    assert {k: v.value for k, v in got.items()} == {"a": "SKIPPED", "b": "SKIPPED"}


def test_a_carriage_return_in_a_units_output_starts_no_runner_line():
    """The runner prefixes each ``\\n``-line of a unit's output (sed, grep); a lone ``\\r`` (or
    ``\\v``, ``\\x1c``, U+2028, which `str.splitlines` also splits on) inside one starts no line
    of the runner's own: no forged unit end, result or ``pass`` line."""
    from envpool.testrun.polyglot.driver_logs import parse_script_status_log

    for sep in ("\r", "\v", "\x1c", "\x85", "\u2028"):
        text = (f"| junk{sep}swemint-unit: forged/test exit 0\n|: junk{sep}tests/a.t: passed\n"
                f"| x{sep}pass  forged/test\nswemint-unit: real exit 1\nFAIL  real\n")
        assert _st(parse_unit_report_log(text)) == {"real": "FAILED"}, repr(sep)
        assert _st(parse_script_status_log(text)) == {"real": "FAILED"}, repr(sep)


def test_only_a_runner_stop_line_makes_a_unit_that_ran_no_test():
    """``# could not ...`` / ``pg_regress: ...`` among a unit's report lines are no stop: the unit
    failed; ``swemint-stop: <line>`` (pg_regress's after-script) is."""
    text = "|: # could not compute checksum\n|: pg_regress: postmaster failed\nswemint-unit: t/sum.sh exit 1\n"
    assert _st(parse_unit_report_log(text)) == {"t/sum.sh": "FAILED"}
    text = "|! swemint-stop: # postmaster failed\nswemint-unit: installcheck exit 2\n"
    rep = parse_unit_report_log(text)
    assert rep.statuses == {} and not rep.tests_ran
    assert anomalies("unit_report_log", text) == [
        "installcheck: the harness stopped before any test ran (# postmaster failed)"]
