"""Typed configuration of `crawl` (YAML: `configs/nightly.yaml`); every model forbids unknown keys.

Layering as in `pipeline.pipeline_config`: the YAML file, then `key.sub=value` overrides. The GitHub token
is never part of the configuration: only the *name* of the environment variable holding it.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agents.llm.llm_config import LLMConfig
from envpool.naming import check_repo
from pipeline.yamlio import deep_merge, parse_override, read_yaml
from pipeline.sources.diff_split import DEFAULT_RULES, TestPathRules
from pipeline.sources.diff_split import rules as split_rules



def _check_slug(value: str) -> str:
    """`value` when it is a `repo` rows may carry (`envpool.naming.check_repo`), else ValueError."""
    return check_repo(value)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ApiConfig(_Strict):
    """How the GitHub REST API is reached, paced and cached."""

    base_url: str = "https://api.github.com"
    """REST root. GitHub Enterprise: `https://HOST/api/v3`; tests: the fake server's URL."""
    token_env: str = "GITHUB_TOKEN"
    """Name of the environment variable with the token (unset = anonymous, 60 requests/hour)."""
    token_envs: list[str] = Field(default_factory=list)
    """More tokens, by environment variable name (`swemint run`): one crawler actor per token,
    `token_env` first; repositories are shared out among them. Empty = `token_env` only."""
    per_page: int = Field(default=100, ge=1, le=100)
    """Items per page of list endpoints (GitHub's maximum is 100)."""
    timeout: int = Field(default=30, ge=1)
    """Seconds per HTTP request."""
    max_attempts: int = Field(default=6, ge=1)
    """Attempts per request across transient errors (5xx, connection) and rate-limit waits."""
    backoff_initial: float = Field(default=1.0, ge=0)
    """Seconds before the first retry of a transient error; doubles per attempt."""
    backoff_max: float = Field(default=60.0, ge=0)
    """Cap, in seconds, of one transient-error backoff."""
    min_interval: float = Field(default=0.0, ge=0)
    """Seconds between two requests (GitHub asks integrators to pace serial requests)."""
    secondary_wait: float = Field(default=60.0, ge=0)
    """Seconds to wait on a secondary rate limit that names no `Retry-After` (GitHub: >= 60)."""
    max_rate_limit_wait: float = Field(default=3900.0, ge=0)
    """Longest rate-limit wait honoured, in seconds; longer raises `RateLimitExhausted`."""
    cache: bool = True
    """Keep an on-disk response cache and send conditional requests (ETag / If-Modified-Since)."""
    cache_dir: Path | None = None
    """Where the cache lives (None = `WORKDIR/crawl/http-cache`)."""


class DiscoveryConfig(_Strict):
    """Repository discovery by search, with MEnvBench's filters as defaults."""

    language: str | None = None
    """Main language (GitHub's name, e.g. `Python`, `Go`); None = any."""
    min_stars: int = Field(default=1000, ge=0)
    min_forks: int = Field(default=200, ge=0)
    min_issues: int = Field(default=200, ge=0)
    """Issues ever opened (a search count, pull requests excluded)."""
    min_pulls: int = Field(default=200, ge=0)
    """Pull requests ever opened (a search count)."""
    min_language_share: float = Field(default=0.6, ge=0, le=1)
    """Share of the repository's code bytes in its main language (GET .../languages)."""
    max_repos: int = Field(default=50, ge=1)
    """Repositories accepted per run at most (search results are read in order of stars)."""
    query: str = "archived:false"
    """Extra search qualifiers appended to the generated ones."""


class PairConfig(_Strict):
    """Which pull requests become issue-PR pairs."""

    created_after: datetime | None = None
    """Only PRs created at or after this instant (naive = UTC)."""
    created_before: datetime | None = None
    """Only PRs created before this instant (naive = UTC)."""
    link: Literal["keywords", "keywords+timeline"] = "keywords+timeline"
    """`keywords`: only closing keywords (`fixes #N`) link an issue. `keywords+timeline`: a bare
    `#N` mention also links when the issue's timeline shows this PR closed it."""
    max_pulls_per_repo: int | None = Field(default=None, ge=1)
    """Pull requests examined per repository and run (None = all in the window). A budget for
    trial runs: the newest are examined and the watermark passes the rest, which only a run
    without `since_last` (or with a higher budget and `revisit`) reaches later."""
    revisit: bool = False
    """Re-examine PRs already decided in an earlier run (cheap: the HTTP cache answers 304s)."""

    @field_validator("created_after", "created_before")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        if v is not None and v.tzinfo is None:
            v = v.replace(tzinfo=timezone.utc)
        return v


QUALITY_RULES = ("problem_length", "issue_body", "patch_size", "patch_files", "source_change",
                 "few_issues", "issue_before_pr")
"""Names of the rule-based quality checks (see `quality.py`)."""


class QualityConfig(_Strict):
    """The rule-based quality score: a weighted share of passed rules, rejected below threshold."""

    threshold: float = Field(default=0.7, ge=0, le=1)
    min_problem_chars: int = Field(default=40, ge=0)
    max_patch_lines: int = Field(default=600, ge=1)
    """Added plus removed lines of the non-test patch."""
    max_patch_files: int = Field(default=15, ge=1)
    max_issues: int = Field(default=2, ge=1)
    weights: dict[str, float] = Field(default_factory=lambda: {
        "problem_length": 0.25, "issue_body": 0.15, "patch_size": 0.2, "patch_files": 0.1,
        "source_change": 0.15, "few_issues": 0.1, "issue_before_pr": 0.05})
    """Rule name -> weight; rules left out weigh 0."""

    @field_validator("weights")
    @classmethod
    def _known(cls, v: dict[str, float]) -> dict[str, float]:
        unknown = set(v) - set(QUALITY_RULES)
        if unknown:
            raise ValueError(f"unknown quality rules {sorted(unknown)}; known: {QUALITY_RULES}")
        return v


