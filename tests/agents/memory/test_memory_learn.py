"""Learning from trajectories: new entries, reinforcement instead of duplicates, negative experience."""

from __future__ import annotations

import pytest

from agents.memory.actions import parse_repair
from agents.memory.api import ExperienceMemory
from agents.memory.learn import attempt_chains, distil
from agents.models import StepRecord

ERR = ("Traceback (most recent call last):\n  File \"/venv/lib/python3.11/site-packages/barlib/core.py\", line 3\n"
       "ImportError: cannot import name 'frob' from 'zaplib' (/venv/lib/python3.11/site-packages/zaplib/__init__.py)")


def step(rule: str, exit_code: int, output: str = "", note: str = "", command: str | None = None) -> StepRecord:
    return StepRecord(agent="execution", rule=rule, command=command or f"run {rule}", exit_code=exit_code,
                      output_excerpt=output, note=note)


def fixed_trajectory() -> list[StepRecord]:
    """venv ok; the collection probe fails with ERR; the backend pins zaplib; the probe passes."""
    return [step("venv", 0), step("probe:collect", 2, ERR, note="repair: pin zaplib<2"),
            step("probe:collect", 0)]


@pytest.mark.parametrize(("note", "expected"), [
    ("repair: lift numpy", [{"kind": "uv_lift", "package": "numpy"}]),
    ("repair: upgrade PyYAML", [{"kind": "uv_lift", "package": "pyyaml"}]),
    ("repair: isolation", [{"kind": "uv_option", "option": "no_build_isolation"}]),
    ("repair: install pyyaml toml", [{"kind": "install", "packages": ["pyyaml", "toml"]}]),
    ("repair: pin markupsafe<2.1", [{"kind": "pin", "requirement": "markupsafe<2.1"}]),
    ("repair: env NODE_OPTIONS=--openssl-legacy-provider",
     [{"kind": "env", "name": "NODE_OPTIONS", "value": "--openssl-legacy-provider"}]),
    ("repair: apt zlib1g-dev", [{"kind": "apt", "packages": ["zlib1g-dev"]}]),
    ("repair: toolchain node 16", [{"kind": "toolchain", "tool": "node", "version": "16"}]),
    ('repair: [{"kind": "test_arg", "arg": "-vet=off"}]', [{"kind": "test_arg", "arg": "-vet=off"}]),
    ("repair: sed -i 's/a/b/' setup.cfg", [{"kind": "shell", "command": "sed -i 's/a/b/' setup.cfg"}]),
    ("", []),
])
def test_parse_repair(note, expected):
    assert [a.model_dump() for a in parse_repair(note)] == expected


def test_distil_turns_a_fixed_failure_into_one_entry():
    entries = distil(fixed_trajectory(), "python", "org__repo-1")
    assert len(entries) == 1
    e = entries[0]
    assert not e.negative and e.provenance.source == "learned" and e.provenance.instance_ids == ["org__repo-1"]
    assert [a.model_dump() for a in e.actions] == [{"kind": "pin", "requirement": "zaplib<2"}]
    assert e.signature_re.search(ERR) and "cannot import name 'frob'" in e.problem
    assert (e.times_applied, e.times_worked) == (1, 1) and e.solution == "repair: pin zaplib<2"


def test_a_second_identical_trajectory_reinforces_instead_of_duplicating(memory: ExperienceMemory):
    before = len(memory.store)
    first = memory.learn(fixed_trajectory(), "python", "org__repo-1")
    assert len(memory.store) == before + 1
    second = memory.learn(fixed_trajectory(), "python", "org__repo-2")
    assert len(memory.store) == before + 1
    assert [e.id for e in second] == [e.id for e in first]
    e = memory.store.get(first[0].id)
    assert (e.times_applied, e.times_worked) == (2, 2)
    assert e.provenance.instance_ids == ["org__repo-1", "org__repo-2"]
    # and it is now found for the same error elsewhere, with its action
    plans = memory.actions_for(ERR.replace("barlib", "otherlib"), "python")
    assert plans[0].experience_id == e.id and plans[0].actions[0].requirement == "zaplib<2"


def test_a_failure_without_fix_becomes_negative_experience(memory: ExperienceMemory):
    traj = [step("install:project", 1, "error: Failed to build `quuxlib==0.1`\n  cause: QuuxBuildError: no frobs")]
    [neg] = memory.learn(traj, "python", "org__repo-3")
    assert neg.negative and neg.actions == [] and (neg.times_applied, neg.times_worked) == (1, 0)
    assert neg.solution == "no fix found"
    text = traj[0].output_excerpt
    assert all(h.experience.id != neg.id for h in memory.retrieve_for_error(text, "python"))
    assert memory.retriever.retrieve_for_error(text, "python", include_negative=True)[0].experience.id == neg.id
    memory.learn(traj, "python", "org__repo-4")  # seen again: reinforced, not duplicated
    assert memory.store.get(neg.id).times_applied == 2


