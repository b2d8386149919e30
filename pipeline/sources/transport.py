"""The HTTP layer under PyGithub: retries, rate limits, conditional requests, a call counter.

Why an adapter and not PyGithub's own machinery: PyGithub (2.x) has no conditional requests
or response cache, its urllib3 `GithubRetry` sleeps with the real `time.sleep` (tests would
wait for real), and its throttle (`seconds_between_requests`) cannot be faked either. A
`requests.adapters.HTTPAdapter` sees every request PyGithub sends, so one class here adds:

- **conditional requests**: a GET with a cached 200 carries `If-None-Match` (or
  `If-Modified-Since`); a 304 is answered from `HttpCache` as a 200, so PyGithub never
  notices. GitHub does not charge authenticated 304s against the primary rate limit.
- **retries** (tenacity, an allowlist): 500/502/503/504 and connection errors/timeouts, with
  exponential backoff; when attempts run out the last response goes back to PyGithub (which
  raises `GithubException` with its status) or the connection error propagates.
- **primary rate limit**: 403 with `X-RateLimit-Remaining: 0` waits until `X-RateLimit-Reset`
  (+1 s), then retries; a 200 that leaves `Remaining: 0` makes the *next* request wait.
- **secondary rate limit**: 429, or 403 with `Retry-After`, waits `Retry-After` seconds; a 403
  naming a secondary limit without the header waits `api.secondary_wait`.
- **pacing**: at least `api.min_interval` seconds between requests.
- **counting**: `ApiCounter` (round trips, 304s, retries, waits, seconds slept).

`clock` (epoch seconds) and `sleep` are injectable, so tests never wait. Nothing here logs a
request header; the token lives only in the `Authorization` header PyGithub adds.
"""

from __future__ import annotations

import email.utils
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

import requests
from requests.adapters import HTTPAdapter
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from pipeline.sources.httpcache import CachedResponse, HttpCache
from pipeline.sources.crawl_config import ApiConfig
from pipeline.sources.source_errors import RateLimitExhausted

log = logging.getLogger(__name__)

TRANSIENT_STATUS = frozenset({500, 502, 503, 504})
"""HTTP statuses retried as transient."""


@dataclass
class ApiCounter:
    """Counts of one transport (thread-safe). `requests`: HTTP round trips, every attempt and
    every 304 included; `not_modified`: 304s served from the cache; `charged` = the rest."""

    requests: int = 0
    not_modified: int = 0
    retries: int = 0
    primary_waits: int = 0
    secondary_waits: int = 0
    slept_s: float = 0.0
    by_status: Counter = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def charged(self) -> int:
        """Round trips that count against GitHub's primary rate limit (all but 304s)."""
        return self.requests - self.not_modified

    def add(self, **deltas: float) -> None:
        """Add to counters by name, atomically."""
        with self._lock:
            for k, v in deltas.items():
                setattr(self, k, getattr(self, k) + v)

    def snapshot(self) -> dict:
        """Plain dict of the counters (for reports and JSON)."""
        with self._lock:
            return {"requests": self.requests, "not_modified": self.not_modified,
                    "charged": self.charged, "retries": self.retries,
                    "primary_waits": self.primary_waits, "secondary_waits": self.secondary_waits,
                    "slept_s": round(self.slept_s, 3), "by_status": dict(self.by_status)}


class _Retryable(Exception):
    """A response to retry: `kind` in server_error / primary / secondary; `wait` seconds or None
    (None = exponential backoff)."""

    def __init__(self, response: requests.Response, kind: str, wait: float | None):
        super().__init__(f"{kind} (HTTP {response.status_code})")
        self.response, self.kind, self.wait = response, kind, wait


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def _retryable_error(exc: BaseException) -> bool:
    if isinstance(exc, _Retryable):
        return True
    if isinstance(exc, requests.exceptions.SSLError):
        return False
    return isinstance(exc, (requests.ConnectionError, requests.Timeout))


