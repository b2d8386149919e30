"""Grading a candidate patch: SWE-bench's rules on our statuses, and the sandbox sequence."""

from __future__ import annotations

import json

from envpool.evaluation import GradedRow, TestsSpec, evaluate_patch, judge, python_of
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


def _row(f2p: list[str], p2p: list[str], test_patch: str = "", tests: TestsSpec = SPEC) -> GradedRow:
    return GradedRow(instance_id="i", image="img", tests=tests, test_patch=test_patch, FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p)


def _factory(report: str) -> FakeSandboxFactory:
    f = FakeSandboxFactory(run_id="t")
    f.on(r"go test", lambda cmd, sb: (sb.put_file("/tmp/r.json", report), 0)[1])
    return f


def test_candidate_then_reset_then_test_patch_then_one_run():
    f = _factory(GO_PASS)
    r = evaluate_patch(f, _row(["m::TestA"], ["m::TestB"], "diff --git a/x_test.go b/x_test.go\n"),
                       "diff --git a/x.go b/x.go\n")
    assert r.resolved and r.reward == 1.0 and r.f2p_rate == 1.0 and r.error is None
    sb = f.sandboxes[-1]
    cmds = sb.commands
    assert sb.spec.network == "none"
    first_apply = next(i for i, c in enumerate(cmds) if "git apply" in c)
    reset = next(i for i, c in enumerate(cmds) if "checkout -q HEAD" in c)
    assert first_apply < reset < next(i for i, c in enumerate(cmds) if "go test" in c)
    assert "model_patch" in cmds[first_apply]


def test_a_patch_that_does_not_apply_is_an_error_not_a_grade():
    f = _factory(GO_PASS)
    f.on(r"git apply|patch ", 1)
    r = evaluate_patch(f, _row(["m::TestA"], [], "diff --git a/t b/t\n"), "diff --git a/x b/x\n")
    assert not r.resolved and r.reward == 0.0 and r.patch_exists and not r.patch_successfully_applied
    assert r.error.startswith("patch does not apply")


def test_an_engine_failure_is_marked_infra_and_a_patch_failure_is_not():
    from contextlib import contextmanager

    from envpool.errors import InfraError

    class NoImage(FakeSandboxFactory):
        @contextmanager
        def sandbox(self, spec, log_path=None):
            raise InfraError("image img not found", instance_id="i")
            yield

    r = evaluate_patch(NoImage(run_id="t"), _row(["m::TestA"], []), "diff --git a/x b/x\n")
    assert r.infra_error and not r.resolved and r.error.startswith("InfraError: image img not found")
    f = _factory(GO_PASS)
    f.on(r"git apply|patch ", 1)
    assert not evaluate_patch(f, _row(["m::TestA"], []), "diff --git a/x b/x\n").infra_error


def test_none_patch_and_a_report_without_tests():
    assert evaluate_patch(_factory(GO_PASS), _row(["x"], []), None).patch_is_None
    r = evaluate_patch(_factory(""), _row(["m::TestA"], []), "")
    assert not r.resolved and "no test" in r.error


def test_failing_fail_to_pass_is_unresolved_with_lists():
    failing = GO_PASS.replace('"Action": "pass", "Package": "m", "Test": "TestA"', '"Action": "fail", "Package": "m", "Test": "TestA"')
    r = evaluate_patch(_factory(failing), _row(["m::TestA"], ["m::TestB"]), "")
    assert not r.resolved and r.error is None and r.tests_status["FAIL_TO_PASS"].failure == ["m::TestA"]
    assert r.tests_status["PASS_TO_PASS"].success == ["m::TestB"] and r.f2p_rate == 0.0


def test_a_pytest_run_whose_junit_file_was_rewritten_is_named_as_tampering():
    """A fresh user's trial: `swemint eval` said "pytest reached no test (exit 1; collection
    errors [])" for a prediction that strips `<failure>` from the JUnit XML at exit."""
    import re

    from envpool.sandbox import ExecResult
    from envpool.testrun.channel import encode_frames

    records = [{"kind": "session_start", "pid": 7}, {"kind": "collected", "count": 1, "pid": 7},
               {"kind": "test", "nodeid": "t.py::test_a", "when": "call", "outcome": "failed", "pid": 7},
               {"kind": "session_finish", "exitstatus": 1, "seal": True, "pid": 7}]

    def pytest_run(cmd, sb):
        key = bytes.fromhex(sb.calls[-1].stdin.decode().strip())
        junit = re.search(r"--junitxml=(\S+)", cmd).group(1)
        sb.put_file(junit, '<testsuite><testcase classname="t" name="test_a" file="t.py"/></testsuite>')
        return ExecResult(command=cmd, exit_code=1, output="", channel=encode_frames(records, key))

    f = FakeSandboxFactory(run_id="t")
    f.on(r"-m pytest", pytest_run)
    spec = TestsSpec(kind="pytest", test_files=["t.py"])
    r = evaluate_patch(f, _row(["t.py::test_a"], [], "diff --git a/t.py b/t.py\n", tests=spec),
                       "diff --git a/x.py b/x.py\n")
    assert not r.resolved and r.reward == 0.0
    assert "tampered" in r.error and "junit report disagrees" in r.error and "reached no test" not in r.error
