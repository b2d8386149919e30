"""Execution's score of a hand-written rule's repair of a setup step (issue 30 review, finding 5):
the use worked when the retried step passed or no longer shows the error the rule matched, so a
build that reports its problems one at a time credits each fix. No Docker."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from agents.ecosystems.base import Ecosystem, Plan
from agents.ecosystems.runs import BuildJob
from agents.execution import run_setup
from agents.memory.knowledge import go_repair_entries
from agents.mint_config import MintConfig
from agents.models import StepRecord
from envpool.fake import FakeSandbox
from envpool.sandbox import SandboxSpec

RULE = go_repair_entries()[0]  # inconsistent vendoring -> go env -w GOFLAGS=-mod=mod
FIX = [a.command for a in RULE.actions]
VENDOR = "go: inconsistent vendoring in /testbed:\n\tgithub.com/a/b@v1.0.0: is explicitly required in go.mod"
OTHER = "main.go:3:2: cannot find package \"github.com/c/d\" in any of:\n\t/usr/local/go/src/github.com/c/d"


class _Go(Ecosystem):
    name = "go"

    def repair(self, plan, command, output, tried):
        return FIX if "vendoring" in output and "\n".join(FIX) + "{}" not in tried else None


def _scores(tmp_path, after: str) -> list[tuple[int, dict]]:
    plan = Plan(ecosystem="go", toolchain="go 1.19", image="i", parser="go_test_json",
                setup_commands=["go build ./..."])
    sb = FakeSandbox(SandboxSpec(image="i")).on(r"^go env -w", 0)
    sb.script((1, VENDOR), (1, after))  # the build, then its retry after the rule's fix
    steps: list[StepRecord] = []
    job = BuildJob(sb=sb, eco=_Go(), plan=plan, instance=SimpleNamespace(instance_id="a__b-1"), tree=None,
                   config=MintConfig(workdir=tmp_path), helper=None, traj=steps.append,
                   log_path=tmp_path / "run.log", deadline=time.monotonic() + 60, language="go")
    assert not run_setup(job).ok
    return [(s.exit_code, json.loads(s.note)) for s in steps if s.rule == f"score:{RULE.id}"]


@pytest.mark.parametrize(("after", "worked"), [(OTHER, True), (VENDOR, False)])
def test_a_rule_repair_worked_when_the_retry_no_longer_shows_its_error(tmp_path, after, worked):
    [(code, note)] = _scores(tmp_path, after)
    assert (code == 0) is worked
    assert note["stage"] == "setup-step" and note["passed"] is False and note["error_gone"] is worked


def _score(code: int | None, stage: str = "setup-step") -> StepRecord:
    return StepRecord(agent="memory", rule=f"score:{RULE.id}", exit_code=code, note=json.dumps({"stage": stage}))


def test_an_instance_counts_once_on_an_entry_worked_when_its_successes_are_at_least_its_failures():
    from agents.memory.api import ExperienceMemory, MemoryConfig

    mem = ExperienceMemory.open(MemoryConfig(path=None))
    mem.learn([_score(c) for c in (1, 0, 1)], "go", "a__b-1", repo="a/b")  # 1 success, 2 failures: failed
    e = mem.store.get(RULE.id)
    assert (e.times_applied, e.times_worked) == (1, 0)
    mem.learn([_score(c) for c in (1, 0)], "go", "a__b-2", repo="a/b")  # a tie: worked
    e = mem.store.get(RULE.id)
    assert (e.times_applied, e.times_worked) == (2, 1)
    mem.learn([_score(1)] * 3, "go", "a__b-3", repo="a/b")
    e = mem.store.get(RULE.id)
    assert (e.times_applied, e.times_worked) == (3, 1)


def test_an_entry_that_mostly_fails_is_not_hidden_by_one_success_per_instance():
    """Six instances, each with four failed uses and one success: 0/6, so the rule is dropped
    (with "any use worked" it was 6/6, reliability 0.9)."""
    from agents.memory.api import ExperienceMemory, MemoryConfig
    from agents.memory.learn import net_outcomes

    assert net_outcomes([("r", False)] * 4 + [("r", True)]) == [("r", False)]
    assert net_outcomes([("r", False), ("s", True), ("r", True)]) == [("r", True), ("s", True)]
    mem = ExperienceMemory.open(MemoryConfig(path=None))
    for n in range(6):
        mem.learn([_score(1)] * 4 + [_score(0)], "go", f"a__b-{n}", repo="a/b")
    e = mem.store.get(RULE.id)
    assert (e.times_applied, e.times_worked) == (6, 0)
    assert RULE.id in {x.id for x in mem.dropped_entries()}


def test_a_rules_setup_step_use_counts_from_executions_score_not_again_from_its_repair_note():
    """Execution scores each use of a rule on the retry (`score:<id>`, stage setup-step); the repair
    notes of the same uses are not counted a second time. Here the first retry got past the rule's
    error (Execution: worked; the chain ended failing, so the note alone would say failed) and the
    second did not: 1 success, 1 failure -- a tie, worked; counting the notes too gave 1 to 3."""
    from agents.memory.api import ExperienceMemory, MemoryConfig

    note = "repair: " + json.dumps([{"kind": "shell", "command": c} for c in FIX])
    fix = StepRecord(agent="execution", rule="repair:go", command=" && ".join(FIX), exit_code=0, note=note)
    traj = [StepRecord(agent="execution", rule="recipe:go:0", command="go build ./...", exit_code=1,
                       output_excerpt=VENDOR), fix,
            StepRecord(agent="execution", rule="recipe:go:0", command="go build ./...", exit_code=1,
                       output_excerpt=OTHER), _score(0), fix,
            StepRecord(agent="execution", rule="recipe:go:0", command="go build ./...", exit_code=1,
                       output_excerpt=OTHER), _score(1)]
    mem = ExperienceMemory.open(MemoryConfig(path=None))
    mem.learn(traj, "go", "a__b-1", repo="a/b")
    e = mem.store.get(RULE.id)
    assert (e.times_applied, e.times_worked) == (1, 1)


@pytest.mark.parametrize("source", ["diagnosis:missing-header", "llm"])
def test_a_rules_repair_is_scored_on_the_rule_and_teaches_only_a_lesson_bound_to_it(source):
    """Issue 30 review, finding 4: a diagnosis rule's apt install (named by its step's rule) or the
    LLM finding a data repair's very commands is the rule's use, not a free lesson: the data
    repair teaches none, the diagnosis rule only one bound to the rule and to its repository (rv86:
    the repository's next instance gets the binding up front; test_rule_bound_lesson.py)."""
    from agents.memory.api import ExperienceMemory, MemoryConfig
    from agents.memory.knowledge import rule_entry_id

    if source == "llm":
        rid, out, cmd = RULE.id, "go: updates to go.mod needed; to update it:\n\tgo mod tidy", "go build ./..."
        note = [{"kind": "shell", "command": c} for c in FIX]  # an error the rule's pattern does not match
    else:
        rid, out, cmd = rule_entry_id("diagnosis", "missing-header"), \
            "src/x.c:3:10: fatal error: zlib.h: No such file or directory\ncompilation terminated.", "make"
        note = [{"kind": "apt", "packages": ["zlib1g-dev"]}]
    traj = [StepRecord(agent="execution", rule="recipe:x:0", command=cmd, exit_code=1, output_excerpt=out),
            StepRecord(agent="execution", rule=source, command="fix", exit_code=0, note="repair: " + json.dumps(note)),
            StepRecord(agent="execution", rule="recipe:x:0", command=cmd, exit_code=0)]
    mem = ExperienceMemory.open(MemoryConfig(path=None))
    got = mem.learn(traj, "go" if source == "llm" else "c", "a__b-1", repo="a/b")
    learned = [e for e in got if e.provenance.source == "learned"]
    if source == "llm":
        assert learned == []
    else:
        assert learned and all(e.provenance.rule == rid and e.context.repos == ["a/b"] for e in learned)
    e = mem.store.get(rid)
    assert (e.times_applied, e.times_worked) == (1, 1)
