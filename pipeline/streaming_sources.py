"""The source side of `swemint run`: which source call runs next, and what its results are.

`SourceDriver` keeps the GitHub crawler actors (one per token, `sources.crawler.GitHubCrawler`)
and the mirrors to mine (one task each), hands repositories to idle crawlers (explicit ones,
then what discovery finds, asked of the first token's crawler), and turns every finished call
into recorded rejects and candidates for the filter stage (`CrawlBook.take`). A crawler whose
actor dies or hangs is out for the run (its repository goes back to the queue for another
token); one stopped by a rate limit too long to wait is out too; with no crawler left the
remaining repositories wait for the next run (their watermarks did not move).
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.pipeline_config import PipelineConfig
from pipeline.executors import Done
from pipeline.sources.crawl_config import LocalRepoConfig, SplitConfig
from pipeline.sources.crawl import CrawlBook, http_cache_dir
from pipeline.sources.crawler import Batch, GitHubCrawler, infra_outcome, mine_repo
from pipeline.sources.source_rows import UnitOutcome
from pipeline.stages import StageResources

log = logging.getLogger("pipeline.driver")
KINDS = ("crawl", "discover", "mine")
"""Tags of the calls a `SourceDriver` makes (the first element of each call's tag)."""


class MineStage:
    """Mining one local mirror as a stage (one task per repository)."""

    name = "mine"

    def __init__(self, split: SplitConfig):
        self.split = split
        self.resources = StageResources(num_cpus=0.5)

    def process(self, job: tuple[LocalRepoConfig, frozenset[str]]) -> Batch:
        """`crawler.mine_repo` of `(config, keys to skip)`."""
        return mine_repo(job[0], self.split, job[1])


@dataclass
class _Crawler:
    """A crawler actor and what it is doing."""

    handle: Any
    discovers: bool
    busy: bool = False
    repo: str | None = None
    fresh: bool = False
    """`repo` was just assigned: its first step carries the watermark and the keys to skip."""
    finished: bool = False
    api: dict = field(default_factory=dict)


def repo_error(repo: str, why: str, source: str) -> UnitOutcome:
    """An `infra_error` outcome of a whole repository (retried by the next run)."""
    out = infra_outcome(f"repo:{repo}", repo, "repo", None, RuntimeError(why))
    out.source = source
    return out


class SourceDriver:
    """The sources of one run over an executor `ex`, recording into `book` (see the module
    docstring). `out_dir`: WORKDIR/crawl (the HTTP cache lives there by default)."""

    def __init__(self, cfg: PipelineConfig, ex: Any, book: CrawlBook, out_dir: Path):
        self.cfg, self.ex, self.book = cfg, ex, book
        self.mine = MineStage(cfg.sources.split)
        self.git_todo: deque[LocalRepoConfig] = deque(cfg.sources.local)
        self.repo_todo: deque[str] = deque()
        self.crawlers: list[_Crawler] = []
        self.inflight: Counter[str] = Counter()
        self.discovery_done = True
        self.seen_repos: set[str] = set()
        gh = cfg.sources.github
        if gh is not None and (gh.repos or gh.discovery is not None):
            cache = http_cache_dir(gh.api, out_dir)
            for i, token in enumerate(dict.fromkeys([gh.api.token_env, *gh.api.token_envs])):
                handle = ex.start_actor(GitHubCrawler, gh, cfg.sources.split, cache, token_env=token)
                self.crawlers.append(_Crawler(handle, discovers=i == 0))
            self.repo_todo.extend(gh.repos)
            self.seen_repos = {r.lower() for r in gh.repos}
            self.discovery_done = gh.discovery is None

    def open(self) -> bool:
        """True while a source has work left or a call out."""
        return bool(self.git_todo or sum(self.inflight.values()) or self.repo_todo or not self.discovery_done
                    or any(c.repo is not None for c in self.crawlers if not c.finished))

    def api(self) -> dict:
        """The GitHub API counts of every crawler, summed."""
        total: Counter = Counter()
        for c in self.crawlers:
            total.update({k: v for k, v in c.api.items() if isinstance(v, (int, float))})
        return {"requests": 0, "not_modified": 0, "charged": 0, **{k: round(v, 3) for k, v in total.items()}}

    def pump(self, room: Callable[[], bool]) -> None:
        """Start every source call that may run now, while `room()` (the backpressure) allows."""
        f = self.cfg.flow
        gh = self.cfg.sources.github
        while self.git_todo and self.inflight["mine"] < f.source_tasks and room():
            local = self.git_todo.popleft()
            skip = frozenset() if gh is not None and gh.pairs.revisit else frozenset(self.book.state.final_keys(
                local.repo))
            self.ex.submit(self.mine, (local, skip), tag=("mine", local.repo), timeout=f.source_timeout)
            self.inflight["mine"] += 1
        for c in self.crawlers:
            if c.busy or c.finished or not room():
                continue
            if c.repo is None and self.repo_todo:
                c.repo, c.fresh = self.repo_todo.popleft(), True
            if c.repo is not None:
                since, skip = None, frozenset()
                if c.fresh:
                    since, skip = self.book.since(c.repo, f.since_last), frozenset(self.book.state.final_keys(c.repo))
                    c.fresh = False
                self.ex.call(c.handle, "crawl_step", c.repo, since, skip, f.github_step, tag=("crawl", c),
                             timeout=f.source_timeout)
            elif c.discovers and not self.discovery_done:
                self.ex.call(c.handle, "discover", 1, frozenset(self.seen_repos), tag=("discover", c),
                             timeout=f.source_timeout)
            else:
                continue
            c.busy = True
            self.inflight["github"] += 1

    def handle(self, done: Done) -> list[UnitOutcome]:
        """Record a finished source call; returns its candidates (rows for the filter stage)."""
        kind, payload = done.tag[0], done.tag[1]
        m = done.result
        if kind == "mine":
            self.inflight["mine"] -= 1
            batch = m.value if m.error is None and not done.timed_out else Batch(
                repo=payload, done=True, outcomes=[repo_error(payload, m.error or "mining timed out", "git")])
            return self.book.take(batch, github=False)
        self.inflight["github"] -= 1
        c: _Crawler = payload
        c.busy = False
        if m.error is not None or done.timed_out:  # the actor died or hung: this token is out
            log.error("crawler %s: %s", c.repo or "discovery", m.error or "timed out")
            c.finished = True
            if c.repo is not None:
                self.book.take(Batch(repo=c.repo, done=False, outcomes=[
                    repo_error(c.repo, m.error or "crawler step timed out", "github")]))
                self.repo_todo.appendleft(c.repo)  # another token may take it (from its start)
                c.repo = None
            self._out(c)
            return []
        batch: Batch = m.value
        c.api = batch.api
        candidates: list[UnitOutcome] = []
        if kind == "discover":
            for name in self.book.take_discovery(batch):
                self.seen_repos.add(name.lower())
                self.repo_todo.append(name)
            self.discovery_done = self.discovery_done or batch.done
        else:
            candidates = self.book.take(batch)
            if batch.done:
                c.repo = None
        if batch.stopped:
            log.error("crawler stopped: %s", batch.stopped)
            c.finished = True
            self._out(c)
        return candidates

    def _out(self, c: _Crawler) -> None:
        """Crawler `c` is finished for the run: discovery ends with the first token's crawler;
        with no crawler left the repositories not crawled wait for the next run."""
        if c.discovers:
            self.discovery_done = True
        if all(x.finished for x in self.crawlers):
            if self.repo_todo:
                log.warning("no GitHub crawler left; %d repositories wait for the next run", len(self.repo_todo))
            self.repo_todo.clear()
