"""Resume after `kill -9` of the driver: nothing lost, nothing doubled, a crashed run's leftovers
removed (and only those), one driver per work directory."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from agents.models import EnvRecord, InstanceResult
from envpool.pool import EnvPool
from pipeline.pipeline_config import load_config, run_id_for
from pipeline.demo import expected_outcomes, make_demo
from pipeline.driver import run_mint
from pipeline.store import ResultStore, WorkdirLocked, driver_lock

ROOT = Path(__file__).resolve().parents[2]


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def demo_input(tmp_path_factory):
    return make_demo(tmp_path_factory.mktemp("demo"))


def fake_mint(instance, repo_path, config, env=None):
    return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome="verified",
                          FAIL_TO_PASS=["t::x"], timings={"total": 1.0, "setup": 0.5},
                          env=EnvRecord(instance_id=instance.instance_id, repo=instance.repo,
                                        base_commit=instance.base_commit, image_tag=f"t:{instance.instance_id}",
                                        image_id=f"sha256:{instance.instance_id}"))


def test_driver_lock_refuses_a_second_driver_and_dies_with_a_killed_one(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; sys.path.insert(0, sys.argv[1]);"
                               "from pipeline.store import driver_lock\n"
                               "with driver_lock(sys.argv[2]):\n print('held', flush=True); time.sleep(60)",
                               str(ROOT), str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(WorkdirLocked, match=f"pid {holder.pid}"), driver_lock(tmp_path):
            pass
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    with driver_lock(tmp_path):  # the kernel dropped the dead driver's lock
        pass


def test_default_run_id_follows_the_workdir(tmp_path):
    a = load_config(None, [], workdir=tmp_path / "a")
    assert a.mint.run_id == run_id_for(tmp_path / "a") != load_config(None, [], workdir=tmp_path / "b").mint.run_id
    assert load_config(None, [], workdir=tmp_path / "a").mint.run_id == a.mint.run_id  # stable across reruns
    assert load_config(None, ["mint.run_id=nightly"], workdir=tmp_path / "a").mint.run_id == "nightly"


def test_rerun_sweeps_the_leftovers_of_instances_a_crashed_run_started(tmp_path, demo_input, monkeypatch):
    mirrors, instances = demo_input
    cfg = load_config(None, [], workdir=tmp_path / "w", instances=instances, mirrors=[mirrors], use_ray=False)
    ids = sorted(expected_outcomes())
    store = ResultStore(cfg.workdir)
    from pipeline.instances import load_and_select

    rows = {i.instance_id: i for i in load_and_select(instances).instances}
    store.mark_running(rows[ids[0]])
    store.write_result(fake_mint(rows[ids[0]], None, None))  # finished before the crash
    EnvPool(cfg.pool_path).add(fake_mint(rows[ids[0]], None, None).env)
    store.mark_running(rows[ids[1]])  # in flight when the driver was killed
    swept = []
    monkeypatch.setattr("pipeline.driver.sweep_leftovers",
                        lambda run_id, iids, keep: swept.append((run_id, sorted(iids), keep)) or {"containers": 1})
    report = run_mint(cfg, mint_fn=fake_mint)
    assert swept == [(cfg.mint.run_id, [ids[1]], [])]  # only what the dead run started and this run redoes
    assert sorted(r.instance_id for r in report.results) == ids[1:]
    assert [r.instance_id for r in report.skipped] == [ids[0]]
    assert store.attempts() == {ids[0]: 1, ids[1]: 2, ids[2]: 1, ids[3]: 1}
    log = (cfg.workdir / "driver.log").read_text()
    assert "resume: 1 instance(s) to redo had started before; removed 1 container(s)" in log
    assert f"{ids[1]} verified total=1.0s setup=0.5s | 1/3 | verified=1" in log
    swept.clear()
    run_mint(cfg, mint_fn=fake_mint)  # nothing left to redo: no sweep at all
    assert swept == []


@pytest.mark.docker
def test_sweep_leftovers_removes_a_dead_runs_containers_and_unrecorded_images(docker_client, debian_image):
    from pipeline.stages import sweep_leftovers

    run, other_run = f"test-sweep-{uuid.uuid4().hex[:8]}", f"test-other-{uuid.uuid4().hex[:8]}"
    repo = f"swemint/test-sweep-{uuid.uuid4().hex[:8]}"

    def container(run_id: str, iid: str):
        return docker_client.containers.run(debian_image, ["sleep", "infinity"], detach=True, init=True,
                                            labels={"swemint.run": run_id, "swemint.instance": iid})

    made = [container(run, "a-1"), container(run, "b-2"), container(other_run, "a-1")]
    try:
        img_a = made[0].commit(repository=repo, tag="a",
                               conf={"Labels": {"swemint.run": run, "swemint.instance": "a-1"}})
        img_b = made[1].commit(repository=repo, tag="b",
                               conf={"Labels": {"swemint.run": run, "swemint.instance": "b-2"}})
        got = sweep_leftovers(run, ["a-1", "b-2"], keep_image_ids=[img_b.id])
        assert got == {"containers": 2, "images": 1, "errors": 0}
        left = {c.id for c in docker_client.containers.list(all=True, filters={"label": f"swemint.run={run}"})}
        assert left == set()
        assert docker_client.containers.get(made[2].id).status == "running"  # another run's: untouched
        assert [i.id for i in docker_client.images.list(name=repo)] == [img_b.id]  # the pooled one stays
        assert img_a.id not in {i.id for i in docker_client.images.list(all=True)}
    finally:
        for c in made:
            try:
                c.remove(force=True)
            except Exception:
                pass
        for img in docker_client.images.list(name=repo):
            docker_client.images.remove(img.id, force=True)


@pytest.mark.slow
@pytest.mark.docker
def test_kill_9_half_way_then_rerun_loses_nothing_and_doubles_nothing(docker_client, python_image, tmp_path):
    """The whole scenario on two demo instances (the fewest a run can be killed half-way through:
    one done, one in flight), in-process runner: reference run, killed run, rerun."""
    bench = load_script("bench_resume")
    fast = ["--set", "mint.verify.before_runs=1", "--set", "mint.verify.after_runs=1"]  # both runs alike
    ids = tmp_path / "ids.txt"
    ids.write_text("acme__calcy-7\nacme__dateparse-31\n")
    report = bench.run_bench(bench.parse_args(["--root", str(tmp_path), "--no-ray", "--kill-delay", "1",
                                               "--ids-file", str(ids), *fast]))
    assert report["selected"] == 2
    assert report["killed"]["done_at_kill"] == 1 and len(report["killed"]["in_flight_at_kill"]) == 1
    assert report["lost"] == [] and report["two_dataset_rows"] == [] and report["two_pool_rows"] == []
    assert report["two_pool_images"] == [] and report["containers_left"] == 0
    assert report["two_dependency_images"] == []  # the rerun reused the layer the killed run made under its key
    assert report["rebuilt"] == report["killed"]["in_flight_at_kill"]  # caught mid-build: rebuilt once
    assert report["rebuilt_not_in_flight"] == []
    assert report["content_equal"] is True, report.get("content_diff")
    assert any("removed 1 container(s)" in line for line in report["sweep"])  # the dead run's container
    assert report["ok"]


def test_the_resume_benchmark_can_kill_the_whole_chain():
    """`bench_resume.py --via run` kills and reruns `swemint run` (the instance file as its source)."""
    bench = load_script("bench_resume")
    args = bench.parse_args(["--via", "run", "--instances", "t.jsonl", "--mirrors", "m"])
    cmd = bench.mint_command(args, Path("w"), "swemint/x")
    assert cmd[2:9] == ["pipeline.cli", "run", "-i", "t.jsonl", "-w", "w", "--workers"] and cmd[-2:] == ["-m", "m"]
    args = bench.parse_args(["--via", "run", "--instances", "t.jsonl", "--ids-file", "ids.txt"])
    with pytest.raises(ValueError, match="--ids-file is for --via mint"):
        bench.mint_command(args, Path("w"), "swemint/x")
