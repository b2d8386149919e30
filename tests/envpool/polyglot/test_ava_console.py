"""`ava_console` and `ava_tap`'s console rerun: AVA's default reporter, on output recorded from
ava 6.4.1 (tests/data/polyglot/regenerate_ava.sh): the same ids as its TAP reporter, and a test
cut by AVA's timeout (where the TAP reporter crashes, sindresorhus/ky-874) has no result and
the run reports the abort, so grading treats it as a before run that stopped midway."""

from __future__ import annotations

from envpool.testrun.registry import PARSERS
from envpool.testrun.polyglot.ava_console import RERUN_MARKER, tap_crashed

CONSOLE = PARSERS["ava_console"]
TAP = PARSERS["ava_tap"]


def statuses(rep) -> dict[str, str]:
    return {k: v.value for k, v in rep.statuses.items()}


def test_console_gives_the_ids_and_statuses_the_tap_reporter_gives_for_the_same_files(golden):
    console, tap = CONSOLE(golden("ava_console.log")), TAP(golden("ava_same.tap"))
    assert statuses(console) == statuses(tap)
    assert statuses(console) == {
        "basic › skipped one": "SKIPPED", "basic › adds": "PASSED", "basic › fails": "FAILED",
        "basic › title with › arrow and [brackets]": "PASSED", "other › other file": "PASSED",
        "more › serial one": "PASSED",
        "more › fails with a message": "FAILED",  # the message ("boom: it broke") is not in the id
        "more › fails over lines": "FAILED", "more › logs": "PASSED",
        "more › known bug": "PASSED",  # test.failing that fails: `✔ [expected fail]`, TAP `ok`
        "hook › prepare for never runs": "FAILED",  # a failed hook, as TAP reports it
        "more › slow one": "PASSED",  # "(305ms)" dropped
    }  # the todo is no result
    assert CONSOLE.check(golden("ava_console.log")) == [] and console.tests_ran


def test_one_file_has_bare_titles_as_in_tap(golden):
    rep = CONSOLE(golden("ava_console_one.log"))
    assert statuses(rep) == {"skipped one": "SKIPPED", "adds": "PASSED", "fails": "FAILED",
                             "title with › arrow and [brackets]": "PASSED"}
    assert rep.tests_ran


def test_tap_reporter_crash_on_timeout_is_graded_from_the_console_rerun_pending_tests_absent(golden):
    raw = golden("ava_tap_crash.log")
    rep = TAP(raw)
    assert TAP.check(raw) == [] and rep.tests_ran
    assert statuses(rep) == {  # "hangs forever" and "waits too" were pending at the timeout: no result
        "hang › quick": "PASSED", "hang › fails before the hang": "FAILED",
        "other › other file": "PASSED", "basic › skipped one": "SKIPPED", "basic › adds": "PASSED",
        "basic › fails": "FAILED", "basic › title with › arrow and [brackets]": "PASSED"}
    assert rep.collection_errors == ["ava: timed out with 2 test(s) pending in test/hang.js"]
    one = TAP(golden("ava_tap_crash_one.log"))
    assert statuses(one) == {"quick": "PASSED", "fails before the hang": "FAILED"} and one.tests_ran
    assert any("timed out" in e for e in one.collection_errors)


