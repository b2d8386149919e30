"""Errors of the LLM gateway, under swemint's root `SwemintError` (envpool/errors.py).

    SwemintError
    └── LLMError                 any failure of an LLM call
        ├── LLMConfigError       litellm missing, the key's env var unset: nothing was sent
        ├── LLMRequestError      the endpoint refused the request (400, 401, 403, 404, 422); never retried
        │   └── LLMContextOverflowError   the prompt exceeds the context window; never retried
        ├── LLMUnavailableError  transient errors (429, timeout, connection, 5xx) outlived the retries;
        │                        also an `InfraError`, so the pipeline records `infra_error`
        └── LLMOutputError       the reply was still invalid after the one repair round

Messages never contain the API key: the gateway redacts it, and raises these `from None` so the
provider's exception (whose message may echo the key) is not chained.
"""

from __future__ import annotations

from typing import Any

from envpool.errors import InfraError, SwemintError


class LLMError(SwemintError):
    """Root of LLM failures. `agent` names the calling agent, `requests` counts the HTTP requests
    the failed call made (retries included), `status_code` is the last HTTP status, if any."""

    def __init__(self, message: str, *, instance_id: str | None = None, agent: str | None = None,
                 requests: int = 0, status_code: int | None = None):
        super().__init__(message, instance_id=instance_id)
        self.agent = agent
        self.requests = requests
        self.status_code = status_code


class LLMConfigError(LLMError):
    """The gateway cannot call the model: litellm not installed, API key env var unset."""


class LLMRequestError(LLMError):
    """The endpoint rejected the request (bad request, authentication, unknown model): retrying the
    same request cannot help."""


class LLMContextOverflowError(LLMRequestError):
    """The messages exceed the model's context window. Not retried (mini-swe-agent #921: a retry
    denylist resent an overflowing prompt 10 times)."""


class LLMUnavailableError(LLMError, InfraError):
    """Rate limits, timeouts, dropped connections or 5xx answers persisted through every retry."""


class LLMOutputError(LLMError):
    """The model's reply did not validate against the response model, even after it was sent back
    once with the validation error. `replies` keeps the reply texts, `raw` the provider's full
    responses (JSON dicts), `error` the last validation error (text)."""

    def __init__(self, message: str, *, replies: list[str], error: str,
                 raw: list[dict[str, Any] | None] | None = None, **kw: Any):
        super().__init__(message, **kw)
        self.replies = replies
        self.raw = raw or []
        self.error = error
