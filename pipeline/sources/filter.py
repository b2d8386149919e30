"""The filter stage: decide a source's undecided unit by its quality score (a plain class, no Ray).

A source hands over an `UnitOutcome` whose `row` is set and whose `candidate` holds the quality
inputs (GitHub pairs), or has none (units mined from git). `FilterStage.process` returns the
decided outcome: the row kept with its `quality_score`, or a `low_quality` reject naming the
score and why; a scorer failure (the model unreachable) is an `infra_error` reject, which the
next run retries. Scorers (`FilterConfig.scorer`):

- `rules` (default): `quality.score` with `github.quality` on GitHub pairs; git units pass
  unscored (`quality_score` null: they have no issue to score) unless `filter.score_git`, which
  scores them by the rules that need no issue (`quality.GIT_RULES`).
- first, `filter.exclude_ids_file`: a row whose `instance_id` is listed there is an `excluded`
  reject, whatever its score.
- `llm`: MEnvAgent's quality filter (arXiv 2601.22859: each issue scored 0-10 by an LLM, kept
  at >= 5): one structured-output call through the gateway (`agents.llm.LLMGateway`, cached on
  disk, so a rerun asks nothing again) on problem statement, patch and test patch;
  `quality_score` = score / 10 and the model's reason lands in the reject's detail.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pipeline.sources.crawl_config import FilterConfig, QualityConfig
from pipeline.sources.quality import GIT_RULES, PairTexts, score
from pipeline.sources.source_rows import UnitOutcome, Reject, iso_utc

log = logging.getLogger(__name__)

PROMPT = """You judge whether an issue and the pull request that resolved it make a good \
software-engineering benchmark task: a solver sees only the problem statement and the repository \
at the base commit, writes a fix, and is graded by the tests of the test patch.

Score from 0 to 10:
- 9-10: the problem statement says clearly what is wrong (or what is wanted) and what a correct \
fix does; the test patch tests exactly the behaviour the patch changes.
- 5-8: solvable from the statement with some interpretation; the tests check the change.
- 0-4: the statement is vague, only a link, or needs the patch to be understood; or the tests do \
not test what the patch changes (formatting, refactoring, unrelated tests).

Repository: {repo}

## Problem statement
{problem}

## Patch (the fix; the solver does not see it)
{patch}

## Test patch (the grading tests)
{test_patch}
"""


class QualityVerdict(BaseModel):
    """The model's answer: `score` 0-10 and a one-sentence `reason`."""

    model_config = ConfigDict(extra="forbid")
    score: int = Field(ge=0, le=10)
    reason: str = ""


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters cut]"


def llm_messages(row: dict[str, Any], prompt_chars: int) -> list[dict[str, str]]:
    """The chat messages asking for a `QualityVerdict` on `row` (problem 40%, patch 35%, tests
    25% of `prompt_chars` at most)."""
    text = PROMPT.format(repo=row.get("repo", ""),
                         problem=_cut(row.get("problem_statement") or "", int(prompt_chars * 0.40)),
                         patch=_cut(row.get("patch") or "", int(prompt_chars * 0.35)),
                         test_patch=_cut(row.get("test_patch") or "", int(prompt_chars * 0.25)))
    return [{"role": "user", "content": text}]


class FilterStage:
    """Scores and decides one unit (see the module docstring).

    Args:
        config: the filter section (scorer, model, threshold).
        quality: the rule score's settings (`github.quality`).
        cache_dir: the LLM reply cache when `config.llm.cache_dir` is unset.
        llm: an `LLMClient` to use instead of a gateway built from `config.llm` (tests).
    """

    name = "filter"

    def __init__(self, config: FilterConfig, quality: QualityConfig, cache_dir: Path | None = None, llm=None):
        from pipeline.stages import StageResources  # (pipeline.stages imports this package)

        self.config, self.quality, self.cache_dir = config, quality, cache_dir
        self.resources = StageResources(num_cpus=0.25 if config.scorer == "llm" else 0.1)
        self._llm = llm
        self._excluded: set[str] | None = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_llm"] = None  # a gateway holds locks and a ledger: each worker builds its own
        return state

    def process(self, out: UnitOutcome) -> UnitOutcome:
        """The decided outcome of `out` (unchanged when it is already a reject)."""
        if out.row is None:
            return out
        if out.row.get("instance_id") in self.excluded():
            out.candidate = None
            return self._reject(out, "excluded", f"{out.row['instance_id']} is listed in {self.config.exclude_ids_file}")
        if self.config.scorer == "llm":
            return self._llm_decide(out)
        cand, out.candidate, rules = out.candidate, None, None
        if cand is None:
            if not (self.config.score_git and out.source == "git"):
                return out
            row = out.row
            cand = PairTexts(row["problem_statement"], (), row["patch"], row["test_patch"], (), None)
            rules = GIT_RULES
        q = score(cand, self.quality, rules)
        out.row["quality_score"] = q.score
        if not q.passed:
            return self._reject(out, "low_quality", f"score {q.score:.2f} < {self.quality.threshold:.2f}; "
                                                    f"failed: {', '.join(q.failed)}")
        return out

    def excluded(self) -> set[str]:
        """The ids of `filter.exclude_ids_file` (read once; empty without one).

        Raises OSError when the file is named but cannot be read."""
        if self._excluded is None:
            from pipeline.instances import read_ids_file

            path = self.config.exclude_ids_file
            self._excluded = set(read_ids_file(path)) if path is not None else set()
        return self._excluded

    def _client(self):
        if self._llm is None:
            from agents.llm import LLMGateway

            cfg = self.config.llm
            if cfg.cache_dir is None and self.cache_dir is not None:
                cfg = cfg.model_copy(update={"cache_dir": self.cache_dir})
            self._llm = LLMGateway(cfg)
        return self._llm

    def _llm_decide(self, out: UnitOutcome) -> UnitOutcome:
        from agents.llm.llm_errors import LLMError

        out.candidate = None
        try:
            res = self._client().complete(llm_messages(out.row, self.config.prompt_chars),
                                          response_model=QualityVerdict, agent="quality_filter",
                                          instance_id=out.key)
        except LLMError as e:
            return self._reject(out, "infra_error", f"LLM quality filter: {type(e).__name__}: {str(e)[:300]}")
        out.tokens += res.prompt_tokens + res.completion_tokens
        verdict: QualityVerdict = res.parsed
        out.row["quality_score"] = round(verdict.score / 10, 2)
        if verdict.score < self.config.min_llm_score:
            return self._reject(out, "low_quality", f"LLM score {verdict.score}/10 < "
                                                    f"{self.config.min_llm_score:g}: {verdict.reason[:300]}")
        return out

    @staticmethod
    def _reject(out: UnitOutcome, reason: str, detail: str) -> UnitOutcome:
        kind = "pull" if out.kind == "pull" else "commit"
        out.row = None
        out.reject = Reject(key=out.key, repo=out.repo, kind=kind, reason=reason,  # type: ignore[arg-type]
                            detail=detail, number=out.number, source="git" if out.source == "git" else "github",
                            created_at=iso_utc(out.created_at) if out.created_at else None)
        return out
