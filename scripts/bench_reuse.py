"""Environment reuse, cold against warm, any language (MEnvAgent, arXiv 2601.22859, reports 39%
reuse success and 46% less time).

    .venv/bin/python scripts/bench_reuse.py                       # the demo input, under work/bench-reuse
    .venv/bin/python scripts/bench_reuse.py -i tasks.jsonl -m /srv/mirrors --ids-file ids.txt -w work/br

Cold: every instance built from scratch (empty pool, reuse off). Warm: a fresh work directory
whose pool is the cold run's (so each instance finds the *other* instances of its repository,
never itself: the driver excludes it), reuse on. Prints, per run: verified count, median seconds
per instance (total and setup) and, warm, the reuse success rate (rows made from a candidate /
rows that had candidates; a reused environment is accepted only when it verifies, so "reused" is
"reuse accepted by F2P"), then the same per language and per repository, and the seconds of
every instance cold and warm. Images of both runs are removed at the end unless `--keep-images`.

Resumable: a rerun with the same `-w` skips the instances each run already finished (the
driver's resume) and reports over all selected rows, stored and new; `--fresh` starts over.
The warm pool is copied from the cold one only when the warm run has none yet. `--only warm`
re-runs warm alone (e.g. after a fix to reuse: `--only warm --redo-warm` empties warm first).
The table is also written to WORKDIR/bench_reuse.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.pipeline_config import load_config  # noqa: E402
from pipeline.demo import make_demo  # noqa: E402
from pipeline.driver import run_mint  # noqa: E402


def summary(name: str, rows) -> dict:
    """Counts and medians of one run's rows (seconds)."""
    tried = [r for r in rows if "reuse" in r.timings]
    reused = [r for r in rows if r.reused_from and r.reused_from != r.instance_id and r.outcome == "verified"]
    med = (lambda xs: round(statistics.median(xs), 1) if xs else None)
    out = {"run": name, "instances": len(rows), "verified": sum(r.outcome == "verified" for r in rows),
           "median_total_s": med([r.timings["total"] for r in rows if "total" in r.timings]),
           "median_setup_s": med([r.timings["setup"] for r in rows if "setup" in r.timings]),
           "had_candidates": len(tried), "reused": len(reused),
           "reuse_success": f"{len(reused)}/{len(tried)} = {len(reused) / len(tried):.0%}" if tried else "n/a"}
    return out


def _remove_images(run: str) -> None:
    """Remove the images labelled `swemint.run=<run>` (in use or gone: skipped)."""
    from envpool.docker_sandbox import docker_client

    client = docker_client()
    for img in client.images.list(filters={"label": f"swemint.run={run}"}):
        try:
            client.images.remove(img.id, force=True)
        except Exception:  # noqa: BLE001 - in use / gone
            pass


