"""`crawl(config, workdir)`: run the sources, keep state, write the dataset files.

Writes under `WORKDIR/crawl/`:
- `instances.jsonl`: every accepted instance so far (SWE-bench rows, one per line);
- `rejects.jsonl`: every rejected item with its `reason` and `detail` (and `infra_error`
  items, which the next run retries);
- `state.duckdb`: watermarks and per-item outcomes (`state.py`);
- `http-cache/`: the conditional-request cache (unless `api.cache_dir` says otherwise);
- `report.json`: the `CrawlReport` of the last run.

Both JSONL files are rewritten from the state database at the end of every run, so they hold
the whole dataset without duplicates, however many runs fed it. `since_last=True` lists only
PRs updated since each repository's watermark (listing stops at the first older one); items
already decided are skipped either way (unless `pairs.revisit`), and unchanged pages come back
as 304s, so a repeat crawl costs few calls. The watermark is PR `updated_at`, not
`created_at`: a PR opened before the last run but merged after it is still found. A PR that
failed with `infra_error` holds the watermark below it, so the next run retries it.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from pydantic import BaseModel, Field

from pipeline.sources.crawl_config import ApiConfig, CrawlConfig, GitHubConfig, QualityConfig, load_crawl_config
from pipeline.sources.crawler import Batch, GitHubCrawler, mine_repo
from pipeline.sources.source_errors import RateLimitExhausted
from pipeline.sources.filter import FilterStage
from pipeline.sources.source_rows import UnitOutcome
from pipeline.sources.state import CrawlState
from pipeline.sources.transport import ApiCounter

log = logging.getLogger(__name__)


class CrawlReport(BaseModel):
    """What one `crawl` run did. Counts are for this run; `total_*` for the whole dataset."""

    run_id: str
    since_last: bool
    started_at: str
    seconds: float
    repos: list[str] = Field(default_factory=list)
    """Repositories whose pull requests were listed."""
    repos_rejected: int = 0
    examined: int = 0
    """Items (PRs, commits) examined this run."""
    accepted: int = 0
    rejected: int = 0
    errors: int = 0
    reasons: dict[str, int] = Field(default_factory=dict)
    """Reject reasons of this run (repositories included) -> count."""
    stopped: str | None = None
    """Why the run stopped early (a rate limit too long to wait), else None."""
    api: dict = Field(default_factory=dict)
    """`ApiCounter.snapshot()`: requests, not_modified, charged, retries, waits, slept_s."""
    tokens: int = 0
    """LLM tokens the filter stage spent (the LLM quality filter)."""
    total_instances: int = 0
    total_rejects: int = 0
    instances_path: str = ""
    rejects_path: str = ""


@dataclass
class RepoProgress:
    """Where the crawl of one GitHub repository stands in this run (for its watermark)."""

    newest: datetime | None = None
    oldest_error: datetime | None = None
    pending: int = 0
    """Candidates handed to the filter stage and not decided yet."""
    exhausted: bool = False


class CrawlBook:
    """The driver's bookkeeping of a crawl (the only writer of `state`): records every decided
    outcome, counts them into `report`, and moves a GitHub repository's watermark once its
    listing is exhausted and every unit listed is decided. The watermark is the newest
    `updated_at` listed, or just below the oldest item that failed (`infra_error`, in the source
    or the filter), so the next run retries it; a run killed before that leaves the watermark
    where it was, and the next run lists the repository again (decided keys are skipped)."""

    def __init__(self, state: CrawlState, report: CrawlReport, now: Callable[[], datetime]):
        self.state, self.report, self.now = state, report, now
        self.reasons: Counter[str] = Counter()
        self.unit_reasons: Counter[str] = Counter()
        """Reasons of this run's unit rejects (repositories left out)."""
        self.progress: dict[str, RepoProgress] = {}

    def record(self, out: UnitOutcome) -> None:
        """Store the verdict of one decided item and count it."""
        self.state.record(out, self.report.run_id, self.now())
        if out.kind != "repo":
            self.report.examined += 1
        status = out.status
        self.report.accepted += status == "accepted"
        self.report.rejected += status == "rejected"
        self.report.errors += status == "error"
        self.report.tokens += out.tokens
        if out.reject is not None:
            self.reasons[out.reject.reason] += 1
            if out.kind != "repo":
                self.unit_reasons[out.reject.reason] += 1
        prog = self.progress.get(out.repo)
        if prog is not None and status == "error" and out.updated_at is not None:
            prog.oldest_error = min(prog.oldest_error or out.updated_at, out.updated_at)

    def take(self, batch: Batch, *, github: bool = True) -> list[UnitOutcome]:
        """Record `batch`'s decided outcomes; returns its candidates (rows for the filter stage),
        counted as pending until `decided`. `github`: the batch is a repository's listing step."""
        if batch.stopped:
            self.report.stopped = batch.stopped
        prog = self.progress.setdefault(batch.repo, RepoProgress()) if github and batch.listed else None
        if batch.listed and batch.repo not in self.report.repos and batch.repo != "*":
            self.report.repos.append(batch.repo)
        candidates = []
        for out in batch.outcomes:
            if out.candidate is not None or (out.row is not None and out.reject is None):
                candidates.append(out)
            else:
                self.record(out)
        if prog is not None:
            if batch.newest is not None:
                prog.newest = max(prog.newest or batch.newest, batch.newest)
            prog.pending += len(candidates)
            prog.exhausted = prog.exhausted or (batch.done and not batch.stopped)  # a stop is not the end
            self._maybe_watermark(batch.repo)
        return candidates

    def take_discovery(self, batch: Batch) -> list[str]:
        """Record the repositories discovery rejected; returns those it accepted."""
        if batch.stopped:
            self.report.stopped = batch.stopped
        for out in batch.outcomes:
            self.report.repos_rejected += out.status == "rejected"
            self.record(out)
        return batch.repos

    def decided(self, out: UnitOutcome) -> None:
        """Record a candidate the filter stage decided (and move its repository's watermark
        when it was the last one pending)."""
        self.record(out)
        prog = self.progress.get(out.repo)
        if prog is not None:
            prog.pending -= 1
            self._maybe_watermark(out.repo)

    def _maybe_watermark(self, repo: str) -> None:
        prog = self.progress[repo]
        if prog.exhausted and prog.pending <= 0:
            mark = prog.newest if prog.oldest_error is None else prog.oldest_error - timedelta(microseconds=1)
            self.state.set_watermark("github", repo, mark, self.now())
            del self.progress[repo]

    def since(self, repo: str, since_last: bool) -> datetime | None:
        """The watermark `repo` is listed down to (None without `since_last`)."""
        return self.state.watermark("github", repo) if since_last else None

    def finish(self, out_dir: Path, counter_api: dict, t0: float) -> CrawlReport:
        """Rewrite `instances.jsonl` / `rejects.jsonl` from the state, complete and write the
        report (`out_dir/report.json`); returns it."""
        report = self.report
        report.total_instances = _write_jsonl(out_dir / "instances.jsonl", self.state.accepted_rows())
        report.total_rejects = _write_jsonl(out_dir / "rejects.jsonl", self.state.reject_rows())
        report.reasons = dict(sorted(self.reasons.items()))
        report.api = counter_api
        report.seconds = round(time.monotonic() - t0, 3)
        report.instances_path = str(out_dir / "instances.jsonl")
        report.rejects_path = str(out_dir / "rejects.jsonl")
        (out_dir / "report.json").write_text(report.model_dump_json(indent=2), encoding="utf-8")
        log.info("crawl %s: %d accepted, %d rejected, %d errors, %d API requests (%d answered 304)",
                 report.run_id, report.accepted, report.rejected, report.errors,
                 report.api.get("requests", 0), report.api.get("not_modified", 0))
        return report


