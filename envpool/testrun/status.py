"""Per-test statuses and the result of one test run.

Status mapping (pytest's terms; other runners map onto the same six):

| status  | meaning                                   | counts as passed |
|---------|-------------------------------------------|------------------|
| PASSED  | the test ran and passed                   | yes              |
| XFAIL   | expected failure that failed (as expected)| yes (SWE-bench: only where gold did) -- we treat it as *not* a pass for FAIL_TO_PASS and PASS_TO_PASS |
| XPASS   | expected failure that passed (non-strict) | yes              |
| FAILED  | assertion or error in the test call       | no               |
| ERROR   | error in setup/teardown, or collection    | no               |
| SKIPPED | skipped                                   | no               |

`passed_like(status)` is the one predicate grading uses.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from envpool.testrun.outcome import PASS_STATUSES, TestStatus, passed_like

__all__ = ["PASS_STATUSES", "TestRunReport", "TestStatus", "passed_like"]


class TestRunReport(BaseModel):
    """What one run of a test command produced.

    `statuses` maps test ids in the runner's own form (pytest: `path::Class::test[param]`) to
    their status. `collection_errors` lists files (or ids) that failed to collect/import.
    `tests_ran` is False when nothing shows the runner reached any test (never "all passed").
    `source` says which report the statuses came from. `duration` is in seconds.
    """

    __test__ = False
    model_config = ConfigDict(extra="forbid")
    statuses: dict[str, TestStatus] = Field(default_factory=dict)
    collection_errors: list[str] = Field(default_factory=list)
    exit_code: int | None = None
    timed_out: bool = False
    tests_ran: bool = False
    source: Literal["plugin", "junit", "log", "json", "none"] = "none"
    duration: float = 0.0
    log_path: str | None = None
    selected: list[str] | None = None
    """Set on a targeted rerun (`agents.verification`'s adaptive policy): the ids it was asked to
    run. Grading reads such a run only for those ids that it reports (or that lie under one of its
    collection errors): a test it was not asked for, or that its selection missed, was not
    observed, which is not a failure. None: the run ran the whole configuration."""
    reasons: dict[str, str] = Field(default_factory=dict)
    """Test id (or collector id) -> a short excerpt of why it did not pass (skip reason, failure,
    collection error), where the runner's report gives one (pytest's plugin). For diagnosis
    only: grading never reads it."""
