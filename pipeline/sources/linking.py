"""Which issues a pull request resolves: closing keywords, bare mentions, timeline evidence.

GitHub links a PR to an issue it closes when the PR's title or body says
`close|closes|closed|fix|fixes|fixed|resolve|resolves|resolved` followed by `#N`,
`owner/name#N` or the issue's URL (an optional colon after the keyword is accepted). Those
are *strong* references. Any other `#N` of the same repository is a *weak* reference: it
counts only when the issue's timeline shows this PR closed it (`timeline_confirms`).
All functions are pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

_KEYWORD = r"(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)"
_REF = r"(?:(?P<owner>[\w.-]+)/(?P<name>[\w.-]+))?#(?P<num>\d+)"
_URL = r"https?://[^\s/]+/(?P<uowner>[\w.-]+)/(?P<uname>[\w.-]+)/issues/(?P<unum>\d+)"
_STRONG = re.compile(rf"\b{_KEYWORD}:?\s+(?:{_REF}|{_URL})", re.IGNORECASE)
_ANY = re.compile(rf"(?<![\w/&]){_REF}\b|{_URL}", re.IGNORECASE)

CLOSE_WINDOW = timedelta(minutes=10)
"""A `closed` event this soon after the merge, following a cross-reference from the PR,
counts as closed by the PR (GitHub closes linked issues within seconds of the merge)."""


@dataclass(frozen=True)
class IssueRefs:
    """Issue numbers of the same repository a PR names: `strong` (closing keyword) and `weak`
    (any other mention), each sorted, disjoint."""

    strong: tuple[int, ...]
    weak: tuple[int, ...]

    @property
    def all(self) -> tuple[int, ...]:
        """Strong then weak numbers."""
        return self.strong + self.weak


def _same_repo(owner: str | None, name: str | None, repo: str) -> bool:
    return owner is None or f"{owner}/{name}".lower() == repo.lower()


def _number(m: re.Match, repo: str) -> int | None:
    if m.group("num") is not None:
        return int(m.group("num")) if _same_repo(m.group("owner"), m.group("name"), repo) else None
    if _same_repo(m.group("uowner"), m.group("uname"), repo):
        return int(m.group("unum"))
    return None


def find_issue_refs(repo: str, texts: Iterable[str | None], own_number: int | None = None) -> IssueRefs:
    """Issue references in `texts` (PR title, body) that point into `repo` ("owner/name").

    The PR's own number is dropped. Cross-repository references are ignored (the issue must
    live in the repository whose code the PR changes).
    """
    strong: set[int] = set()
    mentioned: set[int] = set()
    for text in texts:
        if not text:
            continue
        for m in _STRONG.finditer(text):
            n = _number(m, repo)
            if n is not None:
                strong.add(n)
        for m in _ANY.finditer(text):
            n = _number(m, repo)
            if n is not None:
                mentioned.add(n)
    strong.discard(own_number or -1)
    mentioned.discard(own_number or -1)
    return IssueRefs(tuple(sorted(strong)), tuple(sorted(mentioned - strong)))


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if obj is None:
            return None
        obj = obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)
    return obj


def timeline_confirms(events: Iterable[Any], pr_number: int, merge_commit_sha: str | None,
                      merged_at: datetime | None) -> bool:
    """True when an issue's timeline shows PR `pr_number` closed it.

    `events`: timeline events as GitHub JSON dicts or PyGithub `TimelineEvent`s. Evidence: a
    `closed` event whose `commit_id` is the PR's merge commit; a `connected` event (manual
    link in the UI) with a `closed` event; or a `cross-referenced` event from this PR followed
    by a `closed` event within `CLOSE_WINDOW` of `merged_at`.
    """
    events = list(events)
    closed = [e for e in events if _get(e, "event") == "closed"]
    if merge_commit_sha and any(_get(e, "commit_id") == merge_commit_sha for e in closed):
        return True
    if closed and any(_get(e, "event") == "connected" for e in events):
        return True
    crossed = any(_get(e, "event") == "cross-referenced"
                  and _get(e, "source", "issue", "number") == pr_number for e in events)
    if crossed and merged_at is not None:
        for e in closed:
            at = _get(e, "created_at")
            if isinstance(at, str):
                at = datetime.fromisoformat(at.replace("Z", "+00:00"))
            if at is not None and timedelta(0) <= at - merged_at <= CLOSE_WINDOW:
                return True
    return False
