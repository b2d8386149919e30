"""The demo input: real bare mirrors, reproducible base commits, patches that apply, and gold
FAIL_TO_PASS / PASS_TO_PASS that the host's pytest confirms (before = base + test_patch,
after = + patch)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from unidiff import PatchSet

from pipeline.demo import _is_test_path, expected_outcomes, make_demo

REPORT_PLUGIN = textwrap.dedent('''
    import json, os

    def pytest_runtest_logreport(report):
        with open(os.environ["DEMO_REPORT"], "a") as f:
            f.write(json.dumps([report.nodeid, report.when, report.outcome]) + "\\n")
''')


def git(*args: str, cwd: Path | None = None) -> str:
    r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert r.returncode == 0, f"git {args}: {r.stderr}"
    return r.stdout


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    mirrors, instances = make_demo(tmp_path_factory.mktemp("demo"))
    rows = [json.loads(line) for line in instances.read_text().splitlines()]
    return mirrors, rows


def mirror_of(mirrors: Path, repo: str) -> Path:
    return mirrors / repo.replace("/", "+") / "repo"


def test_instances_are_swebench_rows(demo):
    from agents.models import Instance

    _, rows = demo
    assert len(rows) == 4
    assert {r["instance_id"] for r in rows} == set(expected_outcomes())
    for r in rows:
        owner_name, _, number = r["instance_id"].rpartition("-")
        assert owner_name.replace("__", "/") == r["repo"] and number.isdigit()
        assert r["hints_text"] == "" and r["environment_setup_commit"] is None
        assert r["language"] == "python" and r["problem_statement"].strip()
        inst = Instance.model_validate(r)
        assert inst.created_at is not None and inst.version == r["version"]
        assert set(r["FAIL_TO_PASS"]).isdisjoint(r["PASS_TO_PASS"])


def test_mirrors_are_bare_repos_holding_the_base_commit(demo):
    mirrors, rows = demo
    for r in rows:
        bare = mirror_of(mirrors, r["repo"])
        assert git("--git-dir", str(bare), "rev-parse", "--is-bare-repository").strip() == "true"
        git("--git-dir", str(bare), "fsck", "--no-progress")
        git("--git-dir", str(bare), "cat-file", "-e", f"{r['base_commit']}^{{commit}}")
        number = r["instance_id"].rpartition("-")[2]
        head = git("--git-dir", str(bare), "rev-parse", f"refs/pull/{number}/head").strip()
        # the PR is two commits on top of base: tests, then fix
        assert git("--git-dir", str(bare), "rev-parse", f"{head}~2").strip() == r["base_commit"]


def test_base_commits_are_reproducible(demo, tmp_path):
    _, rows = demo
    _, again = make_demo(tmp_path / "again")
    rows2 = [json.loads(line) for line in again.read_text().splitlines()]
    assert rows2 == rows


def test_patches_split_by_test_path(demo):
    _, rows = demo
    for r in rows:
        test_files = [f.path for f in PatchSet(r["test_patch"])]
        fix_files = [f.path for f in PatchSet(r["patch"])]
        assert test_files and fix_files, r["instance_id"]
        assert all(_is_test_path(p) for p in test_files)
        assert not any(_is_test_path(p) for p in fix_files)


def _checkout(mirrors: Path, row: dict, dest: Path) -> Path:
    git("clone", "-q", str(mirror_of(mirrors, row["repo"])), str(dest))
    git("checkout", "-q", row["base_commit"], cwd=dest)
    return dest


def _apply(repo: Path, patch: str, tmp: Path) -> None:
    f = tmp / "p.diff"
    f.write_text(patch)
    git("apply", "--check", str(f), cwd=repo)
    git("apply", str(f), cwd=repo)


def _run_tests(repo: Path, files: list[str], tmp: Path) -> dict[str, str]:
    """nodeid -> passed / failed / skipped, from the host's pytest run on `files`."""
    plugin_dir = tmp / "plugin"
    plugin_dir.mkdir(exist_ok=True)
    (plugin_dir / "demo_report.py").write_text(REPORT_PLUGIN)
    report = tmp / "report.jsonl"
    report.unlink(missing_ok=True)
    env = {"PYTHONPATH": str(plugin_dir), "DEMO_REPORT": str(report), "PATH": "/usr/bin:/bin",
           "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "demo_report", "-p",
                           "no:cacheprovider", *files], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    status: dict[str, str] = {}
    for line in report.read_text().splitlines():
        nodeid, when, outcome = json.loads(line)
        if outcome != "passed":
            status[nodeid] = "failed" if when == "call" or outcome == "failed" else outcome
        else:
            status.setdefault(nodeid, "passed")
    return status


@pytest.mark.parametrize("index", range(4))
def test_gold_lists_match_what_pytest_sees(demo, tmp_path, index):
    mirrors, rows = demo
    r = sorted(rows, key=lambda x: x["instance_id"])[index]
    repo = _checkout(mirrors, r, tmp_path / "repo")
    test_files = sorted({f.path for f in PatchSet(r["test_patch"])})
    _apply(repo, r["test_patch"], tmp_path)
    before = _run_tests(repo, test_files, tmp_path)
    _apply(repo, r["patch"], tmp_path)
    after = _run_tests(repo, test_files, tmp_path)

    passed_after = {t for t, s in after.items() if s == "passed"}
    f2p = {t for t in passed_after if before.get(t) != "passed"}
    p2p = {t for t in passed_after if before.get(t) == "passed"}
    assert f2p == set(r["FAIL_TO_PASS"])
    assert p2p == set(r["PASS_TO_PASS"])
    assert set(after) == passed_after  # nothing fails after the fix
    outcome = "verified" if f2p else "no_fail_to_pass"
    assert expected_outcomes()[r["instance_id"]] == outcome