class SplitConfig(_Strict):
    """The test/code split of diffs (the one rule set, `envpool/testpaths.yaml`, plus these)."""

    ecosystems: list[str] | None = None
    """Ecosystems (languages or rule groups, `pipeline.sources.diff_split.DEFAULT_RULES`) whose
    rules apply (None = all)."""
    extra_dirs: list[str] = Field(default_factory=list)
    extra_names: list[str] = Field(default_factory=list)
    extra_paths: list[str] = Field(default_factory=list)

    @field_validator("ecosystems")
    @classmethod
    def _known(cls, v: list[str] | None) -> list[str] | None:
        unknown = [e for e in v or [] if e.lower() not in DEFAULT_RULES]
        if unknown:
            raise ValueError(f"unknown ecosystems {unknown}; known: {sorted(DEFAULT_RULES)}")
        return v

    def rules(self) -> TestPathRules:
        """The compiled rules."""
        return split_rules(self.ecosystems, extra_dirs=self.extra_dirs, extra_names=self.extra_names,
                           extra_paths=self.extra_paths)


class GitHubConfig(_Strict):
    """The GitHub source: explicit repositories and/or discovery, pairs, quality."""

    api: ApiConfig = Field(default_factory=ApiConfig)
    repos: list[str] = Field(default_factory=list)
    """Repositories (`owner/name`) crawled as given, without discovery filters."""

    @field_validator("repos")
    @classmethod
    def _slugs(cls, v: list[str]) -> list[str]:
        return [_check_slug(x) for x in v]
    discovery: DiscoveryConfig | None = None
    """Search for more repositories (None = only `repos`)."""
    pairs: PairConfig = Field(default_factory=PairConfig)
    quality: QualityConfig = Field(default_factory=QualityConfig)


class LocalRepoConfig(_Strict):
    """A local git mirror (bare or not) mined for PR-like units (`gitlocal.py`)."""

    repo: str
    """`owner/name` used in instance ids."""
    git_dir: Path
    ref: str = "HEAD"
    """The mainline to walk (first parents only)."""
    single_commits: bool = True
    """Also take plain commits that change tests and code (not only merges / `(#N)` squashes)."""
    max_commits: int | None = Field(default=None, ge=1)
    created_after: datetime | None = None
    """Only commits made at or after this instant (git's `--since`, on the committer date)."""

    @field_validator("repo")
    @classmethod
    def _slug(cls, v: str) -> str:
        return _check_slug(v)


class FilterConfig(_Strict):
    """The filter stage (`pipeline.sources.filter`): which quality score decides.

    `rules` (the default): GitHub pairs get the rule score of `github.quality` (units mined from
    git carry no issue to score and pass unscored). `llm`: every unit is scored 0-10 by a model
    through the gateway and kept at `min_llm_score` or above (MEnvAgent, arXiv 2601.22859,
    keeps >= 5); `quality_score` is then that score / 10.
    """

    scorer: Literal["rules", "llm"] = "rules"
    llm: LLMConfig | None = None
    """The model (`agents.llm.LLMConfig`); required by `scorer: llm`. Set `cache_dir` to cache
    replies (a rerun then costs no request); null = `WORKDIR/cache/llm-filter`."""
    min_llm_score: float = Field(default=5.0, ge=0, le=10)
    score_git: bool = False
    """`rules`: also score units mined from git, by the rules that need no issue
    (`quality.GIT_RULES`: the commit message's length, patch size and files, a non-doc change;
    their weights renormalised, the same threshold). False: git units pass unscored."""
    prompt_chars: int = Field(default=12000, ge=500)
    """Characters of problem statement + patch + test patch sent to the model at most (each
    part cut proportionally)."""
    exclude_ids_file: Path | None = None
    """Instance ids never to mint, one a line (`#` comments): the ids of a dataset one already
    has (no duplicates of it), or units measured on another machine. A unit whose row's
    `instance_id` is listed is an `excluded` reject (decided once, like every reject), before any
    scoring. Null: nothing excluded."""

    @model_validator(mode="after")
    def _needs_model(self) -> FilterConfig:
        if self.scorer == "llm" and self.llm is None:
            raise ValueError("filter.scorer=llm needs a filter.llm block (model, api_base, api_key_env)")
        return self


class CrawlConfig(_Strict):
    """Everything `crawl(config, workdir)` needs; the `sources` section of a pipeline config."""

    github: GitHubConfig | None = Field(default_factory=GitHubConfig)
    local: list[LocalRepoConfig] = Field(default_factory=list)
    split: SplitConfig = Field(default_factory=SplitConfig)
    filter: FilterConfig = Field(default_factory=FilterConfig)


def load_crawl_config(path: Path | str | None = None, overrides: list[str] | None = None) -> CrawlConfig:
    """A CrawlConfig from a YAML file (None = defaults) and `key.sub=value` overrides.

    The file is a crawl config, or a whole pipeline config (`configs/nightly.yaml`), whose
    `sources` section is then used (overrides then address keys inside `sources`).
    Raises pydantic.ValidationError (unknown keys, bad values), ValueError (bad override),
    OSError (unreadable file).
    """
    data: dict = read_yaml(Path(path)) if path is not None else {}
    if "sources" in data:
        data = data["sources"] or {}
    for item in overrides or []:
        data = deep_merge(data, parse_override(item))
    return CrawlConfig.model_validate(data)
