"""The GitHub source: issue-PR pairs of one repository as SWE-bench rows (PyGithub).

For each closed PR (newest `updated_at` first, stopping at the watermark), `examine` decides,
cheapest checks first so a rejected PR costs as few calls as possible:

1. merged, created inside `pairs.created_after..created_before`           (0 calls)
2. names an issue: closing keyword (strong) or a bare `#N` (weak)        (0 calls)
3. diff (`GET pulls/{n}`, `Accept: application/vnd.github.diff`) split by path into
   `patch` / `test_patch`; both non-empty                                  (1 call)
4. each named issue exists, is an issue (not a PR), is closed; a weak one also needs
   timeline evidence that this PR closed it (`linking.timeline_confirms`)  (1-2 per issue)
5. hints: the issues' comments made before the PR's first commit          (0-2 calls: none
   when the issues have no comments)
6. the quality score is the filter stage's (`filter.py`): `examine` returns the row with its
   quality inputs (`UnitOutcome.candidate`), undecided                        (0 calls)

Row fields: `base_commit` = PR base sha, `problem_statement` = each issue's title + "\n" +
body + "\n", `hints_text` = those comments' bodies joined by "\n", `created_at` = PR creation,
`instance_id` = `owner__name-N`, `language` = the repository's main language, in the vocabulary
(`C++` -> `cpp`), `commit` = the merge commit. API errors propagate (the crawler records
`infra_error`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime, timezone

from github import Github, GithubException, UnknownObjectException
from github.Issue import Issue
from github.PullRequest import PullRequest
from github.Repository import Repository

from pipeline.sources.crawl_config import GitHubConfig
from pipeline.sources.linking import find_issue_refs, timeline_confirms
from pipeline.sources.quality import PairTexts, only_doc_change
from pipeline.sources.source_rows import UnitOutcome, Reject, instance_id, iso_utc, make_instance_row
from pipeline.sources.diff_split import TestPathRules, config_only, split

log = logging.getLogger(__name__)

DIFF_MEDIA_TYPE = "application/vnd.github.diff"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def last_update(pr: PullRequest) -> datetime:
    """The PR's `updated_at` (its `created_at`, or the epoch, when GitHub left it out)."""
    return pr.updated_at or pr.created_at or _EPOCH


