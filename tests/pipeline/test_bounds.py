"""Host bounds in the driver (issue 11, item 4): free disk is checked before each instance (low
disk is an `infra_error` that stops new work, never a crash, and every selected instance still
gets a row), and an instance the runner abandons at its deadline has its container removed at
once instead of running on."""

from __future__ import annotations

import time
import uuid

import pytest

from agents.models import InstanceResult
from pipeline.pipeline_config import load_config
from pipeline.demo import make_demo
from pipeline.driver import run_mint
from pipeline.store import ResultStore


@pytest.fixture(scope="module")
def demo_input(tmp_path_factory):
    return make_demo(tmp_path_factory.mktemp("demo"))


def _cfg(tmp_path, demo_input, *sets):
    mirrors, instances = demo_input
    return load_config(None, ["mint.memory.enabled=false", "mint.reuse.enabled=false", *sets],
                       workdir=tmp_path / "w", instances=instances, mirrors=[mirrors], use_ray=False)


def ok(instance, repo_path, config, **kw):
    return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome="no_fail_to_pass")


def test_low_disk_before_the_run_starts_nothing_and_every_instance_gets_a_row(tmp_path, demo_input):
    calls = []
    cfg = _cfg(tmp_path, demo_input, f"mint.limits.min_free_disk_bytes={10**18}")
    report = run_mint(cfg, mint_fn=lambda *a, **k: calls.append(a) or ok(*a, **k))
    assert calls == [] and len(report.results) == 4
    assert all(r.outcome == "infra_error" and r.reason.startswith("not started: low disk") for r in report.results)
    assert "GiB free under" in report.results[0].reason and "\n" not in report.results[0].reason
    store = ResultStore(cfg.workdir, cfg.retry_outcomes)
    assert all(store.needs_run(r.instance_id) for r in report.results)  # retried when there is room


def test_low_disk_on_a_worker_stops_new_work(tmp_path, demo_input, monkeypatch):
    """The node's Docker root fills up: its instance is `infra_error` "low disk", and the driver
    submits nothing after it."""
    import envpool.hostfs as hostfs
    import pipeline.stages as stages

    fake_root = tmp_path / "docker-root"
    fake_root.mkdir()
    real = hostfs.free_bytes
    monkeypatch.setattr(stages, "_docker_root", lambda: [str(fake_root)])
    monkeypatch.setattr(hostfs, "free_bytes", lambda p: 1024 if str(p) == str(fake_root) else real(p))
    calls = []
    cfg = _cfg(tmp_path, demo_input, "mint.limits.min_free_disk_bytes=1000000")  # 1 MB: the work dir has it
    report = run_mint(cfg, mint_fn=lambda *a, **k: calls.append(a) or ok(*a, **k))
    assert calls == []  # the worker refused before building
    reasons = [r.reason for r in report.results]
    assert reasons[0].startswith("low disk: 0.0 GiB free under") and len(reasons) == 4
    assert all(r.startswith("not started: low disk") for r in reasons[1:])


@pytest.mark.docker
def test_an_abandoned_instance_has_its_container_removed_at_once(tmp_path, demo_input, docker_client, debian_image):
    """The in-process runner gives up on an instance at its deadline (a thread cannot be killed):
    before the change its container kept running until the next run's sweep."""
    run_id = f"test-abandon-{uuid.uuid4().hex[:8]}"
    started = []

    def hang(instance, repo_path, config, **kw):
        c = docker_client.containers.run(debian_image, ["sleep", "600"], detach=True,
                                         labels={"swemint.run": run_id, "swemint.instance": instance.instance_id})
        started.append(c.id)
        time.sleep(8)
        return ok(instance, repo_path, config)

    mirrors, instances = demo_input
    cfg = load_config(None, ["mint.memory.enabled=false", "mint.reuse.enabled=false", "instance_timeout=2",
                             f"mint.run_id={run_id}", "limit=1"],
                      workdir=tmp_path / "w", instances=instances, mirrors=[mirrors], use_ray=False)
    try:
        report = run_mint(cfg, mint_fn=hang)
        assert [r.outcome for r in report.results] == ["timeout"]
        left = docker_client.containers.list(all=True, filters={"label": f"swemint.run={run_id}"})
        assert started and left == []
    finally:
        for c in docker_client.containers.list(all=True, filters={"label": f"swemint.run={run_id}"}):
            c.remove(force=True)
