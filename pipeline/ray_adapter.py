"""Runners: where stages run. Ray lives here only; stages are plain classes (`pipeline.stages`).

Two layers:

- **Executors** run single calls and report each as a `Done` (with `Measured`: value or error,
  wall and CPU seconds): `submit(stage, item)` runs `stage.process(item)` with the stage's
  declared resources, `start_actor(cls, ...)` / `call(actor, method, ...)` run methods of a
  stateful object serially (a GitHub client holding one token). `LocalExecutor`: threads in
  this process (`--no-ray`, tests); `RayExecutor`: one Ray task per call (tasks, not actors,
  for stages: `ray.cancel(force=True)` can kill a hung task's worker process) and one Ray actor
  per stateful object (`max_concurrency=1`: its calls run one after another). A call that
  raises, or whose worker dies, is a `Done` with `error`; one past its `timeout` (seconds since
  submission) is reported `timed_out` and its late result dropped (a Ray task is cancelled; a
  Python thread cannot be killed: it finishes or dies with the process). The scheduling
  policy (queues, bounds, what runs next) is the caller's: `pipeline.flow` streams the chain
  sources -> filter -> plan -> build over an executor.
- **Runners** map one stage over work items for `swemint mint` (`Runner.run`), yielding one row
  per item in completion order with at most `workers` in flight (backpressure: items are
  submitted as others finish); an error is an `infra_error` row, a timeout a `timeout` row, so
  the job never fails because of one item (cf. ray-project/ray #59194, #45661).

Both offer `each_node(fn, *args)`: run a small function once per Docker host (the rerun's sweep
of a crashed run's containers). The Ray executor also exports driver-side counters of the build
stage through `ray.util.metrics` (see `RayMetrics`), which land on the node's Prometheus endpoint
and in the dashboard's metrics view.
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agents.models import InstanceResult
from envpool.errors import InfraError
from pipeline.config import PipelineConfig, RayConfig
from pipeline.raysec import assert_loopback_only, ensure_local_token, force_loopback
from pipeline.stages import Measured, Stage, WorkItem, describe_exception, failure_row, now_iso, run_measured

log = logging.getLogger(__name__)
OnSubmit = Callable[[WorkItem], None]
BUILD_STAGE = "mint"
"""Name of the stage whose items are build-slot instances (`pipeline.stages.MintStage`)."""


@dataclass
class Done:
    """One finished (or abandoned) call: its `key` (from `submit` / `call`), the caller's `tag`,
    the `result` (`Measured`: value or error, seconds), and `timed_out` (no result in time)."""

    key: int
    tag: Any
    result: Measured
    timed_out: bool = False


class Executor(Protocol):
    """Runs calls and reports them as `Done` (see the module docstring)."""

    def submit(self, stage: Any, item: Any, *, tag: Any = None, timeout: float | None = None) -> int:
        """Run `stage.process(item)` somewhere; returns the call's key."""
        ...

    def start_actor(self, cls: type, *args: Any, **kwargs: Any) -> Any:
        """Build `cls(*args, **kwargs)` where it will live; returns a handle for `call`."""
        ...

    def call(self, actor: Any, method: str, *args: Any, tag: Any = None, timeout: float | None = None) -> int:
        """Run `actor.method(*args)` after the actor's earlier calls; returns the call's key."""
        ...

    def poll(self, timeout: float) -> list[Done]:
        """Calls finished (or timed out) since the last poll, waiting up to `timeout` seconds for one."""
        ...

    def in_flight(self) -> int:
        """Calls submitted and not yet reported."""
        ...

    def each_node(self, fn: Callable[..., Any], *args: Any) -> list[Any]:
        """`fn(*args)` once per Docker node."""
        ...

    def close(self) -> None:
        """Release what the executor started."""
        ...


class _Book:
    """Calls in flight: key -> (tag, deadline or None); shared by both executors."""

    def __init__(self) -> None:
        self.keys = itertools.count()
        self.pending: dict[Any, tuple[int, Any, float | None]] = {}

    def add(self, handle: Any, tag: Any, timeout: float | None) -> int:
        key = next(self.keys)
        self.pending[handle] = (key, tag, None if timeout is None else time.monotonic() + timeout)
        return key

    def wait_s(self, timeout: float) -> float:
        deadlines = [d for _, _, d in self.pending.values() if d is not None]
        return max(0.01, min([timeout, *(d - time.monotonic() for d in deadlines)]))

    def expired(self) -> list[tuple[Any, Done]]:
        now, out = time.monotonic(), []
        for handle, (key, tag, deadline) in list(self.pending.items()):
            if deadline is not None and now > deadline:
                del self.pending[handle]
                out.append((handle, Done(key, tag, Measured(error="no result in time"), timed_out=True)))
        return out


