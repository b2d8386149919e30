"""The driver watches the cluster's nodes (issue 27, item 3): a node that comes back has what the
run left on its engine swept at once, for finished instances only; builds of a repository prefer
the node that built it before (a hint)."""

from __future__ import annotations

import pytest

from agents.models import InstanceResult
from envpool.pool import EnvPool
from envpool.records import EnvRecord
from pipeline.pipeline_config import load_config
from pipeline.executors import Done, Locality, MapRunner
from pipeline.nodes import NodeWatch
from pipeline.stages import Measured, WorkItem
from tests.envpool.test_pool import registry  # noqa: F401 - the fixture: Debian's docker-registry with htpasswd


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


def test_a_verified_row_names_the_node_that_verified_it():
    from envpool.fake_images import FakeImageStore
    from envpool.imagestore import use_store
    from pipeline.stages import MintStage

    def mint(instance, repo_path, config):
        outcome = "verified" if instance.instance_id.startswith("ok") else "no_fail_to_pass"
        return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome=outcome,
                              env=EnvRecord(instance_id=instance.instance_id, repo=instance.repo, base_commit="c",
                                            image_tag="swemint/env:x", node="stale"))

    def item(iid):
        from agents.models import Instance

        return WorkItem(Instance(instance_id=iid, repo="o/r", base_commit="a" * 40, patch="p", test_patch="t"), None)

    with use_store(FakeImageStore(["swemint/env:x"], node_name="engine-b")):
        stage = MintStage(load_config(None, []).mint, mint_fn=mint)
        assert stage.process(item("ok-1")).env.node == "engine-b"  # this node, whatever the minter said
        assert stage.process(item("nf2p-1")).env.node == "stale"  # only verified rows are placed


def test_earlier_runs_place_a_repository_on_the_node_that_holds_its_environments():
    """Seeded from the pool (by node name, newest per repository), resolved to today's Ray node
    id; what this run learns wins; a node no longer alive, or a cluster that does not answer,
    gives no hint; the cluster is asked at most once per `refresh_s`."""
    asked = []
    alive = {"id-b": "engine-b", "id-c": "engine-c"}

    def names():
        asked.append(1)
        if alive is None:
            raise ConnectionError("no cluster")
        return dict(alive)

    def rec(iid, repo, node):
        return EnvRecord(instance_id=iid, repo=repo, base_commit="c", image_tag=f"t:{iid}", node=node)

    loc = Locality(names=names, refresh_s=60)
    assert loc.seed([rec("a-1", "o/a", "engine-a"), rec("a-2", "o/a", "engine-b"),  # oldest first: newest wins
                     rec("g-1", "o/gone", "engine-a"), rec("u-1", "o/unknown", "")]) == 2
    assert loc.prefer("o/a") == "id-b"
    assert loc.prefer("o/gone") is None and loc.prefer("o/unknown") is None and loc.prefer("o/new") is None
    assert len(asked) == 1  # one look for all of them
    loc.note("o/a", "id-c")  # built elsewhere in this run
    assert loc.prefer("o/a") == "id-c"
    assert Locality().seed([rec("a-1", "o/a", "engine-a")]) == 1 and Locality().prefer("o/a") is None
    down = Locality(names=names, refresh_s=0)
    down.seed([rec("a-1", "o/a", "engine-b")])
    alive = None
    assert down.prefer("o/a") is None  # the cluster did not answer: no hint, no error


class NamedNodes(FakeExecutor):
    """A FakeExecutor on a cluster of two named nodes; items run on `runs_on`."""

    def __init__(self, runs_on="id-b"):
        super().__init__()
        self.runs_on = runs_on

    def node_names(self):
        return {"id-a": "engine-a", "id-b": "engine-b"}

    def close(self):
        pass

    def submit(self, stage, item, *, tag=None, timeout=None, prefer=None):
        self.hints.append((item.instance.instance_id, prefer))
        self.keys += 1
        self.done.append(Done(self.keys, tag, Measured(value=stage.process(item), node=self.runs_on)))
        return self.keys


