"""`swemint run`: the whole chain (fake GitHub + a mirror the test writes -> filter -> plan ->
build -> Parquet), incremental reruns, kill -9 mid-chain, Ray against in-process, the LLM filter,
one crawler per token, streaming under backpressure, the memory's ecosystem."""

from __future__ import annotations

import json
import re
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.pipeline_config import load_config
from pipeline.streaming import run_flow
from pipeline.ray_adapter import LocalExecutor
from pipeline.store import ResultStore
from tests.fakes.github_server import FakeGitHub
from tests.pipeline.flow_support import add_units, bare_mirror, git, make_repo, world_for

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "ghp_flowTESTtoken0123456789abcdefABCDEF"
FAKE_MINT = "tests.pipeline.flow_support:fake_mint"
VARYING = ("timings", "total_seconds", "log_path", "crawled_at", "started_at")


class Chain:
    """Two repositories written by the test: `acme/gizmo` (C++, served by the fake GitHub as
    merged PRs) and `acme/lib` (Python, a local mirror mined for squash units), plus what the
    local mirror also holds that must be rejected (a docs commit, a code-only squash)."""

    def __init__(self, root: Path, n: int = 3):
        self.root = root
        self.mirrors = root / "mirrors"
        self.gh_units = make_repo(root / "src" / "gizmo", n, kind="cpp", no_f2p=(104,))
        bare_mirror(root / "src" / "gizmo", self.mirrors, "acme/gizmo")
        self.lib_units = make_repo(root / "src" / "lib", n)
        lib = root / "src" / "lib"
        (lib / "README.md").write_text("lib, documented\n")
        git(lib, "commit", "-qam", "Update the docs", date="2024-03-01T12:00:00Z")  # not PR-like
        (lib / "src" / "lib" / "mod1.py").write_text("value_1 = 'changed'\n")
        git(lib, "commit", "-qam", "Tweak a value (#300)", date="2024-03-02T12:00:00Z")  # no test change
        self.lib_dir = bare_mirror(lib, self.mirrors, "acme/lib")
        self.world = world_for("acme/gizmo", self.gh_units, language="C++")

    def config(self, srv: FakeGitHub, **flow) -> dict:
        return {"mirrors": [str(self.mirrors)], "mint_function": FAKE_MINT, "use_ray": False,
                # the stand-in minter writes nothing: the host's free disk must not decide the test
                "mint": {"memory": {"enabled": False}, "limits": {"min_free_disk_bytes": 0}},
                "flow": {"queue_size": 2, "github_step": 1, **flow},
                "sources": {"github": {"api": {"base_url": srv.base_url, "per_page": 2}, "repos": ["acme/gizmo"]},
                            "local": [{"repo": "acme/lib", "git_dir": str(self.lib_dir), "single_commits": False}]}}

    def write_config(self, srv: FakeGitHub, name: str = "run.yaml", **flow) -> Path:
        path = self.root / name
        path.write_text(yaml.safe_dump(self.config(srv, **flow)))
        return path

    def grow(self, n: int) -> list[str]:
        """`n` more units in each repository (and on the fake GitHub); their instance ids."""
        start = len(self.gh_units) + 1
        new_gh = make_repo(self.root / "src" / "gizmo", n, kind="cpp", start=start)
        bare_mirror(self.root / "src" / "gizmo", self.mirrors, "acme/gizmo")
        add_units(self.world, "acme/gizmo", new_gh)
        self.gh_units += new_gh
        new_lib = make_repo(self.root / "src" / "lib", n, start=len(self.lib_units) + 1)
        bare_mirror(self.root / "src" / "lib", self.mirrors, "acme/lib")
        self.lib_units += new_lib
        return [f"acme__gizmo-{u.number}" for u in new_gh] + [f"acme__lib-{u.number}" for u in new_lib]

    def ids(self) -> set[str]:
        return {f"acme__gizmo-{u.number}" for u in self.gh_units} | {f"acme__lib-{u.number}" for u in self.lib_units}


@pytest.fixture
def token(monkeypatch) -> str:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    return TOKEN


