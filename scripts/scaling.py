#!/usr/bin/env python
"""Scaling efficiency from two runs of the same instance list: one on 1 node, one on N nodes
(a real cluster: the same `ray job submit ... python -m pipeline.jobs.run --instances LIST` on a
one-node cluster and on the N-node one, each into its own work directory).

    .venv/bin/python scripts/scaling.py --one /data/run-1node --many /data/run-8nodes --nodes 8

Reads each `WORKDIR/report.json` (the `run` part: wall seconds, CPU seconds of driver, Ray
workers and build containers, rows by outcome, rows per node) and prints, for both runs,
instances and verified instances per wall-hour and per CPU-hour, then

    speed-up   = (instances per wall-hour on N nodes) / (instances per wall-hour on 1 node)
    efficiency = speed-up / N          (1.0 = linear; the figure to read)

and the CPU cost ratio (CPU-seconds per instance, N nodes over 1: what the cluster's machinery --
registry pushes and pulls, remote toolchains -- costs). Both runs must cover the same instances
from fresh engines (or both warm); the script checks the instance sets and says when they differ.
Exit code 0, or 2 when a report is missing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def read(workdir: Path) -> dict:
    """The `run` part of `workdir/report.json` with the figures this script needs."""
    path = workdir / "report.json"
    if not path.is_file():
        raise FileNotFoundError(f"no report at {path}")
    rep = json.loads(path.read_text())
    run = rep.get("run") or rep
    minted = run.get("minted") or {}
    finished = sum(v for k, v in minted.items() if isinstance(v, int))
    ids = {p.parent.name for p in (workdir / "instances").glob("*/DONE")}
    return {"wall_s": float(run.get("wall_s") or 0), "cpu_s": float(run.get("cpu_s") or 0), "finished": finished,
            "verified": int(minted.get("verified") or 0), "nodes": run.get("nodes") or {}, "ids": ids}


def figures(r: dict) -> dict:
    """Per wall-hour and per CPU-hour rates of one run."""
    def rate(n: int, s: float) -> float | None:
        return round(n / (s / 3600), 2) if s > 0 else None

    return {"instances_per_wall_hour": rate(r["finished"], r["wall_s"]),
            "verified_per_wall_hour": rate(r["verified"], r["wall_s"]),
            "instances_per_cpu_hour": rate(r["finished"], r["cpu_s"]),
            "cpu_s_per_instance": round(r["cpu_s"] / r["finished"], 1) if r["finished"] else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--one", type=Path, required=True, help="work directory of the 1-node run")
    ap.add_argument("--many", type=Path, required=True, help="work directory of the N-node run")
    ap.add_argument("--nodes", type=int, required=True, help="N")
    args = ap.parse_args(argv)
    try:
        one, many = read(args.one), read(args.many)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    f1, fn = figures(one), figures(many)
    out = {"one_node": f1, f"{args.nodes}_nodes": fn, "rows_per_node": many["nodes"]}
    if f1["instances_per_wall_hour"] and fn["instances_per_wall_hour"]:
        speedup = fn["instances_per_wall_hour"] / f1["instances_per_wall_hour"]
        out["speedup"] = round(speedup, 2)
        out["efficiency"] = round(speedup / args.nodes, 2)
    if f1["cpu_s_per_instance"] and fn["cpu_s_per_instance"]:
        out["cpu_cost_ratio"] = round(fn["cpu_s_per_instance"] / f1["cpu_s_per_instance"], 2)
    if one["ids"] != many["ids"]:
        out["warning"] = (f"the runs cover different instances ({len(one['ids'] - many['ids'])} only in the 1-node "
                          f"run, {len(many['ids'] - one['ids'])} only in the {args.nodes}-node run)")
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
