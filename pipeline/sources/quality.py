"""The rule-based quality score of a candidate instance (an LLM judge can replace it later).

Each rule is a yes/no check on the candidate; the score is the weighted share of rules passed
(weights from `QualityConfig.weights`, 0..1). Candidates scoring below `threshold` are
rejected as `low_quality`, with the failed rules named in the reject row. Rules:

- `problem_length`: issue title + body has at least `min_problem_chars` characters.
- `issue_body`: some issue has a body that is more than a bare link.
- `patch_size`: the non-test patch changes at most `max_patch_lines` lines.
- `patch_files`: the non-test patch touches at most `max_patch_files` files.
- `source_change`: the non-test patch touches a file that is not documentation.
- `few_issues`: the PR resolves at most `max_issues` issues.
- `issue_before_pr`: every issue was opened before the PR (not filed after the fact).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath

from envpool.patches import changed_line_count, files_in_patch
from pipeline.sources.crawl_config import QualityConfig

DOC_SUFFIXES = frozenset({".md", ".mdx", ".rst", ".txt", ".adoc", ".html"})
DOC_DIRS = frozenset({"docs", "doc", "documentation", "changelog", "changes", "newsfragments", ".github"})
"""Folders of documentation, release notes and repository metadata (`.github`: CI workflows,
issue templates): nothing a repository's tests exercise."""
META_FILES = frozenset({".gitignore", ".gitattributes", ".editorconfig", ".mailmap", "codeowners", "license",
                        "licence", "authors", "contributors", ".npmignore", ".prettierignore", ".dockerignore"})
"""Repository metadata files (lower-cased names, any folder)."""
_LINK_ONLY = re.compile(r"^\s*(<?https?://\S+>?\s*)*$")


@dataclass(frozen=True)
class PairTexts:
    """What the score looks at: the texts and diffs of one issue-PR pair."""

    problem_statement: str
    issue_bodies: tuple[str, ...]
    patch: str
    test_patch: str
    issue_created: tuple[datetime, ...]
    pr_created: datetime | None


@dataclass(frozen=True)
class QualityResult:
    """`score` in [0, 1], `passed` (score >= threshold), and the `failed` rule names."""

    score: float
    passed: bool
    failed: tuple[str, ...]


def _is_doc(path: str) -> bool:
    p = PurePosixPath(path)
    return (p.suffix.lower() in DOC_SUFFIXES or p.name.lower() in META_FILES
            or any(d.lower() in DOC_DIRS for d in p.parts[:-1]))


def only_doc_change(patch: str) -> str | None:
    """When the non-test `patch` touches files but none besides documentation, text and
    repository metadata files (`DOC_SUFFIXES`, `META_FILES`, folders in `DOC_DIRS`:
    CHANGELOG.md, requirements.txt, docs/..., .github/workflows/..., .gitignore), a
    one-line detail naming them (at most 5) for a `no_code_change` reject; else None.

    Such a fix cannot turn a test from failing to passing in the environment built at
    `base_commit` (the sources reject it before minting; SWE-bench likewise keeps only PRs that
    change code besides tests)."""
    files = files_in_patch(patch)
    if not files or any(not _is_doc(f) for f in files):
        return None
    return "the non-test patch changes only documentation/text files: " + ", ".join(files[:5]) + (
        f" (+{len(files) - 5} more)" if len(files) > 5 else "")


def check_rules(c: PairTexts, cfg: QualityConfig) -> dict[str, bool]:
    """Each rule's verdict for candidate `c` (rule name -> passed)."""
    files = files_in_patch(c.patch)
    return {
        "problem_length": len(c.problem_statement.strip()) >= cfg.min_problem_chars,
        "issue_body": any(b.strip() and not _LINK_ONLY.match(b) for b in c.issue_bodies),
        "patch_size": 0 < changed_line_count(c.patch) <= cfg.max_patch_lines,
        "patch_files": 0 < len(files) <= cfg.max_patch_files,
        "source_change": any(not _is_doc(f) for f in files),
        "few_issues": len(c.issue_bodies) <= cfg.max_issues,
        "issue_before_pr": c.pr_created is None or all(t <= c.pr_created for t in c.issue_created),
    }


GIT_RULES = ("problem_length", "patch_size", "patch_files", "source_change")
"""The rules that need no issue: those a unit mined from git (its commit message as the problem
statement) can be scored by."""


def score(c: PairTexts, cfg: QualityConfig, rules: tuple[str, ...] | None = None) -> QualityResult:
    """The weighted score of `c` under `cfg` (all weights 0 -> score 1.0); `rules`: only these
    (e.g. `GIT_RULES`), None = all."""
    verdicts = check_rules(c, cfg)
    if rules is not None:
        verdicts = {r: ok for r, ok in verdicts.items() if r in rules}
    total = sum(cfg.weights.get(r, 0.0) for r in verdicts)
    got = sum(cfg.weights.get(r, 0.0) for r, ok in verdicts.items() if ok)
    value = round(got / total, 4) if total > 0 else 1.0
    failed = tuple(r for r, ok in verdicts.items() if not ok)
    return QualityResult(value, value >= cfg.threshold, failed)