def rows(workdir: Path) -> list[dict]:
    """all.parquet rows, comparable across runs (varying columns dropped), sorted by id."""
    df = pd.read_parquet(workdir / "dataset" / "all.parquet").drop(columns=list(VARYING), errors="ignore")
    out = []
    for r in df.to_dict("records"):
        out.append({k: (v.tolist() if hasattr(v, "tolist") else None if isinstance(v, float) and math.isnan(v)
                        else v) for k, v in r.items()})
    return sorted(out, key=lambda r: r["instance_id"])


def report(workdir: Path) -> dict:
    return json.loads((workdir / "report.json").read_text())


def test_swemint_run_whole_chain_into_parquet_rows_with_provenance(tmp_path, token):
    chain = Chain(tmp_path)
    with FakeGitHub(chain.world) as srv:
        cfg = chain.write_config(srv)
        res = CliRunner().invoke(app, ["run", "-c", str(cfg), "-w", str(tmp_path / "w")])
    assert res.exit_code == 0, res.output
    got = {r["instance_id"]: r for r in rows(tmp_path / "w")}
    assert set(got) == chain.ids()
    g = got["acme__gizmo-102"]
    assert (g["source"], g["pull_number"], g["issue_numbers"]) == ("github", 102, [101])
    assert g["commit"] == chain.gh_units[0].sha and g["base_commit"] == chain.gh_units[0].parent
    assert g["quality_score"] == 1.0 and g["language"] == "cpp"  # GitHub's "C++", normalised
    assert g["version"] == "1.4" and g["outcome"] == "verified"  # the release at base_commit (tag v1.4.0)
    assert got["acme__gizmo-104"]["outcome"] == "no_fail_to_pass"
    lib = got["acme__lib-102"]
    assert (lib["source"], lib["pull_number"], lib["commit"]) == ("git", 102, chain.lib_units[0].sha)
    assert lib["language"] == "python" and lib["quality_score"] is None and lib["version"] == "1.4"
    crawled = pd.read_parquet(tmp_path / "w" / "dataset" / "all.parquet")["crawled_at"]
    assert crawled.str.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$").all()
    # the export is swemint export's (pipeline.export): the dataset card with this run's configuration
    card = (tmp_path / "w" / "dataset" / "README.md").read_text()
    assert "verified.parquet" in card and "acme/gizmo" in card
    assert json.loads((tmp_path / "w" / "mint_config.json").read_text())["flow"]["streaming"] is True
    run = report(tmp_path / "w")["run"]
    assert run["repositories"]["discovered"] == 2 and run["units"]["seen"] == 8
    assert run["units"]["rejected"] == {"not_pr_like": 1, "no_test_change": 1}
    assert run["units"]["accepted"] == 6 and run["minted"]["verified"] == 5
    assert run["minted"]["outcomes"]["no_fail_to_pass"] == 1
    assert run["cost"]["per_verified"]["wall_s"] > 0 and run["first_verified_s"] is not None
    assert "funnel" in res.output and "verified" in res.output
    assert TOKEN not in (tmp_path / "w" / "report.json").read_text()
    # a line per finished row with the total this run expects (not `1/?`), and a fresh work
    # directory has nothing accepted earlier
    done = re.findall(r"^(\d+)/(\S+) acme__\S+: ", res.output, re.M)
    assert len(done) == 6 and all(total.isdigit() and int(n) <= int(total) for n, total in done), res.output
    assert "run wd-" in (log := (tmp_path / "w" / "driver.log").read_text()) and "0 accepted earlier to mint" in log


def test_rerun_mints_only_what_is_new_and_retries_what_the_policy_names(tmp_path, token):
    chain = Chain(tmp_path)
    with FakeGitHub(chain.world) as srv:
        cfg = load_config(None, [], workdir=tmp_path / "w", **chain.config(srv))
        run_flow(cfg)
        store = ResultStore(cfg.workdir)
        # an infra_error row is named by retry_outcomes: the next run redoes it
        bad = store.read_result("acme__lib-104").model_copy(update={"outcome": "infra_error", "reason": "daemon"})
        store.write_result(bad)
        new = chain.grow(2)
        srv.reset_log()
        second = run_flow(load_config(None, [], workdir=tmp_path / "w", **chain.config(srv)))
        assert sorted(r.instance_id for r in second.results) == sorted(new + ["acme__lib-104"])
        assert second.crawl.examined == 4 and len(second.skipped) == 5  # only the new units were examined
        pulls = {r["path"] for r in srv.requests if r["path"].startswith("/repos/acme/gizmo/pulls/")}
        assert pulls == {f"/repos/acme/gizmo/pulls/{n}" for n in (108, 110)}
    attempts = store.attempts()
    assert attempts["acme__lib-104"] == 2 and all(attempts[i] == 1 for i in chain.ids() - {"acme__lib-104"})
    cum = report(cfg.workdir)["cumulative"]
    assert cum["units"]["accepted"] == 10 and cum["minted"]["verified"] == 9 and cum["runs"] == 2


