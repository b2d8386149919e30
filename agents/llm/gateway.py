"""The LLM gateway: the only module of swemint that imports litellm.

litellm is imported lazily, on the first request, with `LITELLM_LOCAL_MODEL_COST_MAP=True` set
first, so importing this module costs nothing and importing litellm makes no network request
(prices then come from the cost map bundled with the installed litellm; `LLMConfig.cost`
registers prices of models it does not know via `litellm.register_model`).

Retries (tenacity) cover an **allowlist** of transient errors only: rate limits (429), timeouts,
connection errors, 5xx (InternalServerError, BadGateway, ServiceUnavailable); the server's
`Retry-After` is honoured. Context overflow, bad requests, authentication and anything not on the
list fail at once: mini-swe-agent #921 (fixed by its PR #923) shows a denylist resending a
context-overflowing prompt 10 times. litellm's and openai's own retries are switched off
(`max_retries=0`, `num_retries=0`) so the count here is the only one.

The API key is read from the environment variable `LLMConfig.api_key_env` at call time, handed to
litellm per call (no `litellm.api_key = ...` global), redacted from every message we raise or log,
and the provider's exception is not chained onto ours (its text may echo the key).
Design follows mini-swe-agent's `models/litellm_model.py` (cost via `completion_cost`, raw response
kept), with the retry list inverted.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from agents.llm.llm_config import LLMConfig
from agents.llm.core import BaseChatModel
from agents.llm.llm_errors import LLMConfigError, LLMContextOverflowError, LLMError, LLMRequestError, LLMUnavailableError
from agents.llm.retry import WaitRetryAfter
from agents.llm.types import Message, Reply, Tool, ToolCall
from agents.llm.usage import UsageLedger

log = logging.getLogger(__name__)

TRANSIENT = ("RateLimitError", "Timeout", "APIConnectionError", "InternalServerError",
             "BadGatewayError", "ServiceUnavailableError")
"""litellm exception classes retried (the allowlist). Everything else fails at once."""
NEVER = ("ContextWindowExceededError", "BadRequestError", "AuthenticationError",
         "PermissionDeniedError", "NotFoundError", "UnprocessableEntityError")
"""Never retried even if a future litellm made them subclasses of an allowlisted class."""
_REGISTER_LOCK = threading.Lock()


def import_litellm() -> Any:
    """litellm, imported with the local cost map (no network). Raises LLMConfigError if absent."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    try:
        import litellm
    except ImportError:
        raise LLMConfigError("litellm is not installed: pip install 'swemint[llm]'") from None
    litellm.suppress_debug_info = True  # no "Give Feedback" banners on stdout
    return litellm


def _classes(litellm: Any, names: tuple[str, ...]) -> tuple[type[BaseException], ...]:
    return tuple(c for n in names if isinstance(c := getattr(litellm.exceptions, n, None), type))