def test_tests_queued_behind_a_hang_are_fail_to_pass_only_when_the_test_patch_names_them(golden):
    """ky-874's shape: the test the test_patch adds hangs before the fix, the tests queued behind
    it in the same file never start; after the fix all pass. Only the named one is FAIL_TO_PASS."""
    from agents.verification import aborted_before_scope, judge
    from envpool.testrun.status import TestRunReport, TestStatus

    before = [TAP(golden("ava_tap_crash.log"))] * 2
    after_ids = ["hang › quick", "hang › fails before the hang", "hang › hangs forever", "hang › waits too",
                 "other › other file", "basic › adds", "basic › fails", "basic › title with › arrow and [brackets]"]
    after = [TestRunReport(statuses={t: TestStatus.PASSED for t in after_ids}, tests_ran=True)] * 2
    patch = ("diff --git a/test/hang.js b/test/hang.js\n--- a/test/hang.js\n+++ b/test/hang.js\n"
             "@@ -1,2 +1,5 @@\n import test from 'ava';\n+test.serial('hangs forever', async t => {\n"
             "+\tt.pass();\n+});\n test('quick', t => t.pass());\n")
    scope = aborted_before_scope(patch, before, after)
    assert scope is not None and "hangs forever" in scope and "waits too" not in scope
    outcome, _, g = judge(before, after, absent_scope=scope)
    assert outcome == "verified"
    assert sorted(g.FAIL_TO_PASS) == ["basic › fails", "hang › fails before the hang", "hang › hangs forever"]
    assert "hang › waits too" not in g.FAIL_TO_PASS + g.PASS_TO_PASS  # cut off: nothing learnt
    assert "hang › quick" in g.PASS_TO_PASS


def test_the_crashed_tap_part_alone_is_an_anomaly_naming_the_crash(golden):
    tap = golden("ava_tap_crash.log").decode().split(RERUN_MARKER)[0]
    assert tap_crashed(tap)
    assert TAP.check(tap) == ["ava: the TAP stream has no closing plan (1..N): the run was cut short "
                              "(AVA's TAP reporter crashed)"]
    assert not TAP(tap).tests_ran


def test_a_marker_after_a_tap_run_that_did_not_crash_is_an_anomaly(golden):
    forged = golden("ava_same.tap").decode() + f"{RERUN_MARKER}\n  ✔ basic › fails\n  ─\n\n  1 test passed\n"
    rep = TAP(forged)
    assert not rep.tests_ran and rep.statuses["basic › fails"].value == "FAILED"  # the TAP part's
    assert any("marker" in a for a in TAP.check(forged))


def test_console_cut_short_or_with_a_forged_line_is_an_anomaly(golden):
    text = golden("ava_console.log").decode()
    cut = text.split("  ─")[0]
    assert any("no closing summary" in a for a in CONSOLE.check(cut)) and not CONSOLE(cut).tests_ran
    forged = text.replace("  ✔ other › other file\n", "  ✔ other › other file\n  ✘ [fail]: other › forged\n")
    assert CONSOLE.check(forged) == ["ava failed tests and hooks: the runner reports 4, 5 parsed"]
    skip = text.replace("  ✔ basic › adds\n", "  - [skip] basic › adds\n")
    assert "ava skipped tests: the runner reports 1, 2 parsed" in CONSOLE.check(skip)
    crash = golden("ava_tap_crash.log").decode()
    short = crash.replace("  ◌ hang › waits too\n", "")
    assert "ava tests pending after the timeout: the runner reports 2, 1 parsed" in TAP.check(short)


def test_a_failure_without_its_heading_takes_the_longest_known_id_the_line_starts_with():
    text = "\n  ✘ [fail]: a › t two boom\n  ─\n\n  1 test failed\n"
    assert statuses(CONSOLE(text, known_tests=["a › t", "a › t two"])) == {"a › t two": "FAILED"}
    assert statuses(CONSOLE(text)) == {"a › t two boom": "FAILED"}  # nothing to cut it by


def test_unit_errors_and_lines_not_at_the_reporters_indent():
    text = ("\n  ✘ test/c.js exited with a non-zero exit code: 1\n  Uncaught exception in test/d.js\n"
            "✔ printed by a test\n      ✔ inside an error\n  ✔ a › ok\n  ─\n\n  1 test passed\n")
    rep = CONSOLE(text)
    assert statuses(rep) == {"a › ok": "PASSED"}
    assert rep.collection_errors == ["test/c.js", "test/d.js"]


def test_a_marker_printed_again_in_the_console_run_does_not_move_the_split(golden):
    crash = golden("ava_tap_crash.log").decode()
    again = crash.replace("  ✘ Timed out while running tests\n", f"{RERUN_MARKER}\n  ✘ Timed out while running tests\n")
    assert again != crash and TAP(again) == TAP(crash) and TAP.check(again) == []
