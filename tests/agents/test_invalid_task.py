"""Issue 24: a `patch` (the fix) that changes test code or test infrastructure is no valid task.

Fixes that do not fix the bug but make its test pass -- a conftest.py hook turning failures into
passes, a loosened tolerance in a helper under tests/, a `pythonpath` put in the pytest section of
setup.cfg or pyproject.toml further below its header than a hunk's context reaches (so the hunk
alone does not show the section; the shim folder it names holds a lenient helper) -- end
`invalid_task` with the paths named, before any container starts (the factory here is no sandbox
factory at all). A fix changing another section of those files far from its header is no such
task."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agents.gitrepo import GitTree
from agents.mint_config import MintConfig
from agents.minter import mint_instance
from agents.models import OUTCOMES, Instance
from envpool.patches import grading_paths_problem

BASE = {"geo/__init__.py": "def area(r):\n    return 3 * r * r\n",
        "tests/helpers.py": "TOL = 1e-9\n\n\ndef close(a, b):\n    return abs(a - b) <= TOL\n",
        "tests/test_area.py": "from geo import area\n\n\ndef test_zero():\n    assert area(0) == 0\n",
        "setup.cfg": ("[metadata]\nname = geo\nversion = 1\n\n[tool:pytest]\nminversion = 6.0\nmarkers =\n"
                      "    slow: slow tests\n    net: network\nxfail_strict = true\n"),
        "pyproject.toml": ("[build-system]\nrequires = ['setuptools']\n\n[tool.pytest.ini_options]\nminversion = '6.0'\n"
                           "markers = [\n  'slow: slow tests',\n  'net: network',\n]\nxfail_strict = true\n\n"
                           "[tool.black]\nline-length = 100\ntarget-version = ['py38']\nskip-magic-trailing-comma = true\n"
                           "include = 'geo'\n")}
TEST_PATCH_FILES = {"tests/test_area.py": BASE["tests/test_area.py"]
                    + "\n\ndef test_unit_circle():\n    import math\n    from tests.helpers import close\n"
                    "    assert close(area(1), math.pi)\n"}
HOOK = ("import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    report = outcome.get_result()\n    if report.failed:\n"
        "        report.outcome = 'passed'\n")
SHIM = {"shim/tests/helpers.py": "def close(a, b):\n    return True\n"}
CHEATS = {"conftest_hook": {"conftest.py": HOOK},
          "loosened_helper": {"tests/helpers.py": BASE["tests/helpers.py"].replace("1e-9", "1.0")},
          "deep_setup_cfg": {"setup.cfg": BASE["setup.cfg"] + "pythonpath = shim\n", **SHIM},
          "deep_pyproject": {"pyproject.toml": BASE["pyproject.toml"].replace(
              "xfail_strict = true\n", "xfail_strict = true\npythonpath = ['shim']\n"), **SHIM},
          # not runner configuration: other sections, far from their headers
          "deep_black": {"pyproject.toml": BASE["pyproject.toml"] + "line-ranges = '1-9'\n",
                         "geo/__init__.py": "import math\n\n\ndef area(r):\n    return math.pi * r * r\n"},
          "deep_metadata": {"setup.cfg": BASE["setup.cfg"].replace("version = 1\n", "version = 1\nlicense = MIT\n")
                            .replace("[tool:pytest]", "description = geo\nauthor = a\nurl = u\nkeywords = k\n\n[tool:pytest]"),
                            "geo/__init__.py": "import math\n\n\ndef area(r):\n    return math.pi * r * r\n"}}


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


@pytest.mark.parametrize("cheat,path", [("conftest_hook", "conftest.py"), ("loosened_helper", "tests/helpers.py"),
                                        ("deep_setup_cfg", "setup.cfg"), ("deep_pyproject", "pyproject.toml")])
def test_a_fix_that_edits_what_grades_it_is_an_invalid_task(tmp_path, cheat, path):
    inst, bare = make_instance(tmp_path, cheat)
    res = mint_instance(inst, bare, MintConfig(workdir=tmp_path / "work", run_id="t-invalid"), factory=object())
    assert res.outcome == "invalid_task" and res.outcome in OUTCOMES
    assert path in res.reason and "test code or test infrastructure" in res.reason
    assert res.FAIL_TO_PASS == [] and res.image == ""
    if cheat.startswith("deep_"):  # the hunk alone shows no section: only the base text tells
        assert "@@ -" in inst.patch and ("[tool:pytest]" not in inst.patch and "[tool.pytest" not in inst.patch)


@pytest.mark.parametrize("cheat", ["deep_black", "deep_metadata"])
def test_a_fix_changing_other_sections_far_from_their_header_is_no_invalid_task(tmp_path, cheat):
    inst, bare = make_instance(tmp_path, cheat)
    base = GitTree(bare, inst.base_commit).read
    assert grading_paths_problem(inst.patch, "python", base) is None
    # the same section far below its header, judged by the hunk alone, is not known either way
    assert grading_paths_problem(inst.patch, "python") is None
