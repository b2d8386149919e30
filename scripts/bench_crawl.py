#!/usr/bin/env python
"""Benchmark: API calls of a crawl of the fake GitHub, first and incremental.

    .venv/bin/python scripts/bench_crawl.py [--repos 3] [--pulls 170] [--new 10] [--json]

Builds a generated world (`tests/fakes/github_world.py`: repos x pulls closed PRs, a seeded mix
of good pairs and every reject case), serves it with `tests/fakes/github_server.FakeGitHub` on
127.0.0.1, and runs `pipeline.sources.crawl` three times in one workdir:

1. first crawl (discovery + every PR),
2. incremental crawl (`since_last=True`) after `--new` PRs appeared (spread over the repos),
3. the same incremental crawl again with nothing new.

For each it prints HTTP requests (every round trip the server saw), 304s, "charged" requests
(the ones GitHub counts against the rate limit: all but 304s), items examined and accepted.
A benchmark, not a test: it asserts nothing and needs no network.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.sources import CrawlConfig, crawl  # noqa: E402
from tests.fakes.github_server import FakeGitHub  # noqa: E402
from tests.fakes.github_world import add_pulls, make_world  # noqa: E402


def _run(label, srv, cfg, workdir, since_last):
    srv.reset_log()
    t0 = time.monotonic()
    rep = crawl(cfg, workdir, since_last=since_last, sleep=lambda s: None,
                environ={"GITHUB_TOKEN": "bench-token"})
    return {"run": label, "requests": rep.api["requests"], "server_saw": srv.count(),
            "not_modified": rep.api["not_modified"], "charged": rep.api["charged"],
            "examined": rep.examined, "accepted": rep.accepted, "rejected": rep.rejected,
            "total_instances": rep.total_instances, "seconds": round(time.monotonic() - t0, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repos", type=int, default=3)
    ap.add_argument("--pulls", type=int, default=170, help="closed PRs per repository")
    ap.add_argument("--new", type=int, default=10, help="PRs added before the incremental crawl")
    ap.add_argument("--json", action="store_true", help="print JSON lines only")
    args = ap.parse_args(argv)

    world = make_world(args.repos, args.pulls, seed=7)
    with FakeGitHub(world) as srv, tempfile.TemporaryDirectory(prefix="bench-crawl-") as tmp:
        cfg = CrawlConfig.model_validate({"github": {
            "api": {"base_url": srv.base_url, "per_page": 100},
            "discovery": {"language": None, "min_language_share": 0.6},
            "pairs": {"link": "keywords+timeline"}}})
        rows = [_run("first crawl", srv, cfg, tmp, since_last=False)]
        rng = random.Random(1)
        repos = sorted(world)
        for i in range(args.new):
            add_pulls(world, repos[i % len(repos)], 1, rng)
        rows.append(_run(f"incremental after {args.new} new PRs", srv, cfg, tmp, since_last=True))
        rows.append(_run("incremental, nothing new", srv, cfg, tmp, since_last=True))

    if args.json:
        for r in rows:
            print(json.dumps(r))
        return 0
    total = sum(len(d["pulls"]) for d in world.values())
    print(f"fake GitHub: {args.repos} repositories, {args.repos * args.pulls} closed PRs "
          f"(+{args.new} new = {total}), per_page=100\n")
    cols = ["requests", "not_modified", "charged", "examined", "accepted", "total_instances", "seconds"]
    print(f"{'run':<32}" + "".join(f"{c:>16}" for c in cols))
    for r in rows:
        print(f"{r['run']:<32}" + "".join(f"{r[c]:>16}" for c in cols))
    inc = rows[1]
    print(f"\nincremental: {inc['charged']} charged calls for {inc['examined']} new PRs "
          f"({inc['charged'] / max(1, inc['examined']):.1f} per new PR, listing included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
