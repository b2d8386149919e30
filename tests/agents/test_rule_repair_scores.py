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


def _run(tmp_path, after) -> list[StepRecord]:
    plan = Plan(ecosystem="go", toolchain="go 1.19", image="i", parser="go_test_json",
                setup_commands=["go build ./..."])
    sb = FakeSandbox(SandboxSpec(image="i")).on(r"^go env -w", 0)
    sb.script((1, VENDOR), after)  # the build, then its retry after the rule's fix
    steps: list[StepRecord] = []
    job = BuildJob(sb=sb, eco=_Go(), plan=plan, instance=SimpleNamespace(instance_id="a__b-1"), tree=None,
                   config=MintConfig(workdir=tmp_path), helper=None, traj=steps.append,
                   log_path=tmp_path / "run.log", deadline=time.monotonic() + 60, language="go")
    assert not run_setup(job).ok
    return steps


def _scores(tmp_path, after: str) -> list[tuple[int, dict]]:
    return [(s.exit_code, json.loads(s.note)) for s in _run(tmp_path, (1, after)) if s.rule == f"score:{RULE.id}"]


def test_a_rule_repair_whose_retry_timed_out_gets_no_score(tmp_path):
    """A retry killed by its time limit (exit 124, `timed_out`) printed other output than the
    rule's error, but that is the limit cutting it short, not the build getting past the error:
    Execution's `score:<id>` step has no exit code (neither worked nor failed), and learning from
    the trajectory leaves the rule's counters as they were and teaches nothing."""
    from agents.memory.api import ExperienceMemory, MemoryConfig
    from envpool.sandbox import ExecResult

    killed = ExecResult(command="go build ./...", exit_code=1, output="go: downloading github.com/c/d v1.2.0\n",
                        duration=10_000.0)  # longer than any step limit: the fake makes it a timeout
    steps = _run(tmp_path, killed)
    assert [s.exit_code for s in steps if s.rule == "recipe:go:0"] == [1, 124]
    [score] = [s for s in steps if s.rule == f"score:{RULE.id}"]
    note = json.loads(score.note)
    assert score.exit_code is None and note["stage"] == "setup-step" and note["timed_out"] is True
    mem = ExperienceMemory.open(MemoryConfig(path=None))
    before = mem.store.get(RULE.id)
    got = mem.learn(steps, "go", "a__b-1", repo="a/b")
    after = mem.store.get(RULE.id)
    assert (after.times_applied, after.times_worked) == (before.times_applied, before.times_worked)
    assert [e.id for e in got if e.provenance.source == "learned" and e.actions] == []


def test_learning_gives_no_score_to_a_repair_whose_retry_was_killed_without_executions_score():
    """The same from the repair notes alone (a trajectory without Execution's score step): the
    retry killed (124) then a later pass would have made the rule's use "worked" (the killed
    output is not the rule's error); it is not scored. The next retry's repair still is."""
    from agents.memory.api import ExperienceMemory, MemoryConfig

    fix = StepRecord(agent="execution", rule="repair:go", command=" && ".join(FIX), exit_code=0,
                     note="repair: " + json.dumps([{"kind": "shell", "command": c} for c in FIX]))
    build = "go build ./..."
    traj = [StepRecord(agent="execution", rule="recipe:go:0", command=build, exit_code=1, output_excerpt=VENDOR), fix,
            StepRecord(agent="execution", rule="recipe:go:0", command=build, exit_code=124,
                       output_excerpt="go: downloading github.com/c/d v1.2.0"),
            StepRecord(agent="execution", rule="llm", command="go mod download", exit_code=0,
                       note="repair: " + json.dumps([{"kind": "shell", "command": "go mod download"}])),
            StepRecord(agent="execution", rule="recipe:go:0", command=build, exit_code=0)]
    mem = ExperienceMemory.open(MemoryConfig(path=None))
    mem.learn(traj, "go", "a__b-1", repo="a/b")
    e = mem.store.get(RULE.id)
    assert (e.times_applied, e.times_worked) == (0, 0)
    mem.learn(traj[:2] + traj[4:], "go", "a__b-2", repo="a/b")  # the retry not killed: scored
    e = mem.store.get(RULE.id)
    assert (e.times_applied, e.times_worked) == (1, 1)


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
