"""Grading a candidate patch: SWE-bench's rules on our statuses, and the sandbox sequence."""

from __future__ import annotations

import json

from envpool.evaluation import TestsSpec, evaluate_patch, judge, python_of
from envpool.fake import FakeSandboxFactory
from envpool.testrun.status import TestRunReport, TestStatus

S = TestStatus


def rep(**statuses) -> TestRunReport:
    return TestRunReport(statuses={k.replace("_", "::"): v for k, v in statuses.items()}, tests_ran=True)


def test_skipped_fail_to_pass_fails_and_skipped_pass_to_pass_is_kept():
    r = rep(a_f=S.SKIPPED, a_p=S.SKIPPED, a_x=S.XFAIL, a_y=S.XPASS)
    ts = judge(r, ["a::f", "a::x", "a::y"], ["a::p", "a::gone"])
    assert ts["FAIL_TO_PASS"].success == ["a::y"] and ts["FAIL_TO_PASS"].failure == ["a::f", "a::x"]
    assert ts["PASS_TO_PASS"].success == ["a::p"] and ts["PASS_TO_PASS"].failure == ["a::gone"]


def test_tests_under_a_failed_collector_fail():
    r = TestRunReport(statuses={"t.py::a": S.PASSED}, collection_errors=["t.py"], tests_ran=True)
    assert judge(r, ["t.py::a"], [])["FAIL_TO_PASS"].failure == ["t.py::a"]


def test_python_of_a_stored_command():
    assert python_of("cd /testbed && PYTHONPATH=x /opt/venv/bin/python -m pytest -p y t.py") == "/opt/venv/bin/python"
    assert python_of("make test") == "/opt/venv/bin/python"


GO_PASS = "\n".join(json.dumps(e) for e in [
    {"Action": "run", "Package": "m", "Test": "TestA"}, {"Action": "pass", "Package": "m", "Test": "TestA"},
    {"Action": "run", "Package": "m", "Test": "TestB"}, {"Action": "skip", "Package": "m", "Test": "TestB"},
    {"Action": "pass", "Package": "m"}])
SPEC = TestsSpec(kind="poly", test_command="go test -json ./... > /tmp/r.json", parser="go_test_json",
                 report_path="/tmp/r.json")


def _factory(report: str) -> FakeSandboxFactory:
    f = FakeSandboxFactory(run_id="t")
    f.on(r"go test", lambda cmd, sb: (sb.put_file("/tmp/r.json", report), 0)[1])
    return f


def test_candidate_then_reset_then_test_patch_then_one_run():
    f = _factory(GO_PASS)
    r = evaluate_patch(f, "img", SPEC, instance_id="i", test_patch="diff --git a/x_test.go b/x_test.go\n",
                       patch="diff --git a/x.go b/x.go\n", fail_to_pass=["m::TestA"], pass_to_pass=["m::TestB"])
    assert r.resolved and r.reward == 1.0 and r.f2p_rate == 1.0 and r.error is None
    sb = f.sandboxes[-1]
    cmds = sb.commands
    assert sb.spec.network == "none"
    first_apply = next(i for i, c in enumerate(cmds) if "git apply" in c)
    reset = next(i for i, c in enumerate(cmds) if "git checkout -q HEAD" in c)
    assert first_apply < reset < next(i for i, c in enumerate(cmds) if "go test" in c)
    assert "model_patch" in cmds[first_apply]


def test_a_patch_that_does_not_apply_is_an_error_not_a_grade():
    f = _factory(GO_PASS)
    f.on(r"git apply|patch ", 1)
    r = evaluate_patch(f, "img", SPEC, instance_id="i", test_patch="diff --git a/t b/t\n", patch="diff --git a/x b/x\n",
                       fail_to_pass=["m::TestA"], pass_to_pass=[])
    assert not r.resolved and r.reward == 0.0 and r.patch_exists and not r.patch_successfully_applied
    assert r.error.startswith("patch does not apply")


def test_none_patch_and_a_report_without_tests():
    assert evaluate_patch(_factory(GO_PASS), "img", SPEC, instance_id="i", test_patch="", patch=None,
                          fail_to_pass=["x"], pass_to_pass=[]).patch_is_None
    r = evaluate_patch(_factory(""), "img", SPEC, instance_id="i", test_patch="", patch="",
                       fail_to_pass=["m::TestA"], pass_to_pass=[])
    assert not r.resolved and "no test" in r.error


def test_failing_fail_to_pass_is_unresolved_with_lists():
    failing = GO_PASS.replace('"Action": "pass", "Package": "m", "Test": "TestA"', '"Action": "fail", "Package": "m", "Test": "TestA"')
    r = evaluate_patch(_factory(failing), "img", SPEC, instance_id="i", test_patch="", patch="",
                       fail_to_pass=["m::TestA"], pass_to_pass=["m::TestB"])
    assert not r.resolved and r.error is None and r.tests_status["FAIL_TO_PASS"].failure == ["m::TestA"]
    assert r.tests_status["PASS_TO_PASS"].success == ["m::TestB"] and r.f2p_rate == 0.0
