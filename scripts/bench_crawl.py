#!/usr/bin/env python
"""Benchmark: API calls of a crawl of the fake GitHub, first and incremental.

    .venv/bin/python scripts/bench_crawl.py [--repos 3] [--pulls 170] [--new 10] [--json]

Builds a generated world (`tests/fakes/github_world.py`: repos x pulls closed PRs, a seeded mix
of good pairs and every reject case), serves it with `tests/fakes/github_server.FakeGitHub` on
127.0.0.1, and runs `swemint run` (a subprocess, in-process runner, `flow.mint=false`: the
generated PRs have no repository to build from, so the chain stops after the filter) three times
in one workdir:

1. first run (discovery + every PR),
2. incremental run (`flow.since_last`, the default) after `--new` PRs appeared (spread over the repos),
3. the same incremental run again with nothing new.

For each it prints HTTP requests (every round trip the server saw), 304s, "charged" requests
(the ones GitHub counts against the rate limit: all but 304s), items examined and accepted.
A benchmark, not a test: it asserts nothing and needs no network.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes.github_server import FakeGitHub  # noqa: E402
from tests.fakes.github_world import add_pulls, make_world  # noqa: E402


def _run(label, srv, config: Path, workdir: str):
    srv.reset_log()
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "pipeline.cli", "run", "-c", str(config), "-w", workdir], cwd=ROOT,
                   env={**os.environ, "GITHUB_TOKEN": "bench-token"}, check=True, capture_output=True)
    run = json.loads((Path(workdir) / "report.json").read_text())["run"]
    crawl = json.loads((Path(workdir) / "crawl" / "report.json").read_text())
    api, units = run["api"], run["units"]
    return {"run": label, "requests": api["requests"], "server_saw": srv.count(),
            "not_modified": api["not_modified"], "charged": api["charged"],
            "examined": units["seen"], "accepted": units["accepted"], "rejected": units["rejected_total"],
            "total_instances": crawl["total_instances"], "seconds": round(time.monotonic() - t0, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repos", type=int, default=3)
    ap.add_argument("--pulls", type=int, default=170, help="closed PRs per repository")
    ap.add_argument("--new", type=int, default=10, help="PRs added before the incremental crawl")
    ap.add_argument("--json", action="store_true", help="print JSON lines only")
    args = ap.parse_args(argv)

    world = make_world(args.repos, args.pulls, seed=7)
    with FakeGitHub(world) as srv, tempfile.TemporaryDirectory(prefix="bench-crawl-") as tmp:
        cfg = Path(tmp) / "bench.yaml"
        cfg.write_text(yaml.safe_dump({"use_ray": False, "flow": {"mint": False}, "sources": {"github": {
            "api": {"base_url": srv.base_url, "per_page": 100},
            "discovery": {"language": None, "min_language_share": 0.6},
            "pairs": {"link": "keywords+timeline"}}}}))
        work = str(Path(tmp) / "work")
        rows = [_run("first crawl", srv, cfg, work)]
        rng = random.Random(1)
        repos = sorted(world)
        for i in range(args.new):
            add_pulls(world, repos[i % len(repos)], 1, rng)
        rows.append(_run(f"incremental after {args.new} new PRs", srv, cfg, work))
        rows.append(_run("incremental, nothing new", srv, cfg, work))

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
