"""Ray, and only here: starting or joining Ray, the Ray executor and runner, metrics.

`RayExecutor` is the `pipeline.executors.Executor` on Ray: one Ray task per stage call (tasks,
not actors, for stages: `ray.cancel(force=True)` can kill a hung task's worker process) with the
stage's declared resources (one custom `docker` resource for a build), and one Ray actor per
stateful object (`max_concurrency=1`: its calls run one after another; 0 CPUs). A task that
raises or whose worker dies is a `Done` with `error`; one past its timeout is cancelled.
`RayRunner` maps one stage over items on it (`swemint mint`); `make_runner` / `make_executor`
pick Ray or the in-process one (`pipeline.executors`) from the config. Both offer
`each_node(fn, *args)`: run a small function once per Docker host (the rerun's sweep of a crashed
run's containers). The executor also exports driver-side counters of the build stage through
`ray.util.metrics` (see `RayMetrics`), which land on the node's Prometheus endpoint and in the
dashboard's metrics view.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.models import InstanceResult
from envpool.errors import InfraError
from pipeline.pipeline_config import PipelineConfig, RayConfig
from pipeline.executors import (ABANDONED, CallBook, Done, Executor, LocalExecutor, LocalRunner, MapRunner, Runner,
                                call_method, row_of)
from pipeline.raysec import assert_loopback_only, ensure_local_token, force_loopback, release_local_token
from pipeline.stages import Measured, describe_exception, run_measured

__all__ = ["ABANDONED", "BUILD_STAGE", "Done", "Executor", "LocalExecutor", "LocalRunner", "RayExecutor", "RayMetrics",
           "RayRunner", "Runner", "init_ray", "make_executor", "make_runner", "row_of"]

log = logging.getLogger(__name__)
BUILD_STAGE = "mint"
"""Name of the stage whose items are build-slot instances (`pipeline.stages.MintStage`)."""


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


def _ray_measured(stage: Any, item: Any) -> Measured:
    """Body of one Ray task (module level so workers import it by reference): the stage call,
    measured, with the id of the node it ran on."""
    import ray

    out = run_measured(stage, item)
    out.node = ray.get_runtime_context().get_node_id()
    return out


def _ray_call(fn: Callable[..., Any], args: tuple) -> Any:
    """Body of an `each_node` task."""
    return fn(*args)


def _node_name() -> tuple[str, str]:
    """(Ray node id, the name of its Docker engine's node) on the node this runs on."""
    import ray

    from envpool.image_registry import engine_node

    name = ""
    try:
        from envpool.docker_sandbox import docker_client

        name = engine_node(docker_client())
    except Exception:  # noqa: BLE001 - no engine on this node
        pass
    return ray.get_runtime_context().get_node_id(), name


class _ActorHost:
    """The Ray actor around a plain object: `call(method, args)` -> `Measured`."""

    def __init__(self, cls: type, args: tuple, kwargs: dict):
        self.obj = cls(*args, **kwargs)

    def call(self, method: str, args: tuple) -> Measured:
        return call_method(self.obj, method, args)


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
        self._book = CallBook()
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

    def node_ids(self) -> set[str]:
        """Ids of the alive nodes that run Docker (every alive node when none declares the
        `docker` resource)."""
        import ray

        self._ensure_ray()
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        with_docker = [n for n in nodes if n.get("Resources", {}).get("docker")]
        return {n["NodeID"] for n in (with_docker or nodes)}

    def node_names(self) -> dict[str, str]:
        """Ray node id -> the name of the node's Docker engine (`swemint.node` label, else the
        engine's name; the id's first 12 digits when neither answers), for alive Docker nodes."""
        names = dict(self.each_node(_node_name))
        return {nid: names.get(nid) or nid[:12] for nid in names.keys() | self.node_ids()}

    def each_node(self, fn: Callable[..., Any], *args: Any, nodes: set[str] | None = None) -> list[Any]:
        """Run `fn(*args)` once on every alive node (pinned with a hard node affinity; nodes
        without the `docker` resource are skipped when the cluster declares it), or on the alive
        ones of `nodes` (Ray node ids). A node whose call fails is logged and left out of the
        returned list."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        targets = self.node_ids()
        if nodes is not None:
            targets &= set(nodes)
        task = ray.remote(_ray_call)
        refs = {task.options(num_cpus=0, max_retries=0, scheduling_strategy=NodeAffinitySchedulingStrategy(
            nid, soft=False)).remote(fn, args): nid for nid in sorted(targets)}
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
        return dict(num_cpus=stage.resources.num_cpus, resources=res, max_retries=self.ray_config.system_retries,
                    retry_exceptions=False)

    def submit(self, stage: Any, item: Any, *, tag: Any = None, timeout: float | None = None,
               prefer: str | None = None) -> int:
        """See `Executor.submit`: a Ray task with the stage's resources (one `docker` slot for
        the build stage); the stage object is put in the object store once. `prefer`: a Ray
        node id to run on when it is alive and has a free slot, else anywhere (a soft node
        affinity that spills: locality is a hint, never a wait). A task whose worker or node
        dies is run again by Ray (`ray.system_retries` times), elsewhere when the node is gone."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self._ensure_ray()
        name = getattr(stage, "name", type(stage).__name__)
        if name not in self._remote:
            opts = self._options(stage)
            self._remote[name] = (ray.remote(_ray_measured).options(**opts), opts)
        ref_key = id(stage)
        if ref_key not in self._stage_refs:
            self._stage_refs[ref_key] = (stage, ray.put(stage))  # (keeps `stage` alive: ids stay unique)
        remote, opts = self._remote[name]
        if prefer:
            try:
                strategy = NodeAffinitySchedulingStrategy(prefer, soft=True, _spill_on_unavailable=True)
            except ValueError:  # not a node id: a hint never fails a submission
                strategy = None
            if strategy is not None:
                remote = ray.remote(_ray_measured).options(**opts, scheduling_strategy=strategy)
        ref = remote.remote(self._stage_refs[ref_key][1], item)
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
            shutdown_local_ray()
            self._started = False


class RayRunner(MapRunner):
    """One Ray task per item, at most `workers` in flight, `timeout` seconds each (None = none);
    a task past its timeout is cancelled (`ray.cancel(force=True)`). `ray_config` is used to
    start/join Ray on first `run` unless Ray is already initialised."""

    def __init__(self, workers: int = 1, timeout: float | None = None, ray_config: RayConfig | None = None):
        super().__init__(RayExecutor(workers, ray_config), workers, timeout)


def make_executor(cfg: PipelineConfig) -> LocalExecutor | RayExecutor:
    """The executor `cfg` asks for: Ray unless `use_ray` is false."""
    return RayExecutor(cfg.workers, cfg.ray) if cfg.use_ray else LocalExecutor()


def make_runner(cfg: PipelineConfig) -> LocalRunner | RayRunner:
    """The runner `cfg` asks for: Ray unless `use_ray` is false; `workers` slots; `timeout_s`.
    Raises ValueError when Ray is asked for but not installed (it is the optional `ray` extra)."""
    if cfg.use_ray:
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise ValueError("Ray is not installed: pip install 'swemint[ray]', or run in-process with --no-ray")
        return RayRunner(cfg.workers, cfg.timeout_s, cfg.ray)
    return LocalRunner(cfg.workers, cfg.timeout_s)
