"""The CLI's conventions: -h, --version, -v/-q, --json and summary.json, effective defaults in help,
swebench's spellings for `eval`, `run --repo`, and a non-zero exit with one line for each bad input
(issue 29). The minter is the fake of test_cli (in-process runner, no Docker)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from envpool.evaluation import EvalReport
from pipeline.cli import app, expand_nargs, repo_sources
from pipeline.pipeline_config import PipelineConfig, load_config
from pipeline.configerrors import explain
from tests.pipeline.test_cli import mint_args, setup  # noqa: F401 - the fixture

runner = CliRunner()


def margs(d: Path, *extra: str) -> list[str]:
    """test_cli's mint arguments; reuse off (its fake minter takes no reuse candidates)."""
    return mint_args(d, "--set", "mint.reuse.enabled=false", *extra)


def one_line_error(r, code: int, *needles: str) -> None:
    """The command exited `code` with a one-line error naming every needle, and no traceback."""
    text = r.stderr + r.stdout
    assert r.exit_code == code, text
    assert "Traceback" not in text and "Errno" not in text, text
    lines = [x for x in r.stderr.splitlines() if "error" in x]
    assert lines, text
    for n in needles:
        assert n in r.stderr, (n, r.stderr)


def test_version_and_short_help():
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.stdout.startswith("swemint ")
    for args in (["-h"], ["mint", "-h"], ["pool", "list", "-h"], ["eval", "-h"], ["report", "-h"]):
        r = runner.invoke(app, args)
        assert r.exit_code == 0 and "Usage" in r.stdout, args


def test_help_shows_effective_defaults_and_no_host_paths():
    r = runner.invoke(app, ["mint", "-h"], terminal_width=200)
    assert "(config: workers)" in r.stdout and "default: (1)" in r.stdout  # configs/default.yaml's workers
    assert "default: (--ray)" in r.stdout and "default: (work)" in r.stdout
    for args in (["-h"], ["mint", "-h"], ["export", "-h"], ["rebuild", "-h"], ["run", "-h"], ["bench", "-h"]):
        assert "/work/.mirror" not in runner.invoke(app, args, terminal_width=200).stdout


def test_json_summary_on_stdout_and_summary_file(setup):
    d = setup
    r = runner.invoke(app, margs(d, "--json"))
    assert r.exit_code == 0, r.stderr
    summary = json.loads(r.stdout)  # stdout holds the JSON object alone; the tables went to stderr
    assert summary["ok"] and summary["command"] == "mint" and summary["exit_code"] == 0
    assert summary["outcomes"] == {"verified": 1, "no_fail_to_pass": 1, "infra_error": 1}
    assert summary["bad_rows"] == 1 and summary["dataset"]["verified"].endswith("verified.parquet")
    assert {i["instance_id"]: i["outcome"] for i in summary["instances"]}["octo__proj-1"] == "verified"
    assert "swemint mint" in r.stderr  # the table, for a person
    on_disk = json.loads((d / "work" / "summary.json").read_text())
    assert on_disk["outcomes"] == summary["outcomes"]
    # the global position works too, and a read-only command gives its own summary
    r = runner.invoke(app, ["--json", "pool", "list", "-w", str(d / "work")])
    assert r.exit_code == 0 and [e["instance_id"] for e in json.loads(r.stdout)["environments"]] == ["octo__proj-1"]


def test_quiet_and_verbose(setup):
    d = setup
    r = runner.invoke(app, margs(d, "-q"))
    assert r.exit_code == 0 and r.stdout == "", r.stdout
    assert "octo__proj-4" not in r.stderr  # bad-row notes are for the default mode
    (d / "work" / "summary.json").unlink()
    r = runner.invoke(app, ["-v", *margs(d)])  # the rerun: the driver's INFO lines on stderr
    assert "already finished" in r.stderr and "pipeline.driver INFO" in r.stderr
    assert (d / "work" / "summary.json").is_file()


def test_all_bad_instance_file_exits_2_and_writes_no_dataset(tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"foo": 1}\n{"instance_id": "x"}\nnot json\n')
    r = runner.invoke(app, ["mint", "-i", str(f), "-w", str(tmp_path / "w"), "--no-ray"])
    one_line_error(r, 2, "no usable row in bad.jsonl: 3 bad rows", "input_errors.jsonl")
    assert not (tmp_path / "w" / "dataset").exists()
    assert len((tmp_path / "w" / "input_errors.jsonl").read_text().splitlines()) == 3
    f.write_text("")
    one_line_error(runner.invoke(app, ["mint", "-i", str(f), "-w", str(tmp_path / "w"), "--no-ray"]), 2,
                   "bad.jsonl is empty")


