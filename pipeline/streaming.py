"""`swemint run`: repositories to a dataset in one driver, streaming the stages over an executor.

    sources (GitHub crawler actors, one per token; git mining tasks, one per mirror; an instance
    file) -> filter (quality score) -> plan (analysis, any node) -> build (Docker slots) -> export

The driver is the only writer of the crawl state (`WORKDIR/crawl/state.duckdb`), the result
store (`WORKDIR/instances`), the pool and the memory; stages only return values. Queues between
stages are bounded (`flow.queue_size`): sources are asked for more only while few units wait
undecided, accepted or in planning, so builds start while the crawl goes on and a slow build
holds the crawl back instead of piling units up. With `flow.streaming: false` the chain runs
crawl-then-mint (the baseline of `scripts/bench_flow.py`).

**Incremental and resumable.** A unit is decided once (its verdict recorded in the crawl state
as it comes back from the filter); GitHub watermarks move only when every unit listed up to
them is decided, and stay below any that failed. Accepted units whose mint row is missing or
named by `retry_outcomes` (a kill -9 between acceptance and DONE, an `infra_error`) are minted
first on the next run; finished ones never again. Containers left by a killed run for the
units redone are swept first (`stages.sweep_leftovers`). So after a kill -9 a rerun of the same
command loses no unit and mints none twice.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agents.models import Instance, InstanceResult
from envpool.errors import InstanceInputError
from envpool.quoting import one_line
from pipeline.pipeline_config import PipelineConfig
from pipeline.driver import MintBook, MintReport, run_log, write_input_errors
from pipeline.executors import Done, LocalExecutor, Locality, row_of
from pipeline.streaming_sources import KINDS as SOURCE_CALLS
from pipeline.streaming_sources import SourceDriver
from pipeline.funnel import RUNS, cost_block, cumulative, funnel, llm_tokens, read_runs, write_report
from pipeline.instances import load_and_select, require_usable
from pipeline.nodes import NodeWatch
from pipeline.ray_adapter import RayExecutor
from pipeline.repos import RepoResolver, commit_exists
from pipeline.sources.crawl_config import QualityConfig
from pipeline.sources.crawl import CrawlBook, CrawlReport, new_report
from pipeline.sources.crawler import infra_outcome
from pipeline.sources.filter import FilterStage
from pipeline.sources.gitlocal import resolve_git_dir
from pipeline.sources.source_rows import UnitOutcome
from pipeline.sources.state import CrawlState
from pipeline.stages import (MintStage, PlanStage, StageResources, WorkItem, failure_row, now_iso,
                             planned_instance)
from pipeline.store import driver_lock

log = logging.getLogger("pipeline.driver")  # one log (and WORKDIR/driver.log) for mint and run


@dataclass
class FlowReport(MintReport):
    """What one `run_flow` did: a `MintReport` (`results`: mint rows of this run in completion
    order; `skipped`: rows of accepted units finished earlier) plus `crawl`, the sources'
    report; `funnel`: the `run` part of `WORKDIR/report.json`."""

    crawl: CrawlReport | None = None
    funnel: dict = field(default_factory=dict)


class _Resolver:
    """Git dirs of repositories: a local source's own mirror first, then `RepoResolver`."""

    def __init__(self, cfg: PipelineConfig):
        self.local = {s.repo: resolve_git_dir(s.git_dir).absolute() for s in cfg.sources.local}
        self.repos = RepoResolver(cfg.mirrors, cfg.repos, cache_dir=cfg.repos.cache_dir or cfg.workdir / "repos")

    def prepare(self, inst: Instance) -> Path:
        git_dir = self.local.get(inst.repo)
        if git_dir is not None and commit_exists(git_dir, inst.base_commit):
            return git_dir
        return self.repos.prepare(inst.repo, inst.base_commit, inst.instance_id)


