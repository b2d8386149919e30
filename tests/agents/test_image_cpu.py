"""An image build's CPU is the row's `image_cpu_s`, not its process CPU (issue 26's ledger).

The first JDK 8 instance of the paired cost benchmark (google__gson-1014, new arm) recorded 31.9
process CPU-seconds against 1.1 in the other arm: it found the Debian sid base missing on the
engine both arms share and debootstrapped it -- a child of the minting process, so counted by
`RUSAGE_CHILDREN` -- and the other arm, 17 minutes later, reused it. Such a base (or a toolchain
layer) is built once per engine for every later instance of every run, so it is recorded apart
(`CostRecord.image_cpu_s`) and kept out of `process_cpu_s` and `cpu_s`.

No Docker here: the Debian base is "bootstrapped" by a stand-in `debootstrap` on PATH that burns
CPU as the real one does (and a `docker` that swallows the import), and the flow test builds its
toolchain layer in the fake image store."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time

import pytest

from agents.cost import CostMeter
from envpool.errors import InfraError
from envpool.imagestore import DockerImageStore
from tests.agents.test_adaptive import PKG, ToyEco, World, _mint, instance  # noqa: F401 - fixture

BURN = 0.6
"""CPU-seconds the stand-in debootstrap burns."""


def _stand_ins(bin_dir, exit_code: int = 0, docker: bool = True):
    bin_dir.mkdir(exist_ok=True)
    deboot = bin_dir / "debootstrap"
    deboot.write_text(f"#!{sys.executable}\nimport os, sys, time\nt = time.process_time()\n"
                      f"while time.process_time() - t < {BURN}:\n    pass\n"
                      "os.makedirs(os.path.join(sys.argv[-2], 'etc/apt/apt.conf.d'), exist_ok=True)\n"
                      f"if {exit_code}:\n    sys.stderr.write('E: no such suite\\n')\nsys.exit({exit_code})\n")
    deboot.chmod(0o755)
    if docker:
        (bin_dir / "docker").write_text("#!/bin/sh\ncat > /dev/null\n")
        (bin_dir / "docker").chmod(0o755)
    else:  # no docker CLI at all (PATH is this folder only): tar is all the import needs besides
        (bin_dir / "tar").symlink_to(shutil.which("tar"))


@pytest.fixture
def stand_ins(tmp_path, monkeypatch):
    def make(exit_code: int = 0, docker: bool = True):
        _stand_ins(tmp_path / "bin", exit_code, docker)
        monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}" if docker else str(tmp_path / "bin"))
    return make


def test_a_debootstrapped_base_is_image_cpu_not_process_cpu(stand_ins):
    stand_ins()
    meter = CostMeter()
    with meter.watching_images():
        DockerImageStore(client=object()).bootstrap("sid", "swemint/debian:sid-test", "http://mirror.invalid",
                                                     ["ca-certificates"])
    c = meter.record()
    assert c.image_cpu_s >= BURN * 0.9  # debootstrap's CPU, measured on its own process
    assert c.process_cpu_s < 0.2  # ... and not the minting process's
    assert c.cpu_s == pytest.approx(c.container_cpu_s + c.engine_cpu_s + c.process_cpu_s, abs=0.002)


def test_a_failed_bootstrap_still_reports_what_it_spent(stand_ins):
    stand_ins(exit_code=1)
    meter = CostMeter()
    with meter.watching_images(), pytest.raises(InfraError, match="debootstrap sid failed: E: no such suite"):
        DockerImageStore(client=object()).bootstrap("sid", "swemint/debian:sid-test", "http://mirror.invalid",
                                                    ["ca-certificates"])
    c = meter.record()
    assert c.image_cpu_s >= BURN * 0.9 and c.process_cpu_s < BURN * 0.5


def test_an_import_that_cannot_start_counts_the_debootstrap_once(stand_ins):
    stand_ins(docker=False)
    meter = CostMeter()
    with meter.watching_images(), pytest.raises(FileNotFoundError):
        DockerImageStore(client=object()).bootstrap("sid", "swemint/debian:sid-test", "http://mirror.invalid", [])
    assert BURN * 0.9 <= meter.record().image_cpu_s < BURN * 1.5


def test_another_threads_image_build_is_not_this_instances_process_cpu(stand_ins):
    """--workers 2 (threads of one process, `pipeline.executors.LocalExecutor`): an instance
    that mints while another debootstraps a base does not carry the base either --
    `RUSAGE_CHILDREN` is the whole process's."""
    stand_ins()
    started, rows = threading.Event(), {}

    def builder():
        meter = CostMeter()
        started.wait()
        with meter.watching_images():
            DockerImageStore(client=object()).bootstrap("sid", "swemint/debian:sid-test", "http://mirror.invalid", [])
        rows["builder"] = meter.record()

    def other():
        meter = CostMeter()
        started.set()
        while "builder" not in rows:
            time.sleep(0.05)
        rows["other"] = meter.record()

    threads = [threading.Thread(target=builder), threading.Thread(target=other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert rows["builder"].image_cpu_s >= BURN * 0.9 and rows["builder"].process_cpu_s < BURN * 0.5
    assert rows["other"].image_cpu_s == 0.0 and rows["other"].process_cpu_s < BURN * 0.5


def test_outside_a_meter_an_image_build_is_nobodys(stand_ins):
    stand_ins()
    meter = CostMeter()  # not watching: a build outside any instance (a warm-up, `swemint images`)
    DockerImageStore(client=object()).bootstrap("sid", "swemint/debian:sid-test", "http://mirror.invalid", [])
    assert meter.record().image_cpu_s == 0.0


class LayeringEco(ToyEco):
    """ToyEco whose plan asks for a toolchain image, as the Java, Go or Rust ecosystems do: the
    Debian base and the layer are built when missing on the engine."""

    def plan(self, tree, instance, touched, images, request=None):
        from envpool.images import ImageConfig
        from envpool.toolchains import layer_image

        tag = layer_image("toy", "1", "sid", "apt-get install -y toy", ImageConfig(route="debootstrap"))
        return super().plan(tree, instance, touched, images, request).model_copy(update={"image": tag})


def test_the_row_keeps_image_builds_apart(tmp_path, instance, monkeypatch):  # noqa: F811
    tests = {f"TestP{i}": "pass" for i in range(6)}
    world = World({**tests, "TestAdd": "fail"}, {**tests, "TestAdd": "pass"}, cpu=2.0)
    world.factory.images.build_cpu_s = 7.0  # each of the base's bootstrap and the layer's build
    res = _mint(tmp_path, instance, monkeypatch, world, LayeringEco())
    assert res.outcome == "verified" and res.FAIL_TO_PASS == [f"{PKG}::TestAdd"]
    assert [k for k, *_ in world.factory.images.built] == ["bootstrap", "layer"]
    c = res.cost
    assert c.image_cpu_s == 14.0
    assert c.container_cpu_s == 10.0 + 14.0 + 6.0  # the instance's own containers only
    # (process_cpu_s: the fake spends no CPU for its images; the tests above take a real
    # debootstrap's out of it)
    assert c.cpu_s == pytest.approx(c.container_cpu_s + c.engine_cpu_s + c.process_cpu_s, abs=0.002)

    # the next instance finds both images on the engine: nothing built, nothing to record
    world.runs.clear()
    world.builds.clear()
    again = _mint(tmp_path / "again", instance, monkeypatch, world, LayeringEco())
    assert again.outcome == "verified" and again.cost.image_cpu_s == 0.0
    assert len(world.factory.images.built) == 2


@pytest.mark.docker
def test_a_toolchain_layers_build_container_is_image_cpu(docker_client, debian_image):
    """The layer's build container (a factory of its own, no instance's meter attached) reports
    its cgroup CPU and the commit's as the image build's."""
    from tests.session import ENV_REPOSITORY

    meter = CostMeter()
    with meter.watching_images():
        DockerImageStore(docker_client).layer(debian_image, f"{ENV_REPOSITORY}:layer-cpu",
                                              "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done", {})
    c = meter.record()
    assert c.image_cpu_s >= 0.2 and c.cpu_s < c.image_cpu_s
