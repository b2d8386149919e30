"""The scripted fake model and the tool-using loop (no HTTP, no Docker)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from agents.llm import (
    FakeLLM,
    LLMContextOverflowError,
    LLMOutputError,
    LLMRequestError,
    ToolLoopConfig,
    run_tool_loop,
    tool_reply,
    truncate,
)
from agents.llm.types import Reply, ToolCall
from envpool.errors import SandboxTimeout

pytestmark = pytest.mark.llm


class Diagnosis(BaseModel):
    cause: str
    fix: str


def test_fake_replies_in_order_and_records_requests():
    llm = FakeLLM(["first", Diagnosis(cause="c", fix="f")], cost_per_request=0.01)
    assert llm.complete([{"role": "user", "content": "a"}], agent="x").text == "first"
    got = llm.complete([{"role": "user", "content": "b"}], response_model=Diagnosis, agent="x", instance_id="i")
    assert got.parsed == Diagnosis(cause="c", fix="f")
    assert [m[0]["content"] for m, _ in llm.requests] == ["a", "b"] and llm.pending == 0
    assert llm.usage.to_dict()["total"]["cost_usd"] == pytest.approx(0.02)
    with pytest.raises(LLMRequestError, match="no scripted reply"):
        llm.complete([{"role": "user", "content": "c"}], agent="x")


def test_fake_runs_the_same_repair_round():
    llm = FakeLLM(["nonsense", {"cause": "missing libxml2", "fix": "apt-get install libxml2-dev"}])
    got = llm.complete([{"role": "user", "content": "why?"}], response_model=Diagnosis, agent="verify")
    assert got.parsed.cause == "missing libxml2" and got.invalid_replies == ["nonsense"]
    assert len(llm.requests) == 2 and "could not be used" in llm.requests[1][0][-1]["content"]
    llm.push("still nonsense", '{"cause": 1}')
    with pytest.raises(LLMOutputError):
        llm.complete([{"role": "user", "content": "why?"}], response_model=Diagnosis, agent="verify")
    assert len(llm.requests) == 4


def test_fake_raises_scripted_errors_and_counts_them():
    llm = FakeLLM([LLMContextOverflowError("too long")])
    with pytest.raises(LLMContextOverflowError):
        llm.complete([{"role": "user", "content": "x"}], agent="exec", instance_id="i")
    assert llm.usage.for_instance("i")["total"]["failed_calls"] == 1


def test_fake_cache(tmp_path):
    llm = FakeLLM(["once"], cache_dir=tmp_path)
    msgs = [{"role": "user", "content": "q"}]
    assert llm.complete(msgs, agent="a").text == "once"
    assert llm.complete(msgs, agent="a").cached and len(llm.requests) == 1


def test_truncate_keeps_head_and_tail():
    text = "HEAD" + "x" * 10_000 + "TAIL"
    out = truncate(text, 300)
    assert len(out) <= 300 and out.startswith("HEAD") and out.endswith("TAIL") and "elided" in out
    assert truncate("short", 300) == "short"


def test_tool_loop_runs_commands_until_an_answer():
    llm = FakeLLM([tool_reply("pip install -e .", "pytest -x"), tool_reply("pytest -x"), "All tests collected."])
    outputs = {"pip install -e .": (0, "ok"), "pytest -x": (1, "E" * 10_000)}
    ran = []

    def execute(cmd):
        ran.append(cmd)
        return outputs[cmd]

    out = run_tool_loop(llm, system_prompt="sys", task="build it", execute=execute, agent="execution",
                        instance_id="i-1", config=ToolLoopConfig(observation_chars=500))
    assert out.stopped == "answered" and out.final_text == "All tests collected."
    assert ran == ["pip install -e .", "pytest -x", "pytest -x"]
    assert [s.step for s in out.steps] == [1, 1, 2] and out.steps[1].exit_code == 1
    assert out.steps[1].output_chars == 10_000 and len(out.steps[1].output) <= 500
    tool_msgs = [m for m in out.messages if m["role"] == "tool"]
    assert len(tool_msgs) == 3 and all(len(m["content"]) < 600 for m in tool_msgs)
    assert out.usage.calls == 3 and llm.usage.for_instance("i-1")["total"]["calls"] == 3
    # every request offered the run_shell tool
    assert all(tools[0]["function"]["name"] == "run_shell" for _, tools in llm.requests)


def test_tool_loop_stops_at_the_step_bound():
    llm = FakeLLM([tool_reply("make")] * 5)
    out = run_tool_loop(llm, system_prompt="s", task="t", execute=lambda c: (2, "fail"), agent="execution",
                        config=ToolLoopConfig(max_steps=3))
    assert out.stopped == "step_limit" and out.final_text is None
    assert len(out.steps) == 3 and llm.pending == 2


def test_tool_loop_refuses_bad_calls_and_reports_timeouts():
    bad = Reply(tool_calls=[ToolCall(id="a", name="delete_everything", arguments={"command": "rm"}),
                            ToolCall.from_raw("b", "run_shell", "{not json"),
                            ToolCall.from_raw("c", "run_shell", '{"cmd": "ls"}')])

    def execute(cmd):
        raise SandboxTimeout("over 5 s")

    llm = FakeLLM([bad, tool_reply("sleep 100"), "gave up"])
    out = run_tool_loop(llm, system_prompt="s", task="t", execute=execute, agent="execution")
    errors = [s.error for s in out.steps]
    assert errors[0] == "unknown tool 'delete_everything'" and "not JSON" in errors[1]
    assert "command" in errors[2] and errors[3] == "timeout" and out.steps[3].exit_code == 124
    assert out.final_text == "gave up"


def test_tool_loop_parses_a_structured_final_answer():
    llm = FakeLLM([tool_reply("ls"), '{"cause": "none", "fix": "none"}'])
    out = run_tool_loop(llm, system_prompt="s", task="t", execute=lambda c: (0, ""), agent="verification",
                        response_model=Diagnosis)
    assert out.parsed == Diagnosis(cause="none", fix="none")
