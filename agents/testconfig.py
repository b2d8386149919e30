"""Test Configuration agent (rule backend): which tests to run, how, and which parser reads them.

As SWE-bench does, the tests run are the test files touched by `test_patch` (never the gold
FAIL_TO_PASS / PASS_TO_PASS lists). Files the test patch deletes are not run.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from pydantic import BaseModel, ConfigDict, Field
from unidiff import PatchSet

TEST_DIR_NAMES = {"test", "tests", "testing", "unittests", "unit_tests"}


class TestConfig(BaseModel):
    """How to run an instance's tests.

    `test_files`: paths relative to the repository root, in the order the patch lists them.
    `parser`: the name of the report parser (envpool.testrun.parsers registry).
    """

    __test__ = False
    model_config = ConfigDict(extra="forbid")
    framework: str = "pytest"
    test_files: list[str] = Field(default_factory=list)
    parser: str = "pytest_plugin"
    python: str = "/opt/venv/bin/python"


def is_python_test_file(path: str) -> bool:
    """True for `test_*.py`, `*_test.py`, `tests.py`, or a `.py` under a test folder (not conftest)."""
    p = PurePosixPath(path)
    if p.suffix != ".py" or p.name in ("conftest.py", "__init__.py", "setup.py"):
        return False
    if p.name.startswith("test") or p.stem.endswith("_test") or p.name == "tests.py":
        return True
    return any(part in TEST_DIR_NAMES for part in p.parts[:-1]) and "data" not in p.parts and \
        "fixtures" not in p.parts


def patch_files(patch: str) -> list[tuple[str, str]]:
    """(path, kind) for each file in a unified diff; kind is added/modified/removed."""
    out = []
    for f in PatchSet(patch):
        kind = "added" if f.is_added_file else "removed" if f.is_removed_file else "modified"
        path = f.path
        out.append((path, kind))
    return out


def configure_python_tests(test_patch: str) -> TestConfig:
    """TestConfig for a pytest repository: the test files `test_patch` adds or modifies."""
    files = [p for p, kind in patch_files(test_patch) if kind != "removed" and is_python_test_file(p)]
    return TestConfig(test_files=list(dict.fromkeys(files)))
