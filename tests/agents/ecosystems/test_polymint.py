"""The one minter (agents.flow) with a toy ecosystem and the fake sandbox:
plan -> setup (with a repair) -> commit -> before/after runs parsed by a polyglot parser ->
grade; anomalous runs are never graded; a failing setup is env_failed naming the step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agents.flow as flow
import agents.minter as minter
from agents.mint_config import MintConfig
from agents.ecosystems.base import Ecosystem, PolyPlan
from envpool.fake import FakeSandboxFactory
from tests.agents.ecosystems.conftest import force_ecosystem, make_instance, make_repo

PATCH = """diff --git a/calc.go b/calc.go
--- a/calc.go
+++ b/calc.go
@@ -1 +1 @@
-package calc // bug
+package calc // fixed
"""
TEST_PATCH = """diff --git a/calc_test.go b/calc_test.go
--- a/calc_test.go
+++ b/calc_test.go
@@ -1 +1 @@
-package calc // old test
+package calc // new test
"""


def _events(results: dict[str, str]) -> str:
    lines = []
    for test, action in results.items():
        lines.append({"Action": "run", "Package": "example.com/calc", "Test": test})
        lines.append({"Action": action, "Package": "example.com/calc", "Test": test, "Elapsed": 0.01})
    final = "fail" if "fail" in results.values() else "pass"
    lines.append({"Action": final, "Package": "example.com/calc", "Elapsed": 0.02})
    return "\n".join(json.dumps(x) for x in lines) + "\n"


class ToyEco(Ecosystem):
    """A Go-like ecosystem whose setup needs one repair and whose test output is scripted."""

    name = "toy"
    languages = ("go",)

    def __init__(self, setup_fails: bool = False):
        self.setup_fails = setup_fails
        self.repairs: list[str] = []

    def detect(self, tree, language):
        return 10

    def plan(self, tree, instance, touched, images, request=None):
        assert "calc_test.go" in touched
        return PolyPlan(ecosystem="toy", toolchain="toy 1.0", image="toy:1", setup_commands=["fetch-deps"],
                        env={"GOFLAGS": "-mod=mod"}, test_command="go test -json ./...", parser="go_test_json",
                        test_files=["calc_test.go"])

    def repair(self, plan, command, output, tried):
        if "missing module" in output and "go mod tidy" not in tried:
            self.repairs.append(command)
            return ["go mod tidy"]
        return None


def _factory(after_output: str, before_output: str) -> FakeSandboxFactory:
    f = FakeSandboxFactory(run_id="t")
    state = {"deps": 0}

    def deps(cmd, sb):
        state["deps"] += 1
        return (1, "go: missing module example.com/x") if state["deps"] == 1 else (0, "ok")

    def tests(cmd, sb):
        patched = any("after_patch" in c for c in sb.commands)
        return (0 if patched else 1, after_output if patched else before_output)

    f.on(r"^fetch-deps", deps)
    f.on(r"go test -json", tests)
    return f


@pytest.fixture
def instance(tmp_path):
    git_dir, sha = make_repo(tmp_path, {"calc.go": "package calc // bug\n",
                                        "calc_test.go": "package calc // old test\n"})
    inst = make_instance(sha, "go", "2024-01-01T00:00:00Z", instance_id="toy__calc-1", repo="toy/calc", patch=PATCH,
                         test_patch=TEST_PATCH)
    return inst, git_dir


def test_polyglot_instance_verified_with_repair(tmp_path, instance, monkeypatch):
    inst, git_dir = instance
    eco = ToyEco()
    force_ecosystem(monkeypatch, eco)
    factory = _factory(_events({"TestAdd": "pass", "TestOld": "pass"}),
                       _events({"TestAdd": "fail", "TestOld": "pass"}))
    cfg = MintConfig(workdir=tmp_path / "w", run_id="t")
    res = minter.mint_instance(inst, git_dir, cfg, factory=factory)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["example.com/calc::TestAdd"]
    assert res.PASS_TO_PASS == ["example.com/calc::TestOld"]
    assert res.interpreter == "toy 1.0" and res.parser == "go_test_json"
    assert eco.repairs == ["fetch-deps"]
    assert "go mod tidy" in res.setup_script and res.env is not None and res.env.language == "go"  # the row language, never the module name
    steps = [json.loads(line) for line in Path(res.trajectory_path).read_text().splitlines()]
    assert [s["rule"] for s in steps if s["agent"] == "execution"] == ["recipe:toy:0", "repair:toy:cmd", "repair:toy",
                                                                         "recipe:toy:0"]
    # runs as is in the image: the test files reset to the test_patch, the plan's env exported
    # (and in the image's ENV)
    assert res.test_command.startswith("cd /testbed && { if git cat-file -e HEAD:calc_test.go")
    assert "base64 -d | git apply" in res.test_command and "export GOFLAGS=-mod=mod; " in res.test_command
    assert res.test_command.endswith("go test -json ./...")
    assert res.anomalies == [] and res.test_infra_files == []
    # every run of a side in a fresh container: nothing one run leaves reaches the next
    runs = [sb for sb in factory.sandboxes if sb.spec.network == "none"]
    assert len(runs) == cfg.verify.before_runs + cfg.verify.after_runs
    assert all(sum("go test" in c for c in sb.commands) == 1 for sb in runs)
    assert factory.images[res.image].env == {"GOFLAGS": "-mod=mod"}


def test_untrustworthy_after_runs_are_not_graded(tmp_path, instance, monkeypatch):
    inst, git_dir = instance
    force_ecosystem(monkeypatch, ToyEco())
    # after: the stream stops mid-test (a `run` with no end and no package result)
    cut = json.dumps({"Action": "run", "Package": "example.com/calc", "Test": "TestAdd"}) + "\n"
    factory = _factory(cut, _events({"TestAdd": "fail"}))
    res = minter.mint_instance(inst, git_dir, MintConfig(workdir=tmp_path / "w", run_id="t"), factory=factory)
    assert res.outcome == "tests_not_run" and "after" in res.reason
    assert res.FAIL_TO_PASS == []


def test_runs_with_anomalies_are_dropped(tmp_path, instance, monkeypatch):
    """cargo printed 2 passed but only 1 result line: the after runs are untrustworthy."""
    inst, git_dir = instance

    class Cargo(ToyEco):
        def plan(self, tree, instance, touched, images, request=None):
            return super().plan(tree, instance, touched, images).model_copy(
                update={"parser": "cargo_test", "test_command": "cargo test"})

    force_ecosystem(monkeypatch, Cargo())
    head = "     Running unittests src/lib.rs (target/debug/deps/calc-1)\n\nrunning 2 tests\n"
    before = head + "test t::add ... FAILED\ntest t::old ... ok\n\ntest result: FAILED. 1 passed; 1 failed; " \
        "0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n"
    after = head + "test t::add ... ok\n\ntest result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; " \
        "0 filtered out; finished in 0.00s\n"
    f = FakeSandboxFactory(run_id="t")
    f.on(r"cargo test", lambda cmd, sb: (0, after if any("after_patch" in c for c in sb.commands) else before))
    res = minter.mint_instance(inst, git_dir, MintConfig(workdir=tmp_path / "w", run_id="t"), factory=f)
    assert res.outcome == "tests_not_run", res.reason
    assert "can be trusted" in res.reason and res.FAIL_TO_PASS == []
    assert any(a.startswith("after#1: ") and "totals 2 passed" in a for a in res.anomalies)


def test_setup_failure_is_env_failed_naming_the_step(tmp_path, instance, monkeypatch):
    inst, git_dir = instance

    class Broken(ToyEco):
        def repair(self, plan, command, output, tried):
            return None

    force_ecosystem(monkeypatch, Broken())
    factory = _factory("", "")
    res = minter.mint_instance(inst, git_dir, MintConfig(workdir=tmp_path / "w", run_id="t"), factory=factory)
    assert res.outcome == "env_failed"
    assert "fetch-deps" in res.reason and "missing module" in res.reason
    assert res.image == ""


def test_memory_repairs_what_the_rules_do_not_and_learning_counts_it(tmp_path, instance, monkeypatch):
    """EnvPilot's loop outside Python: a stored Go experience fixes the failing setup step, and
    distilling the trajectory credits that experience (times_worked)."""
    from agents.memory.api import ExperienceMemory, MemoryConfig
    from agents.memory.experience import Experience
    from agents.models import StepRecord
    from agents.repair import RepairHelper

    inst, git_dir = instance

    class NoRules(ToyEco):
        def repair(self, plan, command, output, tried):
            return None

    mem = ExperienceMemory.open(MemoryConfig(path=tmp_path / "m.duckdb", seed_dir=None))
    mem.store.upsert(Experience(
        id="go-missing-module", problem="go build stops: a module is missing from go.mod",
        solution="add the module", actions=[{"kind": "shell", "command": "go get ${mod}"}],
        ecosystem="go", error_signature=r"go: missing module (?P<mod>\S+)"))
    force_ecosystem(monkeypatch, NoRules())
    monkeypatch.setattr(flow, "make_helper", lambda config, iid, llm=None: RepairHelper(memory=mem))
    factory = _factory(_events({"TestAdd": "pass"}), _events({"TestAdd": "fail"}))
    res = minter.mint_instance(inst, git_dir, MintConfig(workdir=tmp_path / "w", run_id="t"), factory=factory)
    assert res.outcome == "verified", res.reason
    assert "go get example.com/x" in res.setup_script
    steps = [StepRecord.model_validate_json(line) for line in Path(res.trajectory_path).read_text().splitlines()]
    assert any(s.rule == "memory:go-missing-module" for s in steps)
    mem = ExperienceMemory.open(MemoryConfig(path=tmp_path / "m.duckdb", seed_dir=None))
    mem.learn(steps, "go", inst.instance_id)
    e = mem.store.get("go-missing-module")
    assert (e.times_applied, e.times_worked) == (1, 1)
    mem.close()