def new_report(since_last: bool, now: Callable[[], datetime]) -> CrawlReport:
    """An empty report for a run starting now."""
    return CrawlReport(run_id=uuid.uuid4().hex[:12], since_last=since_last,
                       started_at=now().strftime("%Y-%m-%dT%H:%M:%SZ"), seconds=0.0)


def _crawl_github(crawler: GitHubCrawler, cfg: GitHubConfig, book: CrawlBook, filt: FilterStage,
                  since_last: bool) -> None:
    """Explicit repositories, then discovered ones, each crawled to its end before the next."""

    def crawl_repo(name: str) -> None:
        since = book.since(name, since_last)
        skip = frozenset(book.state.final_keys(name))
        while True:
            batch = crawler.crawl_step(name, since, skip, n=50)
            for cand in book.take(batch):
                book.decided(filt.process(cand))
            if batch.stopped:
                raise RateLimitExhausted(batch.stopped)
            if batch.done:
                return

    seen = set()
    for name in cfg.repos:
        crawl_repo(name)
        seen.add(name.lower())
    while cfg.discovery is not None:
        batch = crawler.discover(1, frozenset(seen))
        for name in book.take_discovery(batch):
            seen.add(name.lower())
            crawl_repo(name)
        if batch.stopped:
            raise RateLimitExhausted(batch.stopped)
        if batch.done:
            return


