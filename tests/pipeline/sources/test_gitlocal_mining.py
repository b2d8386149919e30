"""Mining a local mirror's history (a small repository built by the test)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from pipeline.sources import CrawlConfig, crawl
from pipeline.sources.crawl_config import LocalRepoConfig
from pipeline.sources.source_errors import GitMiningError
from pipeline.sources.gitlocal import classify, mine


def _git(cwd, *args, date="2024-01-01T00:00:00Z"):
    who = {"GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.org",
           "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.org"}
    env = {**os.environ, **who, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date,
           "GIT_CONFIG_GLOBAL": "/dev/null"}
    r = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True)
    return r.stdout.strip()


def _commit(repo, files: dict, message: str, day: str) -> str:
    """Commit `files` (path -> text) on 2024-01-`day` (e.g. "02T10:00:00")."""
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message, date=f"2024-01-{day}Z")
    return _git(repo, "rev-parse", "HEAD")


CALC, TEST = "src/calc.py", "tests/test_calc.py"


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A work tree, its bare mirror, and the shas of interest."""
    root = tmp_path_factory.mktemp("git")
    repo = root / "calc"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    s = {}
    s["root"] = _commit(repo, {CALC: "def div(a, b):\n    return a / b\n",
                               TEST: "def test_div():\n    pass\n", "README.md": "calc\n"},
                        "Initial import", "01T00:00:00")
    s["single"] = _commit(repo, {CALC: "def div(a, b):\n    return None if b == 0 else a / b\n",
                                 TEST: "def test_div_zero():\n    pass\n"},
                          "Handle division by zero\n\nReturn None instead of raising.", "02T10:00:00")
    s["docs"] = _commit(repo, {"README.md": "calc, a calculator\n"}, "Describe the project", "03T00:00:00")
    s["squash"] = _commit(repo, {CALC: "def div(a, b):\n    return None if not b else a / b\n",
                                 TEST: "def test_div_zero():\n    assert True\n"},
                          "Fix zero check for floats (#12)", "04T00:00:00")
    _git(repo, "checkout", "-q", "-b", "feature")
    _commit(repo, {"src/power.py": "def power(a, b):\n    return a ** b\n"}, "power", "05T00:00:00")
    _commit(repo, {"tests/test_power.py": "def test_power():\n    pass\n"}, "test power", "05T01:00:00")
    _git(repo, "checkout", "-q", "main")
    s["mainline"] = _commit(repo, {"docs/index.md": "docs\n"}, "Add docs", "06T00:00:00")
    _git(repo, "merge", "-q", "--no-ff", "feature", "-m",
         "Merge pull request #7 from dev/feature\n\nAdd power()", date="2024-01-07T00:00:00Z")
    s["merge_pr"] = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "topic")
    _commit(repo, {CALC: "def div(a, b):\n    return a / b if b else None\n",
                   TEST: "def test_div():\n    assert True\n"}, "topic work", "08T00:00:00")
    _git(repo, "checkout", "-q", "main")
    _git(repo, "merge", "-q", "--no-ff", "topic", "-m", "Merge branch 'topic'", date="2024-01-09T00:00:00Z")
    s["merge_other"] = _git(repo, "rev-parse", "HEAD")
    mirror = root / "calc.git"
    _git(root, "clone", "-q", "--mirror", str(repo), str(mirror))
    return repo, mirror, s


def test_pr_like_units_become_instances(history):
    _, mirror, s = history
    outs = {o.key: o for o in mine(LocalRepoConfig(repo="acme/calc", git_dir=mirror))}
    rows = {k: o.row for k, o in outs.items() if o.row}
    rejects = {k: o.reject.reason for k, o in outs.items() if o.reject}
    short = s["single"][:7]
    assert sorted(rows) == sorted(["acme__calc-7", "acme__calc-12", f"acme__calc-{short}"])
    assert rejects == {f"acme__calc-{s['docs'][:7]}": "no_test_change",
                       f"acme__calc-{s['mainline'][:7]}": "no_test_change",
                       f"acme__calc-{s['merge_other'][:7]}": "not_pr_like"}

    merge = rows["acme__calc-7"]
    assert merge["base_commit"] == s["mainline"]  # the merge's first parent
    assert "src/power.py" in merge["patch"] and "tests/" not in merge["patch"]
    assert "tests/test_power.py" in merge["test_patch"] and "docs/" not in merge["patch"]
    assert merge["problem_statement"] == "Merge pull request #7 from dev/feature\n\nAdd power()\n"
    assert merge["created_at"] == "2024-01-07T00:00:00Z" and merge["commit"] == s["merge_pr"]

    squash = rows["acme__calc-12"]
    assert squash["base_commit"] == s["docs"] and squash["pull_number"] == 12
    single = rows[f"acme__calc-{short}"]
    assert single["base_commit"] == s["root"] and single["pull_number"] is None
    assert single["problem_statement"].startswith("Handle division by zero\n\nReturn None")
    assert single["created_at"] == "2024-01-02T10:00:00Z" and single["hints_text"] == ""


