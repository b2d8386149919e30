"""Runners: one row per item whatever happens (raise, hang, worker crash), bounded in flight."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from agents.models import Instance, InstanceResult
from pipeline.pipeline_config import RayConfig
from pipeline.ray_adapter import LocalRunner, RayRunner, init_ray, shutdown_local_ray
from pipeline.stages import StageResources, WorkItem


class FakeStage:
    """Behaviour by instance id: `raise`, `hang`, `crash` (kills the worker process), else verified."""

    name = "fake"

    def __init__(self, hang_s: float = 60.0, resources: StageResources | None = None):
        self.hang_s = hang_s
        self.resources = resources or StageResources(num_cpus=0.5, resources={"docker": 1.0})

    def process(self, item: WorkItem) -> InstanceResult:
        kind = item.instance.instance_id.split("-")[0]
        if kind == "raise":
            raise RuntimeError("boom in the stage")
        if kind == "hang":
            time.sleep(self.hang_s)
        if kind == "crash":
            os._exit(3)
        return InstanceResult(instance_id=item.instance.instance_id, repo=item.instance.repo, outcome="verified",
                              reason=f"pid {os.getpid()}")


def _roomy():
    """A MintConfig whose low-disk guard is off: the guard measures the host's free space, not
    these fake minters (tests/conftest.py does the same for configs loaded from files)."""
    from agents.mint_config import MintConfig

    return MintConfig(limits={"min_free_disk_bytes": 0})


def items(*ids: str) -> list[WorkItem]:
    return [WorkItem(Instance(instance_id=i, repo="o/p", base_commit="c", patch="", test_patch=""), Path("/nope"))
            for i in ids]


class Tracker:
    """Counts items in flight at each submission (submitted minus yielded)."""

    def __init__(self):
        self.submitted, self.yielded, self.peak = [], 0, 0

    def on_submit(self, item: WorkItem) -> None:
        self.submitted.append(item.instance.instance_id)
        self.peak = max(self.peak, len(self.submitted) - self.yielded)

    def drain(self, gen) -> dict[str, InstanceResult]:
        out = {}
        for r in gen:
            self.yielded += 1
            assert r.instance_id not in out, "one row per item"
            out[r.instance_id] = r
        return out


def test_local_runner_rows_for_raise_and_hang_and_bounded_in_flight():
    t = Tracker()
    t0 = time.monotonic()
    got = t.drain(LocalRunner(workers=2, timeout=0.5).run(FakeStage(hang_s=5), items(
        "ok-1", "raise-2", "hang-3", "ok-4", "ok-5"), on_submit=t.on_submit))
    assert time.monotonic() - t0 < 3  # the hung item was abandoned, not waited for
    assert {k: v.outcome for k, v in got.items()} == {"ok-1": "verified", "raise-2": "infra_error",
                                                      "hang-3": "timeout", "ok-4": "verified", "ok-5": "verified"}
    assert "RuntimeError: boom in the stage" in got["raise-2"].reason and "test_ray_adapter.py" in got["raise-2"].reason
    assert got["hang-3"].timings["total"] == 0.5
    assert t.peak == 2 and len(t.submitted) == 5


def test_local_runner_wrong_return_is_infra_error():
    class Wrong(FakeStage):
        def process(self, item):
            return InstanceResult(instance_id="someone-else", repo="o/p", outcome="verified")

    got = list(LocalRunner().run(Wrong(), items("ok-1")))
    assert got[0].instance_id == "ok-1" and got[0].outcome == "infra_error" and "instead of" in got[0].reason


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory):
    """A real local Ray (2 CPUs, 2 `docker` slots), started once for this module."""
    import ray
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import this test module
    if ray.is_initialized():
        ray.shutdown()
    started = init_ray(RayConfig(num_cpus=2, object_store_memory=100 * 1024**2), workers=2)
    assert started and os.environ["RAY_AUTH_MODE"] == "token" and os.environ["RAY_USAGE_STATS_ENABLED"] == "0"
    folder = Path(os.environ["RAY_AUTH_TOKEN_PATH"]).parent
    yield ray
    assert folder.is_dir()
    shutdown_local_ray()
    assert not folder.exists()  # the token folder ends with the local Ray it was made for


def test_the_token_folder_goes_when_released_or_at_exit_and_a_given_token_stays(tmp_path, monkeypatch):
    import subprocess

    from pipeline import raysec

    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    monkeypatch.setattr(raysec, "_TOKEN_PATH", None)
    monkeypatch.setattr(raysec, "_refresh_ray_auth", lambda: None)
    token = raysec.ensure_local_token(tmp_path)
    assert token.is_file() and token.parent.name.startswith("swemint-ray-auth-")
    raysec.release_local_token()
    assert not token.parent.exists() and "RAY_AUTH_TOKEN_PATH" not in os.environ and "RAY_AUTH_MODE" not in os.environ
    given = tmp_path / "mine"
    given.write_text("ab" * 32)
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(given))
    assert raysec.ensure_local_token(tmp_path) == given
    raysec.release_local_token()
    assert given.is_file()
    base = tmp_path / "exit"
    code = ("from pathlib import Path; from pipeline import raysec; raysec._refresh_ray_auth = lambda: None; "
            f"print(raysec.ensure_local_token(Path({str(base)!r})))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.strip().startswith(str(base)) and list(base.iterdir()) == []  # removed when the driver exited


@pytest.mark.slow
def test_ray_runner_raise_hang_crash_become_rows(local_ray):
    assert local_ray.cluster_resources().get("docker") == 2.0
    t = Tracker()
    # timeout: long enough for a replacement worker to start on a loaded host (ok-5 runs after
    # crash-4 killed its worker; 8 s was too short at load 18), far below the hang's 120 s
    runner = RayRunner(workers=2, timeout=25)
    t0 = time.monotonic()
    got = t.drain(runner.run(FakeStage(hang_s=120), items("ok-1", "raise-2", "hang-3", "crash-4", "ok-5", "ok-6"),
                             on_submit=t.on_submit))
    assert time.monotonic() - t0 < 100  # the hang was cut by the timeout, not waited out
    assert {k: v.outcome for k, v in got.items()} == {
        "ok-1": "verified", "raise-2": "infra_error", "hang-3": "timeout", "crash-4": "infra_error",
        "ok-5": "verified", "ok-6": "verified"}
    assert "RuntimeError: boom in the stage" in got["raise-2"].reason
    assert got["crash-4"].reason.startswith("Ray task failed:")
    assert got["ok-1"].reason != f"pid {os.getpid()}"  # it ran in a worker, not in the driver
    assert t.peak == 2
    runner.close()
    assert local_ray.is_initialized()  # the runner did not start this Ray, so it leaves it running


def _agent_port(ray_module, wait_s: float = 120.0) -> int:
    """The dashboard agent's HTTP port once it accepts connections. Under load the agent starts
    after the workers: its port read at once can be None (urllib then failed with "Servname not
    supported", CI-style run on a loaded host) or not yet listening; the port file Ray writes into
    the session folder (`dashboard_agent_listen_port_<node id>`) is read again until it names a
    port that accepts connections (the GCS's node record said -1, and asking it by the wrong key
    failed with "RPC error: Deadline Exceeded" in a CI-style run)."""
    import socket
    import time

    deadline = time.monotonic() + wait_s
    while True:
        node = ray_module._private.worker.global_worker.node
        port = node.dashboard_agent_listen_port  # read once at init: refreshed from the GCS below
        if not (isinstance(port, int) and port > 0):
            # the port the agent chose, as Ray writes it into the session folder per node
            # (the GCS's node record says -1 when the port was not fixed up front)
            saved = Path(node.get_session_dir_path()) / f"dashboard_agent_listen_port_{node.node_id}"
            try:
                port = int(saved.read_text().strip())
            except (OSError, ValueError):
                port = None
        if isinstance(port, int) and port > 0:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=2).close()
                return port
            except OSError:
                pass
        if time.monotonic() > deadline:
            raise AssertionError(f"the dashboard agent did not listen within {wait_s:.0f} s (port {port!r})")
        time.sleep(0.5)


@pytest.mark.slow
def test_local_ray_listens_on_loopback_only_and_refuses_requests_without_the_token(local_ray):
    import socket
    import stat
    import urllib.error
    import urllib.request

    from pipeline.raysec import descendants, exposed_sockets, listening_sockets

    got = list(RayRunner(workers=2, timeout=60).run(FakeStage(), items("ok-1", "ok-2")))  # workers exist
    assert [r.outcome for r in got] == ["verified", "verified"]
    ours = listening_sockets(descendants(os.getpid()) | {os.getpid()})
    assert len(ours) >= 4 and {c for _, c, _, _ in ours} >= {"gcs_server", "raylet"}
    assert exposed_sockets() == [], exposed_sockets()
    token = Path(os.environ["RAY_AUTH_TOKEN_PATH"])
    assert stat.S_IMODE(token.stat().st_mode) == 0o600 and len(token.read_text()) == 64
    port = _agent_port(local_ray)
    url = f"http://127.0.0.1:{port}/api/job_agent/jobs/"
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url, timeout=10)
    assert e.value.code == 401  # the job API refuses a request without the token
    with pytest.raises(urllib.error.HTTPError) as e:  # with it, the request passes auth (GET: 405)
        urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": f"Bearer {token.read_text()}"}),
                               timeout=10)
    assert e.value.code != 401
    # the check is not blind: a socket of this process bound to every address is reported
    s = socket.socket()
    s.bind(("0.0.0.0", 0))
    s.listen(1)
    try:
        assert any(port == s.getsockname()[1] for _, _, _, port in exposed_sockets())
    finally:
        s.close()


@pytest.mark.slow
def test_ray_runner_drops_resources_the_cluster_lacks(local_ray):
    stage = FakeStage(resources=StageResources(num_cpus=0.5, resources={"docker": 1.0, "gpu_box": 1.0}))
    got = list(RayRunner(workers=2, timeout=30).run(stage, items("ok-1", "ok-2")))
    assert [r.outcome for r in got] == ["verified", "verified"]  # not stuck as infeasible


@pytest.mark.slow
def test_ray_each_node_runs_once_per_node_in_a_worker(local_ray):
    got = RayRunner(workers=2).each_node(os.getpid)
    assert len(got) == len(local_ray.nodes()) == 1 and got[0] != os.getpid()
    assert LocalRunner().each_node(os.getpid) == [os.getpid()]


def test_mint_stage_publishes_verified_images_and_records_where():
    from agents.models import EnvRecord
    from envpool.fake_images import FakeImageStore
    from envpool.imagestore import use_store
    from pipeline.stages import MintStage

    def mint(instance, repo_path, config, env=None):
        outcome = "verified" if instance.instance_id.startswith("ok") else "no_fail_to_pass"
        return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome=outcome,
                              timings={"total": 2.0}, env=EnvRecord(instance_id=instance.instance_id, repo="o/p",
                                                                    base_commit="c", image_tag="swemint/env:x"))

    images = FakeImageStore(["swemint/env:x"], registries_down={"down:5000"})
    with use_store(images):
        stage = MintStage(_roomy(), mint_fn=mint, registry="127.0.0.1:5000")
        ok, nf2p = (stage.process(it) for it in items("ok-1", "nf2p-2"))
        assert ok.outcome == "verified" and ok.env.location == "127.0.0.1:5000/swemint/env@" + images["swemint/env:x"].id
        assert ok.timings["total"] == 2.0 and "publish" in ok.timings
        # only verified images travel
        assert nf2p.env.location == "local" and [t for t, _ in images.pushed] == ["swemint/env:x"]
        down = MintStage(_roomy(), mint_fn=mint, registry="down:5000").process(items("ok-3")[0])
        assert down.outcome == "infra_error" and down.env is None and "connection refused" in down.reason
        assert MintStage(_roomy(), mint_fn=mint).process(items("ok-4")[0]).env.location == "local"


class CrashOnce(FakeStage):
    """Kills its worker process the first time it sees an item (a marker file in `folder`), then
    succeeds: a build whose worker or node died, run again."""

    name = "crash-once"

    def __init__(self, folder: Path):
        super().__init__()
        self.folder = folder

    def process(self, item: WorkItem) -> InstanceResult:
        marker = self.folder / item.instance.instance_id
        if not marker.exists():
            marker.write_text(str(os.getpid()))
            os._exit(3)
        return super().process(item)


@pytest.mark.slow
def test_a_task_whose_worker_died_is_run_again_and_ends_as_one_row(local_ray, tmp_path):
    got = list(RayRunner(workers=2, timeout=120).run(CrashOnce(tmp_path), items("ok-1", "ok-2")))
    assert sorted((r.instance_id, r.outcome) for r in got) == [("ok-1", "verified"), ("ok-2", "verified")]
    for r in got:  # the second attempt ran in another worker process than the one that died
        assert r.reason != f"pid {(tmp_path / r.instance_id).read_text()}"


@pytest.mark.slow
def test_a_preferred_node_is_used_and_reported_and_an_unknown_one_is_only_a_hint(local_ray):
    from pipeline.ray_adapter import RayExecutor

    ex = RayExecutor(workers=2)
    (node,) = ex.node_ids()
    ex.submit(FakeStage(), items("ok-1")[0], tag="a", timeout=60, prefer=node)
    ex.submit(FakeStage(), items("ok-2")[0], tag="b", timeout=60, prefer="ab" * 28)  # no such node
    done = []
    while len(done) < 2:
        done += ex.poll(5.0)
    assert {d.tag: (d.result.value.outcome, d.result.node) for d in done} == {"a": ("verified", node),
                                                                            "b": ("verified", node)}
    assert set(ex.node_names()) == {node}
