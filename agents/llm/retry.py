"""Back-off for transient LLM errors: honour the server's `Retry-After`, else exponential jitter.

Kept apart from the gateway so it imports no litellm: it reads headers from any exception that
carries an HTTP response (`exc.response.headers`, or litellm's `exc.litellm_response_headers`).
OpenAI sends `retry-after-ms` (milliseconds) and `retry-after` (seconds, or an HTTP date, RFC 9110
§10.2.3); both are understood.
"""

from __future__ import annotations

import random
import time
from email.utils import parsedate_to_datetime
from typing import Any

from tenacity import RetryCallState
from tenacity.wait import wait_base


def _headers_of(exc: BaseException) -> list[Any]:
    found = []
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is not None:
        found.append(headers)
    extra = getattr(exc, "litellm_response_headers", None)
    if extra is not None:
        found.append(extra)
    return found


def _lookup(headers: Any, name: str) -> str | None:
    try:
        value = headers.get(name)  # httpx.Headers is case-insensitive
        if value is None and isinstance(headers, dict):
            value = next((v for k, v in headers.items() if str(k).lower() == name), None)
        return None if value is None else str(value)
    except AttributeError:
        return None


def retry_after_seconds(exc: BaseException | None) -> float | None:
    """Seconds the server asked us to wait before retrying, or None when it did not say."""
    if exc is None:
        return None
    for headers in _headers_of(exc):
        ms = _lookup(headers, "retry-after-ms")
        if ms is not None:
            try:
                return max(0.0, float(ms) / 1000.0)
            except ValueError:
                pass
        value = _lookup(headers, "retry-after")
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            continue
    return None


class WaitRetryAfter(wait_base):
    """tenacity wait: the server's Retry-After (capped at `cap` seconds) when the failed attempt
    carried one, else exponential back-off with jitter from `initial` up to `maximum` seconds."""

    def __init__(self, *, initial: float, maximum: float, cap: float):
        self.initial, self.maximum, self.cap = initial, maximum, cap

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        asked = retry_after_seconds(outcome.exception() if outcome is not None else None)
        if asked is not None:
            return min(asked, self.cap)
        backoff = self.initial * 2 ** max(retry_state.attempt_number - 1, 0)
        return min(self.maximum, backoff + random.uniform(0, self.initial))