def _done(workdir: Path) -> int:
    return sum(1 for _ in (workdir / "instances").glob("*/DONE")) if (workdir / "instances").is_dir() else 0


def _in_flight(workdir: Path) -> list[str]:
    root = workdir / "instances"
    return sorted(p.parent.name for p in root.glob("*/RUNNING") if not (p.parent / "DONE").exists()) \
        if root.is_dir() else []


def test_kill_9_mid_chain_then_rerun_loses_nothing_and_mints_nothing_twice(tmp_path, token):
    chain = Chain(tmp_path, n=4)
    with FakeGitHub(chain.world) as srv:
        cfg = chain.write_config(srv)
        cmd = [sys.executable, "-m", "pipeline.cli", "run", "-c", str(cfg), "-w"]
        env = {**os.environ, "SWEMINT_FAKE_MINT_S": "1.0"}
        ref = subprocess.run(cmd + [str(tmp_path / "ref")], cwd=ROOT, env=env, capture_output=True, text=True)
        assert ref.returncode == 0, ref.stdout[-3000:] + ref.stderr[-3000:]
        work = tmp_path / "killed"
        proc = subprocess.Popen(cmd + [str(work)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not (_done(work) >= 2 and _in_flight(work)):
            assert proc.poll() is None, "the run ended before the kill"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        flying = _in_flight(work)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        with duckdb.connect(str(work / "crawl" / "state.duckdb"), read_only=True) as db:
            marks = db.execute("SELECT count(*) FROM watermarks").fetchone()[0]
        assert marks == 0  # killed mid-crawl: GitHub's listing had not finished
        again = subprocess.run(cmd + [str(work)], cwd=ROOT, env={**env, "SWEMINT_FAKE_MINT_S": "0"},
                               capture_output=True, text=True)
        assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    df = pd.read_parquet(work / "dataset" / "all.parquet")
    assert sorted(df["instance_id"]) == sorted(chain.ids())  # nothing lost, one row each
    attempts = ResultStore(work).attempts()
    assert {i for i, n in attempts.items() if n > 1} <= set(flying)  # only what was in flight is redone
    assert all(n <= 2 for n in attempts.values())
    with duckdb.connect(str(work / "pool.duckdb"), read_only=True) as db:
        pool = [r[0] for r in db.execute("SELECT instance_id FROM environments").fetchall()]
    assert len(pool) == len(set(pool)) == 7
    assert rows(work) == rows(tmp_path / "ref")  # the same dataset as an uninterrupted run


@pytest.mark.slow
def test_ray_path_and_in_process_path_give_the_same_rows(tmp_path, token):
    chain = Chain(tmp_path)
    with FakeGitHub(chain.world) as srv:
        base = chain.config(srv)
        local = run_flow(load_config(None, [], workdir=tmp_path / "local", **base))
        on_ray = run_flow(load_config(None, ["ray.num_cpus=4", "ray.object_store_memory=100000000"],
                                      workdir=tmp_path / "ray", **{**base, "use_ray": True}))
    assert on_ray.funnel["executor"] == "ray" and local.funnel["executor"] == "in-process"
    assert len(rows(tmp_path / "ray")) == 6
    assert rows(tmp_path / "ray") == rows(tmp_path / "local")
    assert on_ray.funnel["units"] == local.funnel["units"]


def test_builds_start_while_the_crawl_goes_on(tmp_path, token, monkeypatch):
    chain = Chain(tmp_path, n=6)
    monkeypatch.setenv("SWEMINT_FAKE_MINT_S", "0.3")
    with FakeGitHub(chain.world) as srv:
        cfg = load_config(None, ["sources.local=[]"], workdir=tmp_path / "w", **chain.config(srv))
        listed_at_first_row = []
        first = run_flow(cfg, on_result=lambda r: listed_at_first_row.append(
            srv.count(path_contains="/repos/acme/gizmo/pulls/")))
        baseline_cfg = load_config(None, ["sources.local=[]", "flow.streaming=false"], workdir=tmp_path / "b",
                                   **chain.config(srv))
        listed_base = []
        run_flow(baseline_cfg, on_result=lambda r: listed_base.append(
            srv.count(path_contains="/repos/acme/gizmo/pulls/") - 6))
    assert listed_at_first_row[0] < 6  # the first row came back before every PR was fetched
    assert listed_base[0] == 6  # crawl-then-mint: every PR fetched first
    assert first.first_verified_s is not None


def test_llm_quality_filter_through_the_gateway_structured_and_cached(tmp_path, token):
    from tests.fakes.openai_server import ScriptedOpenAI, text

    chain = Chain(tmp_path, n=2)
    llm = {"model": "openai/scripted", "api_key_env": None, "timeout": 5, "max_retries": 0}
    with FakeGitHub(chain.world) as srv, ScriptedOpenAI() as model:
        # gizmo-102, gizmo-104, lib-102, lib-104 in some order: answers by the unit named in the prompt
        model.push(*(text(json.dumps({"score": s, "reason": r})) for s, r in
                     ((8, "clear"), (3, "vague"), ("x", "bad"), (8, "clear"), (8, "clear"))))
        cfg = chain.config(srv)
        cfg["sources"]["filter"] = {"scorer": "llm", "llm": {**llm, "api_base": model.base_url}}
        cfg["flow"]["filter_workers"] = 1
        first = run_flow(load_config(None, [], workdir=tmp_path / "w", **cfg))
        sent = model.count()
        assert sent == 5  # four units, one invalid reply sent back once
        assert first.crawl.tokens > 0 and first.funnel["tokens"] == first.crawl.tokens
        rejects = [json.loads(x) for x in (tmp_path / "w" / "crawl" / "rejects.jsonl").read_text().splitlines()]
        low = [r for r in rejects if r["reason"] == "low_quality"]
        assert len(low) == 1 and "LLM score 3/10" in low[0]["detail"] and "vague" in low[0]["detail"]
        kept = pd.read_parquet(tmp_path / "w" / "dataset" / "all.parquet")
        assert len(kept) == 3 and set(kept["quality_score"]) == {0.8}
        # another work directory, the same cache: no request
        cfg["sources"]["filter"]["llm"]["cache_dir"] = str(tmp_path / "w" / "cache" / "llm-filter")
        run_flow(load_config(None, [], workdir=tmp_path / "w2", **cfg))
        assert model.count() == sent


def test_one_crawler_per_token_shares_the_repositories(tmp_path, monkeypatch):
    chain = Chain(tmp_path, n=2)
    other = make_repo(tmp_path / "src" / "other", 2, kind="cpp")
    world = {**chain.world, **world_for("acme/other", other)}
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("SECOND_TOKEN", TOKEN[::-1])
    with FakeGitHub(world) as srv:
        cfg = chain.config(srv)
        cfg["sources"]["github"].update(repos=["acme/gizmo", "acme/other"],
                                        api={"base_url": srv.base_url, "token_envs": ["SECOND_TOKEN"]})
        cfg["sources"]["local"] = []
        cfg["flow"]["mint"] = False
        got = run_flow(load_config(None, [], workdir=tmp_path / "w", **cfg))
    assert got.crawl.accepted == 4 and got.results == []  # flow.mint=false: nothing built
    assert srv.auth_headers == {f"token {TOKEN}", f"token {TOKEN[::-1]}"}
    assert sorted(got.crawl.repos) == ["acme/gizmo", "acme/other"]


def test_the_memory_learns_under_the_detected_ecosystem(tmp_path, token, monkeypatch):
    learned = []
    monkeypatch.setattr("pipeline.driver.MemoryWriter.learn", lambda self, res, ecosystem=None: learned.append(
        (res.instance_id, ecosystem or res.language)) or 0)  # the row's language, as the real one reads it
    chain = Chain(tmp_path, n=1)
    with FakeGitHub(chain.world) as srv:
        cfg = chain.config(srv)
        cfg["mint"]["memory"]["enabled"] = True
        run_flow(load_config(None, [], workdir=tmp_path / "w", **cfg))
    assert sorted(learned) == [("acme__gizmo-102", "cpp"), ("acme__lib-102", "python")]


def test_swemint_mint_learns_a_cpp_row_as_cpp(tmp_path, monkeypatch):
    from pipeline.driver import run_mint

    learned = []
    monkeypatch.setattr("pipeline.driver.MemoryWriter.learn", lambda self, res, ecosystem=None: learned.append(
        ecosystem or res.language) or 0)
    chain = Chain(tmp_path, n=1)
    u = chain.gh_units[0]
    rows_in = [{"instance_id": "acme__gizmo-102", "repo": "acme/gizmo", "base_commit": u.parent, "language": "C++",
                "patch": "x", "test_patch": "y"}]  # a row without language: the minter's detection (tests/agents)
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows_in))
    cfg = load_config(None, [f"mint_function={FAKE_MINT}"], workdir=tmp_path / "w", instances=tmp_path / "in.jsonl",
                      mirrors=[chain.mirrors], use_ray=False)
    run_mint(cfg)
    assert learned == ["cpp"]


