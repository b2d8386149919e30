#!/usr/bin/env python
"""Throughput benchmark: mint the same instances with 1 and 2 build slots, on Ray and with the
in-process runner (`--no-ray`), each run in a fresh work directory; print wall times and ratios.

    .venv/bin/python scripts/bench_throughput.py                  # the demo input (4 instances)
    .venv/bin/python scripts/bench_throughput.py --instances ../shared/data/swebench_dev.jsonl \\
        --mirrors /work/.mirror --ids-file ids.txt --runs ray:1,ray:2,local:1

Runs (`--runs`, default `ray:1,ray:2,local:1,local:2`) go one after another, in that order, as
`python -m pipeline.cli mint` subprocesses. Each has a fresh WORKDIR (store, pool, dataset) and its
own image repository, so nothing is skipped or reused from an earlier run; the toolchain base
images (swemint/python:*) are shared and must exist (a warm-up run builds them; --no-warmup skips
it). Package downloads are not cached across runs unless the build layer mounts a host cache.
Times are seconds: `wall` = the subprocess from start to exit (interpreter start, Ray start and
shutdown included), `driver` = `run_mint`'s own wall time from WORKDIR/driver.log.
Ratios: slots = wall(1 slot) / wall(2 slots) (> 1: the second slot helps); Ray overhead =
wall(Ray) / wall(in-process) at the same slots (> 1: Ray costs). The runs' images are removed at
the end unless --keep. Prints a JSON line with everything last.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))


def parse_runs(spec: str) -> list[tuple[str, int]]:
    """`"ray:1,local:2"` -> [("ray", 1), ("local", 2)]; ValueError on anything else."""
    out = []
    for part in spec.split(","):
        mode, _, slots = part.strip().partition(":")
        if mode not in ("ray", "local") or not slots.isdigit() or int(slots) < 1:
            raise ValueError(f"bad run {part!r}: expected ray:N or local:N")
        out.append((mode, int(slots)))
    return out


def mint(args: argparse.Namespace, workdir: Path, mode: str, slots: int, image_repo: str, log: Path) -> dict:
    """One timed `swemint mint` run; returns {wall_s, driver_s, outcomes, median_s}. Raises
    CalledProcessError when the command fails."""
    cmd = [sys.executable, "-m", "pipeline.cli", "mint", "-i", str(args.instances), "-w", str(workdir),
           "--workers", str(slots), "--ray" if mode == "ray" else "--no-ray",
           "--set", f"mint.image_repository={image_repo}", "--set", "repos.allow_clone=false",
           "--set", f"ray.num_cpus={args.ray_cpus}"]
    for m in args.mirrors:
        cmd += ["-m", str(m)]
    if args.ids_file:
        cmd += ["--ids-file", str(args.ids_file)]
    if args.limit:
        cmd += ["--limit", str(args.limit)]
    t0 = time.monotonic()
    with log.open("w") as fh:
        subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, check=True, cwd=REPO_ROOT)
    wall = time.monotonic() - t0
    from pipeline.store import ResultStore

    results = ResultStore(workdir, read_only=True).results()
    totals = sorted(r.timings.get("total", 0.0) for r in results)
    m = re.search(r"finished in ([\d.]+)s", (workdir / "driver.log").read_text())
    return {"mode": mode, "slots": slots, "wall_s": round(wall, 1), "driver_s": float(m.group(1)) if m else None,
            "outcomes": dict(Counter(r.outcome for r in results)),
            "median_instance_s": totals[len(totals) // 2] if totals else None}


def remove_images(workdirs: list[Path]) -> int:
    """Remove the images labelled with the run ids of `workdirs`; returns how many."""
    from envpool.docker_sandbox import docker_client
    from pipeline.pipeline_config import run_id_for

    client, n = docker_client(), 0
    for wd in workdirs:
        for img in client.images.list(all=True, filters={"label": f"swemint.run={run_id_for(wd)}"}):
            try:
                client.images.remove(img.id, force=True)
                n += 1
            except Exception:  # noqa: BLE001
                pass
    return n


def ratio(a: dict | None, b: dict | None) -> float | None:
    """wall(a) / wall(b), or None when either run is missing."""
    return round(a["wall_s"] / b["wall_s"], 2) if a and b and b["wall_s"] else None


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table, the ratios and a JSON line."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--instances", type=Path)
    p.add_argument("--mirrors", type=Path, action="append", default=[])
    p.add_argument("--ids-file", type=Path)
    p.add_argument("--limit", type=int)
    p.add_argument("--runs", default="ray:1,ray:2,local:1,local:2")
    p.add_argument("--ray-cpus", type=int, default=2, help="CPUs of the local Ray (ray.num_cpus)")
    p.add_argument("--root", type=Path)
    p.add_argument("--no-warmup", action="store_true")
    p.add_argument("--keep", action="store_true", help="keep the runs' images")
    args = p.parse_args(argv)
    runs = parse_runs(args.runs)
    root = Path(args.root or tempfile.mkdtemp(prefix="swemint-throughput-")).absolute()
    root.mkdir(parents=True, exist_ok=True)
    if args.instances is None:
        from pipeline.demo import make_demo

        mirrors, args.instances = make_demo(root / "input")
        args.mirrors = [mirrors]
    token = uuid.uuid4().hex[:8]
    workdirs, rows = [], {}
    try:
        if not args.no_warmup:
            wd = root / "warmup"
            workdirs.append(wd)
            w = mint(args, wd, "local", 1, f"swemint/bench-tp-{token}-warmup", root / "warmup.log")
            print(f"warm-up (not counted): {w['wall_s']}s {w['outcomes']}", flush=True)
        for mode, slots in runs:
            wd = root / f"{mode}-{slots}"
            workdirs.append(wd)
            r = mint(args, wd, mode, slots, f"swemint/bench-tp-{token}-{mode}-{slots}", root / f"{mode}-{slots}.log")
            rows[(mode, slots)] = r
            print(f"{mode:5} slots={slots}: wall {r['wall_s']:7.1f}s  driver {r['driver_s']}s  "
                  f"median/instance {r['median_instance_s']}s  {r['outcomes']}", flush=True)
    finally:
        removed = 0 if args.keep else remove_images(workdirs)
    ratios = {"slots_ray": ratio(rows.get(("ray", 1)), rows.get(("ray", 2))),
              "slots_local": ratio(rows.get(("local", 1)), rows.get(("local", 2))),
              "ray_overhead_1": ratio(rows.get(("ray", 1)), rows.get(("local", 1))),
              "ray_overhead_2": ratio(rows.get(("ray", 2)), rows.get(("local", 2)))}
    print(f"1 slot / 2 slots (wall): Ray {ratios['slots_ray']}, in-process {ratios['slots_local']}")
    print(f"Ray / in-process (wall): 1 slot {ratios['ray_overhead_1']}, 2 slots {ratios['ray_overhead_2']}")
    print(json.dumps({"root": str(root), "runs": list(rows.values()), "ratios": ratios, "images_removed": removed}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