def test_work_tree_and_single_commit_switch(history):
    repo, _, _ = history
    keys = [o.key for o in mine(LocalRepoConfig(repo="acme/calc", git_dir=repo, single_commits=False))
            if o.row]
    assert sorted(keys) == ["acme__calc-12", "acme__calc-7"]


def test_classify():
    assert classify(["a", "b"], "Merge pull request #3 from x/y\n", "f" * 40, True) == 3
    assert classify(["a"], "Fix it (#44)\n\nbody", "f" * 40, False) == 44
    assert classify(["a"], "Fix it\n", "abcdef123", True) == "abcdef1"
    assert classify(["a", "b"], "Merge branch 'x'\n", "f" * 40, True) is None
    # a merge commit titled as its PR (GitHub's merge message set to "pull request title")
    assert classify(["a", "b"], "Add support of `pathlib.Path` to `edit` (#3781)\n", "f" * 40, False) == 3781


def test_crawl_with_a_local_source_writes_rows_once(history, tmp_path):
    _, mirror, _ = history
    cfg = CrawlConfig(github=None, local=[LocalRepoConfig(repo="acme/calc", git_dir=mirror)])
    first = crawl(cfg, tmp_path)
    second = crawl(cfg, tmp_path)
    lines = (tmp_path / "crawl" / "instances.jsonl").read_text().splitlines()
    assert first.accepted == 3 and second.examined == 0 and len(lines) == 3
    assert {json.loads(x)["source"] for x in lines} == {"git"} and first.api["requests"] == 0


def test_missing_git_dir_raises(tmp_path):
    with pytest.raises(GitMiningError):
        list(mine(LocalRepoConfig(repo="a/b", git_dir=tmp_path / "nope")))


def test_a_broken_mirror_is_a_row_in_a_crawl(history, tmp_path):
    _, mirror, _ = history
    cfg = CrawlConfig(github=None, local=[LocalRepoConfig(repo="acme/gone", git_dir=tmp_path / "gone"),
                                          LocalRepoConfig(repo="acme/calc", git_dir=mirror)])
    report = crawl(cfg, tmp_path)
    assert report.errors == 1 and report.accepted == 3
    (row,) = [json.loads(x) for x in (tmp_path / "crawl" / "rejects.jsonl").read_text().splitlines()
              if "gone" in x]
    assert row["key"] == "repo:acme/gone" and row["reason"] == "infra_error"


def test_a_unit_whose_fix_touches_only_docs_is_rejected_naming_them(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _commit(repo, {CALC: "def div(a, b):\n    return a / b\n", TEST: "def test_div():\n    pass\n"},
            "Initial import", "01T00:00:00")
    docs = _commit(repo, {"CHANGELOG.md": "- more tests\n", "requirements.txt": "pytest==8\n",
                          TEST: "def test_div():\n    assert 1\n"}, "Add test for div (#20)", "02T00:00:00")
    _commit(repo, {CALC: "def div(a, b):\n    return a / b if b else 0\n", "CHANGELOG.md": "- zero\n",
                   TEST: "def test_div():\n    assert 2\n"}, "Fix div by zero (#21)", "03T00:00:00")
    outs = {o.key: o for o in mine(LocalRepoConfig(repo="acme/calc", git_dir=repo))}
    rej = outs["acme__calc-20"].reject
    assert rej is not None and rej.reason == "no_code_change"
    assert rej.detail.startswith(docs[:12]) and "CHANGELOG.md, requirements.txt" in rej.detail
    row = outs["acme__calc-21"].row  # code and a changelog entry: kept, the changelog in `patch`
    assert row is not None and "src/calc.py" in row["patch"] and "CHANGELOG.md" in row["patch"]


def test_an_id_in_the_exclude_file_is_an_excluded_reject_not_a_row(history, tmp_path):
    _, mirror, _ = history
    excl = tmp_path / "have.txt"
    excl.write_text("# already in our dataset\nacme__calc-12\n")
    cfg = CrawlConfig(github=None, local=[LocalRepoConfig(repo="acme/calc", git_dir=mirror)],
                      filter={"exclude_ids_file": excl})
    report = crawl(cfg, tmp_path)
    rows = [json.loads(x)["instance_id"] for x in (tmp_path / "crawl" / "instances.jsonl").read_text().splitlines()]
    rejects = [json.loads(x) for x in (tmp_path / "crawl" / "rejects.jsonl").read_text().splitlines()]
    assert report.accepted == 2 and "acme__calc-12" not in rows
    (ex,) = [r for r in rejects if r["reason"] == "excluded"]
    assert ex["key"] == "acme__calc-12" and "have.txt" in ex["detail"]


def test_a_pr_that_changes_test_infrastructure_puts_it_in_the_test_patch(tmp_path):
    """Issue 24: conftest hooks, helpers under tests/ and runner configuration are split into the
    test_patch with the tests (as SWE-bench's collection does), the moved infrastructure named."""
    repo = tmp_path / "geo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _commit(repo, {"geo/area.py": "def area(r):\n    return 3 * r * r\n", "tests/helpers.py": "TOL = 1e-9\n",
                   "tests/test_area.py": "def test_zero():\n    pass\n",
                   "setup.cfg": "[metadata]\nname = geo\n[tool:pytest]\naddopts = -q\n"}, "Initial", "01T00:00:00")
    _commit(repo, {"geo/area.py": "import math\ndef area(r):\n    return math.pi * r * r\n",
                   "tests/helpers.py": "TOL = 1e-6\n", "conftest.py": "collect_ignore = []\n",
                   "setup.cfg": "[metadata]\nname = geo\n[tool:pytest]\naddopts = -q -x\n",
                   "tests/test_area.py": "def test_zero():\n    pass\ndef test_one():\n    pass\n"},
            "Use pi (#3)", "02T00:00:00")
    [row] = [o.row for o in mine(LocalRepoConfig(repo="acme/geo", git_dir=repo)) if o.row]
    assert "geo/area.py" in row["patch"]
    for path in ("conftest.py", "setup.cfg", "tests/helpers.py", "tests/test_area.py"):
        assert f"b/{path}" in row["test_patch"] and f"b/{path}" not in row["patch"]
    assert row["moved_to_test_patch"] == ["conftest.py", "setup.cfg"]


