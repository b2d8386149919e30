"""`swemint.RewardService` on a real local Ray smaller than the pool asked for: the actors Ray cannot
place are dropped (a warning), so `rewards()` returns instead of waiting for ever on them."""

from __future__ import annotations

import logging
import sys

import pytest

from pipeline.pipeline_config import RayConfig
from pipeline.ray_adapter import init_ray, shutdown_local_ray


class FakeGrader:
    """A grader without Docker: resolved when the patch is the row's gold patch."""

    def __init__(self, run_id, timeout, limits):
        self.run_id = run_id

    def ready(self) -> bool:
        return True

    def grade(self, row: dict, patch, model: str = "rollout") -> dict:
        ok = patch == row["patch"]
        return {"instance_id": row["instance_id"], "model_name_or_path": model, "resolved": ok,
                "reward": 1.0 if ok else 0.0}


@pytest.fixture(scope="module")
def small_ray():
    """A local Ray with 2 CPUs and 3 docker slots: three 1-CPU actors cannot all be placed."""
    import ray
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import this test module
    if ray.is_initialized():
        ray.shutdown()
    assert init_ray(RayConfig(num_cpus=2, object_store_memory=100 * 1024**2), workers=3)
    yield ray
    shutdown_local_ray()


def test_unplaceable_actors_are_dropped_and_rewards_return(small_ray, caplog):
    import swemint

    rows = [{"instance_id": f"acme__x-{i}", "patch": f"p{i}"} for i in range(4)]
    with caplog.at_level(logging.WARNING, logger="swemint.rewards"):
        with swemint.RewardService(workers=3, num_cpus=1.0, place_timeout=10, grader=FakeGrader) as rs:
            assert rs.workers == 2
            assert rs.rewards([(r, r["patch"]) for r in rows] + [(rows[0], "nope")]) == [1.0] * 4 + [0.0]
    assert "1 of 3 grader actors not placed" in caplog.text and "2 CPU" in caplog.text


def test_no_actor_placed_is_an_error(small_ray):
    import swemint

    with pytest.raises(RuntimeError, match="none to grade with"):
        swemint.RewardService(workers=1, num_cpus=4.0, place_timeout=3, grader=FakeGrader)
