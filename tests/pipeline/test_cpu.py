"""CPU-seconds of a stage call: this thread and its children, and its Docker containers' cgroups."""

from __future__ import annotations

import subprocess
import uuid

import pytest

from pipeline.cpu import ContainerCpu, container_cpu_seconds
from pipeline.stages import run_measured


def test_cgroup_counters_are_read_in_v1_and_v2_layouts(tmp_path):
    v1 = tmp_path / "v1" / "cpuacct" / "docker" / "abc"
    v1.mkdir(parents=True)
    (v1 / "cpuacct.usage").write_text("2500000000\n")
    assert container_cpu_seconds("abc", tmp_path / "v1") == 2.5
    v2 = tmp_path / "v2" / "system.slice" / "docker-def.scope"
    v2.mkdir(parents=True)
    (v2 / "cpu.stat").write_text("usage_usec 1500000\nuser_usec 1000000\n")
    assert container_cpu_seconds("def", tmp_path / "v2") == 1.5
    assert container_cpu_seconds("nope", tmp_path / "v2") is None


def test_a_stage_call_counts_the_cpu_of_its_subprocesses():
    class Busy:
        name = "busy"

        def process(self, item):
            subprocess.run(["python3", "-c", "x = 0\nfor i in range(3_000_000): x += i"], check=True)
            return "done"

    m = run_measured(Busy(), None)
    assert m.value == "done" and m.error is None and m.cpu_s >= 0.1 and m.wall_s >= m.cpu_s * 0.5

    class Boom:
        name = "boom"

        def process(self, item):
            raise ValueError("bad unit")

    m = run_measured(Boom(), None)
    assert m.value is None and "boom raised ValueError: bad unit" in m.error


@pytest.mark.docker
def test_container_cpu_is_sampled_by_label(docker_client, debian_image):
    run = f"test-cpu-{uuid.uuid4().hex[:8]}"
    with ContainerCpu({"swemint.run": run}, interval=0.1, discover_every=0.3) as meter:
        work = "i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done; sleep 1.5"  # fixed work, then idle
        c = docker_client.containers.run(debian_image, ["bash", "-c", work], detach=True, labels={"swemint.run": run})
        try:
            c.wait(timeout=60)
        finally:
            c.remove(force=True)
    assert meter.seconds >= 0.3, meter.seen  # a million shell iterations: well over a CPU-second here
    with ContainerCpu({"swemint.run": "nobody-" + run}, interval=0.2) as other:
        pass
    assert other.seconds == 0.0
