"""A generic tool-using loop: the model calls `run_shell(command)` until it answers without a tool
call or the step bound is reached (the Execution agent's loop; mini-swe-agent's agent loop with
native tool calls instead of a regex on fenced commands).

The command runner is any callable `execute(command) -> (exit_code, output)`: a sandbox exec in
real use, a stub in tests. Observations are cut to `observation_chars` characters, keeping the
head and the tail (the end of a log holds the error, the start the command's context), as
mini-swe-agent elides the middle of long outputs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.llm.types import LLMClient, LLMResult, Message, Tool, ToolCall
from agents.llm.usage import Usage
from envpool.errors import SandboxTimeout

Executor = Callable[[str], tuple[int, str]]
"""Runs one shell command; returns (exit code, combined stdout+stderr). May raise SandboxTimeout."""

RUN_SHELL: Tool = {"type": "function", "function": {
    "name": "run_shell",
    "description": ("Run one shell command in the build environment and get its exit code and "
                    "output (stdout and stderr, truncated when long)."),
    "parameters": {"type": "object", "additionalProperties": False, "required": ["command"],
                   "properties": {"command": {"type": "string", "description": "the command line"}}}}}
"""The OpenAI tool schema of `run_shell(command)`."""


class ToolLoopConfig(BaseModel):
    """Bounds of the loop."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(default=30, ge=1)
    """Model turns (LLM calls) at most; the loop stops with `step_limit` after the last."""
    observation_chars: int = Field(default=4000, ge=200)
    """Characters of a command's output shown to the model (head + tail)."""


class ToolStep(BaseModel):
    """One executed (or refused) tool call."""

    step: int
    """Model turn (1-based) that asked for it."""
    tool_call_id: str
    command: str
    exit_code: int | None = None
    output: str = ""
    """The observation as the model saw it (truncated)."""
    output_chars: int = 0
    """Length of the full output, in characters."""
    duration_s: float = 0.0
    error: str | None = None
    """Why the call was not executed (unknown tool, bad arguments) or `timeout`."""


class ToolLoopResult(BaseModel):
    """What the loop did: the final answer (None at the step limit), why it stopped, each command,
    the whole transcript (OpenAI messages), and the usage of its LLM calls (tokens, USD)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    final_text: str | None
    parsed: BaseModel | None = None
    stopped: Literal["answered", "step_limit"]
    steps: list[ToolStep]
    messages: list[Message]
    usage: Usage


def truncate(text: str, limit: int) -> str:
    """`text` if it fits in `limit` characters, else its head and tail around an elision note."""
    if len(text) <= limit:
        return text
    note = f"\n... [{len(text) - limit} characters elided] ...\n"
    keep = max(limit - len(note), 0)
    head = keep // 2
    return text[:head] + note + text[len(text) - (keep - head):]


def _run(call: ToolCall, step: int, execute: Executor, config: ToolLoopConfig, tool_name: str) -> ToolStep:
    command = call.arguments.get("command")
    if call.name != tool_name:
        return ToolStep(step=step, tool_call_id=call.id, command="", error=f"unknown tool {call.name!r}")
    if call.arguments_error or not isinstance(command, str) or not command.strip():
        why = call.arguments_error or 'arguments must be {"command": "<non-empty string>"}'
        return ToolStep(step=step, tool_call_id=call.id, command=str(command or ""), error=why)
    start = time.monotonic()
    try:
        code, output = execute(command)
        error = None
    except SandboxTimeout as e:
        code, output, error = 124, f"command timed out: {e.message}", "timeout"
    return ToolStep(step=step, tool_call_id=call.id, command=command, exit_code=code,
                    output=truncate(output, config.observation_chars), output_chars=len(output),
                    duration_s=round(time.monotonic() - start, 3), error=error)


def _observation(s: ToolStep) -> str:
    if s.exit_code is None:
        return f"error: {s.error}"
    return f"exit_code: {s.exit_code}\noutput:\n{s.output}"


def run_tool_loop(llm: LLMClient, *, system_prompt: str, task: str, execute: Executor, agent: str,
                  instance_id: str | None = None, config: ToolLoopConfig | None = None,
                  tool: Tool = RUN_SHELL, response_model: type[BaseModel] | None = None) -> ToolLoopResult:
    """Loop: ask the model (with `tool`), run each tool call via `execute`, send the observations
    back, until a reply has no tool calls (`answered`) or `config.max_steps` turns (`step_limit`).

    Args:
        llm: any `LLMClient` (the gateway, or `FakeLLM` in tests).
        system_prompt / task: the system and first user message.
        execute: runs one command -> (exit code, output); a `SandboxTimeout` becomes exit code 124.
        agent / instance_id: for usage accounting.
        response_model: parse the final answer into it (`parsed`), as `complete()` does.
    Raises:
        LLMError subclasses from `llm.complete` (context overflow, endpoint down, invalid answer).
    """
    config = config or ToolLoopConfig()
    tool_name = tool["function"]["name"]
    messages: list[Message] = [{"role": "system", "content": system_prompt}, {"role": "user", "content": task}]
    steps: list[ToolStep] = []
    usage = Usage()
    result: LLMResult | None = None
    for turn in range(1, config.max_steps + 1):
        result = llm.complete(messages, tools=[tool], response_model=response_model, agent=agent,
                              instance_id=instance_id)
        usage.add(Usage(calls=1, cached_calls=int(result.cached), requests=result.requests,
                        prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens,
                        cost_usd=0.0 if result.cached else result.cost_usd))
        messages.append(result.assistant_message())
        if not result.tool_calls:
            return ToolLoopResult(final_text=result.text, parsed=result.parsed, stopped="answered",
                                  steps=steps, messages=messages, usage=usage)
        for call in result.tool_calls:
            step = _run(call, turn, execute, config, tool_name)
            steps.append(step)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": _observation(step)})
    return ToolLoopResult(final_text=None, stopped="step_limit", steps=steps, messages=messages, usage=usage)