def _call_method(obj: Any, method: str, args: tuple) -> Measured:
    """Body of an actor call: `getattr(obj, method)(*args)`, measured like a stage call."""

    class _Call:
        name = f"{type(obj).__name__}.{method}"

        @staticmethod
        def process(_: Any) -> Any:
            return getattr(obj, method)(*args)

    return run_measured(_Call(), None)


class LocalExecutor:
    """Threads in this process: one per stage call, one per actor (its calls in order)."""

    def __init__(self) -> None:
        self._book = _Book()
        self._done: queue.Queue = queue.Queue()

    def submit(self, stage: Any, item: Any, *, tag: Any = None, timeout: float | None = None) -> int:
        """See `Executor.submit`."""
        handle = object()
        key = self._book.add(handle, tag, timeout)
        threading.Thread(target=lambda: self._done.put((handle, run_measured(stage, item))), daemon=True,
                         name=f"swemint-{getattr(stage, 'name', 'stage')}-{key}").start()
        return key

    def start_actor(self, cls: type, *args: Any, **kwargs: Any) -> Any:
        """See `Executor.start_actor` (built here, now: its errors raise)."""
        inbox: queue.Queue = queue.Queue()
        obj = cls(*args, **kwargs)

        def serve() -> None:
            while (job := inbox.get()) is not None:
                handle, method, margs = job
                self._done.put((handle, _call_method(obj, method, margs)))

        threading.Thread(target=serve, daemon=True, name=f"swemint-actor-{cls.__name__}").start()
        return (obj, inbox)

    def call(self, actor: Any, method: str, *args: Any, tag: Any = None, timeout: float | None = None) -> int:
        """See `Executor.call`."""
        handle = object()
        key = self._book.add(handle, tag, timeout)
        actor[1].put((handle, method, args))
        return key

    def poll(self, timeout: float) -> list[Done]:
        """See `Executor.poll`."""
        out: list[Done] = []
        try:
            first = self._done.get(timeout=self._book.wait_s(timeout)) if self._book.pending else None
        except queue.Empty:
            first = None
        got = [first] if first is not None else []
        while True:
            try:
                got.append(self._done.get_nowait())
            except queue.Empty:
                break
        for handle, measured in got:
            entry = self._book.pending.pop(handle, None)
            if entry is not None:  # else: a late result of an abandoned call
                out.append(Done(entry[0], entry[1], measured))
        out.extend(d for _, d in self._book.expired())
        return out

    def in_flight(self) -> int:
        """See `Executor.in_flight`."""
        return len(self._book.pending)

    def each_node(self, fn: Callable[..., Any], *args: Any) -> list[Any]:
        """`[fn(*args)]`: this process is the only node."""
        return [fn(*args)]

    def close(self) -> None:
        """Nothing to release (threads are daemons)."""


class Runner(Protocol):
    """Runs a stage over items; yields exactly one InstanceResult per item, in completion order."""

    def run(self, stage: Stage, items: Iterable[WorkItem],
            on_submit: OnSubmit | None = None) -> Iterator[InstanceResult]:
        """`on_submit(item)` is called in the driver just before an item starts."""
        ...

    def close(self) -> None:
        """Release what the runner started (a local Ray)."""
        ...


def _timeout_row(item: WorkItem, timeout: float, started: str) -> InstanceResult:
    return failure_row(item.instance, "timeout", f"no result after {timeout:.0f} s; abandoned by the runner",
                       started, timeout)




