"""Test Configuration for Python (rules): which tests pytest runs, ranked.

As SWE-bench does, the first configuration runs the test files touched by `test_patch` (never
the gold FAIL_TO_PASS / PASS_TO_PASS lists); files the test patch deletes are not run. When that
selects nothing (the patch touches only data files, fixtures or helpers), the second runs the
test folders holding the touched paths: the nearest folder at or above each touched path that
holds pytest-style test modules.
"""

from __future__ import annotations

import posixpath
from pathlib import PurePosixPath

from pydantic import BaseModel, ConfigDict, Field

from agents.gitrepo import GitTree
from envpool.patches import files_in_patch, test_files_to_run


class TestConfig(BaseModel):
    """How to run an instance's tests.

    `test_files`: paths relative to the repository root, in the order the patch lists them.
    `parser`: the name of the report parser (`envpool.testrun.registry.PARSERS`).
    """

    __test__ = False
    model_config = ConfigDict(extra="forbid")
    framework: str = "pytest"
    test_files: list[str] = Field(default_factory=list)
    parser: str = "pytest_channel"
    python: str = "/opt/venv/bin/python"


def configure_python_tests(test_patch: str) -> TestConfig:
    """TestConfig for a pytest repository: the test modules `test_patch` adds or modifies."""
    return TestConfig(test_files=list(dict.fromkeys(test_files_to_run(test_patch))))


def _is_test_module(path: str) -> bool:
    name = PurePosixPath(path).name
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def test_folders(tree: GitTree, test_patch: str) -> list[str]:
    """The folders (repository relative, in first-touched order) to run when no touched file is a
    test module: for each path the test_patch touches, the nearest folder at or above it that holds
    pytest-style test modules (`test_*.py`, `*_test.py`) at the base commit or in the patch; the
    repository root is never chosen (that is the whole suite)."""
    touched = files_in_patch(test_patch)
    modules = {f for f in tree.files if _is_test_module(f)} | {f for f in touched if _is_test_module(f)}
    dirs_with_tests = {posixpath.dirname(f) for f in modules}
    out: list[str] = []
    for path in touched:
        d = posixpath.dirname(path)
        while d:
            if any(x == d or x.startswith(d + "/") for x in dirs_with_tests):
                if d not in out:
                    out.append(d)
                break
            d = posixpath.dirname(d)
    return out


test_folders.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
