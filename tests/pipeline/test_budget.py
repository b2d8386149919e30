"""The driver applies the pool's disk budgets (issue 27, item 4): on every node, in the registry,
recorded in the pool; a later reuse of an evicted local-only environment builds instead; `swemint
pool du` counts bytes per language and repository, unique and shared."""

from __future__ import annotations

import pytest

from envpool.pool import EnvPool
from envpool.records import EnvRecord
from envpool.registry_http import Manifest
from pipeline import budget as bud
from pipeline.pipeline_config import load_config
from pipeline.pool_cli import human, parse_bytes

MB = 1_000_000


def _rec(iid, repo="o/a", language="python", location="local"):
    return EnvRecord(instance_id=iid, repo=repo, base_commit="a" * 40, image_tag=f"swemint/env:{iid}",
                     image_id=f"sha256:{iid}", location=location, language=language)


def _pool(tmp_path, *recs):
    pool = EnvPool(tmp_path / "pool.duckdb")
    for r in recs:
        pool.add(r)
    return pool


class _Store:
    def __init__(self, rows=()):
        self.rows = list(rows)

    def results(self):
        return self.rows


def test_engine_evictions_on_every_node_are_recorded_and_reuse_falls_back_to_a_build(tmp_path, monkeypatch):
    reg = "127.0.0.1:5000/swemint/env@sha256:" + "b" * 64
    pool = _pool(tmp_path, _rec("o__a-1"), _rec("o__a-2", location=reg), _rec("o__a-3"))
    cfg = load_config(None, ["budget.engine_bytes=1000"], workdir=tmp_path)
    seen = {}

    def each_node(fn, candidates, budget, protect, client=None, dry_run=False):  # two nodes: each evicts what it holds
        seen.update(order=[c["instance_id"] for c in candidates], budget=budget, protect=protect)
        return [{"node": "n1", "before": 3000, "after": 900, "evicted": [
                    {"instance_id": "o__a-1", "image_tag": "swemint/env:o__a-1", "bytes": 1500},
                    {"instance_id": "o__a-2", "image_tag": "swemint/env:o__a-2", "bytes": 600}]},
                {"node": "n2", "before": 800, "after": 800, "evicted": []}]

    got = bud.enforce(cfg, pool, each_node, protect={"sha256:o__a-3"})
    assert seen == {"order": ["o__a-1", "o__a-2", "o__a-3"], "budget": 1000, "protect": ["sha256:o__a-3"]}
    assert [n["node"] for n in got["engines"]] == ["n1", "n2"] and got["registry"] is None
    ev = {e["instance_id"]: e for e in pool.evictions()}
    assert ev["o__a-1"]["place"] == "engine:n1" and ev["o__a-1"]["kept_in_pool"] is False
    assert ev["o__a-2"]["kept_in_pool"] is True  # its registry copy is pulled again when reused
    # what reuse offers now: the evicted local-only environment is gone, so that instance builds
    assert [m.record.instance_id for m in pool.find("o/a")] == ["o__a-2", "o__a-3"]


class FakeAPI:
    def __init__(self, manifests):
        self.ms, self.deleted = manifests, []

    def manifests(self, repos=None):
        return [(f"t{i}", m) for i, m in enumerate(self.ms)]

    def delete(self, repo, digest):
        self.deleted.append(digest)
        self.ms = [m for m in self.ms if m.digest != digest]
        return True


