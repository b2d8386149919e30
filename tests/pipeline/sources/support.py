"""Helpers shared by the source tests (imported by conftest.py and the test modules)."""

from __future__ import annotations

from pipeline.pipeline_config import deep_merge
from pipeline.sources.crawl_config import CrawlConfig
from tests.fakes.github_server import FakeGitHub

TOKEN = "ghp_SECRETtoken0123456789abcdefABCDEF"
"""The token the tests put in the environment; it must never reach a log or a file."""


def make_config(srv: FakeGitHub, **extra) -> CrawlConfig:
    """A crawl config aimed at `srv`: discovery of Python repositories, a 2023+ window,
    5 items per page (so the fixtures paginate), fast backoff; `extra` deep-merged on top."""
    base = {"github": {"api": {"base_url": srv.base_url, "per_page": 5, "backoff_initial": 0.5},
                       "discovery": {"language": "Python"},
                       "pairs": {"created_after": "2023-01-01T00:00:00Z"}}}
    return CrawlConfig.model_validate(deep_merge(base, extra))
