"""Review rv86: under `llm` the context retrieval runs before the LLM's plan
(`before.context_before_llm_plan`) and `memory_before_plan` reuses it for the same context. With
`memory.before_plan` off nothing was kept to reuse, so the same `memory` `context` step was
recorded twice."""

from __future__ import annotations

import json

from agents.mint_config import MintConfig
from agents.minter import mint_instance
from envpool.fake import FakeSandboxFactory
from tests.agents.ecosystems.conftest import force_ecosystem
from tests.agents.memory.test_memory_scoring_and_context import lesson
from tests.agents.test_loop import ToyWithToolchain, events, instance_on, patched, steps
from tests.agents.test_loop_memory import store_at


def _memory_steps(tmp_path, monkeypatch, before_plan: bool) -> list[tuple[str, str]]:
    from agents.llm import FakeLLM, LLMConfig

    force_ecosystem(monkeypatch, ToyWithToolchain(versions=("1.15", "1.19")))
    f = FakeSandboxFactory(run_id="t")
    f.on(r"go test -json", lambda cmd, sb: (0, events({"TestAdd": "pass"})) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    cfg = MintConfig(workdir=tmp_path / "w", run_id="t", policy="llm", llm=LLMConfig(model="fake/x", api_key_env=None),
                     memory={"path": tmp_path / "mem.duckdb", "before_plan": before_plan})
    store_at(cfg, lesson("learned-go-mine", "toy/calc"))
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, cfg, factory=f, llm=FakeLLM(["{}"] * 12))
    return [(s.rule, json.loads(s.note).get("stage", "") if s.rule == "retrieval" else "")
            for s in steps(res) if s.agent == "memory" and s.rule in ("context", "retrieval")]


def test_the_context_is_recorded_once_under_llm_with_before_plan_off(tmp_path, monkeypatch):
    assert _memory_steps(tmp_path, monkeypatch, before_plan=False) == [("context", "")]


def test_the_context_retrieval_runs_once_under_llm_with_before_plan_on(tmp_path, monkeypatch):
    got = _memory_steps(tmp_path, monkeypatch, before_plan=True)
    assert [r for r in got if r[1] != "moves"] == [("context", ""), ("retrieval", "before-llm-plan")], got
