"""The rule-based quality score."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pipeline.sources.crawl_config import QualityConfig
from pipeline.sources.quality import PairTexts, score

T0 = datetime(2023, 1, 1, tzinfo=timezone.utc)
PATCH = "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-x\n+y\n"
DOCS = "diff --git a/docs/a.md b/docs/a.md\n--- a/docs/a.md\n+++ b/docs/a.md\n@@ -1 +1 @@\n-x\n+y\n"


def _cand(**kw) -> PairTexts:
    base = dict(problem_statement="Crash when the input is empty\nCalling f('') raises ValueError.\n",
                issue_bodies=("Calling f('') raises ValueError.",), patch=PATCH, test_patch="t",
                issue_created=(T0,), pr_created=T0.replace(day=2))
    return PairTexts(**{**base, **kw})


def test_a_good_candidate_passes_every_rule():
    q = score(_cand(), QualityConfig())
    assert q.score == 1.0 and q.passed and q.failed == ()


def test_low_quality_is_rejected_with_the_failed_rules():
    q = score(_cand(problem_statement="bug\n\n", issue_bodies=("",)), QualityConfig())
    assert not q.passed and q.failed == ("problem_length", "issue_body") and q.score == 0.6


@pytest.mark.parametrize("kw, rule", [
    (dict(patch=DOCS), "source_change"),
    (dict(issue_bodies=("https://example.org/log.txt",)), "issue_body"),
    (dict(issue_created=(T0.replace(day=3),)), "issue_before_pr"),
    (dict(issue_bodies=("a", "b", "c"), issue_created=(T0,) * 3), "few_issues"),
])
def test_single_rules(kw, rule):
    assert score(_cand(**kw), QualityConfig()).failed == (rule,)


def test_patch_limits_and_threshold_from_config():
    cfg = QualityConfig(max_patch_lines=1, threshold=0.9)
    q = score(_cand(), cfg)
    assert q.failed == ("patch_size",) and not q.passed
    assert score(_cand(), QualityConfig(max_patch_lines=1, threshold=0.5)).passed
    with pytest.raises(ValueError):
        QualityConfig(weights={"typo_rule": 1.0})


def test_git_units_are_scored_by_the_rules_that_need_no_issue_when_asked():
    from datetime import datetime, timezone

    from pipeline.sources.crawl_config import FilterConfig, QualityConfig
    from pipeline.sources.filter import FilterStage
    from pipeline.sources.source_rows import UnitOutcome

    def unit(message: str, lines: int) -> UnitOutcome:
        patch = "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n" + \
            "".join(f"+x{i}\n" for i in range(lines))
        row = {"problem_statement": message, "patch": patch, "test_patch": "diff --git a/tests/t.py b/tests/t.py\n"}
        return UnitOutcome(key="acme__x-1", repo="acme/x", kind="commit", number=1, source="git",
                       created_at=datetime(2024, 1, 1, tzinfo=timezone.utc), row=dict(row))

    quality = QualityConfig()
    off = FilterStage(FilterConfig(), quality)
    assert off.process(unit("x", 5000)).row is not None  # default: git units pass unscored
    on = FilterStage(FilterConfig(score_git=True), quality)
    good = on.process(unit("Fix the parser on empty input: it raised ValueError\n", 20))
    assert good.row["quality_score"] == 1.0
    big = on.process(unit("Refactor\n", 5000))  # short message and a 5000-line patch
    assert big.row is None and big.reject.reason == "low_quality" and "patch_size" in big.reject.detail


def test_only_doc_change_names_the_files_of_a_docs_only_fix():
    from pipeline.sources.quality import only_doc_change

    def diff(*paths):
        return "".join(f"diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n-a\n+b\n" for p in paths)

    assert only_doc_change(diff("CHANGELOG.md", "docs/api/conf.py")) == (
        "the non-test patch changes only documentation/text files: CHANGELOG.md, docs/api/conf.py")
    assert only_doc_change(diff("CHANGELOG.md", "src/x.py")) is None
    assert only_doc_change("") is None
    assert only_doc_change(diff(*[f"doc/{i}.rst" for i in range(7)])).endswith("doc/4.rst (+2 more)")
    # colinhacks/zod-6453: a CI workflow and .gitignore only (it ended no_fail_to_pass)
    assert only_doc_change(diff(".github/workflows/release.yml", ".gitignore")).endswith(
        ".github/workflows/release.yml, .gitignore")
    assert only_doc_change(diff("packages/docs/content/basics.mdx", "LICENSE")) is not None
    assert only_doc_change(diff(".github/workflows/ci.yml", "src/lib.rs")) is None
