#!/usr/bin/env python
"""Streaming benchmark: `swemint run` streaming against crawl-then-mint on the same real input,
with 1 and 2 build slots.

    .venv/bin/python scripts/bench_flow.py --root /work/scratch/flow/bench --repos go-chi/chi pallets/click --last 10
    .venv/bin/python scripts/bench_flow.py --root DIR --slots 2 --modes stream batch --ray

The input is a local source over bare mirrors (`MIRRORS/owner+name/repo`): the last `--last`
first-parent commits of each repository, merge and squash units only. Each (mode, slots) pair
runs `swemint run` as a subprocess in a fresh work directory `ROOT/<mode>-<slots>` (cold: its
own pool, package cache and environment images under `swemint/bench-flow-<token>`, removed at
the end unless --keep); `batch` is `flow.streaming=false` (every unit mined and filtered before
the first plan). Reported per run, from `WORKDIR/report.json`: seconds to the first verified row,
wall seconds, accepted and verified units; then the ratios streaming / batch (first verified
row, wall) per slot count and the wall-time speed-up of 2 slots over 1. Seconds throughout.
With `--synthetic N` the input is instead N pull requests of a repository the script writes,
served by the fake GitHub (`tests/fakes/github_server.py`) with GitHub's pacing
(`api.min_interval`, default 0.25 s between requests, as configs/nightly.yaml), and the build
stage is a stand-in that takes `--build-s` seconds (`tests.pipeline.flow_support.fake_mint`): it
measures the chain's scheduling alone, without Docker or host noise; in-process unless --ray.
A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))


def config(args: argparse.Namespace, slots: int, streaming: bool, image_repo: str) -> dict:
    """The run's config: the local source, `slots` build slots, streaming or not."""
    local = [{"repo": r, "git_dir": str(args.mirrors / r.replace("/", "+") / "repo"), "single_commits": False,
              "max_commits": args.last} for r in args.repos]
    return {"workers": slots, "use_ray": args.ray, "mirrors": [str(args.mirrors)], "repos": {"allow_clone": False},
            "flow": {"streaming": streaming}, "mint": {"image_repository": image_repo},
            "sources": {"github": None, "local": local}}


def synthetic_config(args: argparse.Namespace, slots: int, streaming: bool, base_url: str) -> dict:
    """The `--synthetic` run's config: the fake GitHub's repository, the stand-in build stage."""
    return {"workers": slots, "use_ray": args.ray, "mirrors": [str(args.root / "input" / "mirrors")],
            "mint_function": "tests.pipeline.flow_support:fake_mint", "mint": {"memory": {"enabled": False}},
            "flow": {"streaming": streaming},
            "sources": {"github": {"repos": ["bench/synthetic"], "api": {
                "base_url": base_url, "min_interval": args.min_interval}}, "local": []}}


def run_one(args: argparse.Namespace, mode: str, slots: int, image_repo: str, base_url: str | None = None) -> dict:
    """One `swemint run`; its numbers from report.json."""
    work = args.root / f"{mode}-{slots}"
    work.mkdir(parents=True, exist_ok=True)
    cfg = work / "bench.yaml"
    body = synthetic_config(args, slots, mode == "stream", base_url) if base_url else \
        config(args, slots, mode == "stream", image_repo)
    cfg.write_text(yaml.safe_dump(body))
    env = {**os.environ, "GITHUB_TOKEN": "bench-token", "SWEMINT_FAKE_MINT_S": str(args.build_s)}
    with (work / "bench.log").open("a") as log:
        rc = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", "-c", str(cfg), "-w", str(work),
                             *sum((["--set", s] for s in args.set or []), [])],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env).returncode
    run = json.loads((work / "report.json").read_text())["run"]
    return {"mode": mode, "slots": slots, "exit": rc, "first_verified_s": run["first_verified_s"],
            "wall_s": run["wall_s"], "accepted": run["units"]["accepted"], "verified": run["minted"]["verified"],
            "minted": run["minted"]["total"], "cpu_s": run["cost"]["cpu_s"], "workdir": str(work)}


