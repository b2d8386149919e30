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
from datetime import datetime, timedelta, timezone
from pathlib import Path

import requests
from github import GithubException
from pydantic import BaseModel, Field

from pipeline.sources.cache import ResponseCache
from pipeline.sources.client import make_github
from pipeline.sources.config import CrawlConfig, GitHubConfig, load_crawl_config
from pipeline.sources.discovery import discover
from pipeline.sources.errors import GitMiningError, RateLimitExhausted, SourceError
from pipeline.sources.github import GitHubSource, last_update
from pipeline.sources.gitlocal import mine
from pipeline.sources.records import Outcome, Reject, instance_id
from pipeline.sources.state import CrawlState
from pipeline.sources.testpaths import TestPathRules
from pipeline.sources.transport import ApiCounter, GitHubTransport

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
    total_instances: int = 0
    total_rejects: int = 0
    instances_path: str = ""
    rejects_path: str = ""


class _Run:
    """Bookkeeping of one run: records outcomes in the state DB and counts them."""

    def __init__(self, state: CrawlState, report: CrawlReport, now: Callable[[], datetime]):
        self.state, self.report, self.now = state, report, now
        self.reasons: Counter[str] = Counter()

    def record(self, out: Outcome) -> None:
        self.state.record(out, self.report.run_id, self.now())
        if out.kind != "repo":
            self.report.examined += 1
        status = out.status
        self.report.accepted += status == "accepted"
        self.report.rejected += status == "rejected"
        self.report.errors += status == "error"
        if out.reject is not None:
            self.reasons[out.reject.reason] += 1


def _infra(key: str, repo: str, kind: str, number: int | None, exc: BaseException,
           created: datetime | None = None, updated: datetime | None = None) -> Outcome:
    detail = f"{type(exc).__name__}: {getattr(exc, 'status', '') or ''} {str(exc)[:300]}".strip()
    return Outcome(key=key, repo=repo, kind=kind, number=number, created_at=created,
                   updated_at=updated, reject=Reject(key=key, repo=repo, kind=kind,  # type: ignore[arg-type]
                                                     reason="infra_error", detail=detail, number=number))


def _crawl_repo(src: GitHubSource, repo, run: _Run, since_last: bool) -> None:
    full = repo.full_name
    state, pairs = run.state, src.cfg.pairs
    since = state.watermark("github", full) if since_last else None
    done = set() if pairs.revisit else state.final_keys(full)
    newest: datetime | None = None
    oldest_error: datetime | None = None
    examined = 0
    for pr in src.pulls(repo, since):
        updated = last_update(pr)
        key = instance_id(full, pr.number)
        if key not in done:  # (a PR shifted onto the next page while listing is seen once)
            done.add(key)
            if pairs.max_pulls_per_repo and examined >= pairs.max_pulls_per_repo:
                break
            examined += 1
            try:
                out = src.examine(repo, pr)
            except RateLimitExhausted:
                raise
            except Exception as e:  # one bad item never stops the crawl: it becomes a row
                if not isinstance(e, (GithubException, requests.RequestException, SourceError)):
                    log.exception("%s#%d: unexpected error", full, pr.number)
                out = _infra(key, full, "pull", pr.number, e, pr.created_at, updated)
                oldest_error = min(oldest_error or updated, updated)
                log.warning("%s#%d: %s", full, pr.number, out.reject.detail if out.reject else "")
            run.record(out)
        newest = max(newest or updated, updated)
    mark = newest if oldest_error is None else oldest_error - timedelta(microseconds=1)
    state.set_watermark("github", full, mark, run.now())


def _repositories(src: GitHubSource, cfg: GitHubConfig, run: _Run):
    """Explicit repositories, then discovered ones; failures and rejects are recorded."""
    seen = set()
    for name in cfg.repos:
        try:
            repo = src.gh.get_repo(name)
        except (GithubException, requests.RequestException) as e:
            out = _infra(f"repo:{name}", name, "repo", None, e)
            if getattr(e, "status", None) == 404 and out.reject is not None:
                out.reject.reason = "repo_not_found"
            run.record(out)
            continue
        seen.add(repo.full_name.lower())
        yield repo
    if cfg.discovery is None:
        return
    try:
        for repo, verdict in discover(src.gh, cfg.discovery):
            if repo.full_name.lower() in seen:
                continue
            if verdict is not None:
                run.report.repos_rejected += 1
                run.record(Outcome(key=verdict.key, repo=verdict.repo, kind="repo", number=None,
                                   created_at=None, reject=verdict))
                continue
            seen.add(repo.full_name.lower())
            yield repo
    except (GithubException, requests.RequestException) as e:  # search or filter calls failed
        run.record(_infra("discovery", "*", "repo", None, e))


