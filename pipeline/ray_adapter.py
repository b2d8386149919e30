"""Runners: map a Ray-agnostic `Stage` over work items, yielding one row per item.

- `LocalRunner`: in-process threads (`--no-ray`, tests). A hung item is abandoned as `timeout`
  (a Python thread cannot be killed; it finishes or dies with the process).
- `RayRunner`: one Ray task per item (tasks, not actors: `ray.cancel(force=True)` can kill a
  hung task's worker process, which it cannot do for an actor method). At most `workers` tasks
  are in flight (backpressure: items are submitted as others finish). A task that raises, or
  whose worker dies, becomes an `infra_error` row; one past `timeout` seconds since submission
  is cancelled and becomes a `timeout` row. The job never fails because of one item
  (cf. ray-project/ray #59194, #45661).

Both yield rows in completion order to the driver, the single writer of store and pool, and
both offer `each_node(fn, *args)`: run a small function once per Docker host (the rerun's sweep
of a crashed run's containers). `RayRunner` also exports driver-side counters through
`ray.util.metrics` (see `RayMetrics`), which land on the node's Prometheus endpoint and in the
dashboard's metrics view.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from agents.models import InstanceResult
from envpool.errors import InfraError
from pipeline.config import PipelineConfig, RayConfig
from pipeline.raysec import assert_loopback_only, ensure_local_token, force_loopback, release_local_token
from pipeline.stages import Stage, WorkItem, describe_exception, failure_row, now_iso, run_safely

log = logging.getLogger(__name__)
OnSubmit = Callable[[WorkItem], None]


class Runner(Protocol):
    """Runs a stage over items; yields exactly one InstanceResult per item, in completion order."""

    def run(self, stage: Stage, items: Iterable[WorkItem],
            on_submit: OnSubmit | None = None) -> Iterator[InstanceResult]:
        """`on_submit(item)` is called in the driver just before an item starts."""
        ...

    def close(self) -> None:
        """Release what the runner started (a local Ray)."""
        ...


ABANDONED = "abandoned by the runner"
"""In the reason of a `timeout` row the runner wrote for an item it gave up on (the driver then
removes that instance's containers)."""


def _timeout_row(item: WorkItem, timeout: float, started: str) -> InstanceResult:
    return failure_row(item.instance, "timeout", f"no result after {timeout:.0f} s; {ABANDONED}",
                       started, timeout)


class LocalRunner:
    """Threads in this process. `workers`: items at once; `timeout`: seconds per item (None = none)."""

    def __init__(self, workers: int = 1, timeout: float | None = None):
        self.workers = max(1, workers)
        self.timeout = timeout

    def run(self, stage: Stage, items: Iterable[WorkItem],
            on_submit: OnSubmit | None = None) -> Iterator[InstanceResult]:
        """See `Runner.run`."""
        todo = iter(items)
        done: queue.Queue = queue.Queue()
        inflight: dict[int, tuple[WorkItem, float, str]] = {}
        seq = 0

        def work(key: int, item: WorkItem) -> None:
            done.put((key, run_safely(stage, item)))

        while True:
            while len(inflight) < self.workers and (item := next(todo, None)) is not None:
                if on_submit:
                    on_submit(item)
                inflight[seq] = (item, time.monotonic(), now_iso())
                threading.Thread(target=work, args=(seq, item), daemon=True, name=f"swemint-{seq}").start()
                seq += 1
            if not inflight:
                return
            wait = 1.0
            if self.timeout is not None:
                first = min(t for _, t, _ in inflight.values())
                wait = max(0.01, min(wait, first + self.timeout - time.monotonic()))
            try:
                key, res = done.get(timeout=wait)
                if key in inflight:  # else: a late result of an abandoned item
                    del inflight[key]
                    yield res
            except queue.Empty:
                pass
            if self.timeout is not None:
                for key, (item, t0, started) in list(inflight.items()):
                    if time.monotonic() - t0 > self.timeout:
                        del inflight[key]
                        yield _timeout_row(item, self.timeout, started)

    def each_node(self, fn: Callable[..., Any], *args: Any) -> list[Any]:
        """`[fn(*args)]`: this process is the only node."""
        return [fn(*args)]

    def close(self) -> None:
        """Nothing to release."""


def init_ray(cfg: RayConfig, workers: int) -> bool:
    """Connect to Ray; returns True when this call started a local Ray (then `shutdown_local_ray`).

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
            shutdown_local_ray()
            raise
    return True


def shutdown_local_ray() -> None:
    """`ray.shutdown()` of the local Ray `init_ray` started, then its token folder removed
    (`pipeline.raysec.release_local_token`)."""
    import ray

    ray.shutdown()
    release_local_token()


def _ray_process(stage: Stage, item: WorkItem) -> InstanceResult:
    """Body of one Ray task (module level so workers import it by reference)."""
    return run_safely(stage, item)


def _ray_call(fn: Callable[..., Any], args: tuple) -> Any:
    """Body of an `each_node` task."""
    return fn(*args)


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


class RayRunner:
    """One Ray task per item, at most `workers` in flight, `timeout` seconds each (None = none).

    `ray_config` is used to start/join Ray on first `run` unless Ray is already initialised.
    """

    def __init__(self, workers: int = 1, timeout: float | None = None, ray_config: RayConfig | None = None):
        self.workers = max(1, workers)
        self.timeout = timeout
        self.ray_config = ray_config or RayConfig()
        self._started = False
        self._metrics: RayMetrics | None = None

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

    def _options(self, stage: Stage) -> dict:
        import ray

        res = dict(stage.resources.resources)
        if not self.ray_config.docker_resource:
            res.pop("docker", None)
        have = ray.cluster_resources()
        for name in [n for n in res if n not in have]:
            log.warning("Ray cluster declares no %r resource; tasks will not reserve it", name)
            res.pop(name)
        return dict(num_cpus=stage.resources.num_cpus, resources=res, max_retries=0, retry_exceptions=False)

    def run(self, stage: Stage, items: Iterable[WorkItem],
            on_submit: OnSubmit | None = None) -> Iterator[InstanceResult]:
        """See `Runner.run`. KeyboardInterrupt / closing the generator cancels what is in flight."""
        import ray

        self._ensure_ray()
        meter = self._meter()
        task = ray.remote(_ray_process).options(**self._options(stage))
        stage_ref = ray.put(stage)
        todo = iter(items)
        pending: dict = {}  # ObjectRef -> (item, submitted monotonic, started iso)
        try:
            while True:
                while len(pending) < self.workers and (item := next(todo, None)) is not None:
                    if on_submit:
                        on_submit(item)
                    pending[task.remote(stage_ref, item)] = (item, time.monotonic(), now_iso())
                    if meter:
                        meter.submit(len(pending))
                if not pending:
                    return
                wait = 1.0
                if self.timeout is not None:
                    first = min(t for _, t, _ in pending.values())
                    wait = max(0.01, min(wait, first + self.timeout - time.monotonic()))
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=wait)
                for ref in ready:
                    item, t0, started = pending.pop(ref)
                    try:
                        res = ray.get(ref)
                    except Exception as e:  # noqa: BLE001 - worker crash, lost object, cancelled
                        res = failure_row(item.instance, "infra_error", f"Ray task failed: {describe_exception(e)}",
                                          started, time.monotonic() - t0)
                    if meter:
                        meter.finish(res, len(pending))
                    yield res
                if self.timeout is not None:
                    for ref, (item, t0, started) in list(pending.items()):
                        if time.monotonic() - t0 > self.timeout:
                            del pending[ref]
                            ray.cancel(ref, force=True)
                            res = _timeout_row(item, self.timeout, started)
                            if meter:
                                meter.finish(res, len(pending))
                            yield res
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)

    def close(self) -> None:
        """Shut down the local Ray this runner started (a joined cluster is left alone)."""
        if self._started:
            shutdown_local_ray()
            self._started = False


def make_runner(cfg: PipelineConfig) -> LocalRunner | RayRunner:
    """The runner `cfg` asks for: Ray unless `use_ray` is false; `workers` slots; `timeout_s`.
    Raises ValueError when Ray is asked for but not installed (it is the optional `ray` extra)."""
    if cfg.use_ray:
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise ValueError("Ray is not installed: pip install 'swemint[ray]', or run in-process with --no-ray")
        return RayRunner(cfg.workers, cfg.timeout_s, cfg.ray)
    return LocalRunner(cfg.workers, cfg.timeout_s)