def crawl(config: CrawlConfig | Path | str, workdir: Path | str, *, since_last: bool = False,
          counter: ApiCounter | None = None, clock: Callable[[], float] = time.time,
          sleep: Callable[[float], None] = time.sleep,
          environ: Mapping[str, str] | None = None) -> CrawlReport:
    """Crawl every configured source into `WORKDIR/crawl/` and return the run's report.

    In this process, one step after another (`swemint run` streams the same stages on Ray:
    `pipeline.streaming`). `config`: a CrawlConfig or the path of its YAML. `since_last`: only PRs
    updated after each repository's watermark. `counter`: receives the API counts (also in the
    report). `clock` / `sleep` / `environ`: injectable time and environment (the token is read
    from `environ[api.token_env]`, default `os.environ`). Item-level API failures become
    `infra_error` rows (so does a repository that cannot be listed, a failed search, a broken
    local mirror); a rate-limit wait beyond `api.max_rate_limit_wait` stops the run cleanly
    (`report.stopped`). Raises TransportUnavailable (PyGithub incompatible),
    pydantic.ValidationError (bad config file), duckdb errors (state file locked by another run).
    """
    cfg = config if isinstance(config, CrawlConfig) else load_crawl_config(config)
    root = Path(workdir).expanduser().absolute()
    out_dir = root / "crawl"
    out_dir.mkdir(parents=True, exist_ok=True)
    counter = counter or ApiCounter()
    t0 = time.monotonic()
    now = lambda: datetime.fromtimestamp(clock(), timezone.utc)  # noqa: E731
    report = new_report(since_last, now)
    quality = cfg.github.quality if cfg.github is not None else QualityConfig()
    filt = FilterStage(cfg.filter, quality, cache_dir=root / "cache" / "llm-filter")
    with CrawlState(out_dir / "state.duckdb") as state:
        book = CrawlBook(state, report, now)
        try:
            if cfg.github is not None:
                crawler = GitHubCrawler(cfg.github, cfg.split, http_cache_dir(cfg.github.api, out_dir),
                                        environ=environ, clock=clock, sleep=sleep, counter=counter)
                try:
                    _crawl_github(crawler, cfg.github, book, filt, since_last)
                finally:
                    crawler.close()
            for local in cfg.local:
                skip = set() if cfg.github and cfg.github.pairs.revisit else state.final_keys(local.repo)
                for cand in book.take(mine_repo(local, cfg.split, skip), github=False):
                    book.decided(filt.process(cand))
        except RateLimitExhausted as e:
            report.stopped = str(e)
            log.error("crawl stopped: %s", e)
        return book.finish(out_dir, counter.snapshot(), t0)


def http_cache_dir(api: ApiConfig, out_dir: Path) -> Path | None:
    """Where the conditional-request cache lives: `api.cache_dir`, else `out_dir/http-cache`
    (None when `api.cache` is off)."""
    return (api.cache_dir or out_dir / "http-cache") if api.cache else None


def _write_jsonl(path: Path, rows) -> int:
    """Write `rows` as JSON lines atomically (`pipeline.store.atomic_path`); returns the count. A
    row whose text UTF-8 cannot encode (a lone surrogate from the API) is written with `\\u`
    escapes, so the file stays valid and the mint loader rejects that row alone."""
    from pipeline.store import atomic_path

    n = 0
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8") as f:
        for row in rows:
            line = json.dumps(row, ensure_ascii=False)
            try:
                line.encode("utf-8")
            except UnicodeEncodeError:
                line = json.dumps(row)
            f.write(line + "\n")
            n += 1
    return n
