"""`RewardService`: grade many (row, patch) pairs at once on Ray, for RL rollouts.

An actor pool (`ray.util.ActorPool`) of graders; each actor holds one Docker client and reserves
one custom `docker` resource (a build slot, as a mint build does), so grading never runs more
containers at once than the cluster's `docker` slots, and it shares those slots with a mint
running on the same Ray. Each grade is `pipeline.evaluate.grade` (the grading of `swemint eval`
and `TaskEnv.reward`): a fresh container of the row's image, no network, the test files reset and
the test_patch applied after the candidate, the report read on the host's channel.

Ray is joined when `RAY_ADDRESS` (or `ray_config.address`) names a cluster, else a local Ray is
started the way `swemint mint` starts one (`pipeline.ray_adapter.init_ray`: token auth, every
socket on loopback, `workers` docker slots) and shut down by `close()`.

Actors the cluster cannot place (on a 2-core host a local Ray has 2 CPUs: `workers=4` at one CPU
each places 2) are dropped after `place_timeout` seconds with a warning, so `rewards()` never waits
on a job handed to an actor that will never start; none placed is a RuntimeError.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

log = logging.getLogger(__name__)


class Grader:
    """The actor: grades one (row, patch) at a time with its own Docker sandbox factory."""

    def __init__(self, run_id: str, timeout: float, limits: dict | None):
        from envpool.docker_sandbox import DockerSandboxFactory

        self.factory = DockerSandboxFactory(run_id=run_id)
        self.run_id, self.timeout, self.limits = run_id, timeout, limits

    def ready(self) -> bool:
        """True once the actor is placed and constructed (`RewardService` waits on it)."""
        return True

    def grade(self, row: dict, patch: str | None, model: str = "rollout") -> dict:
        """`pipeline.evaluate.grade(row, patch)` as a dict (`EvalReport.model_dump()`)."""
        from pipeline.evaluate import grade

        return grade(row, patch, factory=self.factory, model=model, timeout=self.timeout, run_id=self.run_id,
                     limits=self.limits).model_dump()


class RewardService:
    """Grade batches of patches in parallel, `workers` at a time.

    Args:
        workers: grader actors (each reserves `num_cpus` CPUs and one `docker` resource).
        num_cpus: CPUs an actor reserves.
        timeout: seconds a test run may take.
        run_id: the `swemint.run` label of every grading container.
        limits: `cpus`, `memory` (bytes), `pids` of the grading containers.
        ray_config: `pipeline.pipeline_config.RayConfig` for a local Ray (default: loopback, token auth).
        place_timeout: seconds to wait for the actors to be placed; those still unplaced are killed
            and the service grades with the rest (`workers` then says how many), with a warning
            naming what they asked for and what the cluster has. Raises RuntimeError when none is
            placed.
        grader: the actor class (`Grader`; a test double in tests).

    Use as a context manager, or call `close()`: it kills the actors and shuts down a local Ray
    this service started.
    """

    def __init__(self, workers: int = 2, *, num_cpus: float = 1.0, timeout: float = 1800, run_id: str = "rewards",
                 limits: dict | None = None, ray_config=None, place_timeout: float = 60.0, grader: type = Grader):
        import ray
        from ray.util import ActorPool

        from pipeline.pipeline_config import RayConfig
        from pipeline.ray_adapter import init_ray

        asked = max(1, int(workers))
        self._local = init_ray(ray_config or RayConfig(), asked)
        actor: Any = ray.remote(num_cpus=num_cpus, resources={"docker": 1.0})(grader)
        self._actors: list = [actor.remote(run_id, timeout, limits) for _ in range(asked)]
        pending = {a.ready.remote(): a for a in self._actors}
        done, _ = ray.wait(list(pending), num_returns=len(pending), timeout=place_timeout)
        placed = [pending[r] for r in done]
        if len(placed) < asked:
            have = ray.cluster_resources()
            for a in self._actors:
                if a not in placed:
                    ray.kill(a)
            self._actors = placed
            msg = (f"RewardService: {asked - len(placed)} of {asked} grader actors not placed within "
                   f"{place_timeout:g} s (each asks {num_cpus:g} CPU and 1 docker slot; the cluster has "
                   f"{have.get('CPU', 0):g} CPU, {have.get('docker', 0):g} docker)")
            if not placed:
                self.close()
                raise RuntimeError(msg + ": none to grade with; lower workers or num_cpus")
            log.warning("%s: grading with %d", msg, len(placed))
        self.workers = len(placed)
        self._pool = ActorPool(self._actors)

    def grade(self, jobs: Iterable[tuple[dict, str | None]], model: str = "rollout") -> list[Any]:
        """`EvalReport` for each (row, patch) of `jobs`, in order."""
        from envpool.evaluation import EvalReport

        jobs = list(jobs)
        out = self._pool.map(lambda a, job: a.grade.remote(job[0], job[1], model), jobs)
        return [EvalReport.model_validate(d) for d in out]

    def rewards(self, jobs: Iterable[tuple[dict, str | None]]) -> list[float]:
        """The reward (1.0 resolved, else 0.0) of each (row, patch) of `jobs`, in order."""
        return [r.reward for r in self.grade(jobs)]

    def close(self) -> None:
        """Kill the actors; shut down the local Ray this service started (never a cluster)."""
        import ray

        for a in self._actors:
            try:
                ray.kill(a)
            except Exception:  # noqa: BLE001 - already dead
                pass
        self._actors = []
        if self._local:
            from pipeline.ray_adapter import shutdown_local_ray

            shutdown_local_ray()
            self._local = False

    def __enter__(self) -> RewardService:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
