"""The memory ablation of issue 9 without three full passes: where the defaults arm's memory did
nothing, an arm without it takes the same decisions, so `ledger.py arm-todo` names only the ids
where the memory acted (plus controls) and the report carries the rest (`--carry`). Covers what
counts as "the memory acted" (a repair, a plan change before planning, an applied entry whose
diagnosis sent the loop to another plan), the todo list and the carried report. No Docker."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

from agents.mint_config import MintConfig
from agents.ecosystems.base import Ecosystem, Plan
from agents.ecosystems.runs import BuildJob
from agents.execution import run_setup
from agents.memory.api import ActionPlan
from agents.memory.experience import ToolchainAction
from agents.models import InstanceResult, RoundRecord, StepRecord
from agents.repair import RepairHelper
from envpool.fake import FakeSandbox
from envpool.sandbox import SandboxSpec
from scripts.ledger import arm_todo, control_sample, write_ledger
from scripts.ledger import main as ledger_main
from scripts.loop_stats import memory_acts, row_facts
from scripts.measure_report import arms_report


def _row(tmp_path: Path, iid: str, steps: list[StepRecord], rounds: list[RoundRecord] | None = None,
         outcome: str = "verified") -> InstanceResult:
    traj = tmp_path / f"{iid}.jsonl"
    traj.write_text("".join(s.model_dump_json() + "\n" for s in steps))
    rounds = rounds or [RoundRecord(round=1, outcome=outcome)]
    return InstanceResult(instance_id=iid, repo="o/x", outcome=outcome, round=len(rounds), rounds=rounds,
                          trajectory_path=str(traj))


class _Memory:
    """A memory whose only entry answers every failure with a toolchain action."""

    def actions_for(self, output, language, variables=None, k=3, ctx=None):
        return [ActionPlan(experience_id="e-go-new", actions=[ToolchainAction(tool="go", version=">=1.21")],
                           solution="use a newer Go", via="signature", reliability=0.9)]


def test_an_applied_entry_whose_diagnosis_replans_is_in_the_trajectory_and_counts_as_acted(tmp_path):
    eco = type("Go", (Ecosystem,), {"name": "go"})()
    plan = Plan(ecosystem="go", toolchain="go 1.19", image="i", parser="go_test_json",
                setup_commands=["go build ./..."])
    sb = FakeSandbox(SandboxSpec(image="i"), default=(1, "package slices is not in GOROOT"))
    steps: list[StepRecord] = []
    job = BuildJob(sb=sb, eco=eco, plan=plan, instance=SimpleNamespace(instance_id="o__x-1"), tree=None,
                   config=MintConfig(workdir=tmp_path), helper=RepairHelper(memory=_Memory()), traj=steps.append,
                   log_path=tmp_path / "run.log", deadline=time.monotonic() + 60, language="go")
    out = run_setup(job)
    assert not out.ok and out.diagnosis.toolchain == ">=1.21" and "experience e-go-new" in out.diagnosis.detail
    assert any(s.rule == "memory:e-go-new" and s.note.startswith("applying experience") for s in steps)
    facts = row_facts(_row(tmp_path, "o__x-1", steps))
    assert facts["memory_acted"] and facts["memory_repairs"] == 0 and facts["before_changes"] == 0
    assert memory_acts(facts, "off") and not memory_acts(facts, "after_failure")


def test_what_counts_as_the_memory_acting(tmp_path):
    quiet = row_facts(_row(tmp_path, "q", [StepRecord(agent="memory", rule="before-plan",
                                                      note="3 entries retrieved (a, b, c); applied: none")]))
    assert not quiet["memory_acted"] and not memory_acts(quiet, "off") and not memory_acts(quiet, "after_failure")
    before = row_facts(_row(tmp_path, "b", [StepRecord(agent="memory", rule="before-plan",
                                                       note="1 entries retrieved (a); applied: ['a: apt tcl']")]))
    assert before["memory_acted"] and memory_acts(before, "after_failure")
    fed = row_facts(_row(tmp_path, "f", [], [
        RoundRecord(round=1, outcome="replan", reason="experience e1: memory: use go >=1.21"),
        RoundRecord(round=2, outcome="verified")]))
    assert fed["memory_acted"]
    # a ledger line older than the field: more than one round may hide a memory diagnosis
    assert memory_acts({"memory_repairs": 0, "before_changes": 0, "rounds": 2}, "off")
    assert not memory_acts({"memory_repairs": 0, "before_changes": 0, "rounds": 1}, "off")


def _line(iid: str, outcome: str = "verified", acted: bool = False, before: int = 0) -> dict:
    return {"instance_id": iid, "outcome": outcome, "round": 1, "rounds": 1, "repairs": int(acted),
            "memory_repairs": int(acted and not before), "before_changes": before, "memory_acted": acted,
            "feedback": None, "reused": False}


def test_arm_todo_names_the_acted_ids_and_a_fixed_control_sample(tmp_path, capsys):
    ids = [f"o__x-{n}" for n in range(30)]
    lines = {i: _line(i) for i in ids}
    lines["o__x-3"] = _line("o__x-3", acted=True)
    lines["o__x-7"] = _line("o__x-7", acted=True, before=1)
    del lines["o__x-29"]  # the defaults arm has not run it yet
    defaults = tmp_path / "defaults.jsonl"
    write_ledger(defaults, lines)
    arm = tmp_path / "off.jsonl"
    write_ledger(arm, {"o__x-3": _line("o__x-3", outcome="env_failed")})
    todo, counts = arm_todo(ids, defaults, arm, "off", share=0.1, least=5, apart={"o__x-11"})
    controls = control_sample([i for i in ids if i in lines and i not in ("o__x-3", "o__x-7", "o__x-11")], 0.1, 5)
    assert len(controls) == 5 and set(controls) <= set(ids)
    assert todo == [i for i in ids if i == "o__x-7" or i in controls]
    assert counts == {"ids": 29, "no_defaults": 1, "acted": 2, "control": 5, "done": 1, "todo": 6}
    todo_af, _ = arm_todo(ids, defaults, tmp_path / "none.jsonl", "after_failure")
    assert "o__x-7" in todo_af and "o__x-3" not in todo_af  # a repair after failure stays in that arm
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("\n".join(ids) + "\n")
    assert ledger_main(["arm-todo", "--arm", "off", "--defaults", str(defaults), "--arm-ledger", str(arm),
                        "--ids-file", str(ids_file), "--network-bound", str(tmp_path / "nb.txt")]) == 0
    got = capsys.readouterr()
    assert "acted 2" in got.err and "o__x-7" in got.out.split()


def test_a_carried_arm_takes_the_defaults_where_the_memory_did_nothing_and_checks_controls(tmp_path):
    ids = ["a", "b", "c", "d"]
    defaults = tmp_path / "defaults.jsonl"
    write_ledger(defaults, {"a": _line("a", acted=True), "b": _line("b"), "c": _line("c"),
                            "d": _line("d", outcome="no_fail_to_pass")})
    off = tmp_path / "off.jsonl"
    write_ledger(off, {"a": _line("a", outcome="env_failed"), "b": _line("b")})  # a: acted; b: a control
    rep = arms_report([("before_and_after", defaults), ("off", off)], ids, carry={"off": "before_and_after"})
    by = {s["arm"]: s for s in rep["arms"]}
    assert rep["common"] == ids
    assert by["off"]["measured"] == 2 and by["off"]["carried"] == 2
    assert (by["off"]["controls"], by["off"]["controls_agree"]) == (1, 1)
    assert by["before_and_after"]["verified"] == 3 and by["off"]["verified"] == 2  # a fell to env_failed
    # without the carry only the ids the arm ran are compared
    plain = arms_report([("before_and_after", defaults), ("off", off)], ids)
    assert plain["common"] == ["a", "b"]
    # an acted id the arm has not run is never carried
    write_ledger(off, {"b": _line("b")})
    rep2 = arms_report([("before_and_after", defaults), ("off", off)], ids, carry={"off": "before_and_after"})
    assert "a" not in rep2["common"]
    assert json.dumps(rep2)  # plain JSON for --json
