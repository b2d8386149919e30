"""Dependency layers across nodes (issue 27, item 2): a layer another node built and published is
pulled by digest, not built again; one built here is pushed for the others."""

from __future__ import annotations

from types import SimpleNamespace

from agents import tiers
from agents.mint_config import MintConfig
from agents.ecosystems.base import LayerSpec
from envpool.image_registry import read_events
from tests.envpool.test_shared_images import FakeEngine, FakeRegistry


def _run(tmp_path, engine):
    cfg = MintConfig(workdir=tmp_path / "w", run_id="r1",
                     images={"registry": "127.0.0.1:5000", "shared_dir": str(tmp_path / "images")})
    return SimpleNamespace(config=cfg, factory=SimpleNamespace(client=engine), traj=lambda step: None)


def test_a_layer_published_by_another_node_is_pulled_not_built(tmp_path, monkeypatch):
    registry = FakeRegistry()
    here = FakeEngine("n2", registry)
    run = _run(tmp_path, here)
    spec = LayerSpec(name="go modules", files=["go.mod"], commands=["go mod download"])
    key = tiers.layer_key("sha256:tool", spec, {"go.mod": b"module x\n"})
    tag = tiers._tag(run.config, key)
    registry.tags[tag] = ("sha256:" + "d" * 64, "sha256:" + "9" * 64)
    monkeypatch.setattr(tiers, "_build", lambda *a, **k: (_ for _ in ()).throw(AssertionError("built again")))
    tier = tiers._make(run, SimpleNamespace(), spec, {"go.mod": b"module x\n"}, "sha256:tool")
    assert tier is not None and not tier.built and tier.image == tag and tier.image_id == "sha256:" + "9" * 64
    assert registry.pulled and registry.pulled[0].endswith("@sha256:" + "d" * 64)  # by digest
    assert [(e["node"], e["action"]) for e in read_events(tmp_path / "images")] == [("n2", "pulled")]


def test_a_layer_built_here_is_published_for_the_other_nodes(tmp_path):
    registry = FakeRegistry()
    here = FakeEngine("n0", registry)
    here.names["swemint/env:deps-abc-1"] = "sha256:" + "5" * 64
    tiers._publish(_run(tmp_path, here), "swemint/env:deps-abc-1")
    assert registry.pushed == ["127.0.0.1:5000/swemint/env:deps-abc-1"]
    ev = read_events(tmp_path / "images")
    assert ev[0]["action"] == "published" and ev[0]["kind"] == "dependencies"
    registry.down = True  # a failed push only warns: the layer stays here
    tiers._publish(_run(tmp_path, here), "swemint/env:deps-abc-1")
    assert len(registry.pushed) == 1
