"""The repair policy beyond the rules: experience memory (EnvPilot) and the LLM tool loop, on a
FakeSandbox (no Docker) and FakeLLM (no network)."""

from __future__ import annotations

import re

import pytest

from agents.ecosystems.python.profile import analyze_python
from agents.mint_config import MintConfig
from agents.llm import FakeLLM, LLMConfig, tool_reply
from agents.memory.api import ExperienceMemory, MemoryConfig
from agents.memory.experience import Experience, PinAction
from agents.policy import make_helper, worker_memory
from agents.ecosystems.python.python_plan import choose_python
from agents.ecosystems.python.builder import PythonEnvBuilder
from agents.repair import RepairHelper
from envpool.fake import FakeSandbox
from envpool.sandbox import SandboxSpec
from tests.agents.test_python_rules import make_tree, utc

PROBE = "pytest --collect-only"
ENTRY = Experience(id="test-soft-unicode", problem="markupsafe 2.1 removed soft_unicode; old jinja2 imports it",
                   solution="pin markupsafe below 2.1", actions=[PinAction(requirement="markupsafe<2.1")],
                   ecosystem="python", error_signature=r"cannot import name 'soft_unicode' from 'markupsafe'")


def builder_for(tmp_path, sb, helper, rule_repairs=True) -> PythonEnvBuilder:
    tree = make_tree(tmp_path, {"setup.py": "from setuptools import setup\nsetup(name='p')\n", "p/__init__.py": "",
                                "tests/test_p.py": "def test_x():\n    pass\n"})
    profile = analyze_python(tree)
    choice = choose_python(profile, utc("2023-02-01T00:00:00"), ["3.11"])
    steps = []
    b = PythonEnvBuilder(sb, tree, profile, choice, utc("2023-02-01T00:00:00"), "1.0", on_step=steps.append,
                         helper=helper, rule_repairs=rule_repairs)
    return b


def memory_with(*entries: Experience) -> ExperienceMemory:
    mem = ExperienceMemory.open(MemoryConfig(path=None, seed_dir=None))
    for e in entries:
        mem.store.add(e)
    return mem


def test_memory_repairs_what_no_rule_matches_and_learning_counts_it(tmp_path):
    sb = FakeSandbox(SandboxSpec(image="x"))
    state = {"pinned": False}

    def probe(cmd, _sb):
        if state["pinned"]:
            return 0, "1 test collected"
        return 2, "ImportError: cannot import name 'soft_unicode' from 'markupsafe'\n1 error"

    def install(cmd, _sb):
        state["pinned"] = state["pinned"] or "markupsafe<2.1" in cmd
        return 0, "Installed 1 package"

    sb.on(PROBE, probe).on(r"uv pip install", install)
    mem = memory_with(ENTRY)
    helper = RepairHelper(mem, instance_id="acme__p-1")
    b = builder_for(tmp_path, sb, helper)
    assert b.check(f"/opt/venv/bin/python -m {PROBE} tests", "probe:collect", ok_codes=(0, 5))
    rules = [s.rule for s in b.steps]
    assert "memory:test-soft-unicode" in rules
    pin = [s for s in b.steps if s.rule == "memory:test-soft-unicode" and s.command]
    assert pin and "'markupsafe<2.1'" in pin[0].command and pin[0].command in b.commands
    failed = next(s for s in b.steps if s.rule == "probe:collect" and s.exit_code == 2)
    assert failed.note == "repair: experience test-soft-unicode"
    assert helper.applied == ["test-soft-unicode"]
    mem.learn(b.steps, "python", "acme__p-1")
    got = mem.store.get("test-soft-unicode")
    assert (got.times_applied, got.times_worked) == (1, 1)


def test_memory_plan_is_applied_once_per_instance(tmp_path):
    sb = FakeSandbox(SandboxSpec(image="x"))
    sb.on(PROBE, (2, "ImportError: cannot import name 'soft_unicode' from 'markupsafe'"))
    helper = RepairHelper(memory_with(ENTRY))
    b = builder_for(tmp_path, sb, helper)
    assert not b.check(f"/opt/venv/bin/python -m {PROBE} tests", "probe:collect", rounds=4)
    assert [s.rule for s in b.steps if not s.command].count("memory:test-soft-unicode") == 1
    assert sum(1 for c in sb.commands if PROBE in c) == 2  # the retry after the plan, then no more fixes