class GitHubTransport(HTTPAdapter):
    """A requests adapter for the GitHub API; mount it for the API's scheme.

    `api`: pacing, retry and rate-limit settings; `cache`: None disables conditional requests;
    `counter`: where counts go (a new one by default); `clock` / `sleep`: time source (epoch
    seconds) and sleeper. Raises `RateLimitExhausted` when asked to wait longer than
    `api.max_rate_limit_wait`.
    """

    def __init__(self, api: ApiConfig, cache: HttpCache | None = None,
                 counter: ApiCounter | None = None, *, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep):
        super().__init__(pool_connections=4, pool_maxsize=8, max_retries=0)
        self.api, self.cache = api, cache
        self.counter = counter or ApiCounter()
        self.clock, self._sleeper = clock, sleep
        self._pace_lock = threading.Lock()
        self._last_sent = 0.0
        self._exhausted_until = 0.0

    # -- public entry (called by requests.Session) ----------------------------------------
    def send(self, request, stream=False, timeout=None, verify=True, cert=None, proxies=None):  # type: ignore[override]
        kw = dict(stream=stream, timeout=timeout, verify=verify, cert=cert, proxies=proxies)
        if request.method != "GET" or self.cache is None:
            return self._send(request, kw)
        key = HttpCache.key("GET", request.url, request.headers.get("Accept"))
        entry = self.cache.get(key)
        if entry is not None:
            request = request.copy()
            if entry.etag:
                request.headers["If-None-Match"] = entry.etag
            elif entry.last_modified:
                request.headers["If-Modified-Since"] = entry.last_modified
        resp = self._send(request, kw)
        if resp.status_code == 304 and entry is not None:
            self.counter.add(not_modified=1)
            fresh = {k: v for k, v in resp.headers.items() if k.lower().startswith("x-ratelimit")}
            resp.close()
            return self._from_cache(entry, request, fresh)
        if resp.status_code == 200 and not stream and (
                resp.headers.get("ETag") or resp.headers.get("Last-Modified")):
            self.cache.put(key, CachedResponse(request.url, 200, dict(resp.headers), resp.content,
                                               self.clock()))
        return resp

    # -- retries --------------------------------------------------------------------------
    def _send(self, request, kw) -> requests.Response:
        retrying = Retrying(stop=stop_after_attempt(self.api.max_attempts), wait=self._wait,
                            retry=retry_if_exception(_retryable_error), sleep=self._sleep,
                            before_sleep=self._before_sleep, reraise=True)
        try:
            return retrying(self._attempt, request, kw)
        except _Retryable as e:  # attempts exhausted: PyGithub raises on the status itself
            return e.response

    def _attempt(self, request, kw) -> requests.Response:
        self._pace()
        self.counter.add(requests=1)
        resp = super().send(request, **kw)
        with self.counter._lock:
            self.counter.by_status[resp.status_code] += 1
        kind, wait = self._classify(resp)
        if kind is None:
            if resp.headers.get("X-RateLimit-Remaining") == "0":
                self._exhausted_until = self._reset_at(resp)
            return resp
        _ = resp.content  # keep the body: it is returned when the attempts run out
        resp.close()
        if wait is not None and wait > self.api.max_rate_limit_wait:
            raise RateLimitExhausted(f"GitHub {kind} rate limit asks for a {wait:.0f}s wait "
                                     f"(max {self.api.max_rate_limit_wait:.0f}s)", wait_s=wait)
        raise _Retryable(resp, kind, wait)

    def _reset_at(self, resp: requests.Response) -> float:
        try:
            return float(resp.headers.get("X-RateLimit-Reset", "0")) + 1.0
        except ValueError:
            return self.clock() + self.api.secondary_wait

    def _classify(self, resp: requests.Response) -> tuple[str | None, float | None]:
        status = resp.status_code
        if status in TRANSIENT_STATUS:
            return "server_error", None
        retry_after = _retry_after(resp.headers.get("Retry-After"))
        if status == 429 or (status == 403 and retry_after is not None):
            return "secondary", retry_after if retry_after is not None else self.api.secondary_wait
        if status == 403 and resp.headers.get("X-RateLimit-Remaining") == "0":
            return "primary", max(0.0, self._reset_at(resp) - self.clock())
        if status == 403 and b"secondary rate limit" in resp.content.lower():
            return "secondary", self.api.secondary_wait
        return None, None

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _Retryable) and exc.wait is not None:
            return exc.wait
        return min(self.api.backoff_max, self.api.backoff_initial * 2 ** (state.attempt_number - 1))

    def _before_sleep(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        kind = exc.kind if isinstance(exc, _Retryable) else type(exc).__name__
        self.counter.add(retries=1, primary_waits=int(kind == "primary"),
                         secondary_waits=int(kind == "secondary"))
        wait = state.next_action.sleep if state.next_action else 0.0
        log.warning("GitHub API %s on attempt %d; retrying in %.1fs", kind, state.attempt_number, wait)

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.counter.add(slept_s=seconds)
            self._sleeper(seconds)

    def _pace(self) -> None:
        with self._pace_lock:
            now = self.clock()
            if self._exhausted_until > now:
                wait = self._exhausted_until - now
                if wait > self.api.max_rate_limit_wait:
                    raise RateLimitExhausted(f"primary rate limit resets in {wait:.0f}s", wait_s=wait)
                log.warning("GitHub API quota used up; waiting %.1fs for the reset", wait)
                self.counter.add(primary_waits=1)
                self._sleep(wait)
                self._exhausted_until = 0.0
            elif self.api.min_interval and self._last_sent:
                self._sleep(self._last_sent + self.api.min_interval - now)
            self._last_sent = self.clock()

    # -- cache ----------------------------------------------------------------------------
    def _from_cache(self, entry: CachedResponse, request, fresh: dict[str, str]) -> requests.Response:
        r = requests.Response()
        r.status_code, r.reason = 200, "OK (not modified)"
        r.headers = CaseInsensitiveDict({**entry.headers, **fresh})
        r._content = entry.body  # type: ignore[attr-defined]
        r._content_consumed = True  # type: ignore[attr-defined]
        r.encoding = get_encoding_from_headers(r.headers)
        r.url, r.request, r.connection = request.url, request, self  # type: ignore[attr-defined]
        r.elapsed = timedelta(0)
        return r
