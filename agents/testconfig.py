"""Test Configuration agent (rule backend): which tests to run, how, and which parser reads them.

As SWE-bench does, the tests run are the test files touched by `test_patch` (never the gold
FAIL_TO_PASS / PASS_TO_PASS lists). Files the test patch deletes are not run.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from envpool.patches import test_files_to_run


class TestConfig(BaseModel):
    """How to run an instance's tests.

    `test_files`: paths relative to the repository root, in the order the patch lists them.
    `parser`: the name of the report parser (`envpool.testrun.parsers.PARSERS`).
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