def test_hybrid_policy_calls_the_llm_when_rules_and_memory_fail(tmp_path):
    sb = FakeSandbox(SandboxSpec(image="x"))
    state = {"installed": False}

    def probe(cmd, _sb):
        return (0, "1 test collected") if state["installed"] else (2, "ModuleNotFoundError: No module named 'fancy_mod'")

    def install(cmd, _sb):
        if "fancy-module-dist" in cmd:
            state["installed"] = True
            return 0, "Installed 1 package"
        return 1, "error: No solution found: fancy-mod was not found in the package registry"

    sb.on(PROBE, probe).on(r"uv pip install", install)
    llm = FakeLLM([tool_reply("uv pip install fancy-module-dist"), "fancy_mod is provided by fancy-module-dist"])
    helper = RepairHelper(memory_with(ENTRY), llm, instance_id="acme__p-2")
    b = builder_for(tmp_path, sb, helper)
    assert b.check(f"/opt/venv/bin/python -m {PROBE} tests", "probe:collect", ok_codes=(0, 5))
    # the rule tried first (install fancy-mod, failed), then the LLM
    assert any(re.search(r"uv pip install .*fancy-mod\b", c) for c in sb.commands)
    llm_steps = [s for s in b.steps if s.rule == "llm:execution"]
    assert [s.command for s in llm_steps] == ["uv pip install fancy-module-dist"]
    assert "uv pip install fancy-module-dist" in b.commands  # kept in the setup script
    repair = next(s for s in b.steps if s.rule == "llm:repair")
    assert repair.tokens > 0 and "answered" in repair.note
    # the prompt carried the failure
    first_prompt = llm.requests[0][0][1]["content"]
    assert "fancy-mod was not found" in first_prompt  # the rule's install failed: the LLM repairs it
    usage = helper.usage()
    assert usage["total"]["calls"] == 2 and set(usage["by_agent"]) == {"execution"}


def test_llm_policy_skips_the_rules(tmp_path):
    sb = FakeSandbox(SandboxSpec(image="x"))
    state = {"installed": False}
    sb.on(PROBE, lambda c, s: (0, "ok") if state["installed"] else (2, "No module named 'fancy_mod'"))
    sb.on(r"uv pip install fancy-module-dist", lambda c, s: state.update(installed=True) or (0, ""))
    llm = FakeLLM([tool_reply("uv pip install fancy-module-dist"), "done"])
    cfg = MintConfig(policy="llm", llm=LLMConfig(model="fake/x", api_key_env=None))
    helper = make_helper(cfg, "acme__p-3", llm=llm, memory=memory_with(ENTRY))
    b = builder_for(tmp_path, sb, helper, rule_repairs=cfg.policy != "llm")
    assert b.check(f"/opt/venv/bin/python -m {PROBE} tests", "probe:collect")
    assert not any("fancy-mod " in c or c.endswith("fancy-mod") for c in sb.commands)  # no rule install


def test_policy_needs_a_model_and_rules_need_none(tmp_path):
    with pytest.raises(ValueError, match="needs a usable `llm` block"):
        make_helper(MintConfig(policy="hybrid", workdir=tmp_path), "i")
    helper = make_helper(MintConfig(workdir=tmp_path), "i")
    assert helper is not None and helper.llm is None and helper.memory is not None  # seeds in memory
    assert make_helper(MintConfig(workdir=tmp_path, memory={"enabled": False}), "i") is None


def test_worker_memory_copies_the_drivers_file(tmp_path):
    path = tmp_path / "memory" / "experiences.duckdb"
    mem = ExperienceMemory.open(MemoryConfig(path=path, seed_dir=None))
    mem.store.add(ENTRY)
    mem.close()
    copy = worker_memory(MintConfig(workdir=tmp_path))
    assert copy is not None and copy.store.get("test-soft-unicode") is not None
    copy.close()


def test_memory_plan_that_only_redoes_a_rule_repair_is_skipped():
    """requests-1963: a seed entry lifted `pexpect-u` again after the rule had lifted it."""
    from agents.memory.experience import UvLiftAction, UvOptionAction
    from agents.ecosystems.python.builder import repeats_rule

    assert repeats_rule([UvLiftAction(package="pexpect-u")], {"lift pexpect-u"})
    assert repeats_rule([UvOptionAction(option="no_build_isolation")], {"isolation"})
    assert not repeats_rule([UvLiftAction(package="pexpect-u")], {"lift numpy"})
    assert not repeats_rule([], {"lift pexpect-u"})
