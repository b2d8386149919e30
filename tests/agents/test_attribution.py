"""Verification's attribution rules on parsed runs: who can fix a result short of verified."""

from __future__ import annotations

from agents.ecosystems import by_name
from agents.ecosystems.base import Plan
from agents.ecosystems.runs import TestRun
from agents.verification import attribute, judge
from envpool.testrun.status import TestRunReport, TestStatus

P, F, S = TestStatus.PASSED, TestStatus.FAILED, TestStatus.SKIPPED
PLAN = Plan(ecosystem="python", toolchain="3.9", image="i", parser="pytest_plugin", test_files=["tests/test_a.py"])


def run(statuses, reasons=None, errors=(), output="") -> TestRun:
    return TestRun(report=TestRunReport(statuses=statuses, reasons=reasons or {}, collection_errors=list(errors),
                                        tests_ran=bool(statuses), exit_code=1), output_tail=output)


def verdict(before, after):
    outcome, _, g = judge([r.report for r in before], [r.report for r in after], aborted_exits=frozenset({3, 4}))
    return outcome, attribute(outcome, g, before, after, PLAN, by_name("python"))


def test_a_touched_test_skipped_for_its_version_asks_for_a_newer_interpreter():
    skip = run({"tests/test_a.py::test_new": S, "tests/test_a.py::test_old": P},
               {"tests/test_a.py::test_new": "Skipped: requires python3.11"})
    outcome, att = verdict([skip], [skip])
    assert outcome == "no_fail_to_pass" and att.kind == "toolchain" and att.toolchain == ">=3.11"


def test_a_collection_error_of_a_missing_module_asks_for_an_install():
    err = run({}, {"tests/test_a.py": "E   ModuleNotFoundError: No module named 'yaml'"}, errors=["tests/test_a.py"])
    outcome, att = verdict([err], [err])
    assert outcome == "tests_not_run"
    assert (att.kind, att.install, att.packages) == ("environment", "module", ["yaml"])
    assert by_name("python").install_command(att.packages).endswith("pyyaml")


def test_nothing_ran_is_the_test_configurations():
    outcome, att = verdict([run({})], [run({})])
    assert outcome == "tests_not_run" and att.kind == "test_config"


def test_passing_before_the_fix_is_the_tasks_and_failing_after_is_genuine():
    ok = run({"tests/test_a.py::t": P})
    assert verdict([ok], [ok])[1].kind == "task"
    bad = run({"tests/test_a.py::t": F}, {"tests/test_a.py::t": "AssertionError: 1 != 2"})
    assert verdict([bad], [bad])[1].kind == "genuine"


def test_flaky_candidates_are_flaky():
    outcome, _, g = judge([run({"tests/test_a.py::t": F}).report],
                          [run({"tests/test_a.py::t": P}).report, run({"tests/test_a.py::t": F}).report], aborted_exits=frozenset({3, 4}))
    att = attribute(outcome, g, [run({"tests/test_a.py::t": F})],
                    [run({"tests/test_a.py::t": P}), run({"tests/test_a.py::t": F})], PLAN, by_name("python"))
    assert outcome == "no_fail_to_pass" and att.kind == "flaky"


def test_verified_is_verified():
    outcome, att = verdict([run({"tests/test_a.py::t": F})], [run({"tests/test_a.py::t": P})])
    assert outcome == "verified" and att.kind == "verified"


CTEST = Plan(ecosystem="cfamily", toolchain="gcc", image="i", parser="ctest", test_files=["test/test-spawn.c"])
SPAWN_PATCH = """diff --git a/test/test-spawn.c b/test/test-spawn.c
--- a/test/test-spawn.c
+++ b/test/test-spawn.c
@@ -10,2 +10,5 @@ TEST_IMPL(spawn_exit_code) {
   return 0;
 }
+TEST_IMPL(spawn_quoted_path) {
+  return 0;
+}
"""


def test_ids_naming_no_file_are_touched_when_the_test_patch_names_them():
    # libuv: one ctest test with TAP inside; the test the patch adds passes on both sides while
    # an unrelated test fails in the sandbox on both: the task's (a Windows-only fix), not genuine
    ids = {"uv_test::spawn_quoted_path": P, "uv_test::tcp_bind_error": F, "uv_test::spawn_exit_code": P}
    both = run(ids, {"uv_test::tcp_bind_error": "not ok 2 - tcp_bind_error"})
    outcome, _, g = judge([both.report], [both.report])
    eco = by_name("cfamily")
    assert attribute(outcome, g, [both], [both], CTEST, eco).kind == "genuine"  # every id counts
    att = attribute(outcome, g, [both], [both], CTEST, eco, SPAWN_PATCH)
    assert outcome == "no_fail_to_pass" and (att.kind, att.rule) == ("task", "passes-before")


def test_named_in_patch_matches_whole_words_of_changed_lines_only():
    from agents.verification import named_in_patch
    ids = ["uv_test::spawn_quoted_path", "uv_test::spawn", "uv_test::spawn_exit_code", "uv_test::path"]
    # spawn_exit_code is named by the hunk header (git's enclosing function), `spawn`/`path` only
    # inside longer words
    assert named_in_patch(ids, SPAWN_PATCH) == ["uv_test::spawn_exit_code", "uv_test::spawn_quoted_path"]
    assert named_in_patch(ids, "") == [] and named_in_patch(ids, "not a diff") == []
