"""A memory action never installs, pins or lifts the project's own package (a real run: on
pytest-dev/pytest the seed `py-pytest-lineno-alias` pinned `pytest>=6.2.5`, installing PyPI's
pytest over the checkout under test). The project's own distributions are in its context
(`RepoContext.own`) and every path applying memory actions leaves such an action out, with a
trajectory step saying why. FakeSandbox only (no Docker)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agents.ecosystems import by_name
from agents.ecosystems.base import Plan, PlanRequest
from agents.ecosystems.python.builder import PythonEnvBuilder
from agents.ecosystems.python.profile import analyze_python
from agents.ecosystems.python.python_plan import choose_python
from agents.memory.actions import installed_packages, own_refusals, requirement_name
from agents.memory.api import ExperienceMemory, MemoryConfig
from agents.memory.before import context_for, memory_before_plan, own_packages
from agents.memory.experience import (Experience, InstallAction, MoveAction, PinAction, ShellAction,
                                      UvLiftAction)
from agents.memory.experience_store import load_seed_files
from agents.memory.repo_context import RepoContext, context_from_python_profile
from agents.mint_config import MintConfig
from agents.models import Instance, StepRecord
from agents.repair import RepairHelper
from envpool.fake import FakeSandbox
from envpool.sandbox import SandboxSpec
from tests.agents.test_python_rules import make_tree, utc

PROBE = "pytest --collect-only"
LINENO = 'TypeError: required field "lineno" missing from alias\n1 error'
SEED = "py-pytest-lineno-alias"


def _pyproject(name: str) -> dict[str, str]:
    return {"pyproject.toml": f'[build-system]\nrequires = ["setuptools"]\nbuild-backend = '
                              f'"setuptools.build_meta"\n\n[project]\nname = "{name}"\nversion = "1.0"\n',
            "src/x/__init__.py": "", "testing/test_x.py": "def test_x():\n    pass\n"}


def _seed_memory() -> ExperienceMemory:
    mem = ExperienceMemory.open(MemoryConfig(path=None, seed_dir=None))
    mem.store.add(next(e for e in load_seed_files() if e.id == SEED))
    return mem


def _builder(tmp_path, name: str, mem: ExperienceMemory):
    tree = make_tree(tmp_path, _pyproject(name))
    profile = analyze_python(tree)
    choice = choose_python(profile, utc("2023-02-01T00:00:00"), ["3.11"])
    helper = RepairHelper(mem, instance_id=f"acme__{name}-1")
    helper.context = context_from_python_profile(profile, "3.11")
    sb = FakeSandbox(SandboxSpec(image="x"))
    state = {"pinned": False}

    def install(cmd, _sb):
        state["pinned"] = state["pinned"] or "pytest>=6.2.5" in cmd
        return 0, "Installed 1 package"

    sb.on(PROBE, lambda cmd, _sb: (0, "1 test collected") if state["pinned"] else (2, LINENO))
    sb.on(r"uv pip install", install)
    b = PythonEnvBuilder(sb, tree, profile, choice, utc("2023-02-01T00:00:00"), "1.0", on_step=lambda s: None,
                         helper=helper)
    return b, helper, state


def test_requirement_names_and_the_packages_an_action_installs():
    assert [requirement_name(t) for t in ("pytest>=6.2.5", "Foo_Bar[x]==1", "node-sass@4", "@scope/pkg@^1",
                                          "rake -v '<11'", "./dist/x.whl", "git+https://x/y")] == \
        ["pytest", "foo-bar", "node-sass", "@scope/pkg", "rake", None, None]
    assert installed_packages(PinAction(requirement="pytest>=6.2.5")) == ["pytest"]
    assert installed_packages(InstallAction(packages=["Frob", "numpy<2"])) == ["frob", "numpy"]
    assert installed_packages(UvLiftAction(package="frob")) == ["frob"]
    assert installed_packages(ShellAction(command="python -m pip install -U 'pytest<7' -r req.txt && "
                                                  "pip install -e .")) == ["pytest"]
    assert installed_packages(MoveAction(move="amend", packages=["frob"], install="module")) == ["frob"]
    assert installed_packages(MoveAction(move="amend", packages=["frob"], install="system")) == []


def test_own_refusals_leave_out_only_the_projects_own_package():
    acts = [PinAction(requirement="pytest>=6.2.5"), InstallAction(packages=["pluggy"]), UvLiftAction(package="PyTest")]
    kept, why = own_refusals(acts, ["pytest"])
    assert kept == [InstallAction(packages=["pluggy"])]
    assert len(why) == 2 and all("pytest is the project's own package" in w for w in why)
    assert '"kind": "pin"' in why[0]
    assert own_refusals(acts, []) == (acts, [])
    assert own_refusals(acts, ["frob"]) == (acts, [])


def test_the_python_context_names_the_projects_own_package(tmp_path):
    for i, files in enumerate([_pyproject("Frob_Lib"),
                               {"setup.cfg": "[metadata]\nname = frob.lib\n", "setup.py": "import setuptools\n"},
                               {"setup.py": "from setuptools import setup\nsetup(name='frob-lib')\n"}]):
        profile = analyze_python(make_tree(tmp_path / str(i), files))
        assert context_from_python_profile(profile, "3.11").own == ["frob-lib"]


@pytest.mark.parametrize("name,pinned", [("pytest", False), ("frob", True)])
def test_the_lineno_alias_seed_never_pins_pytest_over_pytest_itself(tmp_path, name, pinned):
    b, helper, state = _builder(tmp_path, name, _seed_memory())
    ok = b.check(f"/opt/venv/bin/python -m {PROBE} testing", "probe:collect", ok_codes=(0, 5), rounds=3)
    pins = [c for c in b.commands if "pytest>=6.2.5" in c]
    assert ok is pinned and state["pinned"] is pinned and bool(pins) is pinned
    refused = [s for s in b.steps if s.rule == f"own-package:{SEED}"]
    if pinned:
        assert helper.applied == [SEED] and not refused
    else:
        assert helper.applied == [] and refused and "pytest is the project's own package" in refused[0].note


def test_a_learned_lesson_installing_the_own_package_is_dropped_after_a_failure():
    lesson = Experience(id="learned-frob-reinstall", ecosystem="python", problem="ImportError: frob._speedups missing",
                        solution="repair: install frob", actions=[{"kind": "install", "packages": ["frob==1.2"]}],
                        error_signature="frob._speedups", tags=["learned"], times_applied=3, times_worked=3,
                        provenance={"source": "learned", "instance_ids": ["acme__frob-1"]},
                        context={"repos": ["acme/frob"]})
    mem = ExperienceMemory.open(MemoryConfig(path=None, seed_dir=None))
    mem.store.add(lesson)
    helper = RepairHelper(mem)
    helper.context = RepoContext(ecosystem="python", repo="acme/frob", own=["Frob"])
    steps: list[StepRecord] = []
    assert helper.memory_plans("ImportError: frob._speedups missing", "python", on_step=steps.append) == []
    assert [s.rule for s in steps] == ["own-package:learned-frob-reinstall"]
    helper.context = helper.context.model_copy(update={"own": ["other"]})
    plans = helper.memory_plans("ImportError: frob._speedups missing", "python")
    assert [p.experience_id for p in plans] == ["learned-frob-reinstall"]


def _run(tmp_path, mem, files):
    tree = make_tree(tmp_path, files)
    inst = Instance(instance_id="acme__frob-2", repo="acme/frob", base_commit=tree.commit, patch="p", test_patch="t",
                    created_at="2023-01-01T00:00:00Z", language="python")
    steps: list[StepRecord] = []
    run = SimpleNamespace(config=MintConfig(workdir=tmp_path), helper=SimpleNamespace(memory=mem,
                          use_memory_actions=True), language="python", instance=inst, tree=tree, traj=steps.append)
    profile = SimpleNamespace(runners=["pytest"], manifests=["pyproject.toml"], ci=[], dependencies=[],
                              build_systems=["pip"])
    return run, profile, tree, steps


def test_a_proven_lesson_pinning_the_own_package_changes_no_plan(tmp_path):
    mem = ExperienceMemory.open(MemoryConfig(path=None, seed_dir=None))
    mem.store.add(Experience(id="learned-py-frob-pin", ecosystem="python", problem="ImportError soft_unicode frob",
                             solution="repair: pin", actions=[{"kind": "pin", "requirement": "frob<2"},
                                                              {"kind": "pin", "requirement": "markupsafe<2.1"}],
                             error_signature="soft_unicode", tags=["learned"], times_applied=2, times_worked=2,
                             provenance={"source": "learned"}, context={"repos": ["acme/frob"]}))
    run, profile, tree, steps = _run(tmp_path, mem, _pyproject("frob"))
    plan = Plan(ecosystem="python", toolchain="3.12", image="i", parser="pytest_plugin",
                state={"profile": analyze_python(tree).model_dump()})
    req = memory_before_plan(run, profile, plan, by_name("python"), PlanRequest())
    assert req.options["install"] == ["markupsafe<2.1"]
    assert [s.rule for s in steps if s.rule.startswith("own-package")] == ["own-package:learned-py-frob-pin"]


def test_the_context_reads_the_own_package_without_a_python_profile(tmp_path):
    mem = ExperienceMemory.open(MemoryConfig(path=None, seed_dir=None))
    run, profile, tree, _ = _run(tmp_path, mem, _pyproject("frob"))
    plan = Plan(ecosystem="python", toolchain="3.12", image="i", parser="pytest_plugin")
    assert context_for(run, profile, plan, by_name("python")).own == ["frob"]
    js = make_tree(tmp_path / "js", {"package.json": '{"name": "@acme/frob", "version": "1.0.0"}'})
    assert own_packages(js, "javascript") == ["@acme/frob"] and own_packages(js, "go") == []
    rs = make_tree(tmp_path / "rs", {"Cargo.toml": '[package]\nname = "frob"\nversion = "0.1.0"\n',
                                     "src/lib.rs": ""})
    assert own_packages(rs, "rust") == ["frob"]
    assert own_packages(make_tree(tmp_path / "none", {"a.txt": "x"}), "rust") == []
