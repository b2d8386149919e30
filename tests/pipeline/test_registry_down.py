"""A registry that is down (issue 27, item 3): the rows whose image could not be published are
`infra_error`, never `verified`; the next run retries them and they end verified by digest, the
pool recording the registry location, each instance one row."""

from __future__ import annotations

import pytest

from agents.models import EnvRecord, InstanceResult
from envpool.fake_images import FakeImage, FakeImageStore
from envpool.imagestore import use_store
from pipeline.pipeline_config import load_config
from pipeline.demo import make_demo
from pipeline.driver import run_mint


@pytest.fixture(scope="module")
def demo_input(tmp_path_factory):
    return make_demo(tmp_path_factory.mktemp("demo"))


def mint(instance, repo_path, config, **kw):
    return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome="verified",
                          env=EnvRecord(instance_id=instance.instance_id, repo=instance.repo,
                                        base_commit=instance.base_commit, image_tag=f"swemint/env:{instance.instance_id}",
                                        image_id="sha256:" + "1" * 64))


def test_rows_of_a_down_registry_are_infra_error_and_the_next_run_publishes_them(tmp_path, demo_input):
    images = FakeImageStore(registries_down={"127.0.0.1:5999"})  # the engine's images; the registry is down

    def mint_here(instance, repo_path, config, **kw):
        res = mint(instance, repo_path, config, **kw)
        images[res.env.image_tag] = FakeImage(id=res.env.image_id, ref=res.env.image_tag, labels={})
        return res

    cfg = load_config(None, ["registry=127.0.0.1:5999"], workdir=tmp_path / "w", instances=demo_input.instances,
                      mirrors=[demo_input.mirrors], use_ray=False)
    with use_store(images):
        first = run_mint(cfg, mint_fn=mint_here)
    assert first.results and {r.outcome for r in first.results} == {"infra_error"}
    assert all(r.reason.startswith("verified, but the image was not published") and r.env is None
               for r in first.results)
    from envpool.pool import EnvPool

    assert EnvPool(cfg.pool_path).list() == []  # nothing unpublished is pooled
    images.registries_down.clear()  # the registry is back
    with use_store(images):
        second = run_mint(cfg, mint_fn=mint_here)
    assert sorted(r.instance_id for r in second.results) == sorted(r.instance_id for r in first.results)
    assert {r.outcome for r in second.results} == {"verified"} and not second.skipped
    assert all("@sha256:" in r.env.location for r in second.results)
    assert len(EnvPool(cfg.pool_path).list()) == len(second.results) == len(images.pushed)
    import pandas as pd

    rows = pd.read_parquet(second.dataset["all"])
    assert rows.instance_id.is_unique and set(rows.outcome) == {"verified"}  # one row each, none lost
