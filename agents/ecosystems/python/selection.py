"""Test Configuration for Python (rules): which tests pytest runs, ranked.

As SWE-bench does, the first configuration runs the test files touched by `test_patch` (never
the gold FAIL_TO_PASS / PASS_TO_PASS lists); files the test patch deletes are not run. When that
selects nothing (the patch touches only data files, fixtures or helpers), the second runs the
test folders holding the touched paths: the nearest folder at or above each touched path that
holds pytest-style test modules.
"""

from __future__ import annotations

import posixpath

from pydantic import BaseModel, ConfigDict, Field

from agents.gitrepo import GitTree
from envpool.patches import files_in_patch, test_files_to_run
from envpool.testpaths import role


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


def test_folders(tree: GitTree, test_patch: str) -> list[str]:
    """The folders (repository relative, in first-touched order) to run when no touched file is a
    test module: for each path the test_patch touches, the nearest folder at or above it that holds
    pytest-style test modules (pytest's default `python_files`, `test_*.py` and `*_test.py`: the
    Python group's `collect` role of the one rule set, `envpool.testpaths`) at the base commit or
    in the patch; the repository root is never chosen (that is the whole suite). A path whose
    nearest build folder below the root is another ecosystem's (a C++ test beside
    tests/CMakeLists.txt) selects no folder: pytest does not run it."""
    from agents.ecosystems.owners import ECOSYSTEM_BUILD_FILES, owner_build

    touched = files_in_patch(test_patch)
    collect = role("python", "collect")
    modules = set(collect.select(tree.files)) | set(collect.select(touched))
    dirs_with_tests = {posixpath.dirname(f) for f in modules}
    out: list[str] = []
    for path in touched:
        owner = owner_build(tree.files, path, ECOSYSTEM_BUILD_FILES)
        if owner is not None and owner[1] and owner[0] != "python":
            continue  # S28: a file of a nested build of another language (tests/CMakeLists.txt's test_x.cpp)
        d = posixpath.dirname(path)
        while d:
            if any(x == d or x.startswith(d + "/") for x in dirs_with_tests):
                if d not in out:
                    out.append(d)
                break
            d = posixpath.dirname(d)
    return out


test_folders.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