def ratios(rows: list[dict]) -> dict:
    """stream / batch per slot count (first verified row, wall) and 2-slot over 1-slot speed-ups."""
    by = {(r["mode"], r["slots"]): r for r in rows}
    out: dict = {}
    for slots in sorted({r["slots"] for r in rows}):
        s, b = by.get(("stream", slots)), by.get(("batch", slots))
        if s and b and s["first_verified_s"] and b["first_verified_s"]:
            out[f"first_verified stream/batch ({slots} slot)"] = round(s["first_verified_s"] / b["first_verified_s"], 3)
        if s and b:
            out[f"wall stream/batch ({slots} slot)"] = round(s["wall_s"] / b["wall_s"], 3)
    for mode in ("stream", "batch"):
        one, two = by.get((mode, 1)), by.get((mode, 2))
        if one and two:
            out[f"wall 1 slot / 2 slots ({mode})"] = round(one["wall_s"] / two["wall_s"], 3)
    return out


def cleanup(workdirs: list[str]) -> int:
    """Remove the images and containers of the runs (label `swemint.run` of each WORKDIR)."""
    from bench_resume import cleanup as remove_labelled  # scripts/bench_resume.py

    from pipeline.pipeline_config import run_id_for

    return remove_labelled([run_id_for(Path(w)) for w in workdirs])


def main(argv: list[str] | None = None) -> int:
    """Run every (mode, slots) pair, print the table and the ratios (JSON last)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--repos", nargs="+", default=["go-chi/chi", "pallets/click"])
    ap.add_argument("--last", type=int, default=10, help="first-parent commits per repository")
    ap.add_argument("--slots", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--modes", nargs="+", default=["stream", "batch"], choices=["stream", "batch"])
    ap.add_argument("--ray", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--set", action="append", help="extra `swemint run --set` overrides")
    ap.add_argument("--keep", action="store_true", help="keep the runs' images")
    ap.add_argument("--synthetic", type=int, metavar="N", help="N fake-GitHub PRs and a stand-in build stage")
    ap.add_argument("--build-s", type=float, default=1.0, help="--synthetic: seconds per build")
    ap.add_argument("--min-interval", type=float, default=0.25, help="--synthetic: seconds between API requests")
    args = ap.parse_args(argv)
    args.root = args.root.absolute()
    if args.synthetic:
        return synthetic(args)
    image_repo = f"swemint/bench-flow-{uuid.uuid4().hex[:8]}"
    rows = []
    try:
        for slots in args.slots:
            for mode in args.modes:
                rows.append(run_one(args, mode, slots, image_repo))
                print(json.dumps(rows[-1]), flush=True)
    finally:
        if not args.keep:
            cleanup([r["workdir"] for r in rows] or [str(args.root / f"{m}-{s}") for m in args.modes
                                                     for s in args.slots])
    return show(rows)


def show(rows: list[dict]) -> int:
    """Print the table, the ratios and the JSON of `rows`."""
    cols = ["mode", "slots", "first_verified_s", "wall_s", "accepted", "minted", "verified", "cpu_s"]
    print("".join(f"{c:>18}" for c in cols))
    for r in rows:
        print("".join(f"{r[c] if r[c] is not None else '-':>18}" for c in cols))
    rat = ratios(rows)
    for k, v in rat.items():
        print(f"{k}: {v}")
    print(json.dumps({"runs": rows, "ratios": rat}))
    return 0


def synthetic(args: argparse.Namespace) -> int:
    """The `--synthetic` benchmark (see the module docstring)."""
    from tests.fakes.github_server import FakeGitHub
    from tests.pipeline.flow_support import bare_mirror, make_repo, world_for

    units = make_repo(args.root / "input" / "src", args.synthetic)
    bare_mirror(args.root / "input" / "src", args.root / "input" / "mirrors", "bench/synthetic")
    rows = []
    with FakeGitHub(world_for("bench/synthetic", units, language="Python")) as srv:
        for slots in args.slots:
            for mode in args.modes:
                rows.append(run_one(args, mode, slots, "", base_url=srv.base_url))
                print(json.dumps(rows[-1]), flush=True)
    return show(rows)


if __name__ == "__main__":
    sys.exit(main())
