"""The tooling check end to end (real Docker): a config-only forgery the path rules do not name.

The path rules (envpool/testpaths.yaml) refuse every pytest configuration route known today, so
this test takes one of them out -- `pytest.ini` as test infrastructure by name, for the host's
refusal and the sandbox's reset alike -- and shows the second line holding on its own: a "fix"
whose code change is a no-op and whose pytest.ini loads a plugin (`forge.py`) that passes every
test verifies before/after, but its FAIL_TO_PASS fails in the core side (the patch without its
tooling hunks), so the row is `invalid_task` naming pytest.ini.
"""

from __future__ import annotations

import copy

import pytest

import envpool.evalscript as evalscript
import envpool.testpaths as testpaths
from tests.agents.test_minter_docker import minted, write_repo  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.docker]

BASE = {
    "setup.py": "from setuptools import setup\nsetup(name='corecalc', version='0.1', packages=['corecalc'])\n",
    "corecalc/__init__.py": "def add(a, b):\n    return a - b\n",
    "tests/test_add.py": "from corecalc import add\n\n\ndef test_zero():\n    assert add(1, 0) == 1\n",
}
FORGE = '''import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    return True  # the test body never runs: every test passes
'''


@pytest.fixture
def without_pytest_ini_rule(monkeypatch):
    """The packaged rules with `pytest.ini` taken out of the Python group's support names, for
    the host (refusal, split) and the status tool's reset in the sandbox."""
    data = copy.deepcopy(testpaths.packaged_rules())
    py = data["groups"]["python"]
    py["support"] = [n for n in py["support"] if n != "pytest.ini"]

    def clear():
        testpaths.rules_for.cache_clear()
        testpaths._packaged_role.cache_clear()
        evalscript._zipapp.cache_clear()
        evalscript.tool_digest.cache_clear()

    clear()
    monkeypatch.setattr(testpaths, "packaged_rules", lambda: data)
    assert not testpaths.rules_for("python").is_test("pytest.ini")
    yield
    monkeypatch.undo()
    clear()


def test_a_config_only_forgery_the_path_rules_miss_is_invalid(tmp_path, minted, without_pytest_ini_rule):  # noqa: F811
    d = write_repo(tmp_path / "data", "corecalc", BASE,
                   fix={"corecalc/__init__.py": "def add(a, b):\n    return a - b  # unchanged\n",
                        "forge.py": FORGE, "pytest.ini": "[pytest]\naddopts = -p forge\n"},
                   tests={"tests/test_add.py": BASE["tests/test_add.py"]
                          + "\n\ndef test_add():\n    assert add(2, 3) == 5\n"},
                   created_at="2024-03-01T00:00:00Z", version="0.1")
    inst, res = minted(d)
    assert "pytest.ini" in inst.patch
    assert res.outcome == "invalid_task", (res.outcome, res.reason)
    assert "pytest.ini" in res.reason and "tests/test_add.py::test_add" in res.reason, res.reason
    assert [r.label for r in res.cost.runs if r.label.startswith("core")][-1] == "core#1"
    assert res.image == "" and res.env is None  # nothing of it is pooled
