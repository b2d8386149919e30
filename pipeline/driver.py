"""The pipeline driver: load -> select -> skip finished -> resolve repos -> run -> store -> export.

The driver process is the single writer of the store (`WORKDIR/instances`) and of the pool
(`WORKDIR/pool.duckdb`); workers only return rows. An instance whose repository or base commit
cannot be found becomes an `infra_error` row whose reason starts with `input:` (the outcome set
has no input class; the row is retried on a rerun, e.g. after adding a mirror).

**Resume.** One driver per WORKDIR (`store.driver_lock`). A rerun after a crash (even `kill -9`)
skips finished instances, and before running anything removes, on every Docker node, the
containers the dead run left for the instances it will redo and the images it committed for
them without recording a result (`stages.sweep_leftovers`, by the labels
`swemint.run=<mint.run_id>` and `swemint.instance`; images the pool references are kept). An
instance caught mid-build is therefore built exactly once more. The pool is keyed by
instance id (one row each) and the dataset is re-exported from the store, so a resumed run's
rows equal an uninterrupted run's.

**Reuse and memory.** With `mint.reuse.enabled`, each item gets, just before it is submitted (so
environments verified earlier in the same run count), up to `mint.reuse.max_candidates` pooled
environments of *other* instances of its repository, best first (`EnvPool.find`: same version,
nearest newer commit, any; MEnvAgent's hierarchical reuse). With `mint.memory.enabled`, the driver,
the memory's single writer, distils each finished instance's trajectory into
`WORKDIR/memory/experiences.duckdb` (EnvPilot's trajectory-derived memory); workers only read it.

**Visibility.** Each finished instance is logged (logger `pipeline.driver`, INFO) with its phase
timings and the running counts by outcome, also into `WORKDIR/driver.log`.
"""

from __future__ import annotations

import json
import logging
import math
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from agents.gitrepo import GitTree
from agents.models import OUTCOMES, EnvRecord, Instance, InstanceResult, StepRecord
from agents.reuse import derive_version
from envpool.errors import InstanceInputError
from envpool.pool import EnvPool
from pipeline.config import PipelineConfig
from pipeline.instances import load_and_select
from pipeline.ray_adapter import Runner, make_runner
from pipeline.repos import RepoResolver
from pipeline.stages import (MintFn, MintStage, StageResources, WorkItem, failure_row, instance_language,
                             memory_ecosystem, now_iso, sweep_leftovers)
from pipeline.store import ResultStore, driver_lock, export_dataset

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


def reuse_candidates(pool: EnvPool, item: WorkItem, max_candidates: int) -> list[EnvRecord]:
    """Pooled environments of other instances of the item's repository, best first (at most
    `max_candidates`); [] when the item re-verifies its own environment or on any error (reuse
    is an optimisation, never a reason to fail). A planned item (`swemint run`) brings its
    version and commit time; else they are read from the tree."""
    inst = item.instance
    if max_candidates <= 0 or item.env is not None:
        return []
    try:
        plan = getattr(item, "plan", None)
        if plan is not None:
            version, when = plan.version, plan.commit_time
        else:
            tree = GitTree(item.repo_path, inst.base_commit, instance_id=inst.instance_id)
            version, when = derive_version(inst, tree), tree.commit_time
        matches = pool.find(inst.repo, version, when, exclude=inst.instance_id, limit=max_candidates)
    except Exception as e:  # noqa: BLE001
        log.warning("no reuse candidates for %s: %s", inst.instance_id, e)
        return []
    return [m.record for m in matches]


class MemoryWriter:
    """The driver's side of the experience memory: `learn(res)` distils a finished instance's
    trajectory (`res.trajectory_path`, JSONL of StepRecord) into the DuckDB file at `path`,
    opening it only for the call so that workers can copy it in between. Seeds are loaded on the
    first call. Never raises (a memory problem is logged, the row is kept)."""

    def __init__(self, path: Path):
        self.path = path
        self._seeded = False
        self.learned = 0

    def learn(self, res: InstanceResult, ecosystem: str = "python") -> int:
        """Entries added or reinforced from `res`'s trajectory (0 without one); `ecosystem` is
        the instance's language as the memory names it (`python`, `go`, `javascript`, ...)."""
        traj = Path(res.trajectory_path) if res.trajectory_path else None
        if traj is None or not traj.is_file():
            return 0
        from agents.memory.api import ExperienceMemory, MemoryConfig
        from agents.memory.store import SEED_DIR

        try:
            steps = [StepRecord.model_validate_json(line) for line in traj.read_text().splitlines() if line.strip()]
            mem = ExperienceMemory.open(MemoryConfig(path=self.path, seed_dir=None if self._seeded else SEED_DIR))
            try:
                n = len(mem.learn(steps, ecosystem, res.instance_id))
            finally:
                mem.close()
            self._seeded = True
        except Exception as e:  # noqa: BLE001
            log.warning("could not learn from %s: %s", res.instance_id, e)
            return 0
        self.learned += n
        return n


def write_input_errors(workdir: Path, errors: list[InstanceInputError]) -> Path:
    """Write bad input rows to `workdir/input_errors.jsonl` ({instance_id, error} per line)."""
    path = workdir / "input_errors.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"instance_id": e.instance_id, "error": str(e)}) + "\n" for e in errors),
                    encoding="utf-8")
    return path


