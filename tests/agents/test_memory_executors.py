"""Memory and its executors: every seed entry's actions are executable by some executor of its
ecosystem (or the entry goes), and memory before planning changes the plan -- a pin, an option,
a toolchain, a Debian package -- before anything fails (EnvPilot's context-aware retrieval)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agents.mint_config import MintConfig
from agents.ecosystems import by_name
from agents.ecosystems.base import Plan, PlanRequest
from agents.execution import executable
from agents.memory.api import ExperienceMemory, MemoryConfig
from agents.memory.before import memory_before_plan
from agents.memory.experience import Experience, memory_languages
from agents.memory.experience_store import load_seed_files
from agents.models import Instance, StepRecord
from tests.agents.ecosystems.conftest import make_tree


def test_every_seed_action_has_an_executor():
    missing = [(e.id, a.kind) for e in load_seed_files() for a in e.actions if not executable(e.ecosystem, a)]
    assert missing == []


def test_the_memory_and_the_rows_share_one_vocabulary():
    assert set(memory_languages()) - {"any"} == {"python", "javascript", "typescript", "go", "rust", "java", "php", "ruby", "c", "cpp",
                                                   "lua"}
    assert {e.ecosystem for e in load_seed_files()} <= set(memory_languages())
    assert Instance(instance_id="a__b-1", repo="a/b", base_commit="0", patch="x", test_patch="y",
                    language="C++").language == "cpp"
    assert Instance(instance_id="a__b-1", repo="a/b", base_commit="0", patch="x", test_patch="y",
                    language="Go").language == "go"


def test_executors_refuse_what_nobody_runs():
    from agents.memory.experience import PinAction, ToolchainAction, UvLiftAction

    assert not executable("java", ToolchainAction(tool="maven", version="3.6"))
    assert not executable("ruby", PinAction(requirement="rake < 12"))
    assert not executable("go", UvLiftAction(package="numpy"))
    assert executable("cpp", ToolchainAction(tool="debian", version="bookworm"))
    assert executable("typescript", PinAction(requirement="typescript@<5"))


def test_the_memory_vocabulary_and_families_come_from_the_registry():
    from agents.memory.experience import family

    assert family("typescript") == ("typescript", "javascript", "any")
    assert family("c") == ("c", "cpp", "any") and family("python") == ("python", "any")
    with pytest.raises(ValueError, match="no language of the memory"):
        Experience(id="x-1", problem="some problem text", solution="a fix", error_signature="err",
                   ecosystem="kotlin")


def _run(tmp_path, memory, language="go", toolchain="go 1.15.15"):
    tree = make_tree(tmp_path, {"go.mod": "module x\n\ngo 1.15\n", "a_test.go": "package x\n"})
    inst = Instance(instance_id="acme__x-2", repo="acme/x", base_commit=tree.commit, patch="p", test_patch="t",
                    created_at="2021-01-01T00:00:00Z", language=language)
    steps: list[StepRecord] = []
    run = SimpleNamespace(config=MintConfig(workdir=tmp_path), helper=SimpleNamespace(memory=memory,
                          use_memory_actions=True), language=language, instance=inst, tree=tree, traj=steps.append)
    profile = SimpleNamespace(runners=["go-test"], manifests=["go.mod"], ci=[], dependencies=[], build_systems=["go"])
    plan = Plan(ecosystem="go", toolchain=toolchain, image="i", parser="go_test_json")
    return run, profile, plan, steps


def _learned(**kw) -> Experience:
    return Experience(provenance={"source": "learned", "instance_ids": ["acme__x-1"]}, times_applied=1,
                      times_worked=1, error_signature="package io/fs is not in GOROOT", ecosystem="go",
                      tags=["learned", "feedback"], context={"repos": ["acme/x"]}, **kw)


def test_a_proven_lesson_changes_the_plan_before_anything_fails(tmp_path):
    mem = ExperienceMemory.open(MemoryConfig(path=None, seed_dir=None))
    mem.store.add(_learned(id="learned-go-iofs", problem="calc.go: package io/fs is not in GOROOT on the after side",
                           solution="repair: a newer Go", actions=[{"kind": "toolchain", "tool": "go",
                                                                    "version": ">=1.16"},
                                                                   {"kind": "apt", "packages": ["tcl"]}]))
    run, profile, plan, steps = _run(tmp_path, mem)
    req = memory_before_plan(run, profile, plan, by_name(plan.ecosystem), PlanRequest())
    assert req.toolchain == ">=1.16" and req.apt == ["tcl"] and req.reasons == ["memory learned-go-iofs"]
    assert any(s.rule == "before-plan" and "learned-go-iofs" in s.note for s in steps)


def test_an_unproven_entry_or_a_satisfied_constraint_changes_nothing(tmp_path):
    mem = ExperienceMemory.open(MemoryConfig(path=None, seed_dir=None))
    e = _learned(id="learned-go-iofs", problem="calc.go: package io/fs is not in GOROOT on the after side",
                 solution="repair: a newer Go", actions=[{"kind": "toolchain", "tool": "go", "version": ">=1.16"}])
    mem.store.add(e.model_copy(update={"times_worked": 0, "times_applied": 1}))
    run, profile, plan, _ = _run(tmp_path, mem)
    assert memory_before_plan(run, profile, plan, by_name(plan.ecosystem), PlanRequest()) == PlanRequest()
    mem2 = ExperienceMemory.open(MemoryConfig(path=None, seed_dir=None))
    mem2.store.add(e)
    run, profile, plan, _ = _run(tmp_path / "b", mem2, toolchain="go 1.19.8")
    assert memory_before_plan(run, profile, plan, by_name(plan.ecosystem), PlanRequest()) == PlanRequest()


@pytest.mark.parametrize("action,check", [
    ({"kind": "pin", "requirement": "markupsafe<2.1"}, lambda r: r.options["install"] == ["markupsafe<2.1"]),
    ({"kind": "uv_option", "option": "no_build_isolation"}, lambda r: r.options["no_build_isolation"] is True),
    ({"kind": "toolchain", "tool": "python", "version": "<3.12"}, lambda r: r.toolchain == "<3.12"),
    ({"kind": "apt", "packages": ["libxml2-dev"]}, lambda r: r.apt == ["libxml2-dev"]),
])
def test_python_plans_take_pins_options_toolchains_and_packages(tmp_path, action, check):
    from agents.ecosystems.python.profile import PythonProfile

    mem = ExperienceMemory.open(MemoryConfig(path=None, seed_dir=None))
    mem.store.add(Experience(id="learned-py-x", ecosystem="python", problem="ImportError soft_unicode markupsafe",
                             solution="repair: pin", actions=[action], error_signature="soft_unicode",
                             tags=["learned", "feedback"], times_applied=2, times_worked=2,
                             provenance={"source": "learned"}, context={"repos": ["acme/x"]}))
    run, _, _, _ = _run(tmp_path, mem, language="python")
    profile = SimpleNamespace(runners=["pytest"], manifests=["setup.py"], ci=[], dependencies=[], build_systems=["pip"])
    plan = Plan(ecosystem="python", toolchain="3.12", image="i", parser="pytest_plugin",
                state={"profile": PythonProfile(commit="c").model_dump()})
    req = memory_before_plan(run, profile, plan, by_name(plan.ecosystem), PlanRequest())
    assert check(req), req