def _stored(cfg) -> list:
    """The stored rows of `cfg.workdir` among the selected instances."""
    from pipeline.instances import load_and_select
    from pipeline.store import ResultStore

    want = {i.instance_id for i in load_and_select(cfg.instances, ids_file=cfg.ids_file).instances}
    return [r for r in ResultStore(cfg.workdir, read_only=True).results() if r.instance_id in want]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-i", "--instances", type=Path)
    ap.add_argument("-m", "--mirrors", type=Path)
    ap.add_argument("--ids-file", type=Path)
    ap.add_argument("-w", "--workdir", type=Path, default=Path("work/bench-reuse"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep-images", action="store_true")
    ap.add_argument("--fresh", action="store_true", help="remove WORKDIR first (default: resume)")
    ap.add_argument("--only", choices=("cold", "warm", "both"), default="both")
    ap.add_argument("--redo-warm", action="store_true", help="remove WORKDIR/warm first (its images too)")
    ap.add_argument("--set", dest="sets", action="append", default=[],
                    help="config override for both runs, e.g. mint.verify.after_runs=1 (repeatable)")
    a = ap.parse_args(argv)
    if a.fresh and a.workdir.exists():
        shutil.rmtree(a.workdir)
    if a.redo_warm:
        _remove_images("bench-reuse-warm")
        shutil.rmtree(a.workdir / "warm", ignore_errors=True)
    if a.instances is None:
        demo = make_demo(Path(tempfile.mkdtemp(prefix="swemint-bench-reuse-")))
        a.instances, a.mirrors = demo.instances, demo.mirrors
    common = dict(instances=a.instances, mirrors=[a.mirrors] if a.mirrors else [], ids_file=a.ids_file,
                  workers=a.workers, use_ray=False)
    cold = load_config(None, [*a.sets, "mint.reuse.enabled=false", "mint.run_id=bench-reuse-cold"],
                       workdir=a.workdir / "cold", **common)
    warm = load_config(None, [*a.sets, "mint.run_id=bench-reuse-warm"], workdir=a.workdir / "warm", **common)
    rows = {}
    try:
        if a.only == "warm":  # report the stored cold rows
            rows["cold"] = _stored(cold)
        else:
            rep = run_mint(cold)
            rows["cold"] = rep.skipped + rep.results
        if a.only in ("warm", "both"):
            warm.workdir.mkdir(parents=True, exist_ok=True)
            if cold.pool_path.exists() and not warm.pool_path.exists():
                shutil.copy(cold.pool_path, warm.pool_path)
            rep = run_mint(warm)
            rows["warm"] = rep.skipped + rep.results
    finally:
        if not a.keep_images:
            for run in ("bench-reuse-cold", "bench-reuse-warm"):
                _remove_images(run)
    summaries = {name: summary(name, rs) for name, rs in rows.items()}
    if "cold" in summaries and "warm" in summaries and summaries["cold"]["median_total_s"]:
        c, w = summaries["cold"]["median_total_s"], summaries["warm"]["median_total_s"]
        summaries["warm"]["median_time_reduction"] = f"{(c - w) / c:.0%}"
        tc = sum(r.timings.get("total", 0) for r in rows["cold"])
        tw = sum(r.timings.get("total", 0) for r in rows["warm"])
        summaries["warm"]["total_time_reduction"] = f"{(tc - tw) / tc:.0%}" if tc else "n/a"
    (a.workdir / "bench_reuse.json").write_text(json.dumps(summaries, indent=1))
    cols = ["run", "instances", "verified", "median_total_s", "median_setup_s", "had_candidates", "reused",
            "reuse_success"]
    print(" | ".join(cols))
    for s in summaries.values():
        print(" | ".join(str(s[c]) for c in cols))
    if "warm" in summaries:
        print("median time reduction:", summaries["warm"].get("median_time_reduction"),
              "total time reduction:", summaries["warm"].get("total_time_reduction"))
    groups = breakdown(rows)
    summaries["by_group"] = groups
    (a.workdir / "bench_reuse.json").write_text(json.dumps(summaries, indent=1))
    print("\ngroup | cold verified | warm verified | reused (accepted by F2P) / had candidates | "
          "median s cold -> warm")
    for g in groups:
        print(f"{g['group']} | {g['cold_verified']} | {g['warm_verified']} | {g['reused']}/{g['had_candidates']} | "
              f"{g['median_cold_s']} -> {g['median_warm_s']}")
    cold_by = {r.instance_id: r for r in rows.get("cold", [])}
    print("\ninstance | cold s (outcome) | warm s (outcome) | reused from (kind)")
    for r in rows.get("warm", []):
        c = cold_by.get(r.instance_id)
        print(f"{r.instance_id} | {c.timings.get('total') if c else '-'} ({c.outcome if c else '-'}) | "
              f"{r.timings.get('total')} ({r.outcome}) | {r.reused_from or '-'} ({r.reuse_kind or '-'})")
    return 0


def breakdown(rows: dict) -> list[dict]:
    """Per language, then per repository: verified cold and warm, reuse accepted (a reused
    environment that verified) over rows that had candidates, median seconds cold and warm."""
    med = (lambda xs: round(statistics.median(xs), 1) if xs else None)
    cold, warm = rows.get("cold", []), rows.get("warm", [])
    keys: dict[str, list[str]] = {}
    for r in cold + warm:
        for key in (f"language:{r.language or 'python'}", f"repo:{r.repo}"):
            keys.setdefault(key, [])
            if r.instance_id not in keys[key]:
                keys[key].append(r.instance_id)
    out = []
    for key in sorted(keys, key=lambda k: (not k.startswith("language:"), k)):
        ids = set(keys[key])
        c = [r for r in cold if r.instance_id in ids]
        w = [r for r in warm if r.instance_id in ids]
        out.append({"group": key, "instances": len(ids), "cold_verified": sum(r.outcome == "verified" for r in c),
                    "warm_verified": sum(r.outcome == "verified" for r in w),
                    "had_candidates": sum("reuse" in r.timings for r in w),
                    "reused": sum(bool(r.reused_from) and r.reused_from != r.instance_id and r.outcome == "verified"
                                  for r in w),
                    "median_cold_s": med([r.timings["total"] for r in c if "total" in r.timings]),
                    "median_warm_s": med([r.timings["total"] for r in w if "total" in r.timings])})
    return out


if __name__ == "__main__":
    raise SystemExit(main())
