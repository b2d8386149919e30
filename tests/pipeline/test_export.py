"""The dataset as the field uses it: SWE-bench v5 columns, HF splits and card, task repository."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from agents.models import EnvRecord, Instance, InstanceResult, parse_id_list
from pipeline.export import (COLUMNS, SPLITS, TEST_ID_COLUMNS, expected_image, export_dataset, export_task_repo, make_row,
                             published_reference)
from pipeline.store import ResultStore

TP = "diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -1 +1 @@\n-a\n+b\n"
PATCH = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"


def inst(iid: str, **kw) -> Instance:
    base = dict(instance_id=iid, repo="octo/proj", base_commit="abc", patch=PATCH, test_patch=TP,
                problem_statement="it breaks", hints_text="try x", created_at="2021-01-02", version="1.2",
                language="python", source="github", pull_number=7, issue_numbers=[3, 4], quality_score=0.8,
                commit="f" * 40, crawled_at="2026-01-01T00:00:00Z")
    return Instance(**{**base, **kw})


@pytest.fixture()
def store(tmp_path):
    s = ResultStore(tmp_path)
    log = tmp_path / "instances" / "octo__proj-1" / "run.log"
    rows = [
        (inst("octo__proj-1"), InstanceResult(
            instance_id="octo__proj-1", repo="octo/proj", outcome="verified", log_path=str(log),
            FAIL_TO_PASS=["tests/test_x.py::test_a[x y]"], PASS_TO_PASS=["tests/test_x.py::test_b"],
            test_files=["tests/test_x.py"], parser="pytest_plugin", image="swemint/env:p1",
            test_command="cd /testbed && PYTHONPATH=/opt/swemint/plugins /opt/venv/bin/python -m pytest t",
            dockerfile="FROM debian:bookworm-slim\n", timings={"total": 3.0})),
        (inst("octo__proj-2"), InstanceResult(instance_id="octo__proj-2", repo="octo/proj", outcome="env_failed",
                                              reason="no wheel")),
        (inst("octo__proj-3", language="go"), InstanceResult(
            instance_id="octo__proj-3", repo="octo/proj", outcome="verified", FAIL_TO_PASS=["m::TestA"],
            parser="go_test_json", image="swemint/env:p3", test_command="export X=1; go test -json; cat /tmp/r",
            dockerfile="FROM debian:bookworm-slim\n")),
    ]
    for i, r in rows:
        s.mark_running(i)
        s.write_result(r)
    plan = {"test_command": "go test -json ./... > /tmp/r", "parser": "go_test_json", "report_path": "/tmp/r",
            "parser_options": {"root": "/testbed"}, "env": {"GOFLAGS": "-mod=mod"}, "test_files": ["a_test.go"]}
    (s.dir("octo__proj-3") / "plan.json").write_text(json.dumps(plan))
    return s


def test_verified_rows_carry_what_swebench_v5_needs(store):
    paths = export_dataset(store)
    rows = {r["instance_id"]: r for r in pq.read_table(paths["all"]).to_pylist()}
    py, go, failed = rows["octo__proj-1"], rows["octo__proj-3"], rows["octo__proj-2"]
    assert [c for c, *_ in COLUMNS] == list(py)
    for r in (py, go):
        assert r["log_parser"] == "parse_log_gotest" and r["eval_type"] == "pass_and_fail"
        assert ">>>>> Start Test Output" in r["eval_script"] and r["status_format"] == "swemint-status/1"
        assert r["image"] == r["image_name"] == r["image_local"]
    assert "tests/test_x.py::test_a[x y]" in py["eval_script"]  # known ids, whole
    assert "go test -json ./... > /tmp/r" in go["eval_script"] and "--parser go_test_json" in go["eval_script"]
    assert json.loads(go["parser_options"]) == {"root": "/testbed"} and go["report_path"] == "/tmp/r"
    assert failed["eval_script"] is None and failed["reason"] == "no wheel"
    assert py["log_path"] == "instances/octo__proj-1/run.log"
    assert (py["source"], py["pull_number"], py["issue_numbers"], py["quality_score"], py["crawled_at"]) == (
        "github", 7, [3, 4], 0.8, "2026-01-01T00:00:00Z") and py["commit"] == "f" * 40
    assert [r["instance_id"] for r in pq.read_table(paths["verified"]).to_pylist()] == ["octo__proj-1", "octo__proj-3"]


def test_json_strings_match_the_hf_copies_of_swebench(store):
    paths = export_dataset(store, json_strings=True)
    row = pq.read_table(paths["verified"]).to_pylist()[0]
    assert json.loads(row["FAIL_TO_PASS"]) == ["tests/test_x.py::test_a[x y]"]


@pytest.mark.parametrize("json_strings", [False, True])
def test_fail_to_pass_and_pass_to_pass_share_one_type_and_round_trip(store, json_strings):
    """Fresh-user trial 11 reported PASS_TO_PASS a JSON string next to a list FAIL_TO_PASS: both
    columns are written by one helper, lists by default, JSON strings with --json-strings (an
    empty PASS_TO_PASS included), and read back to the lists the store holds."""
    paths = export_dataset(store, json_strings=json_strings)
    want = {r.instance_id: (r.FAIL_TO_PASS, r.PASS_TO_PASS) for r in store.results()}
    for split in ("verified", "all"):
        table = pq.read_table(paths[split])
        f2p, p2p = (table.schema.field(c).type for c in TEST_ID_COLUMNS)
        assert f2p == p2p == (pa.string() if json_strings else pa.list_(pa.string()))
        for row in table.to_pylist():
            assert type(row["FAIL_TO_PASS"]) is type(row["PASS_TO_PASS"])
            got = (parse_id_list(row["FAIL_TO_PASS"]), parse_id_list(row["PASS_TO_PASS"]))
            assert got == want[row["instance_id"]]
    card, typ = paths["card"].read_text(), "string" if json_strings else "list&lt;item: string&gt;"
    assert all(f"| {c} | {typ} |" in card for c in TEST_ID_COLUMNS)


def test_hf_datasets_gives_two_splits_and_the_card_counts(store):
    datasets = pytest.importorskip("datasets")
    paths = export_dataset(store)
    d = datasets.load_dataset(str(paths["verified"].parent), cache_dir=str(store.workdir / "hf-cache"))
    assert set(d) == set(SPLITS) and d["verified"].num_rows == 2 and d["all_outcomes"].num_rows == 3
    card = paths["card"].read_text()
    front = yaml.safe_load(card.split("---")[1])
    assert [s["split"] for s in front["configs"][0]["data_files"]] == ["verified", "all_outcomes"]
    assert "| octo/proj | 2 | 3 |" in card and "| go | 1 | 1 |" in card and "## Grading caveats" in card


def test_the_card_shows_the_recorded_configuration(store):
    (store.workdir / "mint_config.json").write_text(json.dumps({"workers": 3}))
    assert '"workers": 3' in export_dataset(store)["card"].read_text()


def test_published_reference_carries_the_digest():
    class Img:
        attrs = {"RepoDigests": ["reg:5000/swemint/env@sha256:abc", "other/x@sha256:zzz"]}

    class Client:
        class images:  # noqa: N801 - docker SDK shape
            @staticmethod
            def get(ref):
                return Img()

    res = InstanceResult(instance_id="i", repo="o/r", outcome="verified", image="swemint/env:t",
                         env=EnvRecord(instance_id="i", repo="o/r", base_commit="b", image_tag="swemint/env:t",
                                       location="reg:5000/swemint/env:t"))
    assert published_reference(res, Client()) == "reg:5000/swemint/env:t@sha256:abc"
    res.env.location = "local"
    assert published_reference(res, Client()) is None


def test_task_repo_has_swebench_v5_layout(store, tmp_path):
    out = tmp_path / "repo"
    rep = export_task_repo(store, out, lambda i: b"", dataset="me/tasks")
    assert rep == {"tasks": 2, "skipped": {}}
    assert yaml.safe_load((out / "sweb.yaml").read_text()) == {"datasets": ["me/tasks"], "splits": ["verified"]}
    d = out / "tasks" / "octo__proj-1"
    # swebench 5.0.2 task/checks.py REQUIRED_FILES / REQUIRED_KEYS
    for f in ("task.yaml", "tests.json", "Dockerfile", "gold.patch", "test.patch", "eval.sh", "problem_statement.md"):
        assert (d / f).is_file(), f
    meta = yaml.safe_load((d / "task.yaml").read_text())
    for k in ("instance_id", "repo", "version", "base_commit", "split", "image", "log_parser", "eval_type"):
        assert k in meta
    assert meta["image"] == expected_image("octo__proj-1") == "swebench/sweb.eval.x86_64.octo_1776_proj-1:latest"
    assert meta["datasets"] == ["me/tasks"] and (d / "hints.md").read_text() == "try x"
    tests = json.loads((d / "tests.json").read_text())
    assert tests == {"FAIL_TO_PASS": ["tests/test_x.py::test_a[x y]"], "PASS_TO_PASS": ["tests/test_x.py::test_b"]}
    assert (d / "testbed.tar.gz").is_file() and (d / "swemint" / "bin" / "swemint-status.pyz").is_file()
    assert (d / "eval.sh").read_text() == make_row(store.read_result("octo__proj-1"), store.read_instance(
        "octo__proj-1"), store.workdir)["eval_script"]


def test_task_repo_skips_a_row_whose_tree_is_missing(store, tmp_path):
    def trees(i):
        if i.instance_id == "octo__proj-3":
            raise FileNotFoundError("no mirror")
        return b""
    rep = export_task_repo(store, tmp_path / "r", trees)
    assert rep["tasks"] == 1 and "no mirror" in rep["skipped"]["octo__proj-3"]


def test_rows_say_which_round_of_the_loop_verified_and_how_the_environment_was_reused(tmp_path):
    from agents.models import RoundRecord

    res = InstanceResult(instance_id="octo__proj-9", repo="octo/proj", outcome="verified", round=2,
                         rounds=[RoundRecord(round=1, source="reused", outcome="no_fail_to_pass",
                                             attribution="genuine: fails after", feedback="rebuild"),
                                 RoundRecord(round=2, source="built", outcome="verified")],
                         reused_from="octo__proj-3", reuse_kind="same_repo", language="go",
                         dependency_key="ab" * 32, dependency_image_id="sha256:" + "cd" * 32)
    row = make_row(res, inst("octo__proj-9", language=None), tmp_path)
    assert (row["round"], row["reuse_kind"], row["reuse_overlap"]) == (2, "same_repo", None)
    assert (row["dependency_key"], row["dependency_image_id"]) == ("ab" * 32, "sha256:" + "cd" * 32)
    assert [r["feedback"] for r in json.loads(row["rounds"])] == ["rebuild", ""]
    assert row["language"] == "go"  # the detected language of a row without one
