"""A deterministic fake model with the gateway's interface, for tests of agents that need no HTTP
(idea: SWE-ReX's dummy runtime and mini-swe-agent's `DeterministicModel`, which replay queued
outputs).

`FakeLLM(replies)` answers each request with the next item of `replies`:

- `str`: the reply text;
- a pydantic model or a dict: its JSON as the reply text (for `response_model` calls);
- a `Reply`: as is (tool calls, token counts), e.g. from `tool_reply("ls -la")`;
- an exception instance: raised (e.g. `LLMContextOverflowError("too long")`).

It runs the same `complete()` as `LLMGateway` (cache, schema message, one repair round, usage
ledger), so an invalid reply followed by a valid one exercises the agent's repair path. Every
request's messages and tools are kept in `requests`. Token counts, when not given, are estimated
as characters / 4; the cost is `cost_per_request` USD.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agents.llm.core import BaseChatModel
from agents.llm.llm_errors import LLMError, LLMRequestError
from agents.llm.types import Message, Reply, Tool, ToolCall
from agents.llm.usage import UsageLedger

FakeItem = str | BaseModel | dict | Reply | BaseException


def tool_reply(*commands: str, name: str = "run_shell", text: str | None = None) -> Reply:
    """A reply calling tool `name` once per command with arguments `{"command": cmd}`."""
    calls = [ToolCall(id=f"call_{i}", name=name, arguments={"command": c},
                      arguments_raw=json.dumps({"command": c})) for i, c in enumerate(commands)]
    return Reply(text=text, tool_calls=calls, finish_reason="tool_calls")


def _chars(messages: list[Message]) -> int:
    return sum(len(str(m.get("content") or "")) for m in messages)


class FakeLLM(BaseChatModel):
    """Scripted `LLMClient`. `requests` holds `(messages, tools)` of every request, in order;
    `pending` how many scripted replies are left. A request with nothing left raises
    `LLMRequestError` (a test made more calls than it scripted)."""

    def __init__(self, replies: Iterable[FakeItem] = (), *, model: str = "fake/scripted",
                 cost_per_request: float = 0.0, cache_dir: Path | str | None = None,
                 schema_in_prompt: bool = True, ledger: UsageLedger | None = None):
        super().__init__(cache_dir=cache_dir, schema_in_prompt=schema_in_prompt, ledger=ledger)
        self.model = model
        self.cost_per_request = cost_per_request
        self.queue: deque[FakeItem] = deque(replies)
        self.requests: list[tuple[list[Message], list[Tool] | None]] = []

    def push(self, *replies: FakeItem) -> None:
        """Append replies to the script."""
        self.queue.extend(replies)

    @property
    def pending(self) -> int:
        return len(self.queue)

    def _cache_params(self) -> dict[str, Any]:
        return {"model": self.model}

    def _send(self, messages: list[Message], tools: list[Tool] | None, *, agent: str,
              instance_id: str | None) -> Reply:
        self.requests.append(([dict(m) for m in messages], tools))
        if not self.queue:
            raise LLMRequestError(f"FakeLLM: no scripted reply left for request {len(self.requests)}",
                                  instance_id=instance_id, agent=agent, requests=1)
        item = self.queue.popleft()
        if isinstance(item, BaseException):
            if isinstance(item, LLMError):
                item.requests = item.requests or 1
            raise item
        if isinstance(item, Reply):
            reply = item.model_copy()
        elif isinstance(item, BaseModel):
            reply = Reply(text=item.model_dump_json())
        elif isinstance(item, dict):
            reply = Reply(text=json.dumps(item))
        else:
            reply = Reply(text=str(item))
        if not reply.prompt_tokens:
            reply.prompt_tokens = _chars(messages) // 4
        if not reply.completion_tokens:
            reply.completion_tokens = len(reply.text or "") // 4 + 10 * len(reply.tool_calls)
        reply.cost_usd = reply.cost_usd or self.cost_per_request
        reply.model = reply.model or self.model
        reply.finish_reason = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        return reply
