"""The crawl configuration: the shipped nightly file, strictness, overrides."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from pipeline.sources.crawl_config import CrawlConfig, load_crawl_config

NIGHTLY = Path(__file__).resolve().parents[3] / "configs" / "nightly.yaml"


def test_nightly_config_loads_with_menvbench_filters():
    cfg = load_crawl_config(NIGHTLY)
    d = cfg.github.discovery
    got = (d.min_stars, d.min_forks, d.min_issues, d.min_pulls, d.min_language_share)
    assert got == (1000, 200, 200, 200, 0.6)
    assert cfg.github.api.token_env == "GITHUB_TOKEN" and cfg.github.pairs.created_after.year == 2024
    assert cfg.github.pairs.created_after.tzinfo is not None


def test_unknown_keys_are_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("github:\n  discovery:\n    min_starz: 5\n")
    with pytest.raises(ValidationError, match="min_starz"):
        load_crawl_config(bad)


def test_overrides_and_defaults():
    cfg = load_crawl_config(NIGHTLY, ["github.api.base_url=http://127.0.0.1:9", "github.pairs.link=keywords"])
    assert cfg.github.api.base_url == "http://127.0.0.1:9" and cfg.github.pairs.link == "keywords"
    assert CrawlConfig().github.discovery is None  # no discovery unless asked for
    with pytest.raises(ValidationError):
        load_crawl_config(None, ["github.pairs.link=sometimes"])


def test_repository_names_are_checked():
    with pytest.raises(ValidationError, match="owner/name"):
        load_crawl_config(None, ["github.repos=[acme]"])