def test_run_takes_an_instance_file_as_a_source(tmp_path):
    from pipeline.demo import make_demo

    mirrors, instances = make_demo(tmp_path / "demo")
    cfg = load_config(None, [f"mint_function={FAKE_MINT}", "mint.memory.enabled=false"], workdir=tmp_path / "w",
                      instances=instances, mirrors=[mirrors], use_ray=False)
    got = run_flow(cfg, executor=LocalExecutor())
    assert len(got.results) == 4 and got.funnel["units"]["from_instances_file"] == 4
    assert {r.language for r in ResultStore(cfg.workdir).instances().values()} == {"python"}


def test_a_rate_limit_too_long_to_wait_stops_the_crawl_and_the_next_run_goes_on(tmp_path, token):
    chain = Chain(tmp_path, n=3)
    with FakeGitHub(chain.world) as srv:
        cfg = chain.config(srv)
        cfg["sources"]["github"]["api"]["max_rate_limit_wait"] = 5
        cfg["sources"]["local"] = []
        srv.fail("primary", "/pulls/104", reset_in=3600)  # GitHub asks for an hour
        first = run_flow(load_config(None, [], workdir=tmp_path / "w", **cfg))
        assert first.crawl.stopped and "rate limit" in first.crawl.stopped
        assert [r.instance_id for r in first.results] == ["acme__gizmo-106"]  # newest first: minted before the stop
        with duckdb.connect(str(tmp_path / "w" / "crawl" / "state.duckdb"), read_only=True) as db:
            assert db.execute("SELECT count(*) FROM watermarks").fetchone()[0] == 0
        second = run_flow(load_config(None, [], workdir=tmp_path / "w", **cfg))
    assert second.crawl.stopped is None
    assert sorted(r.instance_id for r in second.results) == ["acme__gizmo-102", "acme__gizmo-104"]
    assert len(pd.read_parquet(tmp_path / "w" / "dataset" / "all.parquet")) == 3


