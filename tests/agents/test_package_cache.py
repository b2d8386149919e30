"""No shared writable state between instances (issue 11, item 3): the package cache of build
containers is per instance (or per repository, by choice), private to root on the host, and
nothing a container leaves there stays setuid.

Before the change every build container of a work directory mounted one read-write
`WORKDIR/cache/uv` as root: a repository could alter the wheels the next instance installs and
leave a setuid-root file on the host.
"""

from __future__ import annotations

import os
import stat

import pytest

from agents.mint_config import MintConfig
from agents.minter import mint_instance
from envpool.fake import FakeSandboxFactory
from envpool.hostfs import scrub
from pipeline.demo import make_demo
from pipeline.instances import load_instances
from tests.session import SESSION


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    mirrors, instances = make_demo(tmp_path_factory.mktemp("demo"))
    return mirrors, load_instances(instances).instances


def _build_mounts(tmp_path, demo, monkeypatch, scope: str | None = None) -> dict[str, list[str]]:

    mirrors, rows = demo
    cfg = MintConfig(workdir=tmp_path / "w", run_id="t", **({"cache": {"scope": scope}} if scope else {}))
    factory = FakeSandboxFactory(run_id="t")
    for inst in rows[:2]:
        mint_instance(inst, mirrors / inst.repo.replace("/", "+") / "repo", cfg, factory=factory)
    out: dict[str, list[str]] = {}
    for spec in factory.specs:
        if spec.network == "bridge":
            out.setdefault(spec.instance_id, []).extend(spec.cache_mounts)
    return out


def test_each_instance_builds_with_its_own_cache_folder(tmp_path, demo, monkeypatch):
    mounts = _build_mounts(tmp_path, demo, monkeypatch)
    assert len(mounts) == 2
    a, b = (set(v) for v in mounts.values())
    assert a and b and not a & b  # no host folder shared between the two instances
    cache_root = tmp_path / "w" / "cache"
    assert stat.S_IMODE(os.stat(cache_root).st_mode) == 0o700
    assert not any(os.path.exists(p) for p in a | b)  # removed when the instance ended


def test_repository_scope_shares_only_within_a_repository(tmp_path, demo, monkeypatch):
    mirrors, rows = demo
    assert rows[0].repo != rows[1].repo
    mounts = _build_mounts(tmp_path, demo, monkeypatch, scope="repository")
    a, b = (set(v) for v in mounts.values())
    assert not a & b
    cfg = MintConfig(workdir=tmp_path / "w", cache={"scope": "repository"})
    same_repo = {cfg.package_cache("x-1", "o/r"), cfg.package_cache("x-2", "o/r")}
    assert len(same_repo) == 1 and cfg.package_cache("x-1", "o/other") not in same_repo
    assert MintConfig(workdir=tmp_path, cache={"scope": "off"}).package_cache("x", "o/r") is None


def test_scrub_clears_setuid_and_removes_device_nodes(tmp_path):
    f = tmp_path / "c" / "bin"
    f.parent.mkdir()
    f.write_text("#!/bin/sh\n")
    os.chmod(f, 0o4755)
    os.mkfifo(tmp_path / "c" / "fifo")
    os.symlink("/etc/passwd", tmp_path / "c" / "link")
    assert scrub(tmp_path / "c") == 2
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o755 and not (tmp_path / "c" / "fifo").exists()
    assert os.path.islink(tmp_path / "c" / "link")


@pytest.mark.docker
def test_a_setuid_file_a_build_container_leaves_in_its_cache_is_scrubbed(tmp_path, docker_client, debian_image):
    """A real container (root, default image) writes a setuid-root shell into its cache mount;
    after `release_cache` (repository scope) nothing under the cache is setuid any more, and the
    folder is unreachable for other users meanwhile."""
    from agents.envimage import cache_mounts, release_cache
    from envpool.docker_sandbox import DockerSandboxFactory
    from envpool.sandbox import SandboxSpec

    cfg = MintConfig(workdir=tmp_path / "w", cache={"scope": "repository"})
    mounts = cache_mounts(cfg, "o__r-1", "o/r")
    factory = DockerSandboxFactory(run_id=f"test-cache-scrub-{SESSION}", client=docker_client)
    spec = SandboxSpec(image=debian_image, network="none", cache_mounts=mounts, run_id=f"test-cache-scrub-{SESSION}")
    with factory.sandbox(spec) as sb:
        r = sb.exec("cp /bin/sh /root/.cache/uv/rootsh && chmod 4755 /root/.cache/uv/rootsh && "
                    "ls -l /root/.cache/uv/rootsh")
        assert r.ok and r.output.startswith("-rws"), r.output
    host = next(iter(mounts))
    assert os.stat(os.path.join(host, "rootsh")).st_mode & stat.S_ISUID  # what the container left
    assert stat.S_IMODE(os.stat(tmp_path / "w" / "cache").st_mode) == 0o700
    release_cache(cfg, "o__r-1", "o/r")
    assert not os.stat(os.path.join(host, "rootsh")).st_mode & (stat.S_ISUID | stat.S_ISGID)
