"""The image-store seam (`envpool.sandbox.ImageStore`): the fake answers every call the way the
Docker store does, and code without a factory at hand uses the store `use_store` made active --
so the toolchain images a plan asks for are made in memory, with no function patched."""

from __future__ import annotations

import pytest

from envpool.errors import InfraError
from envpool.fake import FakeSandboxFactory
from envpool.fake_images import FakeImage, FakeImageStore
from envpool.images import ImageConfig, ensure_python_image, python_image_tag
from envpool.imagestore import DockerImageStore, active_store, store_of, use_store
from envpool.sandbox import ImageStore, SandboxSpec


def test_the_fake_is_an_image_store_and_answers_like_an_engine():
    store = FakeImageStore(["base:1"], pullable={"debian:bookworm-slim"})
    assert isinstance(store, ImageStore)
    assert store.get("nope") is None and not store.pull("golang:1.19") and store.pull("debian:bookworm-slim")
    assert store.layer("base:1", "t:1", "echo hi", {"k": "v"}) == "t:1"
    info = store.get("t:1")
    assert info.labels == {"swemint.managed": "1", "k": "v"} and store["t:1"].steps == ["echo hi"]
    store.tag("t:1", "u", "2")
    assert sorted(store.get("u:2").tags) == ["t:1", "u:2"] and [i.id for i in store.list({"k": "v"})] == [info.id]
    assert store.remove(info.id) and store.get("t:1") is None and not store.remove("t:1")
    with pytest.raises(InfraError, match="no image nope"):
        store.layer("nope", "x:1", "true", {})
    with pytest.raises(InfraError, match="connection refused"):
        FakeImageStore(["a:1"], registries_down={"r:5000"}).push("a:1", "r:5000")


def test_a_fake_factorys_commits_and_a_started_sandbox_share_its_store():
    factory = FakeSandboxFactory()
    with factory.sandbox(SandboxSpec(image="base")) as sb:
        sb.put_file("/etc/x", "1")
        image_id = sb.commit("swemint/env", "a")
    assert store_of(factory) is factory.images and factory.images.get("swemint/env:a").id == image_id
    assert factory.start(SandboxSpec(image="swemint/env:a")).files["/etc/x"] == b"1"


def test_code_without_a_factory_makes_images_in_the_active_store():
    store = FakeImageStore()
    with use_store(store):
        assert active_store() is store  # an empty fake store is still the store
        tag = ensure_python_image("3.11", ImageConfig())
    kinds = [(k, t.split(":")[0]) for k, t, _, _ in store.built]
    assert kinds == [("bootstrap", "swemint/debian"), ("layer", "swemint/python")] and tag in store
    assert "uv" in store[tag].steps[-1]  # the toolchain script, on the bootstrapped base
    assert active_store(store) is store and isinstance(store_of(object()), DockerImageStore)


def test_an_image_present_in_the_store_is_not_made_again():
    tag = python_image_tag("3.11", ImageConfig())
    store = FakeImageStore({tag: FakeImage(id="sha256:1", ref=tag, labels={"swemint.route": "official"})})
    with use_store(store):
        assert ensure_python_image("3.11", ImageConfig()) == tag
    assert store.built == []


def test_python_314_comes_from_unstable_and_its_image_checks_the_version_it_got():
    """S16: a project requiring Python >= 3.14 (above trixie's 3.13) gets unstable's python3; as
    that suite moves, its image's toolchain step fails unless python3 is still 3.14. The stable
    suites' images are built by the same script as before (no check)."""
    store = FakeImageStore()
    with use_store(store):
        tag = ensure_python_image("3.14", ImageConfig())
        old = ensure_python_image("3.13", ImageConfig())
    boots = {t: suite for k, t, suite, _ in store.built if k == "bootstrap"}
    layers = {t: script for k, t, _, script in store.built if k == "layer"}
    assert sorted(boots.values()) == ["sid", "trixie"]
    assert "; python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 14))' || {" in layers[tag]
    assert "no longer gives python 3.14" in layers[tag]
    assert "sys.version_info" not in layers[old]
