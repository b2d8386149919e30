"""A real two-node Ray cluster on this host (issue 27, items 1 and 3; Ray's side, no Docker): the
worker node joins on loopback with token auth (`pipeline.raynode`), and when it is killed mid-run
its builds in flight are redone on the head, each instance ending as exactly one row."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from agents.models import Instance, InstanceResult
from pipeline.pipeline_config import RayConfig
from pipeline.stages import StageResources, WorkItem

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


class SlowStage:
    """A build that takes `seconds` and notes each attempt (instance, node) in `folder`."""

    name = "mint"

    def __init__(self, folder: Path, seconds: float):
        self.folder, self.seconds = folder, seconds
        self.resources = StageResources(num_cpus=0.5, resources={"docker": 1.0})

    def process(self, item: WorkItem) -> InstanceResult:
        import ray

        node = ray.get_runtime_context().get_node_id()
        iid = item.instance.instance_id
        with open(self.folder / f"{iid}.attempts", "a") as fh:
            fh.write(node + "\n")
        time.sleep(self.seconds)
        return InstanceResult(instance_id=iid, repo=item.instance.repo, outcome="verified", reason=node)


@pytest.fixture
def cluster(monkeypatch):
    from ray import cloudpickle

    from scripts.localcluster import LocalCluster

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    import ray

    if ray.is_initialized():
        ray.shutdown()
    c = LocalCluster(2, slots=1, cpus=2, registry=False, docker=False)
    try:
        c.up()
    except Exception:
        c.down()
        raise
    for k, v in c.env().items():
        if k.startswith("RAY_"):
            monkeypatch.setenv(k, v)
    from pipeline.raysec import _refresh_ray_auth, force_loopback

    _refresh_ray_auth()
    force_loopback()
    yield c
    ray.shutdown()
    c.down()


def _attempts(folder: Path) -> dict[str, list[str]]:
    return {p.name.split(".")[0]: p.read_text().split() for p in folder.glob("*.attempts")}


@pytest.mark.slow
def test_a_worker_node_killed_mid_run_has_its_builds_redone_elsewhere_one_row_each(cluster, tmp_path):
    import threading

    import ray

    from pipeline.pipeline_config import load_config
    from pipeline.nodes import NodeWatch
    from pipeline.ray_adapter import RayRunner

    runner = RayRunner(workers=2, timeout=400, ray_config=RayConfig(address=f"127.0.0.1:{cluster.gcs_port}"))
    ex = runner.executor
    assert len(ex.node_ids()) == 2  # the head and the worker, both on 127.0.0.1
    head = next(n["NodeID"] for n in ray.nodes() if "node:__internal_head__" in n["Resources"])
    worker = next(iter(ex.node_ids() - {head}))
    watch = NodeWatch(load_config(None, [], workdir=tmp_path), ex, None, None, every_s=0)
    watch.check(now=1.0)
    folder = tmp_path / "attempts"
    folder.mkdir()
    killed: list[str] = []

    def kill_when_busy() -> None:  # the worker node dies while one of its builds runs
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            on_worker = [i for i, nodes in _attempts(folder).items() if nodes[-1] == worker]
            if on_worker:
                time.sleep(2)
                cluster.kill_node(1)
                killed.extend(on_worker)
                return
            time.sleep(0.5)

    killer = threading.Thread(target=kill_when_busy)
    killer.start()
    items = [WorkItem(Instance(instance_id=f"o__r-{i}", repo="o/r", base_commit="c", patch="", test_patch=""),
                      Path("/nope")) for i in range(4)]
    # 8 s a build: the killer strikes 2 s into the worker's build, so it is surely still running
    rows = list(runner.run(SlowStage(folder, 8.0), items))
    killer.join()
    assert killed, "the worker node never ran a build"
    # one row per instance, every one verified: nothing lost, nothing doubled
    assert sorted(r.instance_id for r in rows) == [f"o__r-{i}" for i in range(4)]
    assert all(r.outcome == "verified" for r in rows), [(r.instance_id, r.reason) for r in rows]
    attempts = _attempts(folder)
    for iid in killed:  # started on the worker, finished on the head
        assert attempts[iid][0] == worker and attempts[iid][-1] == head
        assert next(r for r in rows if r.instance_id == iid).reason == head
    assert all(len(a) == 1 for i, a in attempts.items() if i not in killed)  # the rest ran once
    # the watch sees the node gone once Ray lists it dead (its health checks: up to ~30 s after the
    # kill on this configuration; the builds may all be done before that)
    deadline, now = time.monotonic() + 120, 1e9
    while not watch.lost and time.monotonic() < deadline:
        watch.check(now=now)
        now += 1
        if not watch.lost:
            time.sleep(1)
    assert watch.lost == [worker]
    # back: restart_node returns once this start (not the first one, still in the node's log) is up
    cluster.restart_node(1)
    assert (cluster.base / f"ray-{cluster.engines[1].name}.log").read_text().count("Ray runtime started") == 2
    cluster.wait_nodes(2)
    watch.check(now=2e9)
    assert len(watch.joined) == 1 and watch.joined[0] not in (worker, head)  # a new Ray node id
    runner.close()