class Flow:
    """One run of the chain (see the module docstring); use `run_flow`. The chain schedules;
    the driver's `MintBook` (`self.book`) does the per-instance work (start, record, resume,
    low disk, budgets, export) exactly as for `swemint mint`."""

    def __init__(self, cfg: PipelineConfig, executor: LocalExecutor | RayExecutor, *, mint_fn=None, plan_fn=None,
                 on_result: Callable[[InstanceResult], None] | None = None,
                 on_start: Callable[[str], None] | None = None, on_total: Callable[[int], None] | None = None):
        self.cfg, self.ex = cfg, executor
        self.report = FlowReport()
        self.t0 = time.monotonic()
        self.cpu0 = _process_cpu()
        self.now = lambda: datetime.now(timezone.utc)  # noqa: E731
        self.out_dir = cfg.workdir / "crawl"
        self.out_dir.mkdir(parents=True, exist_ok=True)
        src = cfg.sources
        quality = src.github.quality if src.github is not None else QualityConfig()
        self.filter = FilterStage(src.filter, quality, cache_dir=cfg.workdir / "cache" / "llm-filter")
        self.plan = PlanStage(cfg.mint, plan_fn=plan_fn, plan_function=cfg.flow.plan_function,
                              resources=StageResources(cfg.flow.plan_num_cpus))
        auth = (cfg.registry_auth.username_env, cfg.registry_auth.password_env) if cfg.registry_auth else None
        self.build = MintStage(cfg.mint, mint_fn=mint_fn, mint_function=cfg.mint_function,
                               resources=StageResources(cfg.ray.task_num_cpus, {"docker": 1.0}), registry=cfg.registry,
                               registry_auth=auth, slots=cfg.workers)
        self.book = MintBook(cfg, self.report, on_result=on_result, on_start=on_start, on_total=on_total)
        self.book.t0 = self.t0
        self.store, self.pool = self.book.store, self.book.pool
        self.resolver = _Resolver(cfg)
        # queues and calls in flight
        self.to_filter: deque[UnitOutcome] = deque()
        self.to_plan: deque[Instance] = deque()
        self.to_build: deque[WorkItem] = deque()
        self.inflight: Counter[str] = Counter()
        self.queued: set[str] = set()
        self.remote_cpu = 0.0
        self.container_cpu = 0.0
        self.from_file = 0
        self.locality = Locality(names=getattr(self.ex, "node_names", None))
        self.locality.seed(self.pool.list())  # where earlier runs verified each repository
        self.by_node: defaultdict[str, Counter[str]] = defaultdict(Counter)
        """Build rows per node id ("" in-process), by outcome."""
        self.nodes = NodeWatch(cfg, self.ex, self.store, self.pool)

    # -- set-up -------------------------------------------------------------------------------
    def _read_instance_file(self, report: FlowReport) -> None:
        if self.cfg.instances is not None:
            loaded = load_and_select(self.cfg.instances, ids=self.cfg.ids or None, ids_file=self.cfg.ids_file,
                                     language=self.cfg.language, limit=self.cfg.limit)
            report.load_errors, report.missing_ids = loaded.errors, loaded.missing_ids
            errors_file = write_input_errors(self.cfg.workdir, loaded.errors)
            gh = self.cfg.sources.github
            if not self.cfg.sources.local and not (gh is not None and (gh.repos or gh.discovery is not None)):
                require_usable(loaded, self.cfg.instances, errors_file)  # the only source: nothing to do
            self.from_file = len(loaded.instances)
            for inst in loaded.instances:
                self._accept(inst, report)

    def _accept(self, inst: Instance, report: FlowReport) -> None:
        """Queue an accepted unit for minting unless it is finished (or already queued)."""
        iid = inst.instance_id
        if iid in self.queued or not self.cfg.flow.mint:
            return
        self.queued.add(iid)
        prev = self.book.finished(inst)
        if prev is not None:
            report.skipped.append(prev)
            return
        self.to_plan.append(inst)

    def _accept_row(self, row: dict, report: FlowReport) -> None:
        """`_accept` of a source's row, once it is a valid `Instance`; a row that is not (one an
        older state file kept, with a field today's checks refuse) is logged in one inert line
        and left out, never a crash of the run."""
        try:
            inst = Instance.model_validate(row)
        except ValueError as e:  # pydantic's ValidationError
            log.warning("accepted row %s left out: %s", one_line(row.get("instance_id"), 80), one_line(e, 400))
            return
        self._accept(inst, report)

    # -- the loop -----------------------------------------------------------------------------
    def backlog(self) -> int:
        """Units undecided, accepted and waiting, or in planning (builds in flight not counted)."""
        return (len(self.to_filter) + self.inflight["filter"] + len(self.to_plan) + self.inflight["plan"]
                + len(self.to_build))

    def _room(self) -> bool:
        f = self.cfg.flow
        return self.book.stop is None and (not f.streaming or not f.mint or self.backlog() < f.queue_size)

    def _submit(self, stage: Any, item: Any, tag: tuple, timeout: float | None, count: str,
                prefer: str | None = None) -> None:
        if prefer:
            self.ex.submit(stage, item, tag=tag, timeout=timeout, prefer=prefer)
        else:
            self.ex.submit(stage, item, tag=tag, timeout=timeout)
        self.inflight[count] += 1

    def _pump_stages(self, report: FlowReport) -> None:
        f = self.cfg.flow
        while self.to_filter and self.inflight["filter"] < f.filter_workers:
            out = self.to_filter.popleft()
            self._submit(self.filter, out, ("filter", out), f.filter_timeout, count="filter")
        if not f.mint or (not f.streaming and (self.sources.open() or self.to_filter or self.inflight["filter"])):
            return
        while self.to_plan and self.inflight["plan"] < f.plan_workers and self.book.stop is None:
            inst = self.to_plan.popleft()
            try:
                repo_path = self.resolver.prepare(inst)
            except InstanceInputError as e:
                self.book.record_unstarted(inst, failure_row(inst, "infra_error", f"input: {e.message}", now_iso()),
                                           self._total(report))
                continue
            self._submit(self.plan, WorkItem(inst, repo_path), ("plan", inst, now_iso()), f.plan_timeout,
                         count="plan")
        while self.to_build and self.inflight["build"] < self.cfg.workers and self.book.disk_ok():
            item = self.to_build.popleft()
            self.book.start(item, planned_instance(item.instance, item.plan))
            self._submit(self.build, item, ("build", item, now_iso()), self.cfg.timeout_s, count="build",
                         prefer=self.locality.prefer(item.instance.repo))

    def _handle(self, done: Done, report: FlowReport) -> None:
        kind, payload = done.tag[0], done.tag[1]
        m = done.result
        if isinstance(self.ex, RayExecutor):
            self.remote_cpu += m.cpu_s
        self.container_cpu += m.container_cpu_s
        if kind in SOURCE_CALLS:
            self.to_filter.extend(self.sources.handle(done))
        elif kind == "filter":
            self.inflight["filter"] -= 1
            out = m.value if m.error is None and not done.timed_out else _failed(payload, m.error or "timed out")
            self.crawl.decided(out)
            if out.status == "accepted":
                self._accept_row(out.row, report)
        elif kind == "plan":
            self.inflight["plan"] -= 1
            inst, started = payload, done.tag[2]
            if done.timed_out:
                res: Any = failure_row(inst, "timeout", f"planning took over {self.cfg.flow.plan_timeout:.0f} s",
                                       started, self.cfg.flow.plan_timeout)
            elif m.error is not None:
                res = failure_row(inst, "infra_error", m.error, started, m.wall_s)
            else:
                res = m.value
            if isinstance(res, WorkItem):
                self.to_build.append(res)
            else:
                self.book.record_unstarted(inst, res, self._total(report))
        elif kind == "build":
            self.inflight["build"] -= 1
            item, started = payload, done.tag[2]
            res = row_of(item, Done(done.key, ("mint",), m, done.timed_out), self.cfg.timeout_s, started)
            self.locality.note(item.instance.repo, m.node)
            self.by_node[m.node][res.outcome] += 1
            self.book.record(res, self._total(report))
            self.book.after(res, self.ex.each_node)

    def _hold(self, report: FlowReport) -> None:
        """Low disk: every unit accepted and not started gets an `infra_error` row (the next run
        redoes it); undecided units stay undecided (the next run examines them again)."""
        for inst in [*self.to_plan, *(it.instance for it in self.to_build)]:
            self.book.record_unstarted(inst, failure_row(inst, "infra_error", f"not started: {self.book.stop}",
                                                         now_iso()), self._total(report))
        self.to_plan.clear()
        self.to_build.clear()
        if self.to_filter:
            log.warning("%d undecided unit(s) wait for the next run", len(self.to_filter))
        self.to_filter.clear()

    def _total(self, report: FlowReport) -> int:
        """Rows this run expects so far (units queued, less those finished earlier)."""
        return len(self.queued) - len(report.skipped)

    def run(self) -> FlowReport:
        """Run the chain to its end; see the module docstring."""
        with CrawlState(self.out_dir / "state.duckdb") as state:
            self.crawl = CrawlBook(state, new_report(self.cfg.flow.since_last, self.now), self.now)
            report = self.report
            report.crawl = self.crawl.report
            if self.cfg.flow.mint:
                for row in state.accepted_rows():  # accepted earlier, not finished: first
                    self._accept_row(row, report)
            earlier = len(self.to_plan)  # before the instance file's rows join (they are this run's)
            self.sources = SourceDriver(self.cfg, self.ex, self.crawl, self.out_dir)
            self._read_instance_file(report)
            self.book.sweep_stale(self.ex.each_node, list(self.to_plan))
            log.info("run %s: %d accepted earlier to mint, %d from the instance file, %d finished, sources: %d GitHub "
                     "token(s), %d mirror(s)%s", self.cfg.mint.run_id, earlier, len(self.to_plan) - earlier,
                     len(report.skipped), len(self.sources.crawlers),
                     len(self.sources.git_todo), "" if self.cfg.flow.streaming else " (crawl, then mint)")
            while True:
                self.nodes.check()
                self.sources.pump(self._room)
                self._pump_stages(report)
                if not self.ex.in_flight() and self.book.stop is not None:
                    self._hold(report)
                    break
                if not self.ex.in_flight():
                    left = self.sources.open() or self.to_filter or self.to_plan or self.to_build
                    if left:  # every pump submits what it can: nothing in flight means nothing runnable
                        raise RuntimeError(f"flow stalled with work left: backlog {self.backlog()}, "
                                           f"sources open {self.sources.open()}")
                    break
                for done in self.ex.poll(1.0):
                    self._handle(done, report)
            self.nodes.sweep_finished()
            self.book.finish_budget(self.ex.each_node)
            crawl = self.crawl.finish(self.out_dir, self.sources.api(), self.t0)
            report.wall_s = round(time.monotonic() - self.t0, 3)
            self.book.export()
            report.funnel = self._funnel(report, crawl)
            _append_run(self.cfg.workdir, report.funnel)
            write_report(self.cfg.workdir, report.funnel,
                         cumulative(state, self.store.results(), read_runs(self.cfg.workdir)))
        log.info("run %s finished in %.1fs: %s", self.cfg.mint.run_id, report.wall_s,
                 " ".join(f"{o}={n}" for o, n in self.book.counts.items()) or "nothing minted")
        return report

    def _funnel(self, report: FlowReport, crawl: CrawlReport) -> dict:
        unit_reasons = {r: n for r, n in self.crawl.unit_reasons.items() if r != "infra_error"}
        out = funnel(repos_listed=len(crawl.repos), repos_rejected=crawl.repos_rejected, seen=crawl.examined,
                     rejected=unit_reasons, errors=crawl.errors, accepted=crawl.accepted, results=report.results)
        out["units"]["from_instances_file"] = self.from_file
        cpu = _process_cpu() - self.cpu0 + self.remote_cpu + self.container_cpu
        tokens = crawl.tokens + sum(llm_tokens(r) for r in report.results)
        verified = out["minted"]["verified"]
        out["cost"] = cost_block(report.wall_s, cpu, tokens, verified)
        out["cost"]["cpu_parts"] = {"driver": round(_process_cpu() - self.cpu0, 3), "ray_workers": round(
            self.remote_cpu, 3), "containers": round(self.container_cpu, 3)}
        out.update(run_id=crawl.run_id, started_at=crawl.started_at, first_verified_s=report.first_verified_s,
                   streaming=self.cfg.flow.streaming, workers=self.cfg.workers,
                   executor="ray" if isinstance(self.ex, RayExecutor) else "in-process",
                   skipped=len(report.skipped), api=crawl.api, stopped=crawl.stopped,
                   wall_s=report.wall_s, cpu_s=out["cost"]["cpu_s"], tokens=tokens)
        if len(self.by_node) > 1 or any(self.by_node):
            names = self.nodes.names()
            out["nodes"] = {names.get(n, n[:12]) or "local": dict(c) for n, c in sorted(self.by_node.items())}
        return out