@contextmanager
def _run_log(workdir: Path) -> Iterator[None]:
    """Copy this module's INFO lines to `workdir/driver.log` for the block (appending)."""
    handler = logging.FileHandler(workdir / "driver.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    handler.setLevel(logging.INFO)
    old = log.level
    if log.getEffectiveLevel() > logging.INFO:
        log.setLevel(logging.INFO)
    log.addHandler(handler)
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(old)
        handler.close()


def finished_line(res: InstanceResult, done: int, total: int, counts: Counter[str]) -> str:
    """One log line per finished instance: id, outcome, phase timings (seconds), progress and
    counts by outcome, e.g. `acme__x-1 verified total=9.1s setup=4.2s ... | 3/4 | verified=2 ...`."""
    phases = " ".join(f"{k}={v:.1f}s" for k, v in sorted(res.timings.items(), key=lambda kv: kv[0] != "total"))
    tally = " ".join(f"{o}={counts[o]}" for o in OUTCOMES if counts[o])
    return f"{res.instance_id} {res.outcome} {phases or '-'} | {done}/{total} | {tally}"


def _sweep_stale(cfg: PipelineConfig, store: ResultStore, pool: EnvPool, runner: Runner,
                 todo: list[Instance]) -> None:
    """Remove a crashed run's containers and unrecorded images of the instances about to be redone."""
    stale = [i.instance_id for i in todo if store.started(i.instance_id)]
    if not stale:
        return
    keep = [r.image_id for r in (pool.get(i) for i in stale) if r is not None and r.image_id]
    each_node = getattr(runner, "each_node", None)
    try:
        got = each_node(sweep_leftovers, cfg.mint.run_id, stale, keep) if each_node else \
            [sweep_leftovers(cfg.mint.run_id, stale, keep)]
    except Exception as e:  # noqa: BLE001 - no engine here (tests, fake minters): nothing to sweep
        log.warning("could not sweep leftovers of run %s: %s", cfg.mint.run_id, e)
        return
    n = Counter()
    for c in got:
        n.update(c)
    log.info("resume: %d instance(s) to redo had started before; removed %d container(s) and %d image(s) "
             "left by run %s", len(stale), n["containers"], n["images"], cfg.mint.run_id)


def run_mint(cfg: PipelineConfig, *, mint_fn: MintFn | None = None, runner: Runner | None = None,
             on_result: Callable[[InstanceResult], None] | None = None,
             on_plan: Callable[[int, int], None] | None = None) -> MintReport:
    """Mint every selected instance of `cfg.instances` not already finished in `cfg.workdir`.

    `mint_fn` replaces `cfg.mint_function`; `runner` replaces `make_runner(cfg)` (closed after);
    `on_plan(n_to_run, n_skipped)` is called once before running; `on_result(row)` per new row.
    Raises InstanceInputError when the instance file itself is unreadable, ValueError when no
    instance file is configured, store.WorkdirLocked (an OSError) when another driver is
    running on the same WORKDIR.
    """
    if cfg.instances is None:
        raise ValueError("no instance file: pass --instances or set `instances` in the config")
    with driver_lock(cfg.workdir), _run_log(cfg.workdir):
        return _run_mint(cfg, mint_fn=mint_fn, runner=runner, on_result=on_result, on_plan=on_plan)


def _run_mint(cfg: PipelineConfig, *, mint_fn: MintFn | None, runner: Runner | None,
              on_result: Callable[[InstanceResult], None] | None,
              on_plan: Callable[[int, int], None] | None) -> MintReport:
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
    log.info("run %s: %d selected, %d to run, %d already finished, workers=%d, %s", cfg.mint.run_id,
             len(loaded.instances), len(todo), len(report.skipped), cfg.workers, "ray" if cfg.use_ray else "in-process")
    counts: Counter[str] = Counter()

    memory = MemoryWriter(cfg.mint.memory_path()) if cfg.mint.memory.enabled else None
    languages: dict[str, str | None] = {}  # the memory's ecosystem of each submitted instance


    def record(res: InstanceResult) -> None:
        store.write_result(res)
        if memory is not None and (eco := languages.get(res.instance_id)) is not None:
            memory.learn(res, eco)
        if res.env is not None and res.outcome == "verified":
            try:
                pool.add(res.env)
            except Exception as e:  # noqa: BLE001 - the row is stored; the index can be rebuilt
                log.error("could not index environment of %s: %s", res.instance_id, e)
        report.results.append(res)
        counts[res.outcome] += 1
        log.info("%s", finished_line(res, len(report.results), len(todo), counts))
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
                      resources=StageResources(cfg.ray.task_num_cpus, {"docker": 1.0}), registry=cfg.registry)
    reuse = cfg.mint.reuse

    def submit(it: WorkItem) -> None:
        store.mark_running(it.instance)
        if memory is not None:  # C++ -> cpp, a mined row without language -> its detected ecosystem
            languages[it.instance.instance_id] = memory_ecosystem(instance_language(it.instance, it.repo_path))
        if reuse.enabled:
            it.candidates = reuse_candidates(pool, it, reuse.max_candidates)

    runner = runner or make_runner(cfg)
    try:
        if items:
            _sweep_stale(cfg, store, pool, runner, [it.instance for it in items])
            for res in runner.run(stage, items, on_submit=submit):
                record(res)
    finally:
        runner.close()
        report.wall_s = time.monotonic() - t0
    report.dataset = export_dataset(store, loaded.instances)
    log.info("run %s finished in %.1fs: %s", cfg.mint.run_id, report.wall_s,
             " ".join(f"{o}={n}/{t}" for o, (n, t) in report.counts().items() if t) or "nothing selected")
    return report
