"""The `swemint` CLI end to end with a fake mint function (in-process runner), and config layering."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from pathlib import Path

import pandas as pd
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.pipeline_config import load_config, parse_override

FAKE_MINTER = '''
import json, os
from pathlib import Path
from agents.models import EnvRecord, InstanceResult

def mint_instance(instance, repo_path, config, factory=None):
    with open(os.environ["FAKE_MINT_CALLS"], "a") as fh:
        fh.write(json.dumps([instance.instance_id, str(repo_path), str(config.workdir)]) + "\\n")
    if instance.instance_id.endswith("-2"):
        return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome="no_fail_to_pass",
                              timings={"total": 3.0})
    env = EnvRecord(instance_id=instance.instance_id, repo=instance.repo, base_commit=instance.base_commit,
                    version=instance.version, image_tag="swemint/env:" + instance.instance_id[-1])
    return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome="verified",
                          FAIL_TO_PASS=["t.py::test_a[x y]"], PASS_TO_PASS=["t.py::test_b"],
                          timings={"total": 1.0}, env=env)
'''


def sh(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture()
def setup(tmp_path, monkeypatch):
    """A bare mirror of octo/proj, an instance file (3 good rows incl. a bad commit, 1 bad row),
    and a fake minter importable as `fake_minter`."""
    src = tmp_path / "src"
    sh("git", "init", "-q", str(src))
    (src / "t.py").write_text("def test_a(): pass\n")
    sh("git", "-C", str(src), "add", ".")
    sh("git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    sha = sh("git", "-C", str(src), "rev-parse", "HEAD")
    sh("git", "clone", "-q", "--bare", str(src), str(tmp_path / "mirrors" / "octo+proj" / "repo"))
    gold = {"FAIL_TO_PASS": ["t.py::test_a[x"], "PASS_TO_PASS": ["t.py::test_b", "t.py::test_c"]}
    rows = [{"instance_id": f"octo__proj-{n}", "repo": "octo/proj", "base_commit": sha, "patch": "p",
             "test_patch": "tp", "version": "1.0", **gold} for n in (1, 2)]
    rows.append({**rows[0], "instance_id": "octo__proj-3", "base_commit": "f" * 40})
    lines = [json.dumps(r) for r in rows] + ['{"instance_id": "octo__proj-4"}']
    (tmp_path / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "fake_minter.py").write_text(FAKE_MINTER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("FAKE_MINT_CALLS", str(tmp_path / "calls.jsonl"))
    return tmp_path


def mint_args(d: Path, *extra: str) -> list[str]:
    return ["mint", "-i", str(d / "tasks.jsonl"), "-m", str(d / "mirrors"), "-w", str(d / "work"), "--no-ray",
            "--set", "mint_function=fake_minter:mint_instance", "--set", "repos.allow_clone=false", *extra]


def calls(d: Path) -> list[list[str]]:
    p = d / "calls.jsonl"
    return [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []


def test_mint_then_rerun_skips_finished(setup):
    d = setup
    r = CliRunner().invoke(app, mint_args(d, "--workers", "2"))
    assert r.exit_code == 0, r.output
    assert "octo__proj-4" in r.output and "patch" in r.output  # the bad row is reported, and kept
    assert json.loads((d / "work" / "input_errors.jsonl").read_text())["instance_id"] == "octo__proj-4"
    assert "dataset (verified)" in r.output and "median" in r.output
    assert sorted(c[0] for c in calls(d)) == ["octo__proj-1", "octo__proj-2"]  # -3 never reached the minter
    assert calls(d)[0][1] == str((d / "mirrors" / "octo+proj" / "repo").absolute())
    assert calls(d)[0][2] == str(d / "work")  # mint.workdir follows --workdir
    df = pd.read_parquet(d / "work" / "dataset" / "all.parquet").set_index("instance_id")
    assert df.outcome.to_dict() == {"octo__proj-1": "verified", "octo__proj-2": "no_fail_to_pass",
                                    "octo__proj-3": "infra_error"}
    assert "base_commit ffff" in df.loc["octo__proj-3", "reason"]
    assert list(pd.read_parquet(d / "work" / "dataset" / "verified.parquet").instance_id) == ["octo__proj-1"]
    # rerun: verified and no_fail_to_pass are finished; the infra_error row is retried (default)
    r = CliRunner().invoke(app, mint_args(d))
    assert r.exit_code == 1, r.output  # all that ran was infra_error: the input needs attention
    assert "2 skipped" in r.output and len(calls(d)) == 2
    # pool list shows the kept environment of the verified instance
    r = CliRunner().invoke(app, ["pool", "list", "-w", str(d / "work")])
    assert r.exit_code == 0 and "octo__proj-1" in r.output and "1 environments" in r.output


def test_bench_scores_against_gold_with_truncated_ids(setup):
    d = setup
    r = CliRunner().invoke(app, ["bench", *mint_args(d)[1:], "--ids", "octo__proj-1,octo__proj-2"])
    assert r.exit_code == 0, r.output
    rep = json.loads((d / "work" / "bench.json").read_text())
    by = {x["instance_id"]: x for x in rep["instances"]}
    assert set(by) == {"octo__proj-1", "octo__proj-2"}
    # ours `t.py::test_a[x y]` matches gold `t.py::test_a[x` (cut at the first space by an old parser)
    assert by["octo__proj-1"]["verified"] and by["octo__proj-1"]["f2p_recall"] == 1.0
    assert by["octo__proj-1"]["f2p_precision"] == 1.0 and by["octo__proj-1"]["p2p_agreement"] == 0.5
    assert by["octo__proj-2"]["f2p_recall"] == 0.0 and not by["octo__proj-2"]["verified"]
    assert rep["aggregate"]["n"] == 2 and rep["aggregate"]["verified_share"] == 0.5
    # --score-only mints nothing more
    n = len(calls(d))
    r = CliRunner().invoke(app, ["bench", "-w", str(d / "work"), "--score-only"])
    assert r.exit_code == 0 and len(calls(d)) == n and "bench written" in r.output


def test_export_command(setup):
    d = setup
    assert CliRunner().invoke(app, mint_args(d)).exit_code == 0
    (d / "work" / "dataset" / "all.parquet").unlink()
    r = CliRunner().invoke(app, ["export", "-w", str(d / "work")])
    assert r.exit_code == 0 and "1 verified of 3 results" in r.output
    assert len(pd.read_parquet(d / "work" / "dataset" / "all.parquet")) == 3


def test_demo_mints_what_make_demo_made(setup, monkeypatch):
    d = setup
    made = []

    def make_demo(dest: Path):
        made.append(dest)
        return d / "mirrors", d / "tasks.jsonl"

    monkeypatch.setitem(sys.modules, "pipeline.demo", types.SimpleNamespace(make_demo=make_demo))
    r = CliRunner().invoke(app, ["demo", "-w", str(d / "w2"), "--no-ray", "--set",
                                 "mint_function=fake_minter:mint_instance"])
    assert r.exit_code == 0, r.output
    assert made == [d / "w2" / "demo"] and (d / "w2" / "dataset" / "verified.parquet").exists()


def test_output_to_a_file_shows_each_finished_instance_as_it_goes(setup):
    """Output not on a terminal (CliRunner's, like `run.sh > log`): rich draws its display only when
    it stops, so each finished instance gets one plain line, before the summary table; -q prints none."""
    d = setup
    r = CliRunner().invoke(app, mint_args(d))
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    done = [n for n, x in enumerate(lines) if re.match(r"[123]/3 octo__proj-[123]: [a-z_]+ \(\d+s\)$", x)]
    assert sorted(lines[n].split(" ")[1] for n in done) == ["octo__proj-1:", "octo__proj-2:", "octo__proj-3:"]
    assert "1/3 " in lines[done[0]] and "3/3 " in lines[done[-1]]
    assert "octo__proj-1: verified" in r.output and "octo__proj-3: infra_error" in r.output
    assert done[-1] < next(n for n, x in enumerate(lines) if "instance_id" in x and "outcome" in x)  # the table
    r = CliRunner().invoke(app, mint_args(d, "-q"))  # the infra_error rows run again
    assert "infra_error" in json.loads((d / "work" / "summary.json").read_text())["outcomes_this_run"]
    assert not re.search(r"^\d/\d octo__proj", r.output, re.M)


def test_help_has_examples_and_bad_config_exits_2(setup):
    r = CliRunner().invoke(app, ["mint", "--help"])
    assert r.exit_code == 0 and "swemint mint -i tasks.jsonl" in r.output
    r = CliRunner().invoke(app, mint_args(setup, "--set", "wokers=3"))
    assert r.exit_code == 2 and "configuration error" in r.output and "wokers" in r.output


def test_config_layering(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("workers: 3\nmint: {run_id: nightly}\nray: {num_cpus: 4}\n")
    cfg = load_config(f, ["ray.num_cpus=8", "retry_outcomes=[timeout]"], workdir=tmp_path / "w", workers=None)
    assert cfg.workers == 3 and cfg.ray.num_cpus == 8 and cfg.retry_outcomes == ["timeout"]
    assert cfg.mint.run_id == "nightly" and cfg.mint.workdir == tmp_path / "w" and cfg.workdir.is_absolute()
    assert load_config(f, [], workers=5).workers == 5  # explicit flags win
    assert load_config(None, ["mint.workdir=/elsewhere"]).mint.workdir == Path("/elsewhere")
    with pytest.raises(ValidationError):
        load_config(None, ["mint.limits.cpu=2"])  # typo: `cpus`
    with pytest.raises(ValueError):
        parse_override("novalue")
    assert parse_override("a.b=[1, 2]") == {"a": {"b": [1, 2]}}


def test_jobs_entry_point_runs_the_batch(setup):
    from pipeline.jobs.mint import main

    d = setup
    code = main(["--workdir", str(d / "work"), "-i", str(d / "tasks.jsonl"), "-m", str(d / "mirrors"),
                 "--set", "use_ray=false", "--set", "mint_function=fake_minter:mint_instance"])
    assert code == 0 and (d / "work" / "dataset" / "all.parquet").exists()
    assert main(["--set", "nonsense=1"]) == 2


def test_missing_instance_file_and_mirror_folder_are_one_line_errors(tmp_path):
    r = CliRunner().invoke(app, ["mint", "-i", str(tmp_path / "nope.jsonl"), "-w", str(tmp_path / "w"), "--no-ray"])
    assert r.exit_code == 2 and "instance file not found" in r.output and "Traceback" not in r.output
    (tmp_path / "i.jsonl").write_text("")
    r = CliRunner().invoke(app, ["mint", "-i", str(tmp_path / "i.jsonl"), "-m", str(tmp_path / "no-mirrors"),
                                 "-w", str(tmp_path / "w"), "--no-ray"])
    assert r.exit_code == 2 and "mirror folder not found" in r.output + (r.stderr if hasattr(r, "stderr") else "")


@pytest.mark.parametrize("command", ["mint", "bench"])
def test_unknown_language_is_one_line_error_exit_2(setup, command):
    d = setup
    r = CliRunner().invoke(app, [command, *mint_args(d)[1:], "--language", "golang"])
    assert r.exit_code == 2, r.output
    assert "no instance of language 'golang'" in r.output and "Traceback" not in r.output
    assert calls(d) == []


def test_a_policy_that_needs_a_model_without_one_is_one_configuration_error_before_any_instance(setup, monkeypatch):
    """Issue 30: `mint.policy: hybrid` without an `llm` block used to load, then end every
    instance `infra_error` (retried on every rerun)."""
    r = CliRunner().invoke(app, mint_args(setup, "--set", "mint.policy=hybrid"))
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert r.exit_code == 2 and len(lines) == 1, r.output
    assert "configuration error" in lines[0] and "needs a usable `llm` block" in lines[0]
    # one clean line: no pydantic prefix, no dump of the whole `mint` section, the key said once
    assert lines[0] == ("configuration error: mint.policy hybrid needs a usable `llm` block (mint.llm.model, "
                        "mint.llm.api_key_env): none is configured"), lines[0]
    monkeypatch.delenv("SWEMINT_TEST_NO_KEY", raising=False)
    r = CliRunner().invoke(app, mint_args(setup, "--set", "mint.policy=llm", "--set", "mint.llm.model=openai/x",
                                          "--set", "mint.llm.api_key_env=SWEMINT_TEST_NO_KEY"))
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and "SWEMINT_TEST_NO_KEY" in lines[0], r.output
    assert calls(setup) == []  # no instance started