def _process_cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _failed(out: UnitOutcome, why: str) -> UnitOutcome:
    """A candidate whose filter call failed, as an `infra_error` outcome (retried next run)."""
    return infra_outcome(out.key, out.repo, out.kind, out.number, RuntimeError(why), out.created_at, out.updated_at)


def _append_run(workdir: Path, run: dict) -> None:
    import json

    with (Path(workdir) / RUNS).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({k: run.get(k) for k in ("run_id", "started_at", "wall_s", "cpu_s", "tokens",
                                                     "first_verified_s")}
                            | {"verified": run["minted"]["verified"], "accepted": run["units"]["accepted"]}) + "\n")


def flow_ray_config(cfg: PipelineConfig):
    """`cfg.ray`, with a local Ray's logical CPUs raised so that `workers` builds, the plan
    workers and the filter never starve each other (Docker does the real work; CPUs of a local
    Ray are a scheduling count). A cluster's own resources are left alone."""
    ray = cfg.ray
    if ray.address or os.environ.get("RAY_ADDRESS") or ray.num_cpus is not None:
        return ray
    need = (cfg.workers * ray.task_num_cpus + cfg.flow.plan_workers * cfg.flow.plan_num_cpus
            + cfg.flow.filter_workers * 0.25 + cfg.flow.source_tasks * 0.5 + 1)
    return ray.model_copy(update={"num_cpus": max(os.cpu_count() or 1, math.ceil(need))})