def test_the_next_run_sends_a_repository_to_the_node_that_verified_it(tmp_path):
    """Run 1 verifies acme/calcy on engine-b (recorded in the pool); run 2 (the same instance
    re-verified) submits it with the hint of engine-b's Ray node id from its very first build."""
    from envpool.fake_images import FakeImageStore
    from envpool.imagestore import use_store
    from pipeline.demo import make_demo
    from pipeline.driver import run_mint

    demo = make_demo(tmp_path / "demo")

    def mint(instance, repo_path, config, **kw):
        return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome="verified",
                              env=EnvRecord(instance_id=instance.instance_id, repo=instance.repo, base_commit="c",
                                            image_tag="swemint/env:x"))

    def cfg(**kw):
        return load_config(None, [], workdir=tmp_path / "w", instances=demo.instances, mirrors=[demo.mirrors],
                           use_ray=False, ids=["acme__calcy-7"], **kw)

    with use_store(FakeImageStore(["swemint/env:x"], node_name="engine-b")):
        first = NamedNodes()
        run_mint(cfg(), mint_fn=mint, runner=MapRunner(first, workers=1))
        assert first.hints == [("acme__calcy-7", None)]  # nothing known yet
        assert EnvPool(tmp_path / "w" / "pool.duckdb").get("acme__calcy-7").node == "engine-b"
        second = NamedNodes(runs_on="id-a")
        run_mint(cfg(reverify=True), mint_fn=mint, runner=MapRunner(second, workers=1))
        assert second.hints == [("acme__calcy-7", "id-b")]


def test_swemint_run_seeds_the_hint_from_the_pool_too(tmp_path):
    """The streaming chain (`swemint run`, the Ray job) prefers the node an earlier run verified
    the repository on, from its first build."""
    from pipeline.demo import make_demo
    from pipeline.ray_adapter import LocalExecutor
    from pipeline.streaming import run_flow

    class Named(LocalExecutor):
        def __init__(self):
            super().__init__()
            self.hints = []

        def node_names(self):
            return {"id-b": "engine-b"}

        def submit(self, stage, item, *, tag=None, timeout=None, prefer=None):
            if stage.name == "mint":
                self.hints.append((item.instance.instance_id, prefer))
            return super().submit(stage, item, tag=tag, timeout=timeout, prefer=prefer)

    def mint(instance, repo_path, config, **kw):
        return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome="no_fail_to_pass")

    demo = make_demo(tmp_path / "demo")
    EnvPool(tmp_path / "w" / "pool.duckdb").add(EnvRecord(instance_id="acme__calcy-1", repo="acme/calcy",
                                                          base_commit="c", image_tag="t:1", node="engine-b"))
    ex = Named()
    run_flow(load_config(None, [], workdir=tmp_path / "w", instances=demo.instances, mirrors=[demo.mirrors],
                         use_ray=False, ids=["acme__calcy-7", "acme__textkit-12"]), executor=ex, mint_fn=mint)
    assert sorted(ex.hints) == [("acme__calcy-7", "id-b"), ("acme__textkit-12", None)]