def _crawl_github(cfg: GitHubConfig, out_dir: Path, rules: TestPathRules, run: _Run,
                  since_last: bool, counter: ApiCounter, clock, sleep, environ) -> None:
    cache = ResponseCache(cfg.api.cache_dir or out_dir / "http-cache") if cfg.api.cache else None
    transport = GitHubTransport(cfg.api, cache, counter, clock=clock, sleep=sleep)
    gh = make_github(cfg.api, transport, environ)
    src = GitHubSource(gh, cfg, rules)
    try:
        for repo in _repositories(src, cfg, run):
            run.report.repos.append(repo.full_name)
            try:
                _crawl_repo(src, repo, run, since_last)
            except (GithubException, requests.RequestException) as e:
                run.record(_infra(f"repo:{repo.full_name}", repo.full_name, "repo", None, e))
    finally:
        gh.close()


def crawl(config: CrawlConfig | Path | str, workdir: Path | str, *, since_last: bool = False,
          counter: ApiCounter | None = None, clock: Callable[[], float] = time.time,
          sleep: Callable[[float], None] = time.sleep,
          environ: Mapping[str, str] | None = None) -> CrawlReport:
    """Crawl every configured source into `WORKDIR/crawl/` and return the run's report.

    `config`: a CrawlConfig or the path of its YAML. `since_last`: only PRs updated after each
    repository's watermark. `counter`: receives the API counts (also in the report).
    `clock` / `sleep` / `environ`: injectable time and environment (the token is read from
    `environ[api.token_env]`, default `os.environ`). Item-level API failures become
    `infra_error` rows (so does a repository that cannot be listed, a failed search, a broken
    local mirror); a rate-limit wait beyond `api.max_rate_limit_wait` stops the run cleanly
    (`report.stopped`). Raises TransportUnavailable (PyGithub incompatible),
    pydantic.ValidationError (bad config file), duckdb errors (state file locked by another run).
    """
    cfg = config if isinstance(config, CrawlConfig) else load_crawl_config(config)
    out_dir = Path(workdir).expanduser().absolute() / "crawl"
    out_dir.mkdir(parents=True, exist_ok=True)
    counter = counter or ApiCounter()
    t0 = time.monotonic()
    now = lambda: datetime.fromtimestamp(clock(), timezone.utc)  # noqa: E731
    report = CrawlReport(run_id=uuid.uuid4().hex[:12], since_last=since_last,
                         started_at=now().strftime("%Y-%m-%dT%H:%M:%SZ"), seconds=0.0)
    rules = cfg.split.rules()
    with CrawlState(out_dir / "state.duckdb") as state:
        run = _Run(state, report, now)
        try:
            if cfg.github is not None:
                _crawl_github(cfg.github, out_dir, rules, run, since_last, counter, clock, sleep, environ)
            for local in cfg.local:
                skip = set() if cfg.github and cfg.github.pairs.revisit else state.final_keys(local.repo)
                try:
                    for out in mine(local, rules, skip):
                        run.record(out)
                except GitMiningError as e:  # a broken mirror is a row, the others still run
                    run.record(_infra(f"repo:{local.repo}", local.repo, "repo", None, e))
        except RateLimitExhausted as e:
            report.stopped = str(e)
            log.error("crawl stopped: %s", e)
        report.total_instances = _write_jsonl(out_dir / "instances.jsonl", state.accepted_rows())
        report.total_rejects = _write_jsonl(out_dir / "rejects.jsonl", state.reject_rows())
    report.reasons = dict(sorted(run.reasons.items()))
    report.api = counter.snapshot()
    report.seconds = round(time.monotonic() - t0, 3)
    report.instances_path = str(out_dir / "instances.jsonl")
    report.rejects_path = str(out_dir / "rejects.jsonl")
    (out_dir / "report.json").write_text(report.model_dump_json(indent=2), encoding="utf-8")
    log.info("crawl %s: %d accepted, %d rejected, %d errors, %d API requests (%d answered 304)",
             report.run_id, report.accepted, report.rejected, report.errors,
             report.api["requests"], report.api["not_modified"])
    return report


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