@pytest.mark.parametrize("args, needle", [
    (["eval", "-p", "gold", "-w", "{tmp}/missing"], "work directory not found"),
    (["pool", "list", "-w", "{tmp}/missing"], "work directory not found"),
    (["pool", "list", "-w", "{tmp}/plain"], "not a swemint work directory"),
    (["export", "-w", "{tmp}/missing"], "work directory not found"),
    (["export", "-w", "{tmp}/plain"], "not a swemint work directory"),
    (["report", "-w", "{tmp}/missing"], "work directory not found"),
    (["report", "{tmp}/missing"], "work directory not found"),
    (["rebuild", "-w", "{tmp}/plain"], "not a swemint work directory"),
    (["mint", "-c", "{tmp}/nosuch.yaml"], "config file not found"),
    (["mint", "-i", "{tmp}/nosuch.jsonl"], "instance file not found"),
    (["mint", "-i", "{tmp}/plain/t.jsonl", "--ids-file", "{tmp}/nosuch.txt"], "ids file not found"),
    (["mint", "-i", "{tmp}/plain/t.jsonl", "--set", "mint.timeouts.instanse=5"],
     "unknown key mint.timeouts.instanse (did you mean mint.timeouts.instance?)"),
    (["mint", "-c", "{tmp}/typo.yaml", "-i", "{tmp}/plain/t.jsonl"], "unknown key workres (did you mean workers?)"),
    (["mint", "-c", "{tmp}/broken.yaml", "-i", "{tmp}/plain/t.jsonl"], "not valid YAML"),
    (["crawl", "-c", "{tmp}/nosuch.yaml", "-w", "{tmp}/w"], "config file not found"),
])
def test_bad_input_is_one_line_and_non_zero(tmp_path, args, needle):
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "t.jsonl").write_text("")
    (tmp_path / "typo.yaml").write_text("workres: 2\n")
    (tmp_path / "broken.yaml").write_text("workers: [1\n")
    r = runner.invoke(app, [a.format(tmp=tmp_path) for a in args])
    one_line_error(r, 2, needle)
    assert not (tmp_path / "missing").exists()  # a read-only command never creates the folder
    assert not (tmp_path / "plain" / "dataset").exists()


def test_config_errors_name_the_closest_key():
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as e:
        load_config(None, ["ray.num_cpu=3", "sources.local=[{repo: a/b, git_dirr: x}]", "workers=x", "mint.zzz=1"])
    lines = explain(e.value, PipelineConfig)
    assert "unknown key ray.num_cpu (did you mean ray.num_cpus?)" in lines
    assert "unknown key sources.local[0].git_dirr (did you mean sources.local[0].git_dir?)" in lines
    assert "sources.local[0].git_dir: required, not given" in lines
    assert any(x.startswith("workers: Input should be a valid integer") and "(got 'x')" in x for x in lines)
    assert any(x.startswith("unknown key mint.zzz (keys here: ") and "timeouts" in x for x in lines)
    # a validator's sentence: no "Value error," prefix, no dump of the section it validated
    with pytest.raises(ValidationError) as e:
        load_config(None, ["mint.policy=llm"])
    assert explain(e.value, PipelineConfig) == ["mint.policy llm needs a usable `llm` block (mint.llm.model, "
                                                "mint.llm.api_key_env): none is configured"]
    # a block whose model is empty was given: the message says so, not "none is configured"
    for model in ('""', "'  '"):
        with pytest.raises(ValidationError) as e:
            load_config(None, ["mint.policy=hybrid", f"mint.llm.model={model}"])
        assert explain(e.value, PipelineConfig) == ["mint.policy hybrid needs a usable `llm` block (mint.llm.model, "
                                                    "mint.llm.api_key_env): mint.llm.model is empty"], model


@pytest.fixture()
def dataset(tmp_path, monkeypatch):
    """A dataset folder with two verified rows, and `grade` replaced by a stand-in that resolves
    gold patches (no Docker: these tests are about the command line)."""
    rows = [{"instance_id": f"o__p-{n}", "repo": "o/p", "patch": f"gold {n}", "outcome": "verified",
             "total_seconds": 5.0} for n in (1, 2)]
    (tmp_path / "ds").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "ds" / "verified.parquet")
    graded = []

    def grade(row, patch, **kw):
        graded.append(row["instance_id"])
        ok = patch == row["patch"]
        return EvalReport(instance_id=row["instance_id"], resolved=ok, reward=float(ok), patch_exists=bool(patch))

    monkeypatch.setattr("pipeline.evaluate.grade", grade)
    monkeypatch.chdir(tmp_path)
    return tmp_path, graded


