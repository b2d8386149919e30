"""The rows the sources produce: SWE-bench instance rows, and reject rows with a reason.

Instance rows are validated through `agents.models.Instance` and carry SWE-bench's columns
(`FAIL_TO_PASS` / `PASS_TO_PASS` empty until verification, `version` null until the plan stage
derives it, `environment_setup_commit` null) plus provenance columns: `language` (normalised,
`language.normalise`; null when the source does not know it), `source` (`github` | `git`),
`pull_number`, `issue_numbers`, `commit` (the PR's merge commit, or the mined commit),
`quality_score` (set by the filter stage) and `crawled_at` (when the unit was examined, UTC).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from agents.models import Instance
from pipeline.sources.quality import PairTexts

RejectReason = Literal[
    # repositories (discovery)
    "repo_language", "repo_stars", "repo_forks", "repo_issues", "repo_pulls",
    "repo_language_share", "repo_not_found",
    # pull requests / commits
    "not_merged", "outside_window", "no_issue_reference", "issue_not_found",
    "issue_is_pull_request", "issue_not_closed", "issue_not_confirmed", "diff_unavailable",
    "no_test_change", "no_code_change", "low_quality", "not_pr_like",
    "excluded",  # listed in filter.exclude_ids_file
    # not the item's fault: retried by the next run
    "infra_error",
]
"""Why an item was not turned into an instance (`infra_error` is retried on the next run)."""

Status = Literal["accepted", "rejected", "error"]


def iso_utc(dt: datetime) -> str:
    """`dt` as SWE-bench's ISO 8601 in UTC, e.g. `2024-03-01T12:00:00Z` (naive = UTC)."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def instance_id(repo: str, suffix: int | str) -> str:
    """SWE-bench id: `owner/name` + 12 -> `owner__name-12`."""
    owner, _, name = repo.partition("/")
    return f"{owner}__{name}-{suffix}"


class Reject(BaseModel):
    """One rejected item. `key`: its instance id (or `repo:owner/name` for a repository);
    `kind`: repo | pull | commit; `detail`: human-readable specifics."""

    model_config = ConfigDict(extra="forbid")
    key: str
    repo: str
    kind: Literal["repo", "pull", "commit"]
    reason: RejectReason
    detail: str = ""
    number: int | None = None
    created_at: str | None = None
    source: Literal["github", "git"] = "github"


@dataclass
class UnitOutcome:
    """What examining one item gave: an instance `row` (status accepted), a `reject`
    (rejected, or error when its reason is `infra_error`). `updated_at` orders watermarks."""

    key: str
    repo: str
    kind: str
    number: int | None
    created_at: datetime | None
    updated_at: datetime | None = None
    row: dict[str, Any] | None = None
    reject: Reject | None = None
    source: str = "github"
    candidate: PairTexts | None = None
    tokens: int = 0
    """LLM tokens spent deciding this unit (the LLM quality filter)."""

    @property
    def status(self) -> Status:
        """accepted, rejected, or error (an `infra_error` reject)."""
        if self.row is not None:
            return "accepted"
        return "error" if self.reject is not None and self.reject.reason == "infra_error" else "rejected"


def make_instance_row(*, repo: str, suffix: int | str, base_commit: str, patch: str,
                      test_patch: str, problem_statement: str, hints_text: str,
                      created_at: datetime, language: str | None, **provenance: Any) -> dict[str, Any]:
    """A validated SWE-bench row (dict): `language` in the vocabulary (`C++` -> `cpp`, by
    `Instance`'s validator), `crawled_at`
    now (UTC) unless given, the other `provenance` fields (`source`, `pull_number`,
    `issue_numbers`, `commit`, `quality_score`) as given."""
    provenance.setdefault("crawled_at", iso_utc(datetime.now(timezone.utc)))
    inst = Instance(instance_id=instance_id(repo, suffix), repo=repo, base_commit=base_commit,
                    patch=patch, test_patch=test_patch, problem_statement=problem_statement,
                    hints_text=hints_text, created_at=iso_utc(created_at),
                    language=language, **provenance)
    return inst.model_dump()
