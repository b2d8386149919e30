"""Per-test statuses (stdlib only, so the in-image status tool can import it).

`envpool.testrun.status` re-exports these beside `TestRunReport`; see its docstring for the
status table. Nothing here may import a third-party package: `envpool.testrun.statuslines`
runs inside environment images on whatever `python3` they have (3.9 or newer).
"""

from __future__ import annotations

from enum import Enum


class TestStatus(str, Enum):
    """Outcome of one test in one run (see module docstring for the mapping)."""

    __test__ = False
    PASSED = "PASSED"
    FAILED = "FAILED"
    ERROR = "ERROR"
    SKIPPED = "SKIPPED"
    XFAIL = "XFAIL"
    XPASS = "XPASS"


PASS_STATUSES = frozenset({TestStatus.PASSED, TestStatus.XPASS})


def passed_like(status: TestStatus | None) -> bool:
    """True for statuses that count as a pass in grading (PASSED, XPASS)."""
    return status in PASS_STATUSES
