"""The exceptions of the crawl sources: one root, a small tree.

    SourceError                 root; carries `repo` and `item` (e.g. "pull 12") when known
    ├── RateLimitExhausted      a rate-limit wait longer than `api.max_rate_limit_wait`
    ├── TransportUnavailable    PyGithub's internals changed so our transport cannot be installed
    └── GitMiningError          a local `git` command failed (path of the git dir in the message)

Transient HTTP failures are retried in `transport` and, when retries run out, surface as
PyGithub's own `GithubException` (status kept) or `requests.ConnectionError`; the crawler turns
those into `infra_error` rows instead of raising. No error message ever contains the token.
"""

from __future__ import annotations

from envpool.errors import SwemintError


class SourceError(SwemintError):
    """Root of the source errors (under `envpool.errors.SwemintError`). `repo` ("owner/name")
    and `item` ("pull 12") when known."""

    def __init__(self, message: str, *, repo: str | None = None, item: str | None = None):
        super().__init__(message)
        self.repo = repo
        self.item = item

    def __str__(self) -> str:
        where = " ".join(x for x in (self.repo, self.item) if x)
        return f"{where}: {self.args[0]}" if where else str(self.args[0])


class RateLimitExhausted(SourceError):
    """The API asked us to wait `wait_s` seconds, more than the configured maximum."""

    def __init__(self, message: str, *, wait_s: float, **kw):
        super().__init__(message, **kw)
        self.wait_s = wait_s


class TransportUnavailable(SourceError):
    """The caching/rate-limit transport could not be installed into PyGithub."""


class GitMiningError(SourceError):
    """A `git` command on a local mirror failed."""
