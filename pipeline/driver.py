"""The pipeline driver: load -> select -> skip finished -> resolve repos -> run -> store -> export.

One driver for both commands: `MintBook` owns the per-instance side of a run (what is finished,
starting an item, recording its row into the store, the pool and the memory, low disk, abandoned
items, the disk budgets, resume's sweep, the export); `run_mint` (`swemint mint`) feeds it an
instance file through a `Runner`, `pipeline.streaming.Flow` (`swemint run`) feeds it the units its
sources accept, planned first.

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
from typing import Any
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from agents.models import OUTCOMES, EnvRecord, Instance, InstanceResult, StepRecord
from agents.reuse import reuse_candidates as agent_reuse_candidates
from envpool.errors import InstanceInputError
from envpool.hostfs import LOW_DISK, LowDisk, check_free_disk
from envpool.pool import EnvPool
from envpool.quoting import LogFormatter
from pipeline.budget import BudgetWatch
from pipeline.pipeline_config import PipelineConfig
from pipeline.instances import load_and_select, require_usable
from pipeline.ray_adapter import ABANDONED, Runner, make_runner
from pipeline.repos import RepoResolver
from pipeline.stages import (DEFAULT_MINT_FUNCTION, MintFn, MintStage, StageResources, WorkItem, failure_row, now_iso,
                             sweep_leftovers)
from pipeline.export import export_dataset
from pipeline.store import ResultStore, atomic_write, driver_lock, quarantine

log = logging.getLogger(__name__)

EachNode = Callable[..., list[Any]]
"""`fn, *args -> [fn(*args) on each Docker node]` (an executor's or runner's `each_node`)."""


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
    first_verified_s: float | None = None
    """Seconds from the start to the first verified row of this run (None: none)."""
    dataset: dict[str, Path] = field(default_factory=dict)
    export_notes: list[str] = field(default_factory=list)
    """What the export found that a person must know (local image tags, images without the status
    tool: `pipeline.export.export_dataset`'s notes)."""

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
    """Pooled environments for the item, best first (at most `max_candidates`): other instances
    of its repository only (same version, nearest newer commit, any; `agents.reuse.reuse_candidates`);
    [] when the item re-verifies its own environment or on any error (reuse is an optimisation,
    never a reason to fail). A planned item (`swemint run`) brings its version and commit time:
    the tree is not read again."""
    if item.env is not None:
        return []
    plan = getattr(item, "plan", None)
    known = {} if plan is None else {"version": plan.version, "commit_time": plan.commit_time}
    return agent_reuse_candidates(pool, item.instance, item.repo_path, max_candidates, **known)


LOCK_WAIT_S = 5.0
"""How long `MemoryWriter.learn` waits for another process's lock on the knowledge store (a
worker copying it, `swemint memory list/show`: each holds it read-only for milliseconds)."""


def lock_conflict(e: BaseException) -> bool:
    """Whether DuckDB error `e` is another process's lock on the file (not a torn file)."""
    return isinstance(e, duckdb.IOException) and "lock" in str(e).lower()


class MemoryWriter:
    """The driver's side of the experience memory: `learn(res)` distils a finished instance's
    trajectory (`res.trajectory_path`, JSONL of StepRecord) into the DuckDB file at `path`,
    opening it only for the call so that workers can copy it in between. Seeds are loaded on the
    first call. Never raises (a memory problem is logged, the row is kept; a file DuckDB cannot
    read is quarantined and the memory starts again from the seeds; a file another process holds
    -- a worker's copy, `swemint memory list` -- is waited for up to `LOCK_WAIT_S`, then this
    row's lessons are skipped, never the file quarantined)."""

    def __init__(self, path: Path):
        self.path = path
        self._seeded = False
        self.learned = 0

    def learn(self, res: InstanceResult, ecosystem: str | None = None) -> int:
        """Entries added or reinforced from `res`'s trajectory (0 without one), under the row's
        language as the memory names it (`python`, `go`, `javascript`, `cpp`, ...): `ecosystem`,
        else `res.language` (the detected one for a row without a language), else python."""
        ecosystem = ecosystem or res.language or "python"
        traj = Path(res.trajectory_path) if res.trajectory_path else None
        if traj is None or not traj.is_file():
            return 0
        from agents.memory.api import ExperienceMemory, MemoryConfig
        from agents.memory.experience_store import SEED_DIR

        try:
            steps = [StepRecord.model_validate_json(line) for line in traj.read_text().splitlines() if line.strip()]
            deadline = time.monotonic() + LOCK_WAIT_S
            while True:  # a reader's lock (a worker's copy, `swemint memory list`) is brief: wait for it
                try:
                    mem = ExperienceMemory.open(MemoryConfig(path=self.path,
                                                             seed_dir=None if self._seeded else SEED_DIR))
                    break
                except duckdb.Error as e:
                    if not lock_conflict(e) or time.monotonic() >= deadline:
                        raise
                    time.sleep(0.05)
            try:
                n = len(mem.learn(steps, ecosystem, res.instance_id, repo=res.repo))
            finally:
                mem.close()
            self._seeded = True
        except Exception as e:  # noqa: BLE001
            log.warning("could not learn from %s: %s", res.instance_id, e)
            if isinstance(e, duckdb.Error) and not lock_conflict(e) and self.path.exists():  # unreadable: set aside
                quarantine(self.path, f"{type(e).__name__}: {e}")
                self._seeded = False
            return 0
        self.learned += n
        return n


def write_input_errors(workdir: Path, errors: list[InstanceInputError]) -> Path:
    """Write bad input rows to `workdir/input_errors.jsonl` ({instance_id, error} per line)."""
    path = workdir / "input_errors.jsonl"
    atomic_write(path, "".join(json.dumps({"instance_id": e.instance_id, "error": str(e)}) + "\n" for e in errors))
    return path


def open_pool(path: Path, store: ResultStore) -> EnvPool:
    """The pool the driver writes. A file DuckDB cannot open or read (torn, or not a database)
    is quarantined (`store.quarantine`, with its `.wal`) and a new pool is built from the
    environments of the stored `verified` rows, so nothing verified is lost."""
    try:
        return EnvPool(path)
    except duckdb.Error as e:
        quarantine(path, f"{type(e).__name__}: {e}")
        wal = path.with_name(path.name + ".wal")
        if wal.exists():
            quarantine(wal, "the write-ahead log of a quarantined pool")
    pool = EnvPool(path)
    envs = [r.env for r in store.results() if r.outcome == "verified" and r.env is not None]
    for env in envs:
        pool.add(env)
    log.warning("pool %s rebuilt from %d verified row(s) of the store", path, len(envs))
    return pool


@contextmanager
def run_log(workdir: Path) -> Iterator[None]:
    """Copy the pipeline's INFO lines (this module's, the store's quarantines, ...) to
    `workdir/driver.log` for the block (appending)."""
    handler = logging.FileHandler(workdir / "driver.log", encoding="utf-8")
    handler.setFormatter(LogFormatter("%(asctime)s %(levelname)s %(message)s"))
    handler.setLevel(logging.INFO)
    root = logging.getLogger("pipeline")
    old = root.level
    if root.getEffectiveLevel() > logging.INFO:
        root.setLevel(logging.INFO)
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(old)
        handler.close()


def finished_line(res: InstanceResult, done: int, total: int, counts: Counter[str]) -> str:
    """One log line per finished instance: id, outcome, phase timings (seconds), progress and
    counts by outcome, e.g. `acme__x-1 verified total=9.1s setup=4.2s ... | 3/4 | verified=2 ...`."""
    phases = " ".join(f"{k}={v:.1f}s" for k, v in sorted(res.timings.items(), key=lambda kv: kv[0] != "total"))
    tally = " ".join(f"{o}={counts[o]}" for o in OUTCOMES if counts[o])
    return f"{res.instance_id} {res.outcome} {phases or '-'} | {done}/{total} | {tally}"


def note_use(pool: EnvPool, res: InstanceResult) -> None:
    """A row built from another instance's pooled environment (`reused_from`) is a use of it:
    `EnvPool.touch` (the budget evicts least recently used environments first). Never raises."""
    if res.reused_from:
        try:
            pool.touch(res.reused_from)
        except Exception as e:  # noqa: BLE001 - only the eviction order suffers
            log.warning("could not note the use of %s: %s", res.reused_from, e)


def images_in_use(item: WorkItem) -> set[str]:
    """Image ids a build of `item` may start from (its own pooled environment, its reuse
    candidates): never evicted while it is in flight."""
    envs = [*(item.candidates or []), *([item.env] if item.env is not None else [])]
    return {e.image_id for e in envs if e.image_id}


def record_config(cfg: PipelineConfig) -> None:
    """WORKDIR/mint_config.json: the effective configuration of the last run (the dataset card
    shows it); paths as strings, no secrets (the config holds only names of secret variables)."""
    from pipeline.export import CONFIG_FILE
    from pipeline.store import atomic_write

    atomic_write(cfg.workdir / CONFIG_FILE, cfg.model_dump_json(indent=1))


def warn_without_userns(cfg: PipelineConfig) -> None:
    """At the start of a real run: a one-line warning when the local Docker engine does not remap
    user namespaces (root in build containers is root on the host) and how to switch it on; silent
    when no local engine answers (a cluster's workers warn on their own engines)."""
    try:
        from envpool.docker_sandbox import DockerSandboxFactory

        DockerSandboxFactory(run_id=cfg.mint.run_id).host_mount_owner()
    except Exception as e:  # noqa: BLE001 - no engine here, or its ids unreadable: the workers say
        log.debug("engine isolation not checked: %s", e)


class MintBook:
    """The per-instance side of one driver run, shared by `run_mint` and `pipeline.streaming.Flow`:
    the result store, the pool (`open_pool`), the memory's writer, the disk budgets and what is in
    flight. The caller schedules (a `Runner` over an instance file, or the streaming chain); the
    book decides what is finished, starts items (`start`), records rows (`record`), reacts to a
    row (`after`: low disk stops new work, an abandoned item's containers go), sweeps a crashed
    run's leftovers (`sweep_stale`) and exports (`export`). `on_result(row)` per recorded row,
    `on_start(instance_id)` per started item, `on_total(n)` before each `on_result` with the rows
    this run expects so far (a progress display's total). Raises what `open_pool` raises, and store.NewerRow
    when a stored row was written by a newer swemint (checked first: nothing starts)."""

    def __init__(self, cfg: PipelineConfig, report: MintReport, *,
                 on_result: Callable[[InstanceResult], None] | None = None,
                 on_start: Callable[[str], None] | None = None,
                 on_total: Callable[[int], None] | None = None):
        self.cfg, self.report, self.on_result, self.on_start = cfg, report, on_result, on_start
        self.on_total = on_total
        self.t0 = time.monotonic()
        self.store = ResultStore(cfg.workdir, cfg.retry_outcomes)
        self.store.results()  # a row a newer swemint wrote: NewerRow now, before any work (store.py)
        self.pool = open_pool(cfg.pool_path, self.store)
        self.memory = MemoryWriter(cfg.mint.memory_path()) if cfg.mint.memory.enabled and cfg.mint.memory.learn \
            else None
        self.budget = BudgetWatch(cfg)
        self.counts: Counter[str] = Counter()
        self.in_use: dict[str, set[str]] = {}
        """Instance in flight -> image ids its build may start from (never evicted meanwhile)."""
        self.stop: str | None = None
        """Why no new work starts (low disk, here or on a worker), once it is so."""

    def finished(self, inst: Instance, reverify: bool = False) -> InstanceResult | None:
        """The stored row of `inst` when it needs no run (`ResultStore.needs_run`), else None;
        with `reverify` a verified row is redone."""
        prev = self.store.read_result(inst.instance_id)
        if prev is None or self.store.needs_run(inst.instance_id) or (reverify and prev.outcome == "verified"):
            return None
        return prev

    def start(self, item: WorkItem, instance: Instance | None = None) -> None:
        """Just before `item` is handed to the executor: marked running (as `instance`, default
        the item's), its reuse candidates picked (`mint.reuse`), their images held."""
        self.store.mark_running(instance or item.instance)
        if self.cfg.mint.reuse.enabled:
            item.candidates = reuse_candidates(self.pool, item, self.cfg.mint.reuse.max_candidates)
        self.in_use[item.instance.instance_id] = images_in_use(item)
        if self.on_start:
            self.on_start(item.instance.instance_id)

    def record(self, res: InstanceResult, total: int) -> None:
        """Store `res`, teach the memory, pool a verified environment, note a reuse, log one
        line (`finished_line`, `total`: rows this run expects) and call `on_result`."""
        self.store.write_result(res)
        if self.memory is not None:  # under the row's language (the minter's `res.language`)
            self.memory.learn(res)
        if res.env is not None and res.outcome == "verified":
            try:
                self.pool.add(res.env)
            except Exception as e:  # noqa: BLE001 - the row is stored; the index can be rebuilt
                log.error("could not index environment of %s: %s", res.instance_id, e)
        note_use(self.pool, res)
        self.in_use.pop(res.instance_id, None)
        self.report.results.append(res)
        self.counts[res.outcome] += 1
        if res.outcome == "verified" and self.report.first_verified_s is None:
            self.report.first_verified_s = round(time.monotonic() - self.t0, 3)
        log.info("%s", finished_line(res, len(self.report.results), total, self.counts))
        if self.on_total:
            self.on_total(total)
        if self.on_result:
            self.on_result(res)

    def record_unstarted(self, inst: Instance, res: InstanceResult, total: int) -> None:
        """`record` of a row made before `inst` started (input errors, held by low disk)."""
        self.store.mark_running(inst)
        self.record(res, total)

    def disk_ok(self) -> bool:
        """False once the disk runs low (checked before each start; or a worker said so)."""
        if self.stop is None:
            try:
                check_free_disk([self.cfg.workdir], self.cfg.mint.limits.min_free_disk_bytes)
            except LowDisk as e:
                self.stop = e.message
                log.error("%s", e.message)
        return self.stop is None

    def after(self, res: InstanceResult, each_node: EachNode | None) -> None:
        """After a build's row: a worker's low disk stops new work; the containers of an item
        the executor abandoned at its deadline go at once; the budgets are applied when due."""
        if res.outcome == "infra_error" and res.reason.startswith(LOW_DISK) and self.stop is None:
            self.stop = res.reason
            log.error("%s (reported for %s)", res.reason, res.instance_id)
        if res.outcome == "timeout" and ABANDONED in res.reason:
            self.remove_abandoned(each_node, res.instance_id)
        if self.budget.due():
            self.budget.run(self.pool, each_node, self.store, set().union(*self.in_use.values()))

    def finish_budget(self, each_node: EachNode | None) -> None:
        """The budgets once more at the end of a run that applies them."""
        if self.budget.active:
            self.budget.run(self.pool, each_node, self.store)

    def _each_node(self, each_node: EachNode | None, instance_ids: list[str], keep: list[str]) -> list[dict]:
        args = (self.cfg.mint.run_id, instance_ids, keep)
        return each_node(sweep_leftovers, *args) if each_node else [sweep_leftovers(*args)]

    def sweep_stale(self, each_node: EachNode | None, todo: list[Instance]) -> None:
        """Remove a crashed run's containers and unrecorded images of the instances about to be
        redone (those the store saw start), on every node (`each_node`, else this host)."""
        stale = [i.instance_id for i in todo if self.store.started(i.instance_id)]
        if not stale:
            return
        keep = [r.image_id for r in (self.pool.get(i) for i in stale) if r is not None and r.image_id]
        try:
            got = self._each_node(each_node, stale, keep)
        except Exception as e:  # noqa: BLE001 - no engine here (tests, fake minters): nothing to sweep
            log.warning("could not sweep leftovers of run %s: %s", self.cfg.mint.run_id, e)
            return
        n: Counter[str] = Counter()
        for c in got:
            n.update(c)
        log.info("resume: %d instance(s) to redo had started before; removed %d container(s) and %d image(s) "
                 "left by run %s", len(stale), n["containers"], n["images"], self.cfg.mint.run_id)

    def remove_abandoned(self, each_node: EachNode | None, instance_id: str) -> None:
        """Remove, at once and on every Docker node, the containers (and unpooled images) of an
        instance the executor abandoned at its deadline: a cancelled Ray task or an abandoned
        thread leaves its container running otherwise."""
        rec = self.pool.get(instance_id)
        keep = [rec.image_id] if rec is not None and rec.image_id else []
        try:
            got = self._each_node(each_node, [instance_id], keep)
        except Exception as e:  # noqa: BLE001 - no engine here (fake minters): nothing to remove
            log.warning("could not remove the containers of abandoned %s: %s", instance_id, e)
            return
        n = sum(c.get("containers", 0) for c in got)
        log.info("%s: abandoned at its deadline; removed %d container(s)", instance_id, n)

    def export(self, instances: list[Instance] = ()) -> None:  # type: ignore[assignment]
        """Record the effective configuration and export the dataset from the store (all its
        rows; `instances` add input rows the store lacks) into `report.dataset`, logging the export's notes."""
        record_config(self.cfg)
        self.report.dataset = export_dataset(self.store, instances, mirrors=self.cfg.mirrors,
                                             notes=self.report.export_notes)
        for note in self.report.export_notes:
            log.info("export: %s", note)


def run_mint(cfg: PipelineConfig, *, mint_fn: MintFn | None = None, runner: Runner | None = None,
             on_result: Callable[[InstanceResult], None] | None = None,
             on_plan: Callable[[int, int], None] | None = None,
             on_start: Callable[[str], None] | None = None) -> MintReport:
    """Mint every selected instance of `cfg.instances` not already finished in `cfg.workdir`.

    `mint_fn` replaces `cfg.mint_function`; `runner` replaces `make_runner(cfg)` (closed after);
    `on_plan(n_to_run, n_skipped)` is called once before running; `on_start(instance_id)` when an
    instance is handed to the runner (what is in flight: started, no row yet); `on_result(row)`
    per new row.
    Raises InstanceInputError when the instance file itself is unreadable or has no usable row
    (`instances.require_usable`: then no dataset is written), ValueError when no
    instance file is configured, store.WorkdirLocked (an OSError) when another driver is
    running on the same WORKDIR, store.NewerRow (a ValueError) when a stored row was written by a
    newer swemint (before any instance starts; nothing is moved).
    """
    if cfg.instances is None:
        raise ValueError("no instance file: pass --instances or set `instances` in the config")
    with driver_lock(cfg.workdir), run_log(cfg.workdir):
        return _run_mint(cfg, mint_fn=mint_fn, runner=runner, on_result=on_result, on_plan=on_plan,
                         on_start=on_start)


def _run_mint(cfg: PipelineConfig, *, mint_fn: MintFn | None, runner: Runner | None,
              on_result: Callable[[InstanceResult], None] | None,
              on_plan: Callable[[int, int], None] | None,
              on_start: Callable[[str], None] | None = None) -> MintReport:
    t0 = time.monotonic()
    loaded = load_and_select(cfg.instances, ids=cfg.ids or None, ids_file=cfg.ids_file,
                             language=cfg.language, limit=cfg.limit)
    report = MintReport(selected=loaded.instances, load_errors=loaded.errors, missing_ids=loaded.missing_ids)
    errors_file = write_input_errors(cfg.workdir, loaded.errors)
    require_usable(loaded, cfg.instances, errors_file)  # all rows bad: no empty dataset, exit 2
    book = MintBook(cfg, report, on_result=on_result, on_start=on_start)
    todo = []
    for inst in loaded.instances:
        prev = book.finished(inst, reverify=cfg.reverify)
        if prev is not None:
            report.skipped.append(prev)
        else:
            todo.append(inst)
    if on_plan:
        on_plan(len(todo), len(report.skipped))
    log.info("run %s: %d selected, %d to run, %d already finished, workers=%d, %s", cfg.mint.run_id,
             len(loaded.instances), len(todo), len(report.skipped), cfg.workers, "ray" if cfg.use_ray else "in-process")

    resolver = RepoResolver(cfg.mirrors, cfg.repos, cache_dir=cfg.repos.cache_dir or cfg.workdir / "repos")
    items = _resolve_items(todo, resolver, lambda inst, res: book.record_unstarted(inst, res, len(todo)))
    if cfg.reverify:
        for it in items:
            it.env = book.pool.get(it.instance.instance_id)
    stage = MintStage(cfg.mint, mint_fn=mint_fn, mint_function=cfg.mint_function,
                      resources=StageResources(cfg.ray.task_num_cpus, {"docker": 1.0}), registry=cfg.registry,
                      registry_auth=(cfg.registry_auth.username_env, cfg.registry_auth.password_env)
                      if cfg.registry_auth else None, slots=cfg.workers)
    held: list[WorkItem] = []

    def feed() -> Iterator[WorkItem]:
        """The items, until the disk runs low (here, or on a worker: a row says so)."""
        for it in items:
            if book.disk_ok():
                yield it
            else:
                held.append(it)

    if items and mint_fn is None and cfg.mint_function == DEFAULT_MINT_FUNCTION:
        warn_without_userns(cfg)
    runner = runner or make_runner(cfg)
    each_node = getattr(runner, "each_node", None)
    if (locality := getattr(runner, "locality", None)) is not None:
        locality.seed(book.pool.list())  # where earlier runs verified each repository (a hint)
    try:
        if items:
            book.sweep_stale(each_node, [it.instance for it in items])
            for res in runner.run(stage, feed(), on_submit=book.start):
                book.record(res, len(todo))
                book.after(res, each_node)
        for it in held:  # a row each: retried by the next run (infra_error), nothing lost
            book.record_unstarted(it.instance, failure_row(it.instance, "infra_error", f"not started: {book.stop}",
                                                           now_iso()), len(todo))
        if items:
            book.finish_budget(each_node)
    finally:
        runner.close()
        report.wall_s = time.monotonic() - t0
    book.export(loaded.instances)
    log.info("run %s finished in %.1fs: %s", cfg.mint.run_id, report.wall_s,
             " ".join(f"{o}={n}/{t}" for o, (n, t) in report.counts().items() if t) or "nothing selected")
    return report
