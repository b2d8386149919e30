"""State that survives (issue 11, item 5): torn or corrupt files are quarantined and the instance
redone, a bad string fails its row only, concurrent exports both land, instance folders are
injective in the instance id, and only the driver writes `result.json`.

Each case builds its own input (a demo instance file, a fake mint function) and fails on the code
before the change: the surrogate row aborted the batch, a torn result.json or a corrupt
pool.duckdb made every later `mint` fail, two exports failed 15 of 15 times, `a/b` and `a_b`
shared a folder, `..` wrote into the work directory's root (both ids are refused at load since
issue 24; the folder rule stays as the second line of defence), and a timed-out worker overwrote the
driver's `timeout` row.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from agents.models import EnvRecord, Instance, InstanceResult
from envpool.naming import folder_name
from envpool.pool import EnvPool
from pipeline.pipeline_config import load_config
from pipeline.demo import make_demo
from pipeline.driver import run_mint
from pipeline.instances import load_instances
from pipeline.export import export_dataset
from pipeline.store import ResultStore

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo_input(tmp_path_factory):
    return make_demo(tmp_path_factory.mktemp("demo"))


def rows_of(instances: Path) -> list[dict]:
    return [json.loads(line) for line in instances.read_text().splitlines() if line.strip()]


def write_rows(path: Path, rows: list[dict | str]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def fake_mint(instance, repo_path, config, env=None, candidates=None):
    return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome="verified",
                          FAIL_TO_PASS=["t::x"], timings={"total": 0.1},
                          env=EnvRecord(instance_id=instance.instance_id, repo=instance.repo,
                                        base_commit=instance.base_commit, image_tag=f"t:{len(instance.instance_id)}",
                                        image_id=f"sha256:{instance.instance_id}"))


def config(tmp_path: Path, instances: Path, mirrors: Path):
    return load_config(None, ["mint.memory.enabled=false", "mint.reuse.enabled=false"], workdir=tmp_path / "w",
                       instances=instances, mirrors=[mirrors], use_ray=False)


def test_a_lone_surrogate_fails_its_row_only(tmp_path, demo_input):
    mirrors, instances = demo_input
    rows = rows_of(instances)
    bad = {**rows[0], "instance_id": "acme__bad-1"}
    line = json.dumps(bad).replace('"problem_statement": "', '"problem_statement": "\\ud800', 1)
    assert "\\ud800" in line
    path = write_rows(tmp_path / "in.jsonl", [line, *rows[1:]])
    loaded = load_instances(path)
    assert [e.instance_id for e in loaded.errors] == ["acme__bad-1"]
    msg = str(loaded.errors[0])
    assert "line 1" in msg and "problem_statement" in msg and "\n" not in msg
    report = run_mint(config(tmp_path, path, mirrors), mint_fn=fake_mint)
    assert sorted(r.instance_id for r in report.results) == sorted(r["instance_id"] for r in rows[1:])
    assert all(r.outcome == "verified" for r in report.results)
    assert pq.read_table(report.dataset["all"]).num_rows == len(rows) - 1


def test_a_torn_result_json_is_quarantined_and_the_instance_redone(tmp_path, demo_input):
    mirrors, instances = demo_input
    cfg = config(tmp_path, instances, mirrors)
    first = run_mint(cfg, mint_fn=fake_mint)
    victim = first.results[0].instance_id
    store = ResultStore(cfg.workdir)
    path = store.dir(victim) / "result.json"
    path.write_text(path.read_text()[:40])  # torn by a crash mid-write of an older version
    second = run_mint(cfg, mint_fn=fake_mint)  # used to fail with a traceback
    assert [r.instance_id for r in second.results] == [victim]
    assert len(second.skipped) == len(first.results) - 1
    assert pq.read_table(second.dataset["all"]).num_rows == len(first.results)
    assert list(path.parent.glob("result.json.corrupt-*")) and store.read_result(victim).outcome == "verified"
    assert f"quarantined {path}" in (cfg.workdir / "driver.log").read_text()
    path.write_text("{")
    assert store.read_result(victim) is None and store.needs_run(victim)  # quarantined, not raised


def test_a_corrupt_instance_json_is_quarantined_and_export_still_works(tmp_path, demo_input):
    mirrors, instances = demo_input
    cfg = config(tmp_path, instances, mirrors)
    run_mint(cfg, mint_fn=fake_mint)
    store = ResultStore(cfg.workdir)
    victim = sorted(store.instances())[0]
    (store.dir(victim) / "instance.json").write_bytes(b'{"instance_id": "x", "re')
    paths = export_dataset(store)
    table = pq.read_table(paths["all"]).to_pylist()
    assert len(table) == len(rows_of(instances))
    row = next(r for r in table if r["instance_id"] == victim)
    assert row["base_commit"] is None  # its input row is gone, its result is kept


def test_a_corrupt_pool_is_quarantined_and_rebuilt_from_the_stored_rows(tmp_path, demo_input):
    mirrors, instances = demo_input
    cfg = config(tmp_path, instances, mirrors)
    first = run_mint(cfg, mint_fn=fake_mint)
    cfg.pool_path.write_bytes(b"this is not a duckdb file" * 100)
    second = run_mint(cfg, mint_fn=fake_mint)  # used to fail with a traceback on every rerun
    assert second.results == [] and len(second.skipped) == len(first.results)
    assert list(cfg.workdir.glob("pool.duckdb.corrupt-*"))
    pooled = {r.instance_id for r in EnvPool(cfg.pool_path, read_only=True).list()}
    assert pooled == {r.instance_id for r in first.results}  # nothing verified is lost


def test_colliding_ids_are_an_input_error_naming_both_rows_and_dotdot_stays_inside(tmp_path, demo_input):
    mirrors, instances = demo_input
    rows = rows_of(instances)
    base = rows[0]
    path = write_rows(tmp_path / "in.jsonl", [{**base, "instance_id": "a/b"}, {**base, "instance_id": "a_b"},
                                             {**base, "instance_id": ".."}, {**base, "instance_id": "."},
                                             {**base, "instance_id": "a-b"}])
    # injective folders: no two ids share one, and none escapes WORKDIR/instances (the store's
    # second line of defence; since issue 24 such ids are refused at load)
    names = {i: folder_name(i) for i in ("a/b", "a_b", "..", ".", "a%2Fb", "x" * 300, "x" * 301)}
    assert len(set(names.values())) == len(names)
    assert all("/" not in n and n not in (".", "..") and len(n.encode()) <= 200 for n in names.values())
    report = run_mint(config(tmp_path, path, mirrors), mint_fn=fake_mint)
    assert sorted(r.instance_id for r in report.results) == ["a-b", "a_b"]
    assert sorted(e.instance_id for e in report.load_errors) == [".", "..", "a/b"]
    work = tmp_path / "w"
    assert not (work / "result.json").exists() and not (work / "DONE").exists()
    assert len(list((work / "instances").iterdir())) == 2
    assert pq.read_table(report.dataset["all"]).num_rows == 2
    # a collision the folder rule cannot avoid (it never happens with distinct ids) is an input
    # error naming both rows
    from pipeline import instances as instmod

    original = instmod.folder_name
    try:
        instmod.folder_name = lambda iid: "same"
        loaded = load_instances(path)
    finally:
        instmod.folder_name = original
    assert [i.instance_id for i in loaded.instances] == ["a_b"]
    shared = [e for e in loaded.errors if "share the folder" in str(e)]
    assert len(shared) == 1 and "'a_b'" in str(shared[0]) and "'a-b'" in str(shared[0])


def big_store(workdir: Path, n: int = 300) -> ResultStore:
    """A store of `n` finished rows with 30 KB patches, so that an export takes a while."""
    store = ResultStore(workdir)
    for k in range(n):
        inst = Instance(instance_id=f"acme__big-{k}", repo="acme/big", base_commit="a" * 40,
                        patch="+x\n" * 10000, test_patch="+t\n" * 5000)
        store.mark_running(inst)
        store.write_result(fake_mint(inst, None, None))
    return store


def test_two_concurrent_exports_both_succeed(tmp_path):
    store = big_store(tmp_path / "w")
    # three processes import once, then all three call `swemint export` at the same instant, five
    # times (rounds 3 s apart): 15 concurrent exports for three interpreter start-ups
    script = ("import sys, time\nfrom pipeline.cli import app\nstart = float(sys.argv[1])\n"
              "for i in range(5):\n    time.sleep(max(0.0, start + 3 * i - time.time()))\n"
              "    try:\n        app(args=['export', '-w', sys.argv[2]], prog_name='swemint')\n"
              "    except SystemExit as e:\n        if e.code not in (0, None):\n            raise\n"
              "    print('export done', flush=True)\n")
    start = time.time() + 8
    procs = [subprocess.Popen([sys.executable, "-c", script, str(start), str(store.workdir)], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert all(out.count("export done") == 5 for out in outs), outs
    assert pq.read_table(store.workdir / "dataset" / "all.parquet").num_rows == 300
    assert not list((store.workdir / "dataset").glob(".*tmp*"))


def test_in_process_concurrent_exports_use_unique_temp_files(tmp_path, demo_input):
    mirrors, instances = demo_input
    cfg = config(tmp_path, instances, mirrors)
    run_mint(cfg, mint_fn=fake_mint)
    store = ResultStore(cfg.workdir)
    errors: list[BaseException] = []

    def export() -> None:
        try:
            for _ in range(5):
                export_dataset(store)
        except BaseException as e:  # noqa: BLE001 - collected for the assertion
            errors.append(e)

    threads = [threading.Thread(target=export) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_timed_out_worker_never_overwrites_the_drivers_timeout_row(tmp_path, demo_input, monkeypatch):
    """The real minter, abandoned by the in-process runner's deadline, finishes later: the stored
    row stays the driver's `timeout`, written once, atomically. No Docker: the plan's base image is
    a name, the sandboxes are the test double."""
    from agents.minter import mint_instance
    from envpool.fake import FakeSandboxFactory

    mirrors, instances = demo_input
    row = rows_of(instances)[0]
    path = write_rows(tmp_path / "in.jsonl", [row])
    factory = FakeSandboxFactory(run_id="t")
    factory.on(r"tar -xf", lambda cmd, sb: time.sleep(3) or (1, "slow checkout fails"))
    done = threading.Event()

    def slow_mint(instance, repo_path, cfg, **kw):
        try:
            return mint_instance(instance, repo_path, cfg, factory=factory)
        finally:
            done.set()

    cfg = load_config(None, ["mint.memory.enabled=false", "mint.reuse.enabled=false", "instance_timeout=1"],
                      workdir=tmp_path / "w", instances=path, mirrors=[mirrors], use_ray=False)
    report = run_mint(cfg, mint_fn=slow_mint)
    assert [r.outcome for r in report.results] == ["timeout"]
    assert done.wait(30)
    time.sleep(0.5)
    stored = ResultStore(cfg.workdir).read_result(row["instance_id"])
    assert stored is not None and stored.outcome == "timeout"


def test_instance_rows_with_bad_strings_in_any_field_name_the_field(tmp_path):
    row = {"instance_id": "acme__x-1", "repo": "acme/x", "base_commit": "a" * 40, "patch": "p", "test_patch": "t",
           "FAIL_TO_PASS": ["ok", "bad\ud800"]}
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(row) + "\n")
    loaded = load_instances(path)
    assert loaded.instances == [] and "FAIL_TO_PASS" in str(loaded.errors[0])
    assert Instance  # the model itself is unchanged


def test_a_lone_surrogate_in_a_result_fails_nothing(tmp_path, demo_input):
    """A runner's report can carry `"\\ud800"` in a test id (JSON escapes): the row is stored
    with the character escaped and the batch goes on."""
    mirrors, instances = demo_input

    def odd(instance, repo_path, config, **kw):
        return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome="no_fail_to_pass",
                              PASS_TO_PASS=["t.py::test[\ud800]"])

    report = run_mint(config(tmp_path, instances, mirrors), mint_fn=odd)
    assert len(report.results) == len(rows_of(instances))
    stored = ResultStore(tmp_path / "w").results()
    assert stored and all(r.PASS_TO_PASS == ["t.py::test[\\ud800]"] for r in stored)
