"""Repository discovery: GitHub search plus MEnvBench-style filters, cheapest check first.

Stars, forks and main language come with the search result (no extra call); the language
share costs one call (`GET /repos/{o}/{r}/languages`), the issue and PR counts one search call
each (`GET /search/issues?q=repo:o/r is:issue` with `per_page=1`; GitHub caps such counts at
1000, far above any threshold used). A failed filter yields a `Reject` row naming the measured
value, so every repository considered leaves a trace.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from github import Github
from github.Repository import Repository

from pipeline.sources.crawl_config import DiscoveryConfig
from pipeline.sources.source_rows import Reject

log = logging.getLogger(__name__)


def search_query(cfg: DiscoveryConfig) -> str:
    """The `q` of `GET /search/repositories` for `cfg`, e.g.
    `language:Python stars:>=1000 forks:>=200 archived:false`."""
    parts = []
    if cfg.language:
        lang = f'"{cfg.language}"' if " " in cfg.language else cfg.language
        parts.append(f"language:{lang}")
    parts += [f"stars:>={cfg.min_stars}", f"forks:>={cfg.min_forks}"]
    if cfg.query.strip():
        parts.append(cfg.query.strip())
    return " ".join(parts)


def language_share(languages: dict[str, int], language: str | None) -> float:
    """Share (0..1) of code bytes in `language` (case-insensitive); 0.0 without data.
    Non-integer values are ignored (PyGithub adds the request's `url` to the mapping)."""
    languages = {k: v for k, v in languages.items() if isinstance(v, int)}
    total = sum(languages.values())
    if not total or not language:
        return 0.0
    return sum(v for k, v in languages.items() if k.lower() == language.lower()) / total


def _reject(repo: Repository, reason: str, detail: str) -> Reject:
    return Reject(key=f"repo:{repo.full_name}", repo=repo.full_name, kind="repo",
                  reason=reason, detail=detail)  # type: ignore[arg-type]


def check_repo(gh: Github, repo: Repository, cfg: DiscoveryConfig) -> Reject | None:
    """None when `repo` passes every filter, else the first failure as a Reject.

    Costs 0 calls when the search data already fails it, else up to 3 (languages, issue
    count, PR count). Raises github.GithubException on API errors.
    """
    main = cfg.language or repo.language
    if cfg.language and (repo.language or "").lower() != cfg.language.lower():
        return _reject(repo, "repo_language", f"main language {repo.language!r}, want {cfg.language!r}")
    if repo.stargazers_count < cfg.min_stars:
        return _reject(repo, "repo_stars", f"{repo.stargazers_count} stars < {cfg.min_stars}")
    if repo.forks_count < cfg.min_forks:
        return _reject(repo, "repo_forks", f"{repo.forks_count} forks < {cfg.min_forks}")
    if cfg.min_language_share > 0:
        share = language_share(repo.get_languages(), main)
        if share < cfg.min_language_share:
            return _reject(repo, "repo_language_share",
                           f"{main} is {share:.0%} of the code < {cfg.min_language_share:.0%}")
    for kind, minimum, reason in (("issue", cfg.min_issues, "repo_issues"),
                                  ("pr", cfg.min_pulls, "repo_pulls")):
        if minimum > 0:
            count = gh.search_issues(f"repo:{repo.full_name} is:{kind}").totalCount
            if count < minimum:
                return _reject(repo, reason, f"{count} {kind}s < {minimum}")
    return None


def discover(gh: Github, cfg: DiscoveryConfig) -> Iterator[tuple[Repository, Reject | None]]:
    """Search results in order of stars, each with its verdict (None = accepted); stops after
    `cfg.max_repos` accepted repositories. Raises github.GithubException on API errors."""
    accepted = 0
    query = search_query(cfg)
    log.info("discovering repositories: %s", query)
    for repo in gh.search_repositories(query, sort="stars", order="desc"):
        if accepted >= cfg.max_repos:
            return
        verdict = check_repo(gh, repo, cfg)
        accepted += verdict is None
        yield repo, verdict
