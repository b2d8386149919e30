"""The pipeline driver: load -> select -> skip finished -> resolve repos -> run -> store -> export.

The driver process is the single writer of the store (`WORKDIR/instances`) and of the pool
(`WORKDIR/pool.duckdb`); workers only return rows. An instance whose repository or base commit
cannot be found becomes an `infra_error` row whose reason starts with `input:` (the outcome set
has no input class; the row is retried on a rerun, e.g. after adding a mirror).
"""

from __future__ import annotations

import json
import logging
import math
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agents.models import OUTCOMES, Instance, InstanceResult
from envpool.errors import InstanceInputError
from envpool.pool import EnvPool
from pipeline.config import PipelineConfig
from pipeline.instances import load_and_select
from pipeline.ray_adapter import Runner, make_runner
from pipeline.repos import RepoResolver
from pipeline.stages import MintFn, MintStage, StageResources, WorkItem, failure_row, now_iso
from pipeline.store import ResultStore, export_dataset

log = logging.getLogger(__name__)


@dataclass
class MintReport:
    """What one `run_mint` did. `results`: rows produced by this run (completion order);
    `skipped`: rows of instances already finished; `load_errors`: bad input rows (not run);
    `missing_ids`: requested ids not in the file (bad rows are also written to
    WORKDIR/input_errors.jsonl); `wall_s`: seconds; `dataset`: exported paths."""

    selected: list[Instance] = field(default_factory=list)
    results: list[InstanceResult] = field(default_factory=list)
    skipped: list[InstanceResult] = field(default_factory=list)
    load_errors: list[InstanceInputError] = field(default_factory=list)
    missing_ids: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    dataset: dict[str, Path] = field(default_factory=dict)

    def counts(self) -> dict[str, tuple[int, int]]:
        """outcome -> (this run, all selected incl. skipped); every outcome listed."""
        now: Counter[str] = Counter(r.outcome for r in self.results)
        both: Counter[str] = now + Counter(r.outcome for r in self.skipped)
        return {o: (now[o], both[o]) for o in OUTCOMES}

    def durations(self) -> list[float]:
        """Per-instance seconds of this run (`timings["total"]`, rows without it left out)."""
        return [r.timings["total"] for r in self.results if "total" in r.timings]

    def stats(self) -> dict[str, float | None]:
        """median_s, p90_s (seconds per instance) and per_hour (instances/hour of wall time)."""
        d = sorted(self.durations())
        p90 = d[max(0, math.ceil(0.9 * len(d)) - 1)] if d else None  # nearest rank
        return {"median_s": statistics.median(d) if d else None, "p90_s": p90,
                "per_hour": 3600 * len(self.results) / self.wall_s if self.wall_s > 0 and self.results else None}


def _resolve_items(todo: list[Instance], resolver: RepoResolver,
                   on_error: Callable[[Instance, InstanceResult], None]) -> list[WorkItem]:
    items = []
    for inst in todo:
        try:
            items.append(WorkItem(inst, resolver.prepare(inst.repo, inst.base_commit, inst.instance_id)))
        except InstanceInputError as e:
            on_error(inst, failure_row(inst, "infra_error", f"input: {e.message}", now_iso()))
    return items


def write_input_errors(workdir: Path, errors: list[InstanceInputError]) -> Path:
    """Write bad input rows to `workdir/input_errors.jsonl` ({instance_id, error} per line)."""
    path = workdir / "input_errors.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"instance_id": e.instance_id, "error": str(e)}) + "\n" for e in errors),
                    encoding="utf-8")
    return path


def run_mint(cfg: PipelineConfig, *, mint_fn: MintFn | None = None, runner: Runner | None = None,
             on_result: Callable[[InstanceResult], None] | None = None,
             on_plan: Callable[[int, int], None] | None = None) -> MintReport:
    """Mint every selected instance of `cfg.instances` not already finished in `cfg.workdir`.

    `mint_fn` replaces `cfg.mint_function`; `runner` replaces `make_runner(cfg)` (closed after);
    `on_plan(n_to_run, n_skipped)` is called once before running; `on_result(row)` per new row.
    Raises InstanceInputError when the instance file itself is unreadable, ValueError when no
    instance file is configured.
    """
    if cfg.instances is None:
        raise ValueError("no instance file: pass --instances or set `instances` in the config")
    t0 = time.monotonic()
    loaded = load_and_select(cfg.instances, ids=cfg.ids or None, ids_file=cfg.ids_file,
                             language=cfg.language, limit=cfg.limit)
    report = MintReport(selected=loaded.instances, load_errors=loaded.errors, missing_ids=loaded.missing_ids)
    store = ResultStore(cfg.workdir, cfg.retry_outcomes)
    write_input_errors(cfg.workdir, loaded.errors)
    pool = EnvPool(cfg.pool_path)
    todo = []
    for inst in loaded.instances:
        prev = store.read_result(inst.instance_id)
        redo = cfg.reverify and prev is not None and prev.outcome == "verified"
        if prev is not None and not redo and not store.needs_run(inst.instance_id):
            report.skipped.append(prev)
        else:
            todo.append(inst)
    if on_plan:
        on_plan(len(todo), len(report.skipped))

    def record(res: InstanceResult) -> None:
        store.write_result(res)
        if res.env is not None and res.outcome == "verified":
            try:
                pool.add(res.env)
            except Exception as e:  # noqa: BLE001 - the row is stored; the index can be rebuilt
                log.error("could not index environment of %s: %s", res.instance_id, e)
        report.results.append(res)
        if on_result:
            on_result(res)

    def record_input_error(inst: Instance, res: InstanceResult) -> None:
        store.mark_running(inst)
        record(res)

    resolver = RepoResolver(cfg.mirrors, cfg.repos, cache_dir=cfg.repos.cache_dir or cfg.workdir / "repos")
    items = _resolve_items(todo, resolver, record_input_error)
    if cfg.reverify:
        for it in items:
            it.env = pool.get(it.instance.instance_id)
    stage = MintStage(cfg.mint, mint_fn=mint_fn, mint_function=cfg.mint_function,
                      resources=StageResources(cfg.ray.task_num_cpus, {"docker": 1.0}))
    runner = runner or make_runner(cfg)
    try:
        if items:
            for res in runner.run(stage, items, on_submit=lambda it: store.mark_running(it.instance)):
                record(res)
    finally:
        runner.close()
        report.wall_s = time.monotonic() - t0
    report.dataset = export_dataset(store, loaded.instances)
    return report