def init_ray(cfg: RayConfig, workers: int) -> bool:
    """Connect to Ray; returns True when this call started a local Ray (then `ray.shutdown` it).

    Joins `cfg.address` or `$RAY_ADDRESS` (a job on a cluster) when set, with the cluster's own
    auth settings from the environment. Else starts a local Ray with `cfg.num_cpus`, `workers`
    custom `docker` resources, no dashboard and usage stats off, always with token auth (a
    generated token, `pipeline.raysec.ensure_local_token`); with `cfg.bind_localhost` every
    socket is bound to 127.0.0.1 and that is checked on the listening sockets after start:
    InfraError (and Ray shut down) when one listens beyond loopback.
    """
    import ray

    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    address = cfg.address or os.environ.get("RAY_ADDRESS")
    if address:
        if os.environ.get("RAY_AUTH_MODE", "").lower() == "disabled":
            log.warning("joining Ray at %s with RAY_AUTH_MODE=disabled: anyone reaching the cluster "
                        "can run code on it", address)
        ray.init(address=address, log_to_driver=cfg.log_to_driver)
        return False
    ensure_local_token(Path(cfg.temp_dir) if cfg.temp_dir else None)
    if cfg.bind_localhost:
        force_loopback()
    kwargs: dict = dict(num_cpus=cfg.num_cpus or os.cpu_count(), resources={"docker": float(workers)},
                        include_dashboard=cfg.include_dashboard, log_to_driver=cfg.log_to_driver,
                        configure_logging=False)
    if cfg.bind_localhost:
        kwargs["_node_ip_address"] = "127.0.0.1"
    if cfg.object_store_memory:
        kwargs["object_store_memory"] = cfg.object_store_memory
    if cfg.temp_dir:
        kwargs["_temp_dir"] = str(cfg.temp_dir)
    ray.init(**kwargs)
    if cfg.bind_localhost:
        try:
            assert_loopback_only()
        except InfraError:
            ray.shutdown()
            raise
    return True



def _ray_measured(stage: Any, item: Any) -> Measured:
    """Body of one Ray task (module level so workers import it by reference)."""
    return run_measured(stage, item)


def _ray_call(fn: Callable[..., Any], args: tuple) -> Any:
    """Body of an `each_node` task."""
    return fn(*args)


class _ActorHost:
    """The Ray actor around a plain object: `call(method, args)` -> `Measured`."""

    def __init__(self, cls: type, args: tuple, kwargs: dict):
        self.obj = cls(*args, **kwargs)

    def call(self, method: str, args: tuple) -> Measured:
        return _call_method(self.obj, method, args)


PHASE_BOUNDARIES_S = [1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200]
"""Histogram bucket bounds (seconds) of `swemint_phase_seconds`."""


class RayMetrics:
    """Driver-side metrics via `ray.util.metrics` (Ray prefixes names with `ray_` on export):

    - `swemint_instances_submitted` (Counter): items handed to Ray.
    - `swemint_instances_finished{outcome}` (Counter): rows received, by outcome.
    - `swemint_instances_in_flight` (Gauge): submitted, no row yet.
    - `swemint_phase_seconds{phase}` (Histogram, seconds): each phase of `InstanceResult.timings`
      (`setup`, `before`, `after`, `total`, ...).

    Metrics are reported to the node's metrics agent about every 10 s; a driver that exits
    right after its last row may not have flushed the final increments.
    """

    def __init__(self) -> None:
        from ray.util import metrics

        self.submitted = metrics.Counter("swemint_instances_submitted", "Instances handed to Ray tasks")
        self.finished = metrics.Counter("swemint_instances_finished", "Instances finished, by outcome",
                                        tag_keys=("outcome",))
        self.in_flight = metrics.Gauge("swemint_instances_in_flight", "Instances submitted without a row yet")
        self.seconds = metrics.Histogram("swemint_phase_seconds", "Seconds per phase of one instance",
                                         boundaries=PHASE_BOUNDARIES_S, tag_keys=("phase",))

    def submit(self, in_flight: int) -> None:
        """One item submitted; `in_flight` items now without a row."""
        self.submitted.inc()
        self.in_flight.set(in_flight)

    def finish(self, res: InstanceResult, in_flight: int) -> None:
        """One row received."""
        self.finished.inc(tags={"outcome": res.outcome})
        for phase, secs in res.timings.items():
            if isinstance(secs, (int, float)) and secs >= 0:
                self.seconds.observe(float(secs), tags={"phase": phase})
        self.in_flight.set(in_flight)


