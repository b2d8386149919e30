"""`swemint eval`: predictions in SWE-bench's forms, resumable parallel grading, the run report."""

from __future__ import annotations

import json

import pytest

from envpool.fake import FakeSandboxFactory
from pipeline.evaluate import evaluate, load_predictions, tests_spec

GO = "\n".join(json.dumps(e) for e in [{"Action": "pass", "Package": "m", "Test": "TestA"}, {"Action": "pass", "Package": "m"}])


def row(iid: str) -> dict:
    return {"instance_id": iid, "image": "img", "image_local": "img", "patch": "diff --git a/x b/x\n", "test_patch": "",
            "FAIL_TO_PASS": ["m::TestA"], "PASS_TO_PASS": [], "parser": "go_test_json", "parser_options": "{}",
            "report_path": "/tmp/r.json", "test_command": "go test -json > /tmp/r.json", "total_seconds": 40.0}


def test_predictions_in_every_swebench_form(tmp_path):
    rows = {"a": row("a"), "b": row("b")}
    preds = [{"instance_id": "a", "model_patch": "p", "model_name_or_path": "m"}]
    (tmp_path / "p.jsonl").write_text(json.dumps(preds[0]) + "\n")
    (tmp_path / "p.json").write_text(json.dumps(preds))
    (tmp_path / "d.json").write_text(json.dumps({"a": preds[0]}))
    for f in ("p.jsonl", "p.json", "d.json"):
        assert load_predictions(tmp_path / f) == preds
    assert [p["model_patch"] for p in load_predictions("gold", rows)] == [rows["a"]["patch"]] * 2
    assert [p["model_patch"] for p in load_predictions("empty", rows)] == ["", ""]
    (tmp_path / "bad.json").write_text(json.dumps([{"model_patch": "x"}]))
    with pytest.raises(ValueError, match="no instance_id"):
        load_predictions(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="jsonl or .json"):
        load_predictions(tmp_path / "p.txt")


def test_pytest_rows_run_with_the_venv_python():
    s = tests_spec({"parser": "pytest_plugin", "test_files": ["t.py"],
                    "test_command": "cd /testbed && PYTHONPATH=p /opt/py/bin/python -m pytest t.py"})
    assert s.kind == "pytest" and s.python == "/opt/py/bin/python" and s.env["VIRTUAL_ENV"]


def test_grading_is_resumable_and_reports_in_swebench_shape(tmp_path):
    f = FakeSandboxFactory(run_id="t")
    f.on(r"go test", lambda cmd, sb: (sb.put_file("/tmp/r.json", GO), 0)[1])
    rows = {"a": row("a"), "b": row("b")}
    preds = [{"instance_id": "a", "model_patch": rows["a"]["patch"], "model_name_or_path": "org/model"},
             {"instance_id": "b", "model_patch": "", "model_name_or_path": "org/model"},
             {"instance_id": "zzz", "model_patch": "x", "model_name_or_path": "org/model"}]
    rep = evaluate(rows, preds, tmp_path, workers=2, factory=f)
    assert rep["resolved_ids"] == ["a", "b"] and rep["empty_patch_ids"] == ["b"] and rep["unknown_ids"] == ["zzz"]
    assert rep["graded_now"] == 2 and rep["instances"]["a"]["mint_seconds"] == 40.0
    assert (tmp_path / "org__model" / "a.json").is_file()
    assert json.loads((tmp_path / "report.json").read_text())["resolved_instances"] == 2
    again = evaluate(rows, preds, tmp_path, workers=2, factory=FakeSandboxFactory(run_id="t", strict=True))
    assert again["graded_now"] == 0 and again["resolved_ids"] == ["a", "b"]
