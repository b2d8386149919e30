"""Per-instance state (markers, atomic results, rerun rules) and the Parquet export."""

from __future__ import annotations

import json

import duckdb
import pandas as pd
import pytest

from agents.models import Instance, InstanceResult
from pipeline.export import export_dataset
from pipeline.store import DONE, RUNNING, ResultStore, safe_name


def inst(iid: str) -> Instance:
    return Instance(instance_id=iid, repo="octo/proj", base_commit="abc", patch="P", test_patch="TP",
                    problem_statement="it breaks", created_at="2021-01-02 03:04:05", version="1.2",
                    FAIL_TO_PASS=["gold::f"], PASS_TO_PASS=["gold::p"], environment_setup_commit="e" * 40)


def res(iid: str, outcome: str, **kw) -> InstanceResult:
    return InstanceResult(instance_id=iid, repo="octo/proj", outcome=outcome, **kw)


def test_write_result_is_atomic_and_markers_follow(tmp_path):
    store = ResultStore(tmp_path)
    store.mark_running(inst("a__b-1"))
    d = store.dir("a__b-1")
    assert (d / RUNNING).exists() and store.is_running("a__b-1") and store.read_result("a__b-1") is None
    store.write_result(res("a__b-1", "verified", FAIL_TO_PASS=["t::x"]))
    assert (d / DONE).read_text().strip() == "verified" and not (d / RUNNING).exists()
    assert sorted(p.name for p in d.iterdir()) == ["DONE", "instance.json", "result.json"]  # no temp files
    assert store.read_result("a__b-1").FAIL_TO_PASS == ["t::x"]
    assert store.read_instance("a__b-1").patch == "P"


def test_rerun_rules(tmp_path):
    store = ResultStore(tmp_path, retry_outcomes=["infra_error", "timeout", "verified"])
    for iid, outcome in [("v", "verified"), ("i", "infra_error"), ("n", "no_fail_to_pass")]:
        store.mark_running(inst(iid))
        store.write_result(res(iid, outcome))
    store.mark_running(inst("crashed"))  # RUNNING left behind by a dead run
    assert not store.needs_run("v")  # verified is never redone, even when listed
    assert store.needs_run("i") and not store.needs_run("n")
    assert store.needs_run("crashed") and store.needs_run("never-seen")
    assert [r.instance_id for r in store.results()] == ["i", "n", "v"]
    assert not ResultStore(tmp_path).needs_run("i")  # nothing retried by default


def test_rerun_clears_old_done_marker(tmp_path):
    store = ResultStore(tmp_path, retry_outcomes=["timeout"])
    store.mark_running(inst("t"))
    store.write_result(res("t", "timeout"))
    store.mark_running(inst("t"))
    assert store.read_result("t") is None and store.results() == []


def test_safe_name_keeps_folders_inside_root(tmp_path):
    assert safe_name("django__django-1234") == "django__django-1234"
    assert safe_name("../../etc/passwd") == "..%2F..%2Fetc%2Fpasswd"
    assert safe_name("..") == "%2E%2E" and safe_name("a/b") != safe_name("a_b")
    assert ResultStore(tmp_path).dir("a/b").parent == tmp_path / "instances"


@pytest.fixture()
def exported(tmp_path):
    store = ResultStore(tmp_path)
    rows = [res("a__b-1", "verified", FAIL_TO_PASS=["ours::f", "ours::g"], PASS_TO_PASS=["ours::p"],
                timings={"total": 12.5, "setup": 4.0}, image="swemint/env:abc", flaky_tests=["ours::z"],
                test_infra_files=["test_patch:tests/conftest.py"], anomalies=["before#2: the run timed out"]),
            res("a__b-2", "env_failed", reason="no wheel", timings={}),
            res("a__b-3", "timeout", reused_from="a__b-1")]
    for r in rows:
        store.mark_running(inst(r.instance_id))
        store.write_result(r)
    return export_dataset(store)


def test_export_loads_in_pandas(exported):
    df = pd.read_parquet(exported["all"])
    assert list(df.instance_id) == ["a__b-1", "a__b-2", "a__b-3"]
    v = pd.read_parquet(exported["verified"])
    assert list(v.instance_id) == ["a__b-1"]
    first = df.iloc[0]
    assert list(first.FAIL_TO_PASS) == ["ours::f", "ours::g"]  # ours, not gold
    assert first.patch == "P" and first.version == "1.2" and first.image == "swemint/env:abc"
    assert json.loads(first.timings) == {"total": 12.5, "setup": 4.0} and first.total_seconds == 12.5
    assert df.environment_setup_commit.isna().all()
    assert df.iloc[2].reused_from == "a__b-1" and df.iloc[1].reason == "no wheel"
    assert list(first.test_infra_files) == ["test_patch:tests/conftest.py"]  # flagged in the row
    assert list(first.anomalies) == ["before#2: the run timed out"] and list(df.iloc[1].anomalies) == []


def test_export_loads_in_duckdb(exported):
    con = duckdb.connect()
    got = con.execute(f"SELECT instance_id, len(FAIL_TO_PASS), json_extract(timings, '$.setup')::DOUBLE, outcome "
                      f"FROM '{exported['all']}' ORDER BY instance_id").fetchall()
    assert got[0] == ("a__b-1", 2, 4.0, "verified") and got[1][1] == 0 and got[2][3] == "timeout"


def test_export_loads_in_hf_datasets(exported):
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_parquet(str(exported["all"]))
    assert ds.num_rows == 3 and ds[0]["FAIL_TO_PASS"] == ["ours::f", "ours::g"]
    assert ds[0]["environment_setup_commit"] is None and ds[2]["flaky_tests"] == []
    assert str(ds.features["PASS_TO_PASS"].feature.dtype) == "string"


def test_export_of_empty_store_writes_empty_files_with_schema(tmp_path):
    paths = export_dataset(ResultStore(tmp_path))
    df = pd.read_parquet(paths["verified"])
    assert len(df) == 0 and "FAIL_TO_PASS" in df.columns and "timings" in df.columns


def test_report_stats_nearest_rank_p90():
    from pipeline.driver import MintReport

    rep = MintReport(results=[res(f"i{n}", "verified", timings={"total": float(n)}) for n in range(1, 11)],
                     skipped=[res("old", "verified")], wall_s=3600.0)
    assert rep.stats() == {"median_s": 5.5, "p90_s": 9.0, "per_hour": 10.0}
    assert rep.counts()["verified"] == (10, 11) and rep.counts()["timeout"] == (0, 0)


def test_atomic_files_get_a_plain_files_mode_not_mkstemps(tmp_path):
    """The dataset (Parquet, card) is written through atomic_path: readable by others as any
    file the user writes (0666 less the umask), not 0600 (a fresh user's trial found 0600)."""
    import os
    import stat

    from pipeline.store import _UMASK, atomic_write

    atomic_write(tmp_path / "card.md", "x")
    assert stat.S_IMODE(os.stat(tmp_path / "card.md").st_mode) == 0o666 & ~_UMASK
