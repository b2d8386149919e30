"""Source stages as plain classes (no Ray): a GitHub crawler holding one token's client, and
mining one local mirror. The Ray adapter runs `GitHubCrawler` as an actor (one per token) and
`mine_repo` as a task per repository; `crawl.crawl` and `pipeline.streaming` call them in turn.

**One token, one crawler.** A `GitHubCrawler` owns the PyGithub client of one token, on one
`GitHubTransport`: every request of that token goes through it, serially (GitHub asks
integrators for serial, paced requests), so the token's rate-limit budget (`X-RateLimit-*`, the
wait until the reset, `Retry-After`) is tracked in one place. The conditional-request cache is a
directory (`HttpCache`, atomic files), shared by every crawler of the run, whatever token
or node. The driver hands out work in small steps so the crawl streams: `discover(k)` returns
the next `k` repositories of the search, `crawl_step(repo, since, skip, n)` examines the next
`n` pull requests of one repository. Nothing here writes state: the driver records every
outcome (`crawl.CrawlBook`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import requests
from github import GithubException
from github.Repository import Repository

from pipeline.sources.httpcache import HttpCache
from pipeline.sources.client import make_github
from pipeline.sources.crawl_config import ApiConfig, GitHubConfig, LocalRepoConfig, SplitConfig
from pipeline.sources.discovery import discover
from pipeline.sources.source_errors import GitMiningError, RateLimitExhausted, SourceError
from pipeline.sources.github import GitHubSource, last_update
from pipeline.sources.gitlocal import mine
from pipeline.sources.source_rows import UnitOutcome, Reject, instance_id
from pipeline.sources.transport import ApiCounter, GitHubTransport

log = logging.getLogger(__name__)


def infra_outcome(key: str, repo: str, kind: str, number: int | None, exc: BaseException,
                  created: datetime | None = None, updated: datetime | None = None) -> UnitOutcome:
    """An `infra_error` outcome for an item whose examination failed (retried by the next run)."""
    detail = f"{type(exc).__name__}: {getattr(exc, 'status', '') or ''} {str(exc)[:300]}".strip()
    return UnitOutcome(key=key, repo=repo, kind=kind, number=number, created_at=created,
                   updated_at=updated, reject=Reject(key=key, repo=repo, kind=kind,  # type: ignore[arg-type]
                                                     reason="infra_error", detail=detail, number=number))


@dataclass
class Batch:
    """What one step of a source gave.

    `outcomes`: decided rejects and undecided candidates (rows for the filter stage).
    `done`: the source (repository, discovery) has nothing more this run. `listed`: the
    repository was found and its pull requests listed. `newest`: the newest `updated_at` listed
    in this step, skipped items included (the watermark's candidate). `stopped`: a rate-limit
    wait too long to honour (the crawler is then finished for this run). `api`: the crawler's
    cumulative `ApiCounter.snapshot()`. `repos`: repositories `discover` accepted.
    """

    repo: str
    outcomes: list[UnitOutcome] = field(default_factory=list)
    done: bool = False
    listed: bool = False
    newest: datetime | None = None
    stopped: str | None = None
    api: dict = field(default_factory=dict)
    repos: list[str] = field(default_factory=list)


@dataclass
class _Cursor:
    listing: Iterator
    done: set[str]
    examined: int = 0


class GitHubCrawler:
    """The GitHub client of one token (see the module docstring).

    Args:
        cfg: the GitHub source's config (`api.token_env` names the token; `token_env` overrides it).
        split: the test/code split.
        cache_dir: the shared conditional-request cache (None: no cache).
        token_env: environment variable holding this crawler's token (default `cfg.api.token_env`).
        environ: where the token is read (default `os.environ`); clock / sleep / counter: injectable.
    Raises TransportUnavailable (PyGithub incompatible) when built.
    """

    def __init__(self, cfg: GitHubConfig, split: SplitConfig, cache_dir: Path | None = None,
                 token_env: str | None = None, environ: Mapping[str, str] | None = None,
                 clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
                 counter: ApiCounter | None = None):
        api: ApiConfig = cfg.api if token_env is None else cfg.api.model_copy(update={"token_env": token_env})
        cache = HttpCache(cache_dir) if cfg.api.cache and cache_dir is not None else None
        self.counter = counter or ApiCounter()
        self.transport = GitHubTransport(api, cache, self.counter, clock=clock, sleep=sleep)
        self.gh = make_github(api, self.transport, environ)
        self.cfg = cfg
        self.src = GitHubSource(self.gh, cfg, split.rules())
        self._repos: dict[str, Repository] = {}
        self._cursors: dict[str, _Cursor] = {}
        self._discovery: Iterator | None = None

    def api(self) -> dict:
        """The counter snapshot (requests, not_modified, charged, retries, waits, slept_s)."""
        return self.counter.snapshot()

    def discover(self, k: int = 1, skip: frozenset[str] = frozenset()) -> Batch:
        """The next `k` repositories the search accepts (`Batch.repos`; rejects as outcomes),
        skipping names in `skip` (lower-case `owner/name`, e.g. the explicit ones). A failed
        search is an `infra_error` outcome keyed `discovery`, and ends discovery."""
        out = Batch(repo="*")
        if self.cfg.discovery is None:
            out.done = True
            return out
        if self._discovery is None:
            self._discovery = discover(self.gh, self.cfg.discovery)
        try:
            while len(out.repos) < k:
                try:
                    repo, verdict = next(self._discovery)
                except StopIteration:
                    out.done = True
                    break
                if repo.full_name.lower() in skip:
                    continue
                if verdict is not None:
                    out.outcomes.append(UnitOutcome(key=verdict.key, repo=verdict.repo, kind="repo", number=None,
                                                created_at=None, reject=verdict))
                    continue
                self._repos[repo.full_name] = repo
                out.repos.append(repo.full_name)
        except RateLimitExhausted as e:
            out.stopped, out.done = str(e), True
        except (GithubException, requests.RequestException) as e:  # search or filter calls failed
            out.outcomes.append(infra_outcome("discovery", "*", "repo", None, e))
            out.done = True
        out.api = self.api()
        return out

    def _repository(self, name: str, out: Batch) -> Repository | None:
        if name in self._repos:
            return self._repos[name]
        try:
            repo = self.gh.get_repo(name)
        except (GithubException, requests.RequestException) as e:
            o = infra_outcome(f"repo:{name}", name, "repo", None, e)
            if getattr(e, "status", None) == 404 and o.reject is not None:
                o.reject.reason = "repo_not_found"
            out.outcomes.append(o)
            out.done = True
            return None
        self._repos[name] = repo
        return repo

    def crawl_step(self, name: str, since: datetime | None = None, skip: frozenset[str] | set[str] = frozenset(),
                   n: int = 5) -> Batch:
        """Examine the next `n` pull requests of repository `name` not in `skip` (keys already
        decided), listing newest `updated_at` first down to `since` (`GitHubSource.pulls`).
        `since` and `skip` are read on the repository's first step only. Item failures are
        `infra_error` outcomes; a repository that cannot be fetched or listed is one (or
        `repo_not_found`) and ends it (`done`)."""
        out = Batch(repo=name)
        try:
            self._step(name, since, skip, n, out)
        except RateLimitExhausted as e:
            out.stopped, out.done = str(e), True
        out.api = self.api()
        if out.done:
            self._cursors.pop(name, None)
        return out

    def _step(self, name: str, since, skip, n: int, out: Batch) -> None:
        repo = self._repository(name, out)
        if repo is None:
            return
        out.listed = True
        pairs = self.cfg.pairs
        cur = self._cursors.get(name)
        if cur is None:
            cur = self._cursors[name] = _Cursor(iter(self.src.pulls(repo, since)),
                                                set() if pairs.revisit else set(skip))
        examined = 0
        while examined < n:
            try:
                pr = next(cur.listing)
            except StopIteration:
                out.done = True
                return
            except (GithubException, requests.RequestException) as e:
                out.outcomes.append(infra_outcome(f"repo:{name}", name, "repo", None, e))
                out.done = True
                return
            updated = last_update(pr)
            key = instance_id(repo.full_name, pr.number)
            if key not in cur.done:  # (a PR shifted onto the next page while listing is seen once)
                cur.done.add(key)
                if pairs.max_pulls_per_repo and cur.examined >= pairs.max_pulls_per_repo:
                    out.done = True
                    return
                cur.examined += 1
                examined += 1
                out.outcomes.append(self._examine(repo, pr, key, updated))
            out.newest = max(out.newest or updated, updated)

    def _examine(self, repo: Repository, pr, key: str, updated: datetime) -> UnitOutcome:
        try:
            return self.src.examine(repo, pr)
        except RateLimitExhausted:
            raise
        except Exception as e:  # one bad item never stops the crawl: it becomes a row
            if not isinstance(e, (GithubException, requests.RequestException, SourceError)):
                log.exception("%s#%d: unexpected error", repo.full_name, pr.number)
            out = infra_outcome(key, repo.full_name, "pull", pr.number, e, pr.created_at, updated)
            log.warning("%s#%d: %s", repo.full_name, pr.number, out.reject.detail if out.reject else "")
            return out

    def close(self) -> None:
        """Close the client's connections."""
        self.gh.close()


def mine_repo(cfg: LocalRepoConfig, split: SplitConfig, skip: frozenset[str] | set[str] = frozenset()) -> Batch:
    """Every outcome of mining the mirror `cfg.git_dir` (`gitlocal.mine`), keys in `skip` left
    out; a broken mirror is one `infra_error` outcome keyed `repo:owner/name`. Always `done`."""
    out = Batch(repo=cfg.repo, done=True, listed=True)
    try:
        out.outcomes.extend(mine(cfg, split.rules(), skip))
    except GitMiningError as e:  # a broken mirror is a row, the others still run
        o = infra_outcome(f"repo:{cfg.repo}", cfg.repo, "repo", None, e)
        o.source = "git"
        if o.reject is not None:
            o.reject.source = "git"
        out.outcomes.append(o)
    return out