class LLMGateway(BaseChatModel):
    """`LLMClient` backed by litellm (any provider; OpenAI-compatible servers via `openai/NAME` +
    `api_base`).

    Args:
        config: endpoint, sampling, retry and cache settings.
        ledger: shared usage ledger (e.g. one per pipeline worker); a new one when None.
        sleep: how to wait between retries (seconds); tests pass a recorder.
    """

    def __init__(self, config: LLMConfig, *, ledger: UsageLedger | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        super().__init__(cache_dir=config.cache_dir, schema_in_prompt=config.schema_in_prompt, ledger=ledger)
        self.config = config
        self._sleep = sleep
        self._lib: Any = None
        self._warned_cost = False
        self._transient: tuple[type[BaseException], ...] = ()
        self._never: tuple[type[BaseException], ...] = ()
        self._overflow: tuple[type[BaseException], ...] = ()
        self._api_error: tuple[type[BaseException], ...] = ()

    # -- litellm, lazily ----------------------------------------------------------------------
    def _litellm(self) -> Any:
        if self._lib is None:
            lib = import_litellm()
            if self.config.cost is not None:
                provider = self.config.model.split("/", 1)[0] if "/" in self.config.model else "openai"
                with _REGISTER_LOCK:
                    per_in = self.config.cost.input_per_1k / 1000.0
                    lib.register_model({self.config.model: {  # cached input priced as input
                        "input_cost_per_token": per_in, "cache_read_input_token_cost": per_in,
                        "cache_creation_input_token_cost": per_in,
                        "output_cost_per_token": self.config.cost.output_per_1k / 1000.0,
                        "litellm_provider": provider, "mode": "chat"}})
            self._transient = _classes(lib, TRANSIENT)
            self._never = _classes(lib, NEVER)
            self._overflow = _classes(lib, ("ContextWindowExceededError",))
            self._api_error = _classes(lib, ("APIError",)) + _openai_error()
            self._lib = lib
        return self._lib

    def _api_key(self) -> str | None:
        name = self.config.api_key_env
        if name is None:
            return "EMPTY" if self.config.api_base else None  # never fall back to OPENAI_API_KEY
        key = os.environ.get(name)
        if not key:
            raise LLMConfigError(f"environment variable {name} (the API key for {self.config.model}) is not set")
        return key

    def _redact(self, text: str) -> str:
        name = self.config.api_key_env
        key = os.environ.get(name) if name else None
        return text.replace(key, "[REDACTED]") if key else text

    def _cache_params(self) -> dict[str, Any]:
        c = self.config
        return {"model": c.model, "temperature": c.temperature, "max_tokens": c.max_tokens}

    # -- one request ------------------------------------------------------------------------
    def _is_transient(self, e: BaseException) -> bool:
        if isinstance(e, self._never):
            return False
        return isinstance(e, self._transient)

    def _before_sleep(self, agent: str, instance_id: str | None) -> Callable[[RetryCallState], None]:
        def report(state: RetryCallState) -> None:
            e = state.outcome.exception() if state.outcome else None
            wait = state.next_action.sleep if state.next_action else 0.0
            log.warning("llm %s (HTTP %s) on attempt %d, agent=%s instance=%s; retrying in %.1f s: %s",
                        type(e).__name__, getattr(e, "status_code", None), state.attempt_number, agent,
                        instance_id, wait, self._redact(str(getattr(e, "message", e)))[:300])
        return report

    def _send(self, messages: list[Message], tools: list[Tool] | None, *, agent: str,
              instance_id: str | None) -> Reply:
        lib = self._litellm()
        c = self.config
        kwargs: dict[str, Any] = {"model": c.model, "messages": messages, "temperature": c.temperature,
                                  "timeout": c.timeout, "max_retries": 0, "num_retries": 0}
        if c.max_tokens is not None:
            kwargs["max_tokens"] = c.max_tokens
        if c.api_base:
            kwargs["api_base"] = c.api_base
        if tools:
            kwargs["tools"] = tools
        key = self._api_key()
        if key is not None:
            kwargs["api_key"] = key
        attempts = 0

        def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            return lib.completion(**kwargs)

        retrying = Retrying(
            retry=retry_if_exception(self._is_transient), stop=stop_after_attempt(c.max_retries + 1),
            wait=WaitRetryAfter(initial=c.retry_wait_min, maximum=c.retry_wait_max, cap=c.max_retry_after),
            sleep=self._sleep, before_sleep=self._before_sleep(agent, instance_id), reraise=True)
        error: LLMError | None = None
        try:
            response = retrying(attempt)
        except Exception as e:
            if not isinstance(e, self._api_error):
                raise
            error = self._map_error(e, attempts, agent, instance_id)
        if error is not None:
            raise error  # outside `except`: the provider's exception is neither cause nor context
        return self._reply(lib, response, attempts)

    def _map_error(self, e: BaseException, attempts: int, agent: str, instance_id: str | None) -> LLMError:
        text = self._redact(str(getattr(e, "message", None) or e))[:2000]
        kw: dict[str, Any] = {"instance_id": instance_id, "agent": agent, "requests": attempts,
                              "status_code": getattr(e, "status_code", None)}
        name, model = type(e).__name__, self.config.model
        if isinstance(e, self._overflow):
            return LLMContextOverflowError(f"{model}: prompt exceeds the context window ({name}): {text}", **kw)
        if self._is_transient(e):
            return LLMUnavailableError(f"{model}: {name} persisted after {attempts} attempt(s): {text}", **kw)
        return LLMRequestError(f"{model}: request rejected ({name}, HTTP {kw['status_code']}): {text}", **kw)

    def _reply(self, lib: Any, response: Any, attempts: int) -> Reply:
        choice = response.choices[0]
        msg = choice.message
        calls = [ToolCall.from_raw(tc.id, tc.function.name, tc.function.arguments)
                 for tc in (getattr(msg, "tool_calls", None) or [])]
        usage = getattr(response, "usage", None)
        cost, known = self._cost(lib, response)
        try:
            raw = response.model_dump()
        except Exception:  # noqa: BLE001  raw is for the record only
            raw = None
        return Reply(text=msg.content, tool_calls=calls, finish_reason=choice.finish_reason,
                     prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                     completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                     cost_usd=cost, cost_known=known, model=str(getattr(response, "model", "") or ""),
                     attempts=attempts, raw=raw)

    def _cost(self, lib: Any, response: Any) -> tuple[float, bool]:
        """USD of one response by `litellm.completion_cost`; (0.0, False) when it cannot price it."""
        price = self.config.cost
        custom = None if price is None else {"input_cost_per_token": price.input_per_1k / 1000.0,
                                             "output_cost_per_token": price.output_per_1k / 1000.0}
        try:  # this gateway's own price per call: another gateway may have registered another one
            return float(lib.completion_cost(completion_response=response, model=self.config.model,
                                             custom_cost_per_token=custom)), True
        except Exception as e:  # noqa: BLE001  litellm raises many kinds for an unpriced model
            if not self._warned_cost:
                self._warned_cost = True
                log.warning("no price for %s (%s): cost counted as 0; set llm.cost to price it",
                            self.config.model, type(e).__name__)
            return 0.0, False


def _openai_error() -> tuple[type[BaseException], ...]:
    try:
        import openai  # litellm's own dependency; its errors are what litellm raises
    except ImportError:
        return ()
    return (openai.OpenAIError,)