def run_flow(cfg: PipelineConfig, *, executor: LocalExecutor | RayExecutor | None = None, mint_fn=None, plan_fn=None,
             on_result: Callable[[InstanceResult], None] | None = None,
             on_start: Callable[[str], None] | None = None,
             on_total: Callable[[int], None] | None = None) -> FlowReport:
    """Run sources -> filter -> plan -> build -> export for `cfg` (see the module docstring).

    `executor` replaces the one `cfg.use_ray` asks for (closed after); `mint_fn` / `plan_fn`
    replace `cfg.mint_function` / `cfg.flow.plan_function`; `on_start(instance_id)` when a build
    is submitted; `on_result(row)` per mint row, after `on_total(n)`: the rows this run expects so
    far (units queued, less those finished earlier; it grows as sources find more).
    Writes `WORKDIR/crawl/` (state, instances.jsonl, rejects.jsonl, report.json),
    `WORKDIR/instances/`, `pool.duckdb`, `dataset/`, `report.json` (the funnel) and appends to
    `runs.jsonl`. Raises store.WorkdirLocked (an OSError) when another driver runs on WORKDIR,
    InstanceInputError when the instance file is unreadable (or, as the only source, has no
    usable row: `instances.require_usable`), duckdb errors when the crawl state
    is locked, TransportUnavailable (PyGithub incompatible).
    """
    if executor is None:
        executor = RayExecutor(cfg.workers, flow_ray_config(cfg)) if cfg.use_ray else LocalExecutor()
    with driver_lock(cfg.workdir), run_log(cfg.workdir):
        try:
            return Flow(cfg, executor, mint_fn=mint_fn, plan_fn=plan_fn, on_result=on_result,
                        on_start=on_start, on_total=on_total).run()
        finally:
            executor.close()
