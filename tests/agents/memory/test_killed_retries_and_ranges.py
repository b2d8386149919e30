"""Killed retries score nothing and teach nothing; version ranges that overlap meet; toolchain labels are read as context_for reads them; a seed range checked against its problem (issue 30 review of 650f1b7..7163d97).

1. Execution scores a setup-step retry killed with exit 137 (SIGKILL, e.g. the OOM killer; not
   `timed_out`) as the rule having worked -- its cut-short output no longer shows the rule's
   error -- while learning (`learn.KILLED_EXIT_CODES`) and docs/concepts.md say exit 124 or 137
   scores nothing.
2. `retrieve.ranges_meet` misses the versions just above a strict lower bound (`>6.0` and
   `<6.2.5` meet at 6.1), so `outside_range` holds back an entry for a project declaring
   `pytest>5` / `setuptools>40`.
3. `retrieve.outside_range` treats a toolchain label that does not start with its version
   (`go 1.22`, `node 20`, `jdk 17 + maven`, `gcc 10, cmake 3.18`: the plans' own labels) as a
   known toolchain outside every range (`satisfies` reads no version from it), so every
   toolchain-ranged entry is held back -- an unknown fact must hold nothing back.
4. A chain whose last step was killed by its time limit teaches a negative lesson keyed on the
   cut-short output (a killed step "teaches no lesson").
5. Seed `rust-git-index-unreachable`: cargo 1.68 and 1.69 still fetch crates.io's index with git
   by default (sparse is the default from 1.70), yet its range `<1.68` holds it back for them.
No Docker."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from agents.ecosystems.base import Ecosystem, Plan
from agents.ecosystems.runs import BuildJob
from agents.execution import run_setup
from agents.memory.experience import EntryContext, Experience
from agents.memory.experience_store import hand_written
from agents.memory.knowledge import go_repair_entries
from agents.memory.repo_context import RepoContext
from agents.memory.retrieve import outside_range, ranges_meet
from agents.mint_config import MintConfig
from agents.models import StepRecord
from envpool.fake import FakeSandbox
from envpool.sandbox import SandboxSpec

RULE = go_repair_entries()[0]  # inconsistent vendoring -> go env -w GOFLAGS=-mod=mod
FIX = [a.command for a in RULE.actions]
VENDOR = "go: inconsistent vendoring in /testbed:\n\tgithub.com/a/b@v1.0.0: is explicitly required in go.mod"


class _Go(Ecosystem):
    name = "go"

    def repair(self, plan, command, output, tried):
        return FIX if "vendoring" in output and "\n".join(FIX) + "{}" not in tried else None


def test_a_retry_killed_with_137_gets_no_score_from_execution(tmp_path):
    plan = Plan(ecosystem="go", toolchain="go 1.19", image="i", parser="go_test_json", setup_commands=["go build ./..."])
    sb = FakeSandbox(SandboxSpec(image="i")).on(r"^go env -w", 0)
    sb.script((1, VENDOR), (137, "go: downloading github.com/c/d v1.2.0\nKilled\n"))  # OOM-killed retry
    steps: list[StepRecord] = []
    job = BuildJob(sb=sb, eco=_Go(), plan=plan, instance=SimpleNamespace(instance_id="a__b-1"), tree=None,
                   config=MintConfig(workdir=tmp_path), helper=None, traj=steps.append,
                   log_path=tmp_path / "run.log", deadline=time.monotonic() + 60, language="go")
    assert not run_setup(job).ok
    assert [s.exit_code for s in steps if s.rule == "recipe:go:0"] == [1, 137]
    [score] = [s for s in steps if s.rule == f"score:{RULE.id}"]
    assert score.exit_code is None, json.loads(score.note)  # was 0: "worked"


@pytest.mark.parametrize(("declared", "want"), [(">6.0", "<6.2.5"), (">5", "<6.2.5"), (">40", "<58"),
                                                (">5,!=6.0", "<6.2.5"), (">=1.0,>1.17", "<1.18.20")])
def test_ranges_meet_above_a_strict_lower_bound(declared, want):
    assert ranges_meet(declared, want)


def test_a_project_declaring_pytest_above_5_still_gets_the_lineno_entry():
    [e] = [x for x in hand_written() if x.id == "py-pytest-lineno-alias"]
    ctx = RepoContext(ecosystem="python", toolchain="3.10", declared={"pytest": ">5"})
    assert outside_range(e, ctx) == ""


@pytest.mark.parametrize("label", ["go 1.22", "node 20", "jdk 17 + maven", "gcc 10, cmake 3.18", "temurin-17",
                                   "go1.22"])
def test_a_toolchain_label_is_read_for_its_version_not_held_back_as_unreadable(label):
    def entry(rng: str) -> Experience:
        return Experience(id="go-x", ecosystem="go", problem="a problem of some toolchain", solution="another one",
                          error_signature="xyz", context=EntryContext(toolchain=rng))

    ctx = RepoContext(ecosystem="go", toolchain=label)
    assert outside_range(entry(">=1"), ctx) == ""  # every one of these versions is >= 1
    assert outside_range(entry("<1"), ctx) != ""


def test_a_killed_last_step_teaches_no_negative_lesson():
    from agents.memory.learn import candidates

    build = "go build ./..."
    traj = [StepRecord(agent="execution", rule="recipe:go:0", command=build, exit_code=124,
                       output_excerpt="go: downloading github.com/c/d v1.2.0\ngo: downloading github.com/e/f v0.3.1")]
    lessons, refs = candidates(traj, "go", "a__b-1", repo="a/b")
    assert lessons == [] and refs == []


def test_the_git_index_seed_covers_cargo_168_and_169():
    [e] = [x for x in hand_written() if x.id == "rust-git-index-unreachable"]
    for version in ("1.68.2", "1.69.0"):
        assert outside_range(e, RepoContext(ecosystem="rust", toolchain=version)) == "", version
    assert outside_range(e, RepoContext(ecosystem="rust", toolchain="1.70.0")) != ""