def test_the_registry_budget_deletes_only_unnamed_manifests_unless_told(tmp_path, monkeypatch):
    loc = "127.0.0.1:5000/swemint/env@sha256:" + "a" * 64
    pool = _pool(tmp_path, _rec("o__a-1", location=loc))
    ms = [Manifest("swemint/python", "sha256:tool", "c0", [("base", 400)]),
          Manifest("swemint/env", "sha256:" + "a" * 64, "c1", [("base", 400), ("a", 100)]),
          Manifest("swemint/env", "sha256:old", "c2", [("base", 400), ("old", 200)])]
    api = FakeAPI(ms)
    monkeypatch.setattr("envpool.registry_http.RegistryAPI", lambda registry, auth=None: api)
    cfg = load_config(None, ["registry=127.0.0.1:5000", "budget.registry_bytes=450"], workdir=tmp_path)
    got = bud.enforce(cfg, pool, None, store=_Store())
    assert api.deleted == ["sha256:old"] and got["registry"]["freed"] == 200
    assert got["registry"]["still_over"] == 50 and pool.get("o__a-1") is not None  # the published row's image stays
    forced = cfg.budget.model_copy(update={"evict_published": True})
    bud.enforce(cfg, pool, None, store=_Store(), budget=forced)
    assert api.deleted[-1] == "sha256:" + "a" * 64 and pool.get("o__a-1") is None  # the user said so: recorded
    assert [e["place"] for e in pool.evictions()] == ["registry", "registry"]
    dry = FakeAPI(ms)
    monkeypatch.setattr("envpool.registry_http.RegistryAPI", lambda registry, auth=None: dry)
    plan = bud.enforce(cfg, _pool(tmp_path / "x"), None, store=_Store(), dry_run=True)
    assert dry.deleted == [] and plan["registry"]["deleted"] and plan["registry"]["dry_run"]  # a plan, nothing done


def test_env_repository_follows_a_registry_prefix(tmp_path):
    assert bud.env_repository(load_config(None, ["registry=host:5000/team"], workdir=tmp_path)) == "team/swemint/env"
    assert bud.env_repository(load_config(None, ["registry=host:5000"], workdir=tmp_path)) == "swemint/env"


def test_the_check_is_periodic_and_only_with_a_budget(tmp_path):
    off = bud.BudgetWatch(load_config(None, [], workdir=tmp_path))
    assert not off.active and not off.due(now=1e9)
    on = bud.BudgetWatch(load_config(None, ["budget.engine_bytes=1", "budget.check_every_s=60"], workdir=tmp_path))
    assert on.due(now=1000.0) and not on.due(now=1030.0) and on.due(now=1061.0)
    reg_only = bud.BudgetWatch(load_config(None, ["budget.registry_bytes=1"], workdir=tmp_path))
    assert not reg_only.active  # no registry configured: nothing to apply


def test_budget_sizes_are_read_and_shown():
    assert parse_bytes("500M") == 500 * 1024**2 and parse_bytes("1.5G") == int(1.5 * 1024**3)
    assert parse_bytes("20GiB") == 20 * 1024**3 and parse_bytes("123") == 123
    with pytest.raises(ValueError):
        parse_bytes("lots")
    assert human(1_500_000_000) == "1.5 GB" and human(12) == "12 B"


class _Img:
    def __init__(self, ref, diff):
        self.id, self.tags, self.attrs = f"id-{ref}", [ref], {"RootFS": {"Layers": diff}, "Size": 0}


class FakeEngine:
    def __init__(self, stacks):
        self.stacks = stacks
        self.images = self
        self.api = self

    def get(self, ref):
        if ref not in self.stacks:
            raise LookupError(ref)
        return _Img(ref, [d for d, _ in self.stacks[ref]])

    def list(self):
        return [self.get(t) for t in self.stacks]

    def history(self, iid):
        return [{"Size": n} for _, n in reversed(self.stacks[iid[3:]])]


def test_du_splits_bytes_by_language_and_repository(tmp_path):
    pool = _pool(tmp_path, _rec("o__a-1"), _rec("o__a-2"), _rec("o__g-1", repo="o/g", language="go"))
    py, go = [("sha256:py", 900 * MB)], [("sha256:go", 1200 * MB)]
    eng = FakeEngine({"swemint/python:3.11": py, "swemint/go:1.21": go,
                      "swemint/env:o__a-1": [*py, ("sha256:a1", 10 * MB)],
                      "swemint/env:o__a-2": [*py, ("sha256:a1", 10 * MB), ("sha256:a2", 4 * MB)],
                      "swemint/env:o__g-1": [*go, ("sha256:g1", 50 * MB)]})
    got = bud.disk_usage(load_config(None, [], workdir=tmp_path), pool, client=eng)
    e = got["engine"]
    assert e["total"]["bytes"] == 2164 * MB and got["registry"] is None
    assert e["by_language"]["python"] == {"images": 2, "bytes": 914 * MB, "unique": 14 * MB, "shared": 900 * MB}
    assert e["by_language"]["go"]["unique"] == 50 * MB and e["by_language"]["other"]["images"] == 2
    assert e["by_repo"]["o/a"]["unique"] == 14 * MB and e["by_repo"]["o/g"]["bytes"] == 1250 * MB


