"""A Debian mirror apt could not use: the infrastructure's failure, never an answer.

apt names it in its own words (``E: Failed to fetch .../Contents-amd64.gz  File has unexpected
size (12698511 != 12699567). Mirror sync in progress?``, ``Hash Sum mismatch``, ``Temporary
failure resolving 'deb.debian.org'``, connection errors); the words are data (`apt_mirror` in
`agents/ecosystems/recipes/diagnosis.yaml`). `mirror_failure` finds such a line in a failed
step's output; `retry_mirror` tries a step again with backoff while it fails that way
(tenacity; `mint.repair.mirror_attempts`, `mirror_backoff`, `mirror_max_seconds`); a step still
failing so raises `AptMirrorError`, an `InfraError`: the row ends `infra_error`, which is never
scored and is retried by a rerun (a mirror mid-sync says nothing about the repository).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlparse

import yaml
from tenacity import RetryCallState, Retrying, retry_if_result, stop_after_attempt, stop_after_delay

from envpool.errors import InfraError
from envpool.images import DEBIAN_MIRROR

RULES_PATH = Path(__file__).resolve().parent / "ecosystems" / "recipes" / "diagnosis.yaml"
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


@lru_cache(maxsize=1)
def mirror_data(path: str = str(RULES_PATH)) -> tuple[frozenset[str], tuple[re.Pattern[str], ...]]:
    """(Debian's hosts, apt's patterns) of the data file's `apt_mirror` section; the host of
    `envpool.images.DEBIAN_MIRROR` is one of the hosts."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")).get("apt_mirror") or {}
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


def retry_mirror(attempt: Callable[[int], T], failed: Callable[[T], bool], repair,
                 sleep: Callable[[float], None] = time.sleep) -> T:
    """`attempt(k)` (k = 1, 2, ...) until its result is not `failed`, at most
    `repair.mirror_attempts` times, the k-th retry after `repair.mirror_backoff * 2**(k-1)`
    seconds, no attempt starting past `repair.mirror_max_seconds` after the first began (`repair`:
    the mint config's `RepairConfig`). Returns the last result, failed or not; an exception of
    `attempt` is raised at once."""
    limit = repair.mirror_max_seconds

    def wait(state: RetryCallState) -> float:
        left = max(0.0, limit - state.seconds_since_start) if state.seconds_since_start is not None else limit
        return min(repair.mirror_backoff * 2 ** (state.attempt_number - 1), left)

    def last(state: RetryCallState) -> T:
        assert state.outcome is not None
        return state.outcome.result()

    counter = iter(range(1, 1 << 30))
    retrying = Retrying(retry=retry_if_result(failed), stop=stop_after_attempt(repair.mirror_attempts) |
                        stop_after_delay(limit), wait=wait, sleep=sleep, retry_error_callback=last)
    return retrying(lambda: attempt(next(counter)))
