"""What every chat backend shares: the response cache, the structured-output round trip, and
usage accounting. A backend subclasses `BaseChatModel` and implements `_send` (one request ->
one `Reply`); `complete()` does the rest, so the fake and the real gateway behave alike.

Flow of `complete()`: cache lookup (hit: no request) -> messages (+ a schema message when a
`response_model` is given) -> `_send` -> parse; if the reply is invalid, the reply and the
validation error are sent back once -> parse again, else `LLMOutputError` -> cache store.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from agents.llm.cache import ResponseCache, cache_key
from agents.llm.llm_errors import LLMError, LLMOutputError
from agents.llm.structured import ParseFailure, parse_reply, repair_messages, schema_message
from agents.llm.types import LLMResult, Message, Reply, Tool
from agents.llm.usage import Usage, UsageLedger

log = logging.getLogger(__name__)


class BaseChatModel(ABC):
    """Shared `complete()`; subclasses provide `_send` and `_cache_params`.

    Args:
        cache_dir: directory of the response cache; None: no cache.
        schema_in_prompt: append a message with the response model's JSON schema.
        ledger: where usage is counted; a new `UsageLedger` when None (read it as `.usage`).
    """

    def __init__(self, *, cache_dir: Path | str | None = None, schema_in_prompt: bool = True,
                 ledger: UsageLedger | None = None):
        self.cache = ResponseCache(cache_dir) if cache_dir else None
        self.schema_in_prompt = schema_in_prompt
        self.usage = ledger if ledger is not None else UsageLedger()

    @abstractmethod
    def _send(self, messages: list[Message], tools: list[Tool] | None, *, agent: str,
              instance_id: str | None) -> Reply:
        """Send one request (retrying transient errors as the backend sees fit). Raises LLMError."""

    def _cache_params(self) -> dict[str, Any]:
        """What besides messages, tools and schema decides the reply (model, sampling parameters)."""
        return {}

    def complete(self, messages: list[Message], *, tools: list[Tool] | None = None,
                 response_model: type[BaseModel] | None = None, agent: str,
                 instance_id: str | None = None) -> LLMResult:
        """Ask the model; see `LLMResult` for what comes back.

        Args:
            messages: OpenAI chat messages (not modified).
            tools: OpenAI tool schemas the model may call; a reply with tool calls is not parsed.
            response_model: pydantic model the reply must validate against (JSON in the content).
            agent: name of the calling agent, for usage accounting (e.g. "setup").
            instance_id: the SWE-bench instance the call is for, for usage accounting.
        Raises:
            LLMOutputError: the reply was invalid twice (after one repair round).
            LLMRequestError / LLMContextOverflowError / LLMUnavailableError / LLMConfigError: from `_send`.
        """
        schema = response_model.model_json_schema() if response_model else None
        key = None
        if self.cache is not None:
            key = cache_key({**self._cache_params(), "messages": messages, "tools": tools,
                             "schema": schema, "schema_in_prompt": self.schema_in_prompt})
            hit = self._cached(key, response_model)
            if hit is not None:
                self.usage.record(agent, instance_id, Usage(calls=1, cached_calls=1))
                log.debug("llm cache hit agent=%s instance=%s key=%s", agent, instance_id, key[:12])
                return hit
        sent = list(messages)
        if response_model is not None and self.schema_in_prompt:
            sent.append(schema_message(response_model))
        replies: list[Reply] = []
        invalid: list[str] = []
        parsed = None
        try:
            reply = self._send_counted(sent, tools, agent, instance_id, replies)
            if response_model is not None and not reply.tool_calls:
                try:
                    parsed = parse_reply(reply.text, response_model)
                except ParseFailure as first:
                    invalid.append(reply.text or "")
                    log.info("llm reply invalid, sending it back once (agent=%s instance=%s): %s",
                             agent, instance_id, first)
                    sent = sent + repair_messages(reply.text, str(first))
                    reply = self._send_counted(sent, tools, agent, instance_id, replies)
                    if not reply.tool_calls:
                        parsed = self._parse_or_fail(reply, response_model, invalid, replies,
                                                     agent, instance_id)
        except LLMError as e:
            self.usage.record(agent, instance_id, Usage(failed_calls=1))
            e.agent = e.agent or agent
            raise
        result = LLMResult(
            text=reply.text, tool_calls=reply.tool_calls, parsed=parsed,
            prompt_tokens=sum(r.prompt_tokens for r in replies),
            completion_tokens=sum(r.completion_tokens for r in replies),
            cost_usd=sum(r.cost_usd for r in replies), requests=sum(r.attempts for r in replies),
            model=reply.model, finish_reason=reply.finish_reason, raw=reply.raw, invalid_replies=invalid)
        self.usage.record(agent, instance_id, Usage(calls=1))
        if key is not None and self.cache is not None:
            self.cache.put(key, result.model_dump(mode="json", exclude={"cached", "requests"}))
        return result

    def _send_counted(self, messages: list[Message], tools: list[Tool] | None, agent: str,
                      instance_id: str | None, replies: list[Reply]) -> Reply:
        try:
            reply = self._send(messages, tools, agent=agent, instance_id=instance_id)
        except LLMError as e:
            self.usage.record(agent, instance_id, Usage(requests=e.requests))
            e.requests += sum(r.attempts for r in replies)
            raise
        replies.append(reply)
        self.usage.record(agent, instance_id, Usage(
            requests=reply.attempts, prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens, cost_usd=reply.cost_usd,
            unpriced_requests=0 if reply.cost_known else 1))
        return reply

    @staticmethod
    def _parse_or_fail(reply: Reply, response_model: type[BaseModel], invalid: list[str],
                       replies: list[Reply], agent: str, instance_id: str | None) -> BaseModel:
        try:
            return parse_reply(reply.text, response_model)
        except ParseFailure as second:
            invalid.append(reply.text or "")
            raise LLMOutputError(
                f"{agent}: reply still not a valid {response_model.__name__} after one repair round: {second}",
                replies=invalid, error=str(second), raw=[r.raw for r in replies],
                instance_id=instance_id, agent=agent,
                requests=sum(r.attempts for r in replies)) from None

    def _cached(self, key: str, response_model: type[BaseModel] | None) -> LLMResult | None:
        assert self.cache is not None
        entry = self.cache.get(key)
        if entry is None:
            return None
        try:
            if response_model is not None and entry.get("parsed") is not None:
                entry["parsed"] = response_model.model_validate(entry["parsed"])
            else:
                entry["parsed"] = None
            return LLMResult.model_validate({**entry, "cached": True, "requests": 0})
        except ValidationError:
            return None  # an entry of another shape: a miss, the call goes out
