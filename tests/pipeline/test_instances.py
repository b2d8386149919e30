"""Loading SWE-bench-format instance files: formats, bad rows as errors, filters."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from envpool.errors import InstanceInputError
from pipeline.instances import filter_instances, load_and_select, load_instances, read_ids_file

DEV = Path("/work/shared/data/swebench_dev.jsonl")


def row(iid: str, **kw) -> dict:
    base = {"instance_id": iid, "repo": "octo/proj", "base_commit": "abc123", "patch": "p", "test_patch": "t",
            "FAIL_TO_PASS": ["t::a"], "PASS_TO_PASS": []}
    return {**base, **kw}


def write_jsonl(path: Path, lines: list) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def test_jsonl_bad_rows_become_errors_and_do_not_stop_the_others(tmp_path):
    bad_missing = row("octo__proj-2")
    del bad_missing["patch"]
    f = write_jsonl(tmp_path / "x.jsonl", [
        row("octo__proj-1", FAIL_TO_PASS='["t::x", "t::y"]', PASS_TO_PASS="[]"),  # JSON-encoded lists
        bad_missing,
        "{not json",
        row("octo__proj-4", repo="no-slash"),
        row("octo__proj-5", FAIL_TO_PASS="not a json list"),
        "[1, 2]",
        "",
        row("octo__proj-1"),  # duplicate
        row("octo__proj-9", language="go"),
    ])
    res = load_instances(f)
    assert [i.instance_id for i in res.instances] == ["octo__proj-1", "octo__proj-9"]
    assert res.instances[0].FAIL_TO_PASS == ["t::x", "t::y"]
    msgs = {(e.instance_id, str(e)) for e in res.errors}
    assert len(res.errors) == 6
    by_id = {e.instance_id: str(e) for e in res.errors if e.instance_id}
    assert "patch" in by_id["octo__proj-2"] and "line 2" in by_id["octo__proj-2"]
    assert "owner/name" in by_id["octo__proj-4"]
    assert "line 5" in by_id["octo__proj-5"]
    assert any("line 3" in m and "invalid JSON" in m for _, m in msgs)
    assert any("line 6" in m and "expected a JSON object" in m for _, m in msgs)
    assert any(i == "octo__proj-1" and "duplicate" in m for i, m in msgs)


@pytest.mark.parametrize("wrap", [False, True])
def test_json_list_and_instances_object(tmp_path, wrap):
    rows = [row("a__b-1"), {"instance_id": "a__b-2"}]
    f = tmp_path / "x.json"
    f.write_text(json.dumps({"instances": rows} if wrap else rows))
    res = load_instances(f)
    assert [i.instance_id for i in res.instances] == ["a__b-1"]
    assert res.errors[0].instance_id == "a__b-2" and "item 2" in str(res.errors[0])


def test_json_that_is_neither_list_nor_object_is_a_file_error(tmp_path):
    f = tmp_path / "x.json"
    f.write_text('{"rows": []}')
    with pytest.raises(InstanceInputError, match="expected a JSON list"):
        load_instances(f)


def test_parquet_with_json_encoded_lists(tmp_path):
    rows = [row("a__b-1", FAIL_TO_PASS='["t::x"]', PASS_TO_PASS='["t::p"]', version=None),
            row("a__b-2", base_commit="  ", FAIL_TO_PASS="[]", PASS_TO_PASS="[]", version="1.0")]
    f = tmp_path / "x.parquet"
    pq.write_table(pa.Table.from_pylist(rows), f)
    res = load_instances(f)
    assert [(i.FAIL_TO_PASS, i.PASS_TO_PASS) for i in res.instances] == [(["t::x"], ["t::p"])]
    assert res.errors[0].instance_id == "a__b-2" and "base_commit" in str(res.errors[0])


def test_unreadable_files_raise(tmp_path):
    with pytest.raises(InstanceInputError, match="not found"):
        load_instances(tmp_path / "nope.jsonl")
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(InstanceInputError, match="unknown instance file type"):
        load_instances(tmp_path / "x.csv")


def test_filters_ids_file_language_limit_and_missing_ids(tmp_path):
    f = write_jsonl(tmp_path / "x.jsonl", [row("a__b-1"), row("a__b-2", language="Go"), row("a__b-3"),
                                           row("a__b-4", language="python"), {"instance_id": "a__b-5"}])
    ids = tmp_path / "ids.txt"
    ids.write_text("# core\na__b-3\n\na__b-4  # trailing comment\na__b-5\nzz__zz-9\n")
    assert read_ids_file(ids) == ["a__b-3", "a__b-4", "a__b-5", "zz__zz-9"]
    res = load_and_select(f, ids=["a__b-1"], ids_file=ids)
    assert [i.instance_id for i in res.instances] == ["a__b-1", "a__b-3", "a__b-4"]  # file order
    assert [e.instance_id for e in res.errors] == ["a__b-5"]  # a requested bad row stays an error
    assert res.missing_ids == ["zz__zz-9"]
    # rows without a language count as python; matching is case-insensitive
    assert [i.instance_id for i in load_and_select(f, language="PYTHON").instances] == ["a__b-1", "a__b-3", "a__b-4"]
    assert [i.instance_id for i in load_and_select(f, language="go").instances] == ["a__b-2"]
    assert [i.instance_id for i in load_and_select(f, language="python", limit=2).instances] == ["a__b-1", "a__b-3"]
    # errors of unrequested rows are dropped when ids are given
    assert load_and_select(f, ids=["a__b-1"]).errors == []
    assert filter_instances(load_instances(f).instances, limit=0) == []


@pytest.mark.skipif(not DEV.exists(), reason="shared dev data absent")
def test_real_dev_file_loads_without_errors():
    res = load_instances(DEV)
    assert len(res.instances) == sum(1 for line in DEV.open() if line.strip()) and not res.errors
    assert {i.language for i in res.instances} >= {"python", "go"}


def test_a_language_no_row_has_is_an_error_listing_those_present(tmp_path):
    """`--language golang` when the file says `go`: not a silent empty run."""
    rows = [row("a__b-1", language="go"), row("a__b-2", language="Java")]
    path = write_jsonl(tmp_path / "i.jsonl", rows)
    with pytest.raises(InstanceInputError, match=r"'golang'.*languages present: go, java"):
        load_and_select(path, language="golang")
    assert [i.instance_id for i in load_and_select(path, language="GO").instances] == ["a__b-1"]


def test_bench_scores_other_languages_at_gold_granularity():
    from agents.models import Instance, InstanceResult
    from pipeline.bench import bench

    inst = Instance(**row("gin-gonic__gin-1", language="go", FAIL_TO_PASS=["TestContextBindHeader"],
                          PASS_TO_PASS=["TestOld"]))
    res = InstanceResult(instance_id=inst.instance_id, repo=inst.repo, outcome="verified",
                         FAIL_TO_PASS=["github.com/gin-gonic/gin::TestContextBindHeader"],
                         PASS_TO_PASS=["github.com/gin-gonic/gin::TestOld"])
    scored = bench([res], {inst.instance_id: inst})["instances"][0]
    assert (scored["f2p_recall"], scored["f2p_precision"], scored["p2p_agreement"]) == (1.0, 1.0, 1.0)


EDITTEST = Path(__file__).resolve().parents[1] / "data" / "edittest"


def test_a_patch_editing_a_file_of_the_test_patch_is_an_input_error_naming_the_row_and_the_paths(tmp_path):
    """Found by a fresh user (acme__edittest-1): such a row came out `verified` with the weakened
    test in FAIL_TO_PASS, and `swemint eval -p gold` then said "patch does not apply"."""
    test_patch = (EDITTEST / "test_patch.diff").read_text()
    f = write_jsonl(tmp_path / "x.jsonl", [
        row("acme__edittest-1", patch=(EDITTEST / "patch_editing_tests.diff").read_text(), test_patch=test_patch),
        row("acme__ok-1", patch=(EDITTEST / "patch.diff").read_text(), test_patch=test_patch)])
    res = load_instances(f)
    assert [i.instance_id for i in res.instances] == ["acme__ok-1"]
    [err] = res.errors
    assert err.instance_id == "acme__edittest-1"
    assert "tests/test_new.py" in str(err) and "pkg/__init__.py" not in str(err) and "both touch" in str(err)
