"""Nightly, incremental crawls: after new PRs appear, only the new items cost API calls."""

from __future__ import annotations

import random
import re

from pipeline.sources import crawl
from tests.fakes.github_server import FakeGitHub
from tests.fakes.github_world import add_pulls, expected_accepted, make_world
from tests.pipeline.sources.support import make_config

ITEM = re.compile(r"^/repos/([^/]+/[^/]+)/(?:pulls|issues)/(\d+)")


def _config(srv, world):
    return make_config(srv, github={"api": {"per_page": 100}, "discovery": None,
                                    "repos": sorted(world), "pairs": {"created_after": None}})


def test_incremental_crawl_after_new_pulls_costs_calls_only_for_them(sleeps, env, tmp_path):
    world = make_world(n_repos=3, pulls_per_repo=40, seed=3)
    with FakeGitHub(world) as srv:
        first = crawl(_config(srv, world), tmp_path, since_last=True, sleep=sleeps, environ=env)
        assert first.accepted == expected_accepted(world) and first.examined == 120

        rng = random.Random(11)
        new = {"bench/repo0": add_pulls(world, "bench/repo0", 6, rng),
               "bench/repo2": add_pulls(world, "bench/repo2", 4, rng)}
        srv.reset_log()
        second = crawl(_config(srv, world), tmp_path, since_last=True, sleep=sleeps, environ=env)

        assert second.examined == 10
        allowed = {(repo, n) for repo, ns in new.items() for n in ns}
        allowed |= {(repo, n - 1) for repo, n in allowed}  # each new PR's own issue
        items = [(m.group(1), int(m.group(2))) for r in srv.requests if (m := ITEM.match(r["path"]))]
        assert items and set(items) <= allowed
        # besides the items: one repository call and one listing page per repository;
        # unchanged ones (repo1's page, every repository object) are answered 304
        other = [r for r in srv.requests if not ITEM.match(r["path"])]
        assert len(other) == 6 and srv.count(status=304) == 4
        assert second.api["charged"] == len(items) + 2
        assert second.accepted == expected_accepted(world) - first.accepted
        assert second.total_instances == expected_accepted(world)


def test_without_since_last_old_items_are_still_skipped(sleeps, env, tmp_path):
    world = make_world(n_repos=1, pulls_per_repo=30, seed=5)
    with FakeGitHub(world) as srv:
        crawl(_config(srv, world), tmp_path, sleep=sleeps, environ=env)
        add_pulls(world, "bench/repo0", 2, random.Random(1))
        srv.reset_log()
        report = crawl(_config(srv, world), tmp_path, since_last=False, sleep=sleeps, environ=env)
        assert report.examined == 2  # all 32 listed, 30 already decided in the state database
        assert {int(m.group(2)) for r in srv.requests if (m := ITEM.match(r["path"]))} <= {61, 62, 63, 64}