def test_pool_prune_on_the_command_line_records_and_prints_the_evictions(tmp_path, monkeypatch):
    import json

    from typer.testing import CliRunner

    from pipeline.cli import app

    pool = _pool(tmp_path, _rec("o__a-1"), _rec("o__a-2"))
    (tmp_path / "instances").mkdir()
    monkeypatch.setattr("pipeline.stages.sweep_leftovers", lambda run_id, ids, keep: {"containers": 0, "images": 0})
    asked = {}

    def fake_evict(candidates, budget, protect=(), client=None, dry_run=False):
        asked.update(order=[c["instance_id"] for c in candidates], budget=budget, dry_run=dry_run)
        return {"node": "here", "before": 5 * 1024**3, "after": 1024**3, "evicted": [
            {"instance_id": "o__a-1", "image_tag": "swemint/env:o__a-1", "bytes": 4 * 1024**3}]}

    monkeypatch.setattr(bud, "evict_engine", fake_evict)
    r = CliRunner().invoke(app, ["pool", "prune", "-w", str(tmp_path), "--engine-bytes", "2G", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["ok"] and out["engines"][0]["evicted"][0]["instance_id"] == "o__a-1"
    assert asked == {"order": ["o__a-1", "o__a-2"], "budget": 2 * 1024**3, "dry_run": False}
    assert pool.get("o__a-1") is None and pool.evictions()[0]["place"] == "engine:here"
    r = CliRunner().invoke(app, ["pool", "prune", "-w", str(tmp_path)])
    assert r.exit_code == 2 and "no budget" in r.output


def _prune_workdir(tmp_path, monkeypatch):
    pool = _pool(tmp_path, _rec("o__a-1"), _rec("o__a-2", location="127.0.0.1:5000/swemint/env@sha256:" + "b" * 64))
    (tmp_path / "instances").mkdir()
    monkeypatch.setattr("pipeline.stages.sweep_leftovers", lambda run_id, ids, keep: {"containers": 0, "images": 0})
    return pool


def test_a_dry_run_prints_what_each_engine_would_evict_and_changes_nothing(tmp_path, monkeypatch):
    """`--dry-run` shows the engines' plans (it used to print `engines: []` whatever the budget),
    `--engine-bytes 0` is a budget of 0, and an engine that cannot be reached fails the command."""
    from typer.testing import CliRunner

    from pipeline.cli import app

    pool = _prune_workdir(tmp_path, monkeypatch)
    removed = []

    class Engine:
        images = type("I", (), {"get": staticmethod(lambda ref: type("Img", (), {"id": "sha256:" + ref.split(":")[1],
                                                                                   "attrs": {}})()),
                                "remove": staticmethod(removed.append)})()
        api = type("A", (), {"images": staticmethod(lambda filters=None: []),
                             "history": staticmethod(lambda iid: [])})()

        def df(self):
            return {"LayersSize": 57 * 10**9}

        def info(self):
            return {"Labels": ["swemint.node=n1"]}

    monkeypatch.setattr("envpool.docker_sandbox.docker_client", lambda: Engine())
    r = CliRunner().invoke(app, ["pool", "prune", "-w", str(tmp_path), "--engine-bytes", "0", "--dry-run"])
    assert r.exit_code == 0, r.output
    assert "would evict" in r.output and "o__a-1" in r.output and "o__a-2" in r.output
    assert removed == [] and pool.evictions() == [] and pool.get("o__a-1") is not None

    def broken(*a, **k):
        raise RuntimeError("engine unreachable")

    monkeypatch.setattr(bud, "evict_engine", broken)
    r = CliRunner().invoke(app, ["pool", "prune", "-w", str(tmp_path), "--engine-bytes", "1G", "--json"])
    assert r.exit_code == 1 and "engine unreachable" in r.output


def test_prune_all_removes_the_runs_images_and_records_the_pooled_ones(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from pipeline.cli import app

    pool = _prune_workdir(tmp_path, monkeypatch)
    seen, removed = [], []
    listed = [{"Id": "sha256:o__a-1", "RepoTags": ["swemint/env:o__a-1"], "Size": 10, "Created": 3},
              {"Id": "sha256:o__a-2", "RepoTags": ["swemint/env:o__a-2"], "Size": 10, "Created": 2},
              {"Id": "sha256:dd", "RepoTags": ["swemint/env:deps-x-1"], "Size": 99, "Created": 1}]

    class Engine:  # the engine the command talks to (a fake Docker client, not a patched image op)
        images = type("I", (), {"remove": staticmethod(lambda iid, force=False: removed.append(iid))})()
        api = type("A", (), {"images": staticmethod(lambda filters=None: seen.append(filters) or listed)})()

        def info(self):
            return {"Labels": ["swemint.node=n1"]}

    monkeypatch.setattr("envpool.docker_sandbox.docker_client", lambda: Engine())
    run = load_config(None, [], workdir=tmp_path).mint.run_id
    r = CliRunner().invoke(app, ["pool", "prune", "-w", str(tmp_path), "--all", "--dry-run"])
    assert r.exit_code == 0, r.output
    assert seen == [{"label": f"swemint.run={run}"}] and "would remove 3 image(s)" in r.output
    assert "deps-x-1" in r.output and removed == [] and pool.evictions() == []
    r = CliRunner().invoke(app, ["pool", "prune", "-w", str(tmp_path), "--all"])
    assert r.exit_code == 0, r.output
    assert removed == ["sha256:o__a-1", "sha256:o__a-2", "sha256:dd"]  # children (newest) first
    assert pool.get("o__a-1") is None and pool.get("o__a-2") is not None  # a registry copy stays pullable
    assert sorted(e["instance_id"] for e in pool.evictions()) == ["o__a-1", "o__a-2"]
    r = CliRunner().invoke(app, ["pool", "prune", "-w", str(tmp_path), "--all", "--engine-bytes", "1G"])
    assert r.exit_code == 2


def test_prune_all_finds_the_run_id_the_work_directory_was_minted_with(tmp_path, monkeypatch):
    """A mint with `--set mint.run_id=X` labels its images `swemint.run=X` and records X in
    WORKDIR/mint_config.json: `pool prune --all -w WORKDIR` removes them (it used to ask the engine
    for the path-derived run id and removed 0 images); `--set mint.run_id` given to prune wins, and
    a work directory with no record keeps the path-derived id."""
    import json

    from typer.testing import CliRunner

    from pipeline.cli import app
    from pipeline.driver import record_config

    _prune_workdir(tmp_path, monkeypatch)
    seen, removed = [], []
    images = {"nightly-7": [{"Id": "sha256:o__a-1", "RepoTags": ["swemint/env:o__a-1"], "Size": 10, "Created": 2},
                            {"Id": "sha256:dd", "RepoTags": ["swemint/env:deps-x-1"], "Size": 99, "Created": 1}]}

    class Engine:  # a fake Docker client: lists only the images labelled with the asked run id
        images = type("I", (), {"remove": staticmethod(lambda iid, force=False: removed.append(iid))})()
        api = type("A", (), {"images": staticmethod(lambda filters=None: seen.append(filters) or (
            images["nightly-7"] if filters == {"label": "swemint.run=nightly-7"} else []))})()

        def info(self):
            return {"Labels": ["swemint.node=n1"]}

    monkeypatch.setattr("envpool.docker_sandbox.docker_client", lambda: Engine())
    default = load_config(None, [], workdir=tmp_path).mint.run_id
    r = CliRunner().invoke(app, ["pool", "prune", "-w", str(tmp_path), "--all", "--dry-run"])
    assert r.exit_code == 0, r.output
    assert seen[-1] == {"label": f"swemint.run={default}"}  # no record: the path-derived id
    record_config(load_config(None, ["mint.run_id=nightly-7"], workdir=tmp_path))  # what the mint wrote
    assert json.loads((tmp_path / "mint_config.json").read_text())["mint"]["run_id"] == "nightly-7"
    r = CliRunner().invoke(app, ["pool", "prune", "-w", str(tmp_path), "--all", "--set", "mint.run_id=other"])
    assert r.exit_code == 0 and seen[-1] == {"label": "swemint.run=other"} and removed == []
    r = CliRunner().invoke(app, ["pool", "prune", "-w", str(tmp_path), "--all"])
    assert r.exit_code == 0, r.output
    assert seen[-1] == {"label": "swemint.run=nightly-7"} and "removed 2 image(s) of run nightly-7" in r.output
    assert removed == ["sha256:o__a-1", "sha256:dd"]
