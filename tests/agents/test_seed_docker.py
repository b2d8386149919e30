"""Download caches carried into a new build (issue 26, item 6; `agents.seed`): the folders an
ecosystem names are copied from another image into a running build sandbox, the source image is
only read, a folder it lacks is skipped; which reuse candidate seeds a build."""

from __future__ import annotations

import uuid

import pytest

from agents.envpatch import toolchain_only_misfit
from agents.models import EnvRecord
from agents.ecosystems.base import Ecosystem, Plan
from agents.seed import portable_paths, seed_paths
from envpool.docker_sandbox import DockerSandboxFactory
from envpool.sandbox import SandboxSpec


def test_a_candidate_on_another_toolchain_version_seeds_rather_than_nothing():
    plan = Plan(ecosystem="go", toolchain="go 1.21.13 (debootstrap)", image="go:1.21", parser="go_test_json",
                language="go")
    cand = EnvRecord(instance_id="o__r-1", repo="o/r", base_commit="a" * 40, image_tag="env:1", language="go",
                     interpreter="go 1.19.8 (debootstrap)")
    assert toolchain_only_misfit(cand, plan, "o/r")
    assert not toolchain_only_misfit(cand.model_copy(update={"repo": "o/other"}), plan, "o/r")
    assert not toolchain_only_misfit(cand.model_copy(update={"interpreter": plan.toolchain}), plan, "o/r")
    from agents.ecosystems import by_name

    assert portable_paths(by_name("go"), plan) == ["/go/pkg/mod"]
    assert portable_paths(by_name("java"), plan) == ["/root/.m2/repository"]
    assert portable_paths(by_name("php"), plan) == [] and portable_paths(Ecosystem(), plan) == []


@pytest.mark.docker
def test_seed_paths_copies_folders_from_an_image_and_leaves_it_unchanged(debian_image, docker_client):
    run = f"test-seed-{uuid.uuid4().hex[:8]}"
    factory = DockerSandboxFactory(run_id=run)
    spec = SandboxSpec(image=debian_image, network="none", cpus=1, memory=512 * 1024**2, instance_id="o__r-2")
    with factory.sandbox(spec) as src:
        assert src.exec("mkdir -p /go/pkg/mod/cache/download/x && head -c 200000 /dev/urandom > "
                        "/go/pkg/mod/cache/download/x/v1.zip && echo keep > /go/pkg/mod/mod.txt").ok
        want = src.exec("cd /go/pkg/mod && find . -type f | sort | xargs sha256sum").output
        image_id = src.commit(f"swemint-test/seed-{run}", "src", labels={"swemint.run": run})
    try:
        with factory.sandbox(spec) as sb:
            assert seed_paths(factory, sb, image_id, ["/go/pkg/mod", "/root/.m2/repository"]) == ["/go/pkg/mod"]
            assert sb.exec("cd /go/pkg/mod && find . -type f | sort | xargs sha256sum").output == want
            sb.exec("echo new > /go/pkg/mod/added.txt")  # the build's own writes stay in its container
        with factory.sandbox(spec.model_copy(update={"image": image_id})) as again:
            assert not again.exec("test -e /go/pkg/mod/added.txt").ok
        assert docker_client.containers.list(all=True, filters={"label": [f"swemint.run={run}", "swemint.seed"]}) == []
    finally:
        docker_client.images.remove(image_id, force=True)
