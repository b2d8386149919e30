"""A Debian mirror apt could not use: the infrastructure's failure, never an answer.

apt names it in its own words (``E: Failed to fetch .../Contents-amd64.gz  File has unexpected
size (12698511 != 12699567). Mirror sync in progress?``, ``Hash Sum mismatch``, ``Temporary
failure resolving 'deb.debian.org'``, connection errors); the words are data
(`envpool/aptmirror.yaml`, read once per process). `mirror_failure` finds such a line in a
failed step's output; `retry_mirror` tries a step again with backoff while it fails that way
(tenacity; a `MirrorPolicy`: the mint's `repair.mirror_*`, the images' `ImageConfig.mirror`).
Built on them: `exec_apt` (one command in a sandbox: the grading tools' python3) and
`layer_with_retry` (an image layer: every toolchain image's apt layer). A step still failing
so raises `AptMirrorError`, an `InfraError`: the row ends `infra_error`, which is never scored
and is retried by a rerun (a mirror mid-sync says nothing about the repository).
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar
from urllib.parse import urlparse

import yaml
from pydantic import BaseModel, ConfigDict, Field
from tenacity import RetryCallState, Retrying, retry_if_result, stop_after_attempt, stop_after_delay

from envpool.errors import InfraError

DEBIAN_MIRROR = "http://deb.debian.org/debian"
"""The Debian mirror of our images (`envpool.images.ImageConfig.debian_mirror`'s default); its
host is one of `mirror_data`'s hosts."""
DATA_PATH = Path(__file__).resolve().parent / "aptmirror.yaml"
MAX_TEXT = 200_000
"""Only the last this-many characters of an output are searched."""
_HOST = re.compile(r"[a-z][a-z0-9+.-]*://([\w.-]+)|resolving '([\w.-]+)'|connect to ([\w.-]+)", re.I)

T = TypeVar("T")


class AptMirrorError(InfraError):
    """apt could not use the Debian mirror, after every attempt (`retry_mirror`); outcome
    `infra_error`. `line`: apt's line saying so."""

    def __init__(self, message: str, *, line: str = "", **kw):
        super().__init__(message, **kw)
        self.line = line


class MirrorPolicy(Protocol):
    """How often a step apt fails on the mirror is tried (`MirrorRetry`, the one model of these
    settings: the mint's `agents.mint_config.RepairConfig` is one, the images' `ImageConfig.mirror`
    another)."""

    mirror_attempts: int
    mirror_backoff: float
    mirror_max_seconds: float


class MirrorRetry(BaseModel):
    """A `MirrorPolicy` as a config: `mirror_attempts` attempts at most, the k-th retry after
    `mirror_backoff * 2**(k-1)` seconds, none starting past `mirror_max_seconds` after the first."""

    model_config = ConfigDict(extra="forbid")
    mirror_attempts: int = Field(default=3, ge=1)
    """Attempts of a step that failed because apt could not use the Debian mirror (``Hash Sum
    mismatch``, ``File has unexpected size ... Mirror sync in progress?``, ``Temporary failure
    resolving``, connection errors: `mirror_failure`). Still failing after them: `AptMirrorError`
    (the row is `infra_error`, the mirror's failure, retried by a rerun)."""
    mirror_backoff: float = Field(default=20.0, ge=0)
    """Seconds before the second such attempt, doubled before each later one."""
    mirror_max_seconds: float = Field(default=240.0, ge=0)
    """No such attempt starts later than this many seconds after the first one began."""


@functools.cache
def mirror_data(path: Path = DATA_PATH) -> tuple[frozenset[str], tuple[re.Pattern[str], ...]]:
    """(Debian's hosts, apt's patterns) of the data file (read once per process and path); the
    host of `DEBIAN_MIRROR` is one of the hosts."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    hosts = {h.lower() for h in data.get("hosts", [])} | {(urlparse(DEBIAN_MIRROR).hostname or "").lower()}
    return frozenset(hosts - {""}), tuple(re.compile(p, re.I) for p in data.get("patterns", []))


def mirror_failure(text: str | None) -> str | None:
    """apt's line in `text` saying it could not use a Debian mirror (stripped, at most 300
    characters), or None. A line naming another host (a third-party apt source a CI adds) does
    not count: that source being unreachable is the build's failure, not the mirror's."""
    hosts, patterns = mirror_data()
    for line in (text or "")[-MAX_TEXT:].splitlines():
        if not any(p.search(line) for p in patterns):
            continue
        named = {next(g for g in m.groups() if g).lower() for m in _HOST.finditer(line)}
        if not named or named & hosts:
            return line.strip()[:300]
    return None


def retry_mirror(attempt: Callable[[int], T], failed: Callable[[T], bool], policy: MirrorPolicy,
                 sleep: Callable[[float], None] = time.sleep) -> T:
    """`attempt(k)` (k = 1, 2, ...) until its result is not `failed`, at most
    `policy.mirror_attempts` times, the k-th retry after `policy.mirror_backoff * 2**(k-1)`
    seconds, no attempt starting past `policy.mirror_max_seconds` after the first began. Returns
    the last result, failed or not; an exception of `attempt` is raised at once."""
    limit = policy.mirror_max_seconds

    def wait(state: RetryCallState) -> float:
        left = max(0.0, limit - state.seconds_since_start) if state.seconds_since_start is not None else limit
        return min(policy.mirror_backoff * 2 ** (state.attempt_number - 1), left)

    def last(state: RetryCallState) -> T:
        assert state.outcome is not None
        return state.outcome.result()

    counter = iter(range(1, 1 << 30))
    retrying = Retrying(retry=retry_if_result(failed), stop=stop_after_attempt(policy.mirror_attempts) |
                        stop_after_delay(limit), wait=wait, sleep=sleep, retry_error_callback=last)
    return retrying(lambda: attempt(next(counter)))


def exec_apt(sb, cmd: str, policy: MirrorPolicy, *, sleep: Callable[[float], None] = time.sleep, **kw):
    """`sb.exec(cmd, **kw)` (an `envpool.sandbox.Sandbox`), again while it fails because apt could
    not use the mirror (`retry_mirror` under `policy`); any other failure is run once. Returns the
    last ExecResult, failed or not (the caller says what a failure means)."""
    return retry_mirror(lambda _k: sb.exec(cmd, **kw), lambda r: not r.ok and mirror_failure(r.output) is not None,
                        policy, sleep=sleep)


def _build_failure(e: InfraError) -> str | None:
    """`mirror_failure` of an image build's InfraError: its message is ``building image T failed
    (exit N): <the script's output>``, so the output's first line follows the prefix."""
    return mirror_failure(e.message.partition(": ")[2] or e.message)


def layer_with_retry(build: Callable[[], str], tag: str, policy: MirrorPolicy,
                     sleep: Callable[[float], None] = time.sleep) -> str:
    """`build()` (an image layer's build, `envpool.sandbox.ImageStore.layer`: its InfraError
    carries the script's output tail), again while its InfraError is apt failing on the mirror
    (`retry_mirror` under `policy`). Returns what `build` returns; another InfraError is raised
    after one attempt, as is; the mirror still failing after every attempt raises
    `AptMirrorError` (from the last InfraError)."""
    tries = [0]

    def attempt(k: int) -> str | InfraError:
        tries[0] = k
        try:
            return build()
        except InfraError as e:
            if _build_failure(e) is None:
                raise
            return e

    got = retry_mirror(attempt, lambda r: isinstance(r, InfraError), policy, sleep=sleep)
    if isinstance(got, InfraError):
        line = _build_failure(got) or ""
        raise AptMirrorError(f"building image {tag}: apt could not use the Debian mirror (infrastructure, "
                             f"{tries[0]} attempt(s)): {line}", line=line) from got
    return got
