"""Issue 24: a `patch` (the fix) that changes test code or test infrastructure is no valid task.

Two fixes that do not fix the bug but make its test pass -- a conftest.py hook turning failures
into passes, and a loosened tolerance in a helper under tests/ -- end `invalid_task` with the
paths named, before any container starts (the factory here is no sandbox factory at all)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agents.mint_config import MintConfig
from agents.minter import mint_instance
from agents.models import OUTCOMES, Instance

BASE = {"geo/__init__.py": "def area(r):\n    return 3 * r * r\n",
        "tests/helpers.py": "TOL = 1e-9\n\n\ndef close(a, b):\n    return abs(a - b) <= TOL\n",
        "tests/test_area.py": "from geo import area\n\n\ndef test_zero():\n    assert area(0) == 0\n"}
TEST_PATCH_FILES = {"tests/test_area.py": BASE["tests/test_area.py"]
                    + "\n\ndef test_unit_circle():\n    import math\n    from tests.helpers import close\n"
                    "    assert close(area(1), math.pi)\n"}
HOOK = ("import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    report = outcome.get_result()\n    if report.failed:\n"
        "        report.outcome = 'passed'\n")
CHEATS = {"conftest_hook": {"conftest.py": HOOK},
          "loosened_helper": {"tests/helpers.py": BASE["tests/helpers.py"].replace("1e-9", "1.0")}}


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


def _diff(repo: Path, base: str, files: dict[str, str]) -> str:
    """The diff from `base` of a commit writing `files` (then the work tree goes back to `base`)."""
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "add", "-A")
    diff = _git(repo, "diff", "--cached", base)
    _git(repo, "reset", "-q", "--hard", base)
    _git(repo, "clean", "-qfd")
    return diff


def make_instance(tmp_path: Path, cheat: str) -> tuple[Instance, Path]:
    """A small repository (a bug in `area`), its bare mirror, and an instance whose `patch` is the cheat."""
    repo = tmp_path / "geo"
    for rel, text in BASE.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    inst = Instance(instance_id=f"acme__geo-{len(cheat)}", repo="acme/geo", base_commit=base, language="python",
                    patch=_diff(repo, base, CHEATS[cheat]), test_patch=_diff(repo, base, TEST_PATCH_FILES))
    bare = tmp_path / "bare"
    _git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    return inst, bare


@pytest.mark.parametrize("cheat,path", [("conftest_hook", "conftest.py"), ("loosened_helper", "tests/helpers.py")])
def test_a_fix_that_edits_what_grades_it_is_an_invalid_task(tmp_path, cheat, path):
    inst, bare = make_instance(tmp_path, cheat)
    res = mint_instance(inst, bare, MintConfig(workdir=tmp_path / "work", run_id="t-invalid"), factory=object())
    assert res.outcome == "invalid_task" and res.outcome in OUTCOMES
    assert path in res.reason and "test code or test infrastructure" in res.reason
    assert res.FAIL_TO_PASS == [] and res.image == ""
