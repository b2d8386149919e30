"""Runners: map a Ray-agnostic `Stage` over work items, yielding one row per item.

- `LocalRunner`: in-process threads (`--no-ray`, tests). A hung item is abandoned as `timeout`
  (a Python thread cannot be killed; it finishes or dies with the process).
- `RayRunner`: one Ray task per item (tasks, not actors: `ray.cancel(force=True)` can kill a
  hung task's worker process, which it cannot do for an actor method). At most `workers` tasks
  are in flight (backpressure: items are submitted as others finish). A task that raises, or
  whose worker dies, becomes an `infra_error` row; one past `timeout` seconds since submission
  is cancelled and becomes a `timeout` row. The job never fails because of one item
  (cf. ray-project/ray #59194, #45661).

Both yield rows in completion order to the driver, the single writer of store and pool.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from agents.models import InstanceResult
from pipeline.config import PipelineConfig, RayConfig
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


def _timeout_row(item: WorkItem, timeout: float, started: str) -> InstanceResult:
    return failure_row(item.instance, "timeout", f"no result after {timeout:.0f} s; abandoned by the runner",
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

    def close(self) -> None:
        """Nothing to release."""


def init_ray(cfg: RayConfig, workers: int) -> bool:
    """Connect to Ray; returns True when this call started a local Ray (then `ray.shutdown` it).

    Joins `cfg.address` or `$RAY_ADDRESS` (a job on a cluster) when set; else starts a local Ray
    with `cfg.num_cpus`, `workers` custom `docker` resources, no dashboard and usage stats off.
    Auth is disabled unless `RAY_AUTH_MODE` / `RAY_AUTH_TOKEN_PATH` is configured (a plain
    init would write a token file that turns on auth for later `ray start`s; see platform notes).
    """
    import ray

    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if not os.environ.get("RAY_AUTH_MODE") and not os.environ.get("RAY_AUTH_TOKEN_PATH"):
        os.environ["RAY_AUTH_MODE"] = "disabled"
    address = cfg.address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, log_to_driver=cfg.log_to_driver)
        return False
    if cfg.bind_localhost:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
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
    return True


def _ray_process(stage: Stage, item: WorkItem) -> InstanceResult:
    """Body of one Ray task (module level so workers import it by reference)."""
    return run_safely(stage, item)


class RayRunner:
    """One Ray task per item, at most `workers` in flight, `timeout` seconds each (None = none).

    `ray_config` is used to start/join Ray on first `run` unless Ray is already initialised.
    """

    def __init__(self, workers: int = 1, timeout: float | None = None, ray_config: RayConfig | None = None):
        self.workers = max(1, workers)
        self.timeout = timeout
        self.ray_config = ray_config or RayConfig()
        self._started = False

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

        self._started = init_ray(self.ray_config, self.workers) or self._started
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
                        yield ray.get(ref)
                    except Exception as e:  # noqa: BLE001 - worker crash, lost object, cancelled
                        yield failure_row(item.instance, "infra_error", f"Ray task failed: {describe_exception(e)}",
                                          started, time.monotonic() - t0)
                if self.timeout is not None:
                    for ref, (item, t0, started) in list(pending.items()):
                        if time.monotonic() - t0 > self.timeout:
                            del pending[ref]
                            ray.cancel(ref, force=True)
                            yield _timeout_row(item, self.timeout, started)
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)

    def close(self) -> None:
        """Shut down the local Ray this runner started (a joined cluster is left alone)."""
        if self._started:
            import ray

            ray.shutdown()
            self._started = False


def make_runner(cfg: PipelineConfig) -> LocalRunner | RayRunner:
    """The runner `cfg` asks for: Ray unless `use_ray` is false; `workers` slots; `timeout_s`."""
    if cfg.use_ray:
        return RayRunner(cfg.workers, cfg.timeout_s, cfg.ray)
    return LocalRunner(cfg.workers, cfg.timeout_s)