def test_a_repair_that_did_not_help_counts_against_its_entry(memory: ExperienceMemory):
    memory.learn(fixed_trajectory(), "python", "org__repo-1")
    [learned] = [e for e in memory.store.all("python") if e.provenance.source == "learned"]
    # same repair, same error afterwards, then the backend gives up
    traj = [step("probe:collect", 2, ERR, note="repair: pin zaplib<2"), step("probe:collect", 2, ERR)]
    out = memory.learn(traj, "python", "org__repo-5")
    e = memory.store.get(learned.id)
    assert (e.times_applied, e.times_worked) == (2, 1)
    assert any(x.negative and x.actions == [] for x in out)  # the final failure: no fix known


def test_a_learned_lift_reinforces_the_matching_seed_entry(memory: ExperienceMemory, golden):
    traj = [step("install:project+tests", 1, golden("uv_abi"), note="repair: lift torch"),
            step("install:project+tests", 0)]
    before = len(memory.store)
    [seed] = memory.learn(traj, "python", "org__repo-6")
    assert seed.id == "py-uv-no-abi-wheel" and (seed.times_applied, seed.times_worked) == (1, 1)
    assert len(memory.store) == before


def test_referenced_experience_outcomes_are_counted(memory: ExperienceMemory, golden):
    traj = [step("install", 1, golden("py_soft_unicode"), note="repair: experience py-markupsafe-soft-unicode"),
            step("install", 0)]
    memory.learn(traj, "python", "org__repo-7")
    e = memory.store.get("py-markupsafe-soft-unicode")
    assert (e.times_applied, e.times_worked) == (1, 1) and e.provenance.instance_ids == ["org__repo-7"]


def test_a_repair_noted_on_an_intermediate_step_is_attributed():
    # agents.ecosystems.python.builder's probe: the fix runs as its own step and carries the note
    traj = [step("check:pytest", 1, "ModuleNotFoundError: No module named 'zzyzx'"),
            step("repair:missing-module", 0, note="repair: install zzyzx"),
            step("check:pytest", 0)]
    [e] = distil(traj, "python", "i")
    assert [a.model_dump() for a in e.actions] == [{"kind": "install", "packages": ["zzyzx"]}]


def test_unrelated_attempts_of_one_rule_are_separate_chains():
    traj = [step("install:single", 1, "error: package a is broken", command="install a"),
            step("install:single", 0, command="install b")]
    chains = attempt_chains(traj)
    assert [len(c) for c in chains] == [1, 1]
    assert [e.negative for e in distil(traj, "python", "i")] == [True]


RUST_OUT = "   Compiling time v0.3.20\nerror[E0282]: type annotations needed\nerror: could not compile `time` (lib)\n"
NO_RUN = "cd /testbed && cargo test --no-run -p demo --tests"


def rust_chain(output: str, fix: str) -> list[StepRecord]:
    """polymint's shape: the setup step fails, the ecosystem's repair runs, the step passes."""
    note = 'repair: [{"kind": "shell", "command": ' + __import__("json").dumps(fix) + "}]"
    return [step("recipe:rust:3", 101, output, command=NO_RUN),
            step("repair:rust", 0, "", note=note, command=fix),
            step("recipe:rust:3", 0, "", command=NO_RUN)]


def test_a_learned_shell_action_never_carries_shell_text_from_the_build_output(memory: ExperienceMemory):
    """Issue 11: a crate `x;touch /tmp/pwned` in cargo's output became a learned shell command
    that the memory replays in other repositories' builds."""
    evil = RUST_OUT.replace("time", "x;touch /tmp/pwned")
    entries = memory.learn(rust_chain(evil, "cd /testbed && cargo update -p x;touch /tmp/pwned@0.3.20"),
                           "rust", "o__r-1")
    commands = [a.command for e in entries for a in e.actions if a.kind == "shell"]
    stored = [a.command for e in memory.store.all("rust", include_negative=True) for a in e.actions
              if a.kind == "shell" and e.provenance.source == "learned"]
    assert not any("pwned" in c or ";" in c for c in commands + stored), commands + stored


def test_a_copied_crate_name_becomes_a_placeholder_bound_from_the_next_error(memory: ExperienceMemory):
    [entry] = memory.learn(rust_chain(RUST_OUT, "cd /testbed && cargo update -p time"), "rust", "o__r-1")
    assert [a.command for a in entry.actions] == ["cd /testbed && cargo update -p ${arg1}"]
    assert "(?P<arg1>" in entry.error_signature
    other = RUST_OUT.replace("time", "serde_json")
    [plan] = memory.actions_for(other, "rust")
    assert [a.command for a in plan.actions] == ["cd /testbed && cargo update -p serde_json"]
    # a value with shell syntax never binds into the command
    assert memory.actions_for(RUST_OUT.replace("`time`", "`a$(id)`"), "rust") == []


def test_bound_values_into_shell_commands_are_plain_tokens():
    from agents.memory.actions import bind_actions
    from agents.memory.experience import EnvAction, ShellAction

    acts = [ShellAction(command="pip install ${pkg}"), EnvAction(name="X", value="${pkg}")]
    bound, unbound = bind_actions(acts, {"pkg": "ok-1.2"})
    assert [a.model_dump() for a in bound][0]["command"] == "pip install ok-1.2" and unbound == []
    bound, unbound = bind_actions(acts, {"pkg": "x; rm -rf /"})
    assert [a.kind for a in bound] == ["env"] and unbound == ["pkg"]
