"""The driver watches the cluster's nodes (issue 27, item 3): a node that comes back has what the
run left on its engine swept at once, for finished instances only; builds of a repository prefer
the node that built it before (a hint)."""

from __future__ import annotations

from agents.models import InstanceResult
from envpool.pool import EnvPool
from envpool.records import EnvRecord
from pipeline.config import load_config
from pipeline.executors import Done, Locality, MapRunner
from pipeline.nodes import NodeWatch
from pipeline.stages import Measured, WorkItem


class FakeCluster:
    """Node ids that come and go; `each_node` calls recorded with the nodes they targeted."""

    def __init__(self, ids):
        self.ids = set(ids)
        self.calls = []

    def node_ids(self):
        return set(self.ids)

    def each_node(self, fn, *args, nodes=None):
        self.calls.append((fn.__name__, args, None if nodes is None else set(nodes)))
        return [{"containers": 2, "images": 1, "errors": 0} for _ in (nodes or self.ids)]


class _Store:
    def results(self):
        return [InstanceResult(instance_id=i, repo="o/r", outcome="verified") for i in ("o__r-1", "o__r-2")]


def test_a_node_that_comes_back_is_swept_of_finished_instances_only(tmp_path):
    pool = EnvPool(tmp_path / "pool.duckdb")
    pool.add(EnvRecord(instance_id="o__r-1", repo="o/r", base_commit="a" * 40, image_tag="t:1", image_id="sha256:keep"))
    cfg = load_config(None, [], workdir=tmp_path)
    cluster = FakeCluster({"head", "w1", "w2"})
    watch = NodeWatch(cfg, cluster, _Store(), pool, every_s=10)
    assert watch.check(now=100) == [] and cluster.calls == []  # the first look only learns the nodes
    cluster.ids.discard("w2")  # killed
    assert watch.check(now=105) == []  # too soon: nothing looked at
    assert watch.check(now=111) == [] and watch.lost == ["w2"]
    cluster.ids.add("w2-again")  # back, with a new Ray node id
    assert watch.check(now=125) == ["w2-again"]
    name, args, nodes = cluster.calls[-1]
    assert name == "sweep_leftovers" and nodes == {"w2-again"}
    assert args == (cfg.mint.run_id, ["o__r-1", "o__r-2"], ["sha256:keep"])  # pooled images are kept
    assert watch.swept["containers"] == 2
    # at the end of a run in which nodes came and went: every node once more
    assert watch.sweep_finished() == {"containers": 6, "images": 3, "errors": 0}  # three nodes alive
    assert cluster.calls[-1][2] is None


def test_no_sweep_at_the_end_when_no_node_came_or_went(tmp_path):
    cluster = FakeCluster({"head"})
    watch = NodeWatch(load_config(None, [], workdir=tmp_path), cluster, _Store(), EnvPool(tmp_path / "p.duckdb"))
    watch.check(now=0)
    assert watch.sweep_finished() == {} and cluster.calls == []


def test_builds_of_a_repository_prefer_the_node_that_built_it():
    loc = Locality()
    assert loc.prefer("o/r") is None
    loc.note("o/r", "node-a")
    loc.note("o/r", "")  # unknown (in-process): no change
    assert loc.prefer("o/r") == "node-a"


class FakeExecutor:
    """Runs items at once; reports each on the node a fixed map gives; records the hints."""

    def __init__(self):
        self.hints, self.done, self.keys = [], [], 0

    def submit(self, stage, item, *, tag=None, timeout=None, prefer=None):
        self.hints.append((item.instance.instance_id, prefer))
        self.keys += 1
        res = InstanceResult(instance_id=item.instance.instance_id, repo=item.instance.repo, outcome="verified")
        self.done.append(Done(self.keys, tag, Measured(value=res, node=f"node-of-{item.instance.repo}")))
        return self.keys

    def poll(self, timeout):
        out, self.done = self.done, []
        return out

    def in_flight(self):
        return len(self.done)


def test_the_runner_passes_the_hint_and_counts_rows_per_node(tmp_path):
    from agents.models import Instance

    def item(i, repo):
        return WorkItem(Instance(instance_id=f"{repo.replace('/', '__')}-{i}", repo=repo, base_commit="a" * 40,
                                 patch="p", test_patch="t"), tmp_path)

    ex = FakeExecutor()
    runner = MapRunner(ex, workers=1)
    stage = type("S", (), {"name": "mint", "resources": None})()
    rows = list(runner.run(stage, [item(1, "o/a"), item(2, "o/a"), item(1, "o/b")]))
    assert [r.instance_id for r in rows] == ["o__a-1", "o__a-2", "o__b-1"]
    assert ex.hints == [("o__a-1", None), ("o__a-2", "node-of-o/a"), ("o__b-1", None)]
    assert runner.nodes == {"node-of-o/a": 2, "node-of-o/b": 1}