def test_a_unit_whose_test_side_is_runner_configuration_only_is_rejected(tmp_path):
    """S19: a tool's autoupdate that changes code and reorders pyproject.toml's [tool.pytest]
    table has no test: rejected (no_test_change, naming the file), not minted to tests_not_run.
    A unit that also changes a test file or a conftest.py is kept."""
    repo = tmp_path / "algo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    pyproject = "[project]\nname = 'algo'\n\n[tool.pytest.ini_options]\naddopts = ['-q']\n"
    _commit(repo, {"pyproject.toml": pyproject, CALC: "x = 1\n", TEST: "def test_x():\n    pass\n"}, "Initial", "01T00:00:00")
    cfg_only = _commit(repo, {".pre-commit-config.yaml": "repos: []\n", CALC: "x = 2\n",
                              "pyproject.toml": pyproject.replace("['-q']", "['-q', '--doctest-modules']")},
                       "[pre-commit.ci] pre-commit autoupdate (#30)", "02T00:00:00")
    _commit(repo, {CALC: "x = 3\n", "conftest.py": "pytest_plugins = []\n",
                   "pyproject.toml": pyproject.replace("['-q']", "['-q', '-x']")}, "Fixtures (#31)", "03T00:00:00")
    outs = {o.key: o for o in mine(LocalRepoConfig(repo="acme/algo", git_dir=repo))}
    rej = outs["acme__algo-30"].reject
    assert rej is not None and rej.reason == "no_test_change"
    assert rej.detail == f"{cfg_only[:12]}: runner configuration only (pyproject.toml)"
    assert outs["acme__algo-31"].row is not None


def test_a_runner_section_far_above_a_change_moves_it_to_the_test_patch(tmp_path):
    """The split reads setup.cfg at the PR's base: a line added eight lines below `[tool:pytest]`
    (no hunk context reaches the header) is runner configuration and goes to the test_patch."""
    repo = tmp_path / "calc"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    cfg = ("[metadata]\nname = calc\n\n[tool:pytest]\nminversion = 6.0\nmarkers =\n    slow: s\n    net: n\n"
           "    db: d\nxfail_strict = true\n")
    _commit(repo, {CALC: "def div(a, b):\n    return a / b\n", TEST: "def test_div():\n    pass\n",
                   "setup.cfg": cfg}, "Initial import", "01T00:00:00")
    _commit(repo, {CALC: "def div(a, b):\n    return a // b\n", TEST: "def test_div():\n    assert True\n",
                   "setup.cfg": cfg + "pythonpath = shim\n"}, "Floor division (#3)", "02T00:00:00")
    mirror = tmp_path / "calc.git"
    _git(tmp_path, "clone", "-q", "--mirror", str(repo), str(mirror))
    row = next(o.row for o in mine(LocalRepoConfig(repo="acme/calc", git_dir=mirror)) if o.row)
    assert "setup.cfg" in row["test_patch"] and "setup.cfg" not in row["patch"]
    assert row["moved_to_test_patch"] == ["setup.cfg"]