class RayExecutor:
    """Ray tasks and actors (see the module docstring). `workers`: the `docker` slots a local Ray
    gets; `ray_config` starts or joins Ray on first use unless Ray is already initialised."""

    def __init__(self, workers: int = 1, ray_config: RayConfig | None = None):
        self.workers = max(1, workers)
        self.ray_config = ray_config or RayConfig()
        self._started = False
        self._metrics: RayMetrics | None = None
        self._book = _Book()
        self._remote: dict[str, Any] = {}
        self._stage_refs: dict[int, Any] = {}
        self._actors: list[Any] = []

    def _ensure_ray(self) -> None:
        self._started = init_ray(self.ray_config, self.workers) or self._started

    def _meter(self) -> RayMetrics | None:
        if self._metrics is None:
            try:
                self._metrics = RayMetrics()
            except Exception as e:  # noqa: BLE001 - metrics are optional; never fail the batch
                log.warning("Ray metrics unavailable: %s", e)
        return self._metrics

    def each_node(self, fn: Callable[..., Any], *args: Any) -> list[Any]:
        """Run `fn(*args)` once on every alive node (pinned with a hard node affinity; nodes
        without the `docker` resource are skipped when the cluster declares it). A node whose
        call fails is logged and left out of the returned list."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self._ensure_ray()
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        with_docker = [n for n in nodes if n.get("Resources", {}).get("docker")]
        task = ray.remote(_ray_call)
        refs = {task.options(num_cpus=0, max_retries=0, scheduling_strategy=NodeAffinitySchedulingStrategy(
            n["NodeID"], soft=False)).remote(fn, args): n["NodeID"] for n in (with_docker or nodes)}
        out = []
        for ref, node in refs.items():
            try:
                out.append(ray.get(ref, timeout=300))
            except Exception as e:  # noqa: BLE001 - one node's failure must not stop the batch
                log.warning("%s on node %s failed: %s", getattr(fn, "__name__", fn), node[:12],
                            describe_exception(e))
        return out

    def _options(self, stage: Any) -> dict:
        import ray

        res = dict(stage.resources.resources)
        if not self.ray_config.docker_resource:
            res.pop("docker", None)
        have = ray.cluster_resources()
        for name in [n for n in res if n not in have]:
            log.warning("Ray cluster declares no %r resource; tasks will not reserve it", name)
            res.pop(name)
        return dict(num_cpus=stage.resources.num_cpus, resources=res, max_retries=0, retry_exceptions=False)

    def submit(self, stage: Any, item: Any, *, tag: Any = None, timeout: float | None = None) -> int:
        """See `Executor.submit`: a Ray task with the stage's resources (one `docker` slot for
        the build stage); the stage object is put in the object store once."""
        import ray

        self._ensure_ray()
        name = getattr(stage, "name", type(stage).__name__)
        if name not in self._remote:
            self._remote[name] = ray.remote(_ray_measured).options(**self._options(stage))
        ref_key = id(stage)
        if ref_key not in self._stage_refs:
            self._stage_refs[ref_key] = (stage, ray.put(stage))  # (keeps `stage` alive: ids stay unique)
        ref = self._remote[name].remote(self._stage_refs[ref_key][1], item)
        key = self._book.add(ref, (name, tag), timeout)
        if name == BUILD_STAGE and (meter := self._meter()):
            meter.submit(self._count(BUILD_STAGE))
        return key

    def _count(self, stage_name: str) -> int:
        return sum(1 for _, (n, _), _ in self._book.pending.values() if n == stage_name)

    def start_actor(self, cls: type, *args: Any, **kwargs: Any) -> Any:
        """See `Executor.start_actor`: a Ray actor (0 CPUs, one call at a time, not restarted)."""
        import ray

        self._ensure_ray()
        actor = ray.remote(_ActorHost).options(num_cpus=0, max_concurrency=1, max_restarts=0).remote(
            cls, args, kwargs)
        self._actors.append(actor)
        return actor

    def call(self, actor: Any, method: str, *args: Any, tag: Any = None, timeout: float | None = None) -> int:
        """See `Executor.call`."""
        ref = actor.call.remote(method, args)
        return self._book.add(ref, (f"actor.{method}", tag), timeout)

    def poll(self, timeout: float) -> list[Done]:
        """See `Executor.poll`. A timed-out task is cancelled (its worker killed)."""
        import ray

        if not self._book.pending:
            return []
        ready, _ = ray.wait(list(self._book.pending), num_returns=1, timeout=self._book.wait_s(timeout))
        if ready:
            ready, _ = ray.wait(list(self._book.pending), num_returns=len(self._book.pending), timeout=0)
        out = []
        for ref in ready:
            key, (name, tag), _ = self._book.pending.pop(ref)
            try:
                measured = ray.get(ref)
            except Exception as e:  # noqa: BLE001 - worker crash, lost object, cancelled
                measured = Measured(error=f"Ray task failed: {describe_exception(e)}")
            out.append(Done(key, tag, measured))
            self._finished(name, measured)
        for ref, done in self._book.expired():
            name, done.tag = done.tag
            if not name.startswith("actor."):
                ray.cancel(ref, force=True)
            out.append(done)
            self._finished(name, done.result)
        return out

    def _finished(self, name: str, measured: Measured) -> None:
        if name == BUILD_STAGE and (meter := self._meter()) and isinstance(measured.value, InstanceResult):
            meter.finish(measured.value, self._count(BUILD_STAGE))

    def in_flight(self) -> int:
        """See `Executor.in_flight`."""
        return len(self._book.pending)

    def cancel_all(self) -> None:
        """Cancel every task in flight and kill the actors (closing a run early)."""
        import ray

        for ref, (_, (name, _), _) in list(self._book.pending.items()):
            if not name.startswith("actor."):
                ray.cancel(ref, force=True)
        self._book.pending.clear()
        for actor in self._actors:
            ray.kill(actor)
        self._actors.clear()

    def close(self) -> None:
        """Kill the actors; shut down the local Ray this executor started (a joined cluster is
        left alone)."""
        if self._actors:
            import ray

            for actor in self._actors:
                ray.kill(actor)
            self._actors.clear()
        if self._started:
            import ray

            ray.shutdown()
            self._started = False


def row_of(item: WorkItem, done: Done, timeout: float | None, started: str) -> InstanceResult:
    """The row of one build item's `Done` (`tag[0]`: the stage name): its result, or an
    `infra_error` row (an error, a value that is not this item's row) or a `timeout` row."""
    if done.timed_out:
        return _timeout_row(item, timeout or 0.0, started)
    m = done.result
    if m.error is not None:
        return failure_row(item.instance, "infra_error", m.error, started, m.wall_s)
    res = m.value
    if not isinstance(res, InstanceResult) or res.instance_id != item.instance.instance_id:
        return failure_row(item.instance, "infra_error", f"{done.tag[0]} returned {type(res).__name__} "
                           "instead of this instance's InstanceResult", started)
    return res


class _MapRunner:
    """`Runner` over an executor: at most `workers` items in flight, `timeout` seconds each."""

    def __init__(self, executor: LocalExecutor | RayExecutor, workers: int = 1, timeout: float | None = None):
        self.executor = executor
        self.workers = max(1, workers)
        self.timeout = timeout

    def run(self, stage: Stage, items: Iterable[WorkItem],
            on_submit: OnSubmit | None = None) -> Iterator[InstanceResult]:
        """See `Runner.run`. KeyboardInterrupt / closing the generator cancels what is in flight
        (on Ray)."""
        todo = iter(items)
        inflight: dict[int, tuple[WorkItem, str]] = {}
        try:
            while True:
                while len(inflight) < self.workers and (item := next(todo, None)) is not None:
                    if on_submit:
                        on_submit(item)
                    started = now_iso()
                    inflight[self.executor.submit(stage, item, tag=(stage.name,), timeout=self.timeout)] = \
                        (item, started)
                if not inflight:
                    return
                for done in self.executor.poll(1.0):
                    item, started = inflight.pop(done.key)
                    yield row_of(item, done, self.timeout, started)
        finally:
            if inflight and isinstance(self.executor, RayExecutor):
                self.executor.cancel_all()

    def each_node(self, fn: Callable[..., Any], *args: Any) -> list[Any]:
        """See `Executor.each_node`."""
        return self.executor.each_node(fn, *args)

    def close(self) -> None:
        """Release what the executor started (a local Ray)."""
        self.executor.close()


class LocalRunner(_MapRunner):
    """Threads in this process. `workers`: items at once; `timeout`: seconds per item (None = none).
    A hung item is abandoned as `timeout` (a Python thread cannot be killed)."""

    def __init__(self, workers: int = 1, timeout: float | None = None):
        super().__init__(LocalExecutor(), workers, timeout)


class RayRunner(_MapRunner):
    """One Ray task per item, at most `workers` in flight, `timeout` seconds each (None = none);
    a task past its timeout is cancelled (`ray.cancel(force=True)`). `ray_config` is used to
    start/join Ray on first `run` unless Ray is already initialised."""

    def __init__(self, workers: int = 1, timeout: float | None = None, ray_config: RayConfig | None = None):
        super().__init__(RayExecutor(workers, ray_config), workers, timeout)


def make_executor(cfg: PipelineConfig) -> LocalExecutor | RayExecutor:
    """The executor `cfg` asks for: Ray unless `use_ray` is false."""
    return RayExecutor(cfg.workers, cfg.ray) if cfg.use_ray else LocalExecutor()


def make_runner(cfg: PipelineConfig) -> LocalRunner | RayRunner:
    """The runner `cfg` asks for: Ray unless `use_ray` is false; `workers` slots; `timeout_s`."""
    if cfg.use_ray:
        return RayRunner(cfg.workers, cfg.timeout_s, cfg.ray)
    return LocalRunner(cfg.workers, cfg.timeout_s)
