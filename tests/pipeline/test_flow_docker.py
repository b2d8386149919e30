"""`swemint run` with the real minter (Docker, PyPI): a mirror the test writes, mined by the local
source, planned, built and verified, into Parquet rows that carry their provenance and what the
SWE-bench harness needs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.demo import demo_repositories
from tests.pipeline.flow_support import bare_mirror, git
from tests.session import SESSION

pytestmark = [pytest.mark.docker, pytest.mark.slow]
RUN_ID = f"test-flow-docker-{SESSION}"


def squashed_repo(root: Path) -> tuple[Path, str, str, dict]:
    """The demo's acme/calcy as a mainline whose fix landed as one squash commit `... (#7)`
    (tests and fix together), then a docs commit; returns (work tree, base sha, fix sha, meta)."""
    data = next(d for d in demo_repositories() if d.name == "acme__calcy")
    meta = json.loads((data / "meta.json").read_text())
    work = root / "calcy"
    shutil.copytree(data / "base", work)
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", meta["base_message"], date="2023-11-19T10:00:00Z")
    base = git(work, "rev-parse", "HEAD").strip()
    for sub in ("tests", "fix"):
        shutil.copytree(data / sub, work, dirs_exist_ok=True)
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", f"{meta['title']} (#{meta['number']})\n\n{meta['problem_statement']}",
        date="2023-11-20T09:00:00Z")
    fix = git(work, "rev-parse", "HEAD").strip()
    (work / "README.rst").write_text((work / "README.rst").read_text() + "\nMore docs.\n")
    git(work, "commit", "-qam", "Document the evaluator", date="2023-11-21T09:00:00Z")  # not PR-like
    return work, base, fix, meta


def test_swemint_run_mines_plans_builds_and_verifies_a_mirror_into_parquet(tmp_path, python_image, docker_client):
    work, base, fix, meta = squashed_repo(tmp_path / "src")
    git_dir = bare_mirror(work, tmp_path / "mirrors", "acme/calcy")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "use_ray": False, "workers": 1,
        "mint": {"run_id": RUN_ID, "image_repository": "swemint-test/flow-env", "memory": {"enabled": False}},
        "sources": {"local": [{"repo": "acme/calcy", "git_dir": str(git_dir), "single_commits": False}]}}))
    out = tmp_path / "w"
    try:
        res = CliRunner().invoke(app, ["run", "-c", str(cfg), "-w", str(out)])
        assert res.exit_code == 0, res.output
        df = pd.read_parquet(out / "dataset" / "verified.parquet")
        assert len(df) == 1, pd.read_parquet(out / "dataset" / "all.parquet")[["instance_id", "outcome", "reason"]]
        row = df.iloc[0].to_dict()
        assert row["instance_id"] == "acme__calcy-7" and row["repo"] == "acme/calcy"
        assert (row["source"], row["pull_number"], row["commit"], row["base_commit"]) == ("git", 7, fix, base)
        assert row["language"] == "python" and row["version"] == "0.3"  # detected, and the release at base_commit
        assert sorted(row["FAIL_TO_PASS"]) == sorted(meta["FAIL_TO_PASS"])
        assert set(meta["PASS_TO_PASS"]) <= set(row["PASS_TO_PASS"])
        assert "calcy/parser.py" in row["patch"] and "tests/test_evaluate.py" in row["test_patch"]
        assert row["eval_script"] and row["log_parser"] and row["image"]  # the harness's columns, as swemint export
        run = json.loads((out / "report.json").read_text())["run"]
        assert run["units"]["seen"] == 2 and run["units"]["accepted"] == 1  # the fix and the docs commit (the root has no parent)
        assert run["minted"]["verified"] == 1 and run["cost"]["per_verified"]["cpu_s"] > 0
        # a rerun finds nothing new and mints nothing
        again = CliRunner().invoke(app, ["run", "-c", str(cfg), "-w", str(out)])
        assert again.exit_code == 0, again.output
        run = json.loads((out / "report.json").read_text())["run"]
        assert run["units"]["seen"] == 0 and run["minted"]["total"] == 0  # mined before: not examined again
        assert len(pd.read_parquet(out / "dataset" / "verified.parquet")) == 1
    finally:
        for img in docker_client.images.list(name="swemint-test/flow-env"):
            docker_client.images.remove(img.id, force=True)
        for c in docker_client.containers.list(all=True, filters={"label": f"swemint.run={RUN_ID}"}):
            c.remove(force=True)