def test_low_disk_stops_new_work_and_the_next_run_mints_what_was_held(tmp_path, token, monkeypatch):
    from envpool.hostfs import LowDisk

    chain = Chain(tmp_path, n=3)
    checks = []

    def check(paths, floor, instance_id=None):
        checks.append(1)
        if len(checks) > 1:  # room for one build, then the disk is full
            raise LowDisk("low disk: 1 MB free under /work (needs 10240 MB)")

    monkeypatch.setattr("pipeline.driver.check_free_disk", check)
    with FakeGitHub(chain.world) as srv:
        cfg = chain.config(srv)
        first = run_flow(load_config(None, [], workdir=tmp_path / "w", **cfg))
        held = [r for r in first.results if r.reason.startswith("not started: low disk")]
        assert len([r for r in first.results if r.outcome != "infra_error"]) == 1 and held
        assert all(r.outcome == "infra_error" for r in held)
        monkeypatch.setattr("pipeline.driver.check_free_disk", lambda *a, **k: None)
        run_flow(load_config(None, [], workdir=tmp_path / "w", **cfg))
    df = pd.read_parquet(tmp_path / "w" / "dataset" / "all.parquet")
    assert sorted(df["instance_id"]) == sorted(chain.ids()) and "infra_error" not in set(df["outcome"])