def test_eval_takes_swebench_spellings(dataset):
    d, graded = dataset
    r = runner.invoke(app, ["eval", str(d / "ds"), "--gold", "-j", "2", "-i", "o__p-1", "--run-id", "g", "--json"])
    assert r.exit_code == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["resolved_ids"] == ["o__p-1"] and graded == ["o__p-1"]
    assert (d / "evaluations" / "g" / "report.json").is_file()  # ./evaluations/RUN_ID with a dataset, no -w
    argv = expand_nargs(["eval", "--dataset_name", str(d / "ds"), "--predictions_path", "gold", "--max_workers", "1",
                         "--instance_ids", "o__p-1", "o__p-2", "--run_id", "h", "--report_dir", str(d / "rep")])
    assert argv.count("--instance_ids") == 2
    r = runner.invoke(app, argv)
    assert r.exit_code == 0, r.stderr
    assert json.loads((d / "rep" / "report.json").read_text())["resolved_instances"] == 2


def test_eval_of_a_work_directorys_dataset_reports_into_that_work_directory(dataset, monkeypatch):
    """`swemint eval WORKDIR/dataset --gold` with no -w: the reports go to WORKDIR/evaluations/RUN_ID
    (beside the other runs, which `swemint report` shows), not into the current folder; a folder that
    merely holds a `dataset` folder is not a work directory (./evaluations/RUN_ID as before)."""
    d, graded = dataset
    work = d / "work"
    (work / "instances").mkdir(parents=True)
    (d / "ds").rename(work / "dataset")
    here = d / "elsewhere"
    here.mkdir()
    monkeypatch.chdir(here)
    r = runner.invoke(app, ["eval", str(work / "dataset"), "--gold", "--run-id", "g", "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["report"] == str(work / "evaluations" / "g" / "report.json")
    assert (work / "evaluations" / "g" / "report.json").is_file() and not (here / "evaluations").exists()
    r = runner.invoke(app, ["eval", str(work / "dataset" / "verified.parquet"), "--gold", "--run-id", "p"])
    assert r.exit_code == 0 and (work / "evaluations" / "p" / "report.json").is_file()
    assert re.search(r"^2/2 o__p-[12]: resolved \(\d+s\)$", r.stdout, re.M)  # a line per graded row (not a tty)
    copy = d / "download"
    copy.mkdir()
    (work / "dataset").rename(copy / "dataset")
    r = runner.invoke(app, ["eval", str(copy / "dataset"), "--gold", "--run-id", "c"])
    assert r.exit_code == 0, r.stderr
    assert (here / "evaluations" / "c" / "report.json").is_file() and not (copy / "evaluations").exists()


def test_eval_unknown_ids(dataset):
    d, graded = dataset
    one_line_error(runner.invoke(app, ["eval", "-d", str(d / "ds"), "-p", "gold", "--ids", "nope-1"]), 2,
                   "not in the dataset: nope-1")
    preds = d / "p.jsonl"
    preds.write_text(json.dumps({"instance_id": "nope-1", "model_patch": "x"}) + "\n")
    one_line_error(runner.invoke(app, ["eval", "-d", str(d / "ds"), "-p", str(preds)]), 2,
                   "no prediction names an instance of the dataset: nope-1")
    assert graded == []
    preds.write_text(json.dumps({"instance_id": "nope-1", "model_patch": "x"}) + "\n"
                     + json.dumps({"instance_id": "o__p-2", "model_patch": "gold 2"}) + "\n")
    r = runner.invoke(app, ["eval", "-d", str(d / "ds"), "-p", str(preds), "--run-id", "mixed"])
    assert r.exit_code == 1 and graded == ["o__p-2"]  # the known one is graded, the run says what was not
    assert "nope-1" in r.stderr and "not graded" in r.stderr
    one_line_error(runner.invoke(app, ["eval", "-d", str(d / "ds"), "-p", str(d / "none.jsonl")]), 2,
                   "predictions file not found")
    one_line_error(runner.invoke(app, ["eval", "-d", str(d / "nowhere"), "--gold"]), 2, "dataset not found")


def test_eval_takes_no_ray_and_refuses_ray(dataset):
    d, graded = dataset
    r = runner.invoke(app, ["eval", str(d / "ds"), "--gold", "--no-ray", "--run-id", "nr"])
    assert r.exit_code == 0, r.stderr
    one_line_error(runner.invoke(app, ["eval", str(d / "ds"), "--gold", "--ray"]), 2, "not on Ray")


def test_eval_fails_when_the_engine_could_not_grade_rows(dataset, monkeypatch):
    """Rows whose image is gone (a cluster demo's registry torn down) are no grade: exit 1 with
    one line naming the rows and the cause (it used to exit 0), and a rerun grades them again."""
    d, graded = dataset
    missing = {"o__p-2"}

    def grade(row, patch, **kw):
        graded.append(row["instance_id"])
        if row["instance_id"] in missing:
            return EvalReport(instance_id=row["instance_id"], patch_exists=True, infra_error=True,
                              error="InfraError: image 127.0.0.1:5000/swemint/env@sha256:ab not found")
        return EvalReport(instance_id=row["instance_id"], resolved=True, reward=1.0, patch_exists=True)

    monkeypatch.setattr("pipeline.evaluate.grade", grade)
    r = runner.invoke(app, ["eval", str(d / "ds"), "--gold", "--run-id", "x"])
    one_line_error(r, 1, "1 row(s) could not be graded", "o__p-2", "image 127.0.0.1:5000/swemint/env@sha256:ab not found")
    rep = json.loads((d / "evaluations" / "x" / "report.json").read_text())
    assert rep["infra_error_ids"] == ["o__p-2"] and rep["resolved_ids"] == ["o__p-1"]
    missing.clear()
    graded.clear()
    r = runner.invoke(app, ["eval", str(d / "ds"), "--gold", "--run-id", "x"])
    assert r.exit_code == 0, r.stderr
    assert graded == ["o__p-2"]  # the resolved row is kept, the engine failure graded again


def test_run_repo_flag_picks_the_mirror_or_github(setup):
    d = setup
    cfg = load_config(None, [], mirrors=[d / "mirrors"], workdir=d / "w")
    lines = repo_sources(cfg, ["octo/proj", "someone/else"], last=20)
    assert [x.split(":")[0] for x in lines] == ["octo/proj", "someone/else"]
    assert [(s.repo, s.max_commits) for s in cfg.sources.local] == [("octo/proj", 20)]
    assert cfg.sources.local[0].git_dir == (d / "mirrors" / "octo+proj" / "repo").absolute()
    assert cfg.sources.github.repos == ["someone/else"] and cfg.sources.github.pairs.max_pulls_per_repo == 20
    one_line_error(runner.invoke(app, ["run", "--repo", "nonsense", "-w", str(d / "w"), "--no-ray"]), 2,
                   "not owner/name")


def test_report_takes_w_and_the_old_positional_form_with_a_note(setup):
    pytest.importorskip("matplotlib")
    d = setup
    assert runner.invoke(app, margs(d)).exit_code == 0
    r = runner.invoke(app, ["report", "-w", str(d / "work")])
    assert r.exit_code == 0 and (d / "work" / "report.html").is_file() and "deprecated" not in r.stderr
    r = runner.invoke(app, ["report", str(d / "work"), "--out", str(d / "r.html")])
    assert r.exit_code == 0 and "deprecated" in r.stderr and (d / "r.html").is_file()


def test_python_dash_m_swemint_runs_the_cli():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "swemint", "--version"], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0 and out.stdout.startswith("swemint "), out.stderr


def test_an_export_whose_destination_leads_out_is_one_line_and_writes_nothing_there(setup, tmp_path):
    """A link planted in the export's destination (sweb.yaml -> a file elsewhere): refused with one
    line and exit 2 (it was a traceback), the file it points at unchanged (a new user's trial 6)."""
    d = setup
    assert runner.invoke(app, margs(d)).exit_code == 0
    victim = tmp_path / "elsewhere" / "victim"
    victim.parent.mkdir()
    victim.write_text("keep\n")
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "sweb.yaml").symlink_to(victim)
    r = runner.invoke(app, ["export", "-w", str(d / "work"), "--format", "swebench-task-repo", "-m",
                            str(d / "mirrors"), str(dest)])
    one_line_error(r, 2, "outside")
    assert victim.read_text() == "keep\n"
