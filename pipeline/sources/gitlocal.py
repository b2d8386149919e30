"""The local git source: PR-like units mined from a mirror's history, for air-gapped sites.

Walks the first-parent history of `ref` in a git directory (bare mirror or work tree) and
takes, per mainline commit C with first parent P:

- a merge commit whose subject is `Merge pull request #N from ...`, or
  ends in `(#N)` (GitHub's merge message set to the PR title)           -> id `owner__name-N`
- a non-merge commit whose subject ends in `(#N)` (a squash merge)        -> id `owner__name-N`
- any other non-merge commit (when `single_commits`)                      -> `owner__name-<sha7>`

and keeps it when `git diff P C` changes both test and non-test files (split by the same path
rules as the GitHub source). Row fields: `base_commit` = P, `patch` / `test_patch` from that
diff, `problem_statement` = the full commit message, `created_at` = C's author date (UTC),
`hints_text` = "". Other merge commits are rejected as `not_pr_like`. Only `git` is needed.
Raises GitMiningError when a git command fails (path of the git dir in the message).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from pipeline.sources.crawl_config import LocalRepoConfig
from pipeline.sources.source_errors import GitMiningError
from pipeline.sources.quality import only_doc_change
from pipeline.sources.source_rows import UnitOutcome, Reject, instance_id, iso_utc, make_instance_row
from pipeline.sources.diff_split import TestPathRules, config_only, default_rules, split

_MERGE_PR = re.compile(r"^Merge pull request #(\d+) from \S+")
_SQUASH_PR = re.compile(r"\(#(\d+)\)\s*$")
_SEP = "\x1f"


def git(git_dir: Path, *args: str, timeout: float = 300) -> str:
    """stdout of `git --git-dir GIT_DIR ARGS...` (no pager, no colour, no user config surprises).
    Raises GitMiningError on a nonzero exit or a timeout."""
    cmd = ["git", "--git-dir", str(git_dir), "-c", "core.quotepath=false", "-c", "color.ui=never",
           *args]
    try:
        env = {"GIT_TERMINAL_PROMPT": "0", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        r = subprocess.run(cmd, capture_output=True, text=True, errors="surrogateescape",
                           timeout=timeout, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise GitMiningError(f"{' '.join(cmd[3:])}: {e}") from e
    if r.returncode != 0:
        raise GitMiningError(f"git {' '.join(args[:3])} in {git_dir} failed: {r.stderr.strip()[-400:]}")
    return r.stdout


def _base_reader(git_dir: Path, commit: str):
    """`path -> text of path at commit` (None when it is not there), for the split's judgement of
    shared configuration files (`diff_split.split`'s `base`)."""
    def read(path: str) -> str | None:
        try:
            return git(git_dir, "cat-file", "blob", f"{commit}:{path}", timeout=60)
        except GitMiningError:
            return None
    return read


def resolve_git_dir(path: Path) -> Path:
    """`path` itself for a bare repository, `path/.git` for a work tree."""
    path = Path(path)
    return path / ".git" if (path / ".git").exists() else path


def _commits(git_dir: Path, cfg: LocalRepoConfig) -> Iterator[tuple[str, list[str], datetime, str]]:
    """(sha, parents, author date, full message) of first-parent commits, newest first."""
    args = ["log", "--first-parent", "-z", f"--format=%H{_SEP}%P{_SEP}%aI{_SEP}%B"]
    if cfg.max_commits:
        args.append(f"--max-count={cfg.max_commits}")
    if cfg.created_after:
        args.append(f"--since={cfg.created_after.isoformat()}")
    for record in git(git_dir, *args, cfg.ref, "--").split("\0"):
        if not record.strip():
            continue
        sha, parents, date, message = record.lstrip("\n").split(_SEP, 3)
        when = datetime.fromisoformat(date).astimezone(timezone.utc)
        yield sha, parents.split(), when, message.strip("\n") + "\n"


def classify(parents: list[str], message: str, sha: str, single_commits: bool) -> int | str | None:
    """The unit's id suffix: the PR number, the short sha (plain commit), or None (skip)."""
    subject = message.split("\n", 1)[0].strip()
    if len(parents) > 1:  # GitHub's "Merge pull request #N", or a merge titled as the PR, "Title (#N)"
        m = _MERGE_PR.match(subject) or _SQUASH_PR.search(subject)
        return int(m.group(1)) if m else None
    m = _SQUASH_PR.search(subject)
    if m:
        return int(m.group(1))
    return sha[:7] if single_commits else None


def _reject(out: UnitOutcome, reason: str, detail: str) -> UnitOutcome:
    out.reject = Reject(key=out.key, repo=out.repo, kind="commit", reason=reason,  # type: ignore[arg-type]
                        detail=detail, number=out.number, source="git",
                        created_at=iso_utc(out.created_at) if out.created_at else None)
    return out


def mine(cfg: LocalRepoConfig, rules: TestPathRules | None = None,
         skip: set[str] | frozenset[str] = frozenset()) -> Iterator[UnitOutcome]:
    """Outcomes (instance rows and rejects) of the mirror `cfg.git_dir`, newest first.

    `skip`: instance ids already decided (not diffed again). Root commits are skipped. A PR
    number met twice (reverted and merged again): the newest unit keeps `owner__name-N`,
    older ones get `owner__name-<sha7>`.
    """
    rules = rules or default_rules()
    git_dir = resolve_git_dir(cfg.git_dir)
    seen: set[str] = set()
    for sha, parents, when, message in _commits(git_dir, cfg):
        if not parents:
            continue
        suffix = classify(parents, message, sha, cfg.single_commits)
        key = instance_id(cfg.repo, suffix if suffix is not None else sha[:7])
        out = UnitOutcome(key=key, repo=cfg.repo, kind="commit", created_at=when, updated_at=when,
                      number=suffix if isinstance(suffix, int) else None, source="git")
        if key in skip:
            continue
        if key in seen:
            key = out.key = instance_id(cfg.repo, sha[:7])
        seen.add(key)
        if suffix is None:
            subject = (message.splitlines() or [""])[0]
            yield _reject(out, "not_pr_like", f"{sha[:12]}: {subject[:120]}")
            continue
        diff = git(git_dir, "diff", "--no-ext-diff", "--no-textconv", "-M", parents[0], sha, "--")
        patch, test_patch, moved = split(diff, rules, _base_reader(git_dir, parents[0]))
        if not test_patch:
            yield _reject(out, "no_test_change", sha[:12])
            continue
        if (config := config_only(test_patch, rules)) is not None:
            yield _reject(out, "no_test_change", f"{sha[:12]}: runner configuration only ({config})")
            continue
        if not patch:
            yield _reject(out, "no_code_change", sha[:12])
            continue
        if (doc_only := only_doc_change(patch)) is not None:
            yield _reject(out, "no_code_change", f"{sha[:12]}: {doc_only}")
            continue
        out.row = make_instance_row(
            repo=cfg.repo, suffix=out.key.rsplit("-", 1)[1], base_commit=parents[0], patch=patch,
            test_patch=test_patch, problem_statement=message, hints_text="", created_at=when,
            language=None, source="git", commit=sha, pull_number=out.number, moved_to_test_patch=moved)
        yield out
