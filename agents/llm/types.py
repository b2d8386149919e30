"""The seam every LLM backend implements, and the values it returns.

`LLMClient` is a `typing.Protocol` (as mini-swe-agent declares `Model` in one small module): the
litellm gateway and the deterministic fake both satisfy it, so agents take an `LLMClient` and
tests hand them the fake. Messages are OpenAI chat messages (`{"role", "content", ...}`); tools are
OpenAI tool schemas (`{"type": "function", "function": {"name", "description", "parameters"}}`).
"""

from __future__ import annotations

import json
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny

from agents.llm.usage import UsageLedger

Message = dict[str, Any]
"""One OpenAI chat message."""
Tool = dict[str, Any]
"""One OpenAI tool schema."""
M = TypeVar("M", bound=BaseModel)


class ToolCall(BaseModel):
    """A tool call the model asked for. `arguments` is the decoded JSON object; when the model
    sent arguments that are not a JSON object, `arguments` is `{}` and `arguments_error` says why."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    arguments_raw: str = ""
    arguments_error: str | None = None

    @classmethod
    def from_raw(cls, id: str, name: str, raw: str | None) -> ToolCall:
        """Decode `raw` (a JSON string, as OpenAI sends it) into `arguments`."""
        raw = raw or ""
        try:
            args = json.loads(raw) if raw.strip() else {}
        except ValueError as e:
            return cls(id=id, name=name, arguments_raw=raw, arguments_error=f"arguments are not JSON: {e}")
        if not isinstance(args, dict):
            return cls(id=id, name=name, arguments_raw=raw, arguments_error="arguments are not a JSON object")
        return cls(id=id, name=name, arguments=args, arguments_raw=raw)


class Reply(BaseModel):
    """One answer of the backend to one request (what `_send` returns): text, tool calls, tokens,
    cost in USD (`cost_known` False when it could not be priced), HTTP `attempts` it took."""

    text: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    finish_reason: str | None = None
    model: str = ""
    attempts: int = 1
    raw: dict[str, Any] | None = None


class LLMResult(BaseModel):
    """The outcome of one `complete()` call.

    `text` / `tool_calls`: the final reply. `parsed`: an instance of the `response_model` (None
    without one, or when the reply is a tool call). Tokens and `cost_usd` (USD) sum every request of
    the call, the repair round included; for a cache hit they are those of the original call and
    `cached` is True (the ledger then counts nothing spent). `requests`: HTTP requests made (0 on a
    hit). `raw`: the provider's last response as JSON. `invalid_replies`: reply texts that failed
    validation before the repair succeeded.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    text: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    parsed: SerializeAsAny[BaseModel] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cached: bool = False
    requests: int = 0
    model: str = ""
    finish_reason: str | None = None
    raw: dict[str, Any] | None = None
    invalid_replies: list[str] = Field(default_factory=list)

    def assistant_message(self) -> Message:
        """The reply as an OpenAI assistant message, to append to a conversation."""
        msg: Message = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            msg["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": c.arguments_raw or "{}"}}
                                 for c in self.tool_calls]
        return msg


class LLMClient(Protocol):
    """What agents call. Implementations: `LLMGateway` (litellm), `FakeLLM` (scripted)."""

    usage: UsageLedger

    def complete(self, messages: list[Message], *, tools: list[Tool] | None = None,
                 response_model: type[BaseModel] | None = None, agent: str,
                 instance_id: str | None = None) -> LLMResult: ...