@pytest.mark.docker
def test_a_reuse_candidate_verified_on_another_node_is_pulled_by_digest_and_checked(registry, docker_client,
                                                                                   debian_image, tmp_path,
                                                                                   monkeypatch):
    """Issue 27 item 2: a build offered environments of its repository that this node lacks gets
    them pulled by the digest the pool records, each checked against the pool's image id; one
    whose pulled image is not the pool's is dropped (the instance builds without it), and the
    pull is an image event of this node."""
    import uuid

    from envpool.pool import publish_image
    from envpool.image_registry import read_events
    from pipeline.stages import MintStage

    monkeypatch.setenv("T_REG_USER", "swemint")
    monkeypatch.setenv("T_REG_PASS", "s3cret")
    name = f"swemint-test/reuse-{uuid.uuid4().hex[:8]}"
    c = docker_client.containers.run(debian_image, ["sh", "-c", "echo ours > /marker"], detach=True,
                                     labels={"swemint.run": "test-reuse-pull"})
    c.wait()
    ours = c.commit(repository=name, tag="good").id
    c.remove()
    try:
        loc = publish_image(f"{name}:good", registry, client=docker_client,
                            auth={"username": "swemint", "password": "s3cret"})
        docker_client.images.remove(f"{name}:good")  # built on another node: not here
        good = EnvRecord(instance_id="o__r-1", repo="o/r", base_commit="c", image_tag=f"{name}:good",
                         image_id=ours, location=loc)
        replaced = good.model_copy(update={"instance_id": "o__r-2", "image_tag": f"{name}:bad",
                                           "image_id": "sha256:" + "0" * 64})
        seen = {}

        def mint(instance, repo_path, config, candidates=None):
            seen["candidates"] = [x.instance_id for x in candidates or []]
            seen["here"] = docker_client.images.get(f"{name}:good").id
            return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome="no_fail_to_pass")

        cfg = load_config(None, [f"registry={registry}", "registry_auth.username_env=T_REG_USER",
                                 "registry_auth.password_env=T_REG_PASS"], workdir=tmp_path)
        from agents.models import Instance

        it = WorkItem(Instance(instance_id="o__r-3", repo="o/r", base_commit="a" * 40, patch="p", test_patch="t"),
                      tmp_path)
        it.candidates = [replaced, good]
        stage = MintStage(cfg.mint, mint_fn=mint, registry=registry, registry_auth=("T_REG_USER", "T_REG_PASS"))
        assert stage.process(it).outcome == "no_fail_to_pass"
        assert seen == {"candidates": ["o__r-1"], "here": ours}  # pulled and checked; the replaced one dropped
        assert not docker_client.images.list(name=f"{name}:bad")
        pulls = [e for e in read_events(cfg.mint.images.shared_dir) if e["action"] == "pulled"]
        assert [(e["kind"], e["ref"], e["instance_id"]) for e in pulls] == [("environment", loc, "o__r-1")]
    finally:
        for img in docker_client.images.list(name=name):
            for ref in img.tags:
                docker_client.images.remove(ref, force=True)
        try:
            docker_client.images.remove(ours, force=True)
        except Exception:  # noqa: BLE001 - gone already
            pass


class ThreeNodes(NamedNodes):
    """NamedNodes whose `each_node` runs nothing: it records the call and answers for three nodes."""

    def __init__(self):
        super().__init__()
        self.each = []

    def node_ids(self):
        return {"id-a", "id-b", "id-c"}

    def each_node(self, fn, *args, nodes=None):
        self.each.append((fn.__name__, args))
        return [{"containers": 1, "images": 0, "errors": 0} for _ in (nodes or self.node_ids())]


def test_a_resumed_driver_sweeps_what_the_killed_one_started_on_every_node(tmp_path):
    """Issue 27 item 3, the driver killed: the rerun removes the leftovers of the instances the
    dead driver had started on every node of the cluster (not only the driver's host), then
    redoes only those."""
    from pipeline.demo import make_demo
    from pipeline.driver import run_mint
    from pipeline.instances import load_and_select
    from pipeline.store import ResultStore

    demo = make_demo(tmp_path / "demo")
    cfg = load_config(None, [], workdir=tmp_path / "w", instances=demo.instances, mirrors=[demo.mirrors],
                      use_ray=False, ids=["acme__calcy-7", "acme__textkit-12"])
    rows = {i.instance_id: i for i in load_and_select(demo.instances).instances}
    store = ResultStore(cfg.workdir)
    store.mark_running(rows["acme__textkit-12"])
    store.write_result(InstanceResult(instance_id="acme__textkit-12", repo="acme/textkit", outcome="no_fail_to_pass"))
    store.mark_running(rows["acme__calcy-7"])  # in flight when the driver was killed

    def mint(instance, repo_path, config, **kw):
        return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome="no_fail_to_pass")

    ex = ThreeNodes()
    report = run_mint(cfg, mint_fn=mint, runner=MapRunner(ex, workers=1))
    assert ex.each == [("sweep_leftovers", (cfg.mint.run_id, ["acme__calcy-7"], []))]
    assert [r.instance_id for r in report.results] == ["acme__calcy-7"]
    assert "removed 3 container(s)" in (cfg.workdir / "driver.log").read_text()