class GitHubSource:
    """Pairs from repositories reached through `gh` (a client from `client.make_github`).

    `cfg`: the GitHub part of the crawl config; `rules`: the test/code path rules.
    """

    def __init__(self, gh: Github, cfg: GitHubConfig, rules: TestPathRules):
        self.gh, self.cfg, self.rules = gh, cfg, rules

    # -- listing ----------------------------------------------------------------------------
    def pulls(self, repo: Repository, since: datetime | None = None) -> Iterator[PullRequest]:
        """Closed PRs, newest `updated_at` first, down to (excluding) `since`; also stops once
        `updated_at` falls before `pairs.created_after` (nothing older can be in the window).
        Costs one call per page of `api.per_page` PRs."""
        floor = self.cfg.pairs.created_after
        for pr in repo.get_pulls(state="closed", sort="updated", direction="desc"):
            updated = last_update(pr)
            # strictly older only: a PR updated in the watermark's own second is listed again
            # (and skipped by the crawler when already decided), never lost
            if (since is not None and updated < since) or (floor is not None and updated < floor):
                return
            yield pr

    # -- one pull request -------------------------------------------------------------------
    def examine(self, repo: Repository, pr: PullRequest) -> UnitOutcome:
        """The outcome of one PR from the listing (see the module docstring for the checks).
        Raises github.GithubException / requests exceptions on API failures."""
        full = repo.full_name
        out = UnitOutcome(key=instance_id(full, pr.number), repo=full, kind="pull",
                      number=pr.number, created_at=pr.created_at, updated_at=last_update(pr))

        def reject(reason: str, detail: str = "") -> UnitOutcome:
            out.reject = Reject(key=out.key, repo=full, kind="pull", number=pr.number,
                                reason=reason, detail=detail,  # type: ignore[arg-type]
                                created_at=iso_utc(pr.created_at) if pr.created_at else None)
            return out

        pairs = self.cfg.pairs
        if pr.merged_at is None:
            return reject("not_merged")
        created = pr.created_at or last_update(pr)
        if (pairs.created_after and created < pairs.created_after) or \
                (pairs.created_before and created >= pairs.created_before):
            return reject("outside_window", f"created {iso_utc(created)}")
        refs = find_issue_refs(full, [pr.title, pr.body], pr.number)
        weak = refs.weak if pairs.link == "keywords+timeline" else ()
        if not refs.strong and not weak:
            return reject("no_issue_reference")

        diff = self._diff(pr)
        if diff is None:
            return reject("diff_unavailable", "GitHub returned no diff (too large or missing)")
        patch, test_patch, moved = split(diff, self.rules)
        if not test_patch:
            return reject("no_test_change")
        if (config := config_only(test_patch, self.rules)) is not None:
            return reject("no_test_change", f"runner configuration only ({config})")
        if not patch:
            return reject("no_code_change")
        if (doc_only := only_doc_change(patch)) is not None:
            return reject("no_code_change", doc_only)

        issues, problems = self._linked_issues(repo, pr, refs.strong, weak)
        if not issues:
            reason = problems[0][0] if problems else "issue_not_found"
            return reject(reason, "; ".join(f"#{n}: {r}" for r, n in problems))

        hints = self._hints(pr, issues)
        problem = "".join(f"{i.title}\n{i.body or ''}\n" for i in issues)
        out.candidate = PairTexts(problem, tuple(i.body or "" for i in issues), patch, test_patch,
                                  tuple(i.created_at for i in issues), pr.created_at)
        out.row = make_instance_row(
            repo=full, suffix=pr.number, base_commit=pr.base.sha, patch=patch,
            test_patch=test_patch, problem_statement=problem, hints_text=hints,
            created_at=created, language=repo.language, source="github",
            pull_number=pr.number, issue_numbers=[i.number for i in issues],
            commit=pr.merge_commit_sha, moved_to_test_patch=moved)
        return out

    def _diff(self, pr: PullRequest) -> str | None:
        try:
            _, data = self.gh.requester.requestJsonAndCheck(
                "GET", pr.url, headers={"Accept": DIFF_MEDIA_TYPE})
        except GithubException as e:
            if e.status in (404, 406, 422):  # missing, or "diff too large"
                return None
            raise
        text = data.get("data") if isinstance(data, dict) else None
        return text if isinstance(text, str) and text.strip() else None

    def _linked_issues(self, repo: Repository, pr: PullRequest, strong: tuple[int, ...],
                       weak: tuple[int, ...]) -> tuple[list[Issue], list[tuple[str, int]]]:
        """The issues PR resolves, and (reason, number) for each named one that does not count."""
        found: list[Issue] = []
        problems: list[tuple[str, int]] = []
        for n in strong + weak:
            try:
                issue = repo.get_issue(n)
            except UnknownObjectException:
                problems.append(("issue_not_found", n))
                continue
            if issue.pull_request is not None:
                problems.append(("issue_is_pull_request", n))
            elif issue.state != "closed":
                problems.append(("issue_not_closed", n))
            elif n in weak and not self._confirmed(issue, pr):
                problems.append(("issue_not_confirmed", n))
            else:
                found.append(issue)
        return found, problems

    def _confirmed(self, issue: Issue, pr: PullRequest) -> bool:
        try:
            events = list(issue.get_timeline())
        except UnknownObjectException:  # timeline unavailable (old GitHub Enterprise): no evidence
            return False
        except GithubException as e:
            if e.status == 410:
                return False
            raise
        return timeline_confirms(events, pr.number, pr.merge_commit_sha, pr.merged_at)

    def _hints(self, pr: PullRequest, issues: list[Issue]) -> str:
        """Bodies of the issues' comments created before the PR's first commit."""
        if not any(i.comments for i in issues):
            return ""
        dates = [c.commit.author.date or c.commit.committer.date for c in pr.get_commits()]
        first = min((d for d in dates if d is not None), default=pr.created_at)
        bodies = [c.body or "" for i in issues if i.comments for c in i.get_comments()
                  if c.created_at < first]
        return "\n".join(bodies)
