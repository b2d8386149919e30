"""Toolchain images made once per cluster (issue 27, item 2): a node pulls what another built, by
digest; only one node builds; a registry that is down never makes a node build."""

from __future__ import annotations

import hashlib
import multiprocessing
import threading
import time
from pathlib import Path

import pytest

from envpool import image_registry as reg
from envpool.errors import InfraError
from envpool.images import ImageConfig


class FakeRegistry:
    """Tags -> (digest, image id); `down` makes every call fail like an unreachable registry."""

    def __init__(self):
        self.tags: dict[str, tuple[str, str]] = {}
        self.down = False
        self.pushed: list[str] = []
        self.pulled: list[str] = []


class _Image:
    def __init__(self, engine, iid, labels):
        self.engine, self.id, self.labels = engine, iid, labels

    def tag(self, repo, tag):
        self.engine.names[f"{repo}:{tag}"] = self.id


class _Images:
    def __init__(self, engine):
        self.engine = engine

    def get(self, ref):
        if ref not in self.engine.names:
            raise LookupError(ref)
        return _Image(self.engine, self.engine.names[ref], {"swemint.managed": "1"})

    def remove(self, ref, force=False):
        self.engine.names.pop(ref, None)


class _Api:
    def __init__(self, engine):
        self.engine = engine

    def inspect_distribution(self, ref, auth_config=None):
        r = self.engine.registry
        if r.down:
            raise RuntimeError("dial tcp 127.0.0.1:5000: connect: connection refused")
        _, _, path = ref.partition("/")
        if path not in r.tags:
            raise RuntimeError("manifest unknown")
        return {"Descriptor": {"digest": r.tags[path][0]}}

    def pull(self, repo, tag, stream, decode, auth_config=None):
        r = self.engine.registry
        path = repo.partition("/")[2]
        iid = next(i for p, (d, i) in r.tags.items() if d == tag and p.startswith(path + ":"))
        self.engine.names[f"{repo}@{tag}"] = iid
        r.pulled.append(f"{repo}@{tag}")
        return iter([{"status": "Downloaded"}])

    def push(self, repo, tag, stream, decode, auth_config=None):
        r = self.engine.registry
        if r.down:
            return iter([{"error": "connection refused"}])
        iid = self.engine.names[f"{repo}:{tag}"]
        digest = "sha256:" + hashlib.sha256(iid.encode()).hexdigest()
        r.tags[f"{repo.partition('/')[2]}:{tag}"] = (digest, iid)
        r.pushed.append(f"{repo}:{tag}")
        return iter([{"aux": {"Digest": digest}}])


class FakeEngine:
    """One node's engine: image names -> ids, its registry, an engine label naming the node."""

    def __init__(self, name, registry):
        self.name, self.registry, self.names = name, registry, {}
        self.images, self.api = _Images(self), _Api(self)

    def info(self):
        return {"Labels": [f"swemint.node={self.name}"], "Name": "host"}


def _cfg(tmp_path, registry="127.0.0.1:5000"):
    return ImageConfig(registry=registry, shared_dir=tmp_path / "images")


def test_a_toolchain_built_on_one_node_is_pulled_by_digest_on_the_others(tmp_path):
    registry = FakeRegistry()
    nodes = [FakeEngine(f"n{i}", registry) for i in range(3)]
    built = []

    def build_on(engine):
        def build():
            built.append(engine.name)
            engine.names["swemint/python:3.11-abc"] = f"sha256:{'1' * 64}"
        return build

    cfg = _cfg(tmp_path)
    for engine in nodes:
        assert reg.shared_image(engine, "swemint/python:3.11-abc", cfg, build_on(engine)) == "swemint/python:3.11-abc"
        assert engine.names["swemint/python:3.11-abc"] == f"sha256:{'1' * 64}"  # the same image everywhere
    assert built == ["n0"]  # bootstrapped once in the cluster
    digest = registry.tags["swemint/python:3.11-abc"][0]
    assert registry.pulled == [f"127.0.0.1:5000/swemint/python@{digest}"] * 2  # by digest, never by tag
    events = reg.read_events(tmp_path / "images")
    assert [(e["node"], e["action"]) for e in events] == [("n0", "built"), ("n0", "published"), ("n1", "pulled"),
                                                          ("n2", "pulled")]
    # a node that has it asks nobody
    before = list(registry.pulled)
    reg.shared_image(nodes[1], "swemint/python:3.11-abc", cfg, build_on(nodes[1]))
    assert registry.pulled == before and built == ["n0"]


def test_a_registry_that_is_down_fails_the_row_and_never_builds(tmp_path):
    registry = FakeRegistry()
    registry.down = True
    built = []
    with pytest.raises(InfraError, match="registry lookup .* failed"):
        reg.shared_image(FakeEngine("n1", registry), "swemint/go:1.21-x", _cfg(tmp_path), lambda: built.append(1))
    assert built == []


def test_a_failed_push_after_a_build_keeps_the_image_and_warns(tmp_path, caplog):
    registry = FakeRegistry()
    engine = FakeEngine("n0", registry)

    def build():
        engine.names["swemint/node:20-y"] = "sha256:" + "2" * 64
        registry.down = True  # gone between the lookup and the push

    assert reg.shared_image(engine, "swemint/node:20-y", _cfg(tmp_path), build) == "swemint/node:20-y"
    assert "could not publish" in caplog.text and registry.pushed == []


def test_a_pulled_image_that_is_not_swemints_is_refused(tmp_path):
    registry = FakeRegistry()
    engine = FakeEngine("n1", registry)
    registry.tags["swemint/rust:1.78-z"] = ("sha256:" + "d" * 64, "sha256:" + "e" * 64)
    engine.images.get = lambda ref: (_Image(engine, engine.names[ref], {}) if ref in engine.names  # noqa: E731
                                     else (_ for _ in ()).throw(LookupError(ref)))
    with pytest.raises(InfraError, match="not a swemint image"):
        reg.shared_image(engine, "swemint/rust:1.78-z", _cfg(tmp_path), lambda: None)
    assert "swemint/rust:1.78-z" not in engine.names


def test_without_a_registry_each_engine_builds_under_one_lock(tmp_path):
    registry = FakeRegistry()
    engine = FakeEngine("n0", registry)
    calls = []

    def build():
        calls.append(1)
        time.sleep(0.05)
        engine.names["swemint/debian:bookworm-q"] = "sha256:" + "3" * 64

    threads = [threading.Thread(target=reg.shared_image, args=(engine, "swemint/debian:bookworm-q",
                                                               _cfg(tmp_path, registry=None), build))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [1] and registry.pushed == []


def _hold(shared: str, out: str, who: int) -> None:
    with reg.cluster_lock(Path(shared), "swemint/python:3.11-abc"):
        with open(out, "a") as fh:
            fh.write(f"in {who} {time.monotonic()}\n")
        time.sleep(0.3)
        with open(out, "a") as fh:
            fh.write(f"out {who} {time.monotonic()}\n")


def test_the_cluster_lock_holds_across_processes(tmp_path):
    """Two processes (two nodes sharing WORKDIR/images) never hold the build lock of a tag at once."""
    out = tmp_path / "log"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_hold, args=(str(tmp_path / "images"), str(out), i)) for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(20)
    lines = out.read_text().split()
    kinds = lines[0::3]
    assert kinds == ["in", "out", "in", "out"]  # never in, in
