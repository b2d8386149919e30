#!/usr/bin/env python
"""Yield on raw units of real repositories: `swemint run` with a local source over bare mirrors,
then the per-repository table (units mined, accepted, minted, verified, yield, time per verified).

    .venv/bin/python scripts/yield_local.py --workdir /work/scratch/yield --last 300 --workers 2
    .venv/bin/python scripts/yield_local.py --workdir /work/scratch/y1 --repos pallets/click --last 20
    .venv/bin/python scripts/yield_local.py --workdir /work/scratch/yield --table-only   # report again

Each repository `owner/name` is read from `MIRRORS/owner+name/repo`; the source takes the last
`--last` first-parent commits of HEAD and keeps merge (`Merge pull request #N`) and squash
(`... (#N)`) units only (`single_commits: false`), those that change tests and code (the
`local` source of `pipeline.sources.gitlocal`). The config is written to `WORKDIR/yield.yaml`;
`swemint run` runs as a subprocess with its output in `WORKDIR/yield.log`, so a killed
measurement resumes where it stopped when run again (nothing verified is redone).

Columns (from the durable state, so they cover every run in WORKDIR): `mined` units the source
produced (PR-like units examined, rejects included), `accepted` after the split and filter,
`minted` with a mint row, then each outcome, `yield` = verified / accepted, `s/verified` = the
repository's minting seconds (every row's `timings.total`, failures included) per verified row,
`median s` of verified rows. Writes `WORKDIR/yield.json` and `WORKDIR/yield.md`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

REPOS = ("pallets/click", "encode/httpx", "spf13/cobra", "go-chi/chi", "clap-rs/clap", "dtolnay/anyhow",
         "chalk/chalk", "colinhacks/zod", "square/javapoet", "libuv/libuv", "gabime/spdlog", "sindresorhus/ky")
"""The 12 repositories of the yield measurement (none is in swebench_dev.jsonl)."""
OUTCOMES = ("verified", "no_fail_to_pass", "patch_failed", "env_failed", "tests_not_run", "timeout", "infra_error")


def write_config(args: argparse.Namespace) -> Path:
    """`WORKDIR/yield.yaml`: the local source over the repositories' mirrors."""
    local = []
    for repo in args.repos:
        git_dir = args.mirrors / repo.replace("/", "+") / "repo"
        if not git_dir.is_dir():
            raise SystemExit(f"no mirror for {repo} at {git_dir}")
        local.append({"repo": repo, "git_dir": str(git_dir), "single_commits": False, "max_commits": args.last})
    cfg = {"workers": args.workers, "use_ray": args.ray, "mirrors": [str(args.mirrors)],
           "repos": {"allow_clone": False}, "sources": {"github": None, "local": local}}
    args.workdir.mkdir(parents=True, exist_ok=True)
    path = args.workdir / "yield.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def run(args: argparse.Namespace, config: Path) -> int:
    """`swemint run -c CONFIG -w WORKDIR [--set ...]`, output appended to WORKDIR/yield.log."""
    cmd = [sys.executable, "-m", "pipeline.cli", "run", "-c", str(config), "-w", str(args.workdir)]
    for s in args.set or []:
        cmd += ["--set", s]
    with (args.workdir / "yield.log").open("a") as log:
        return subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT).returncode


def table(workdir: Path, repos: list[str]) -> list[dict]:
    """One row per repository (see the module docstring)."""
    import duckdb

    from pipeline.store import ResultStore

    with duckdb.connect(str(workdir / "crawl" / "state.duckdb"), read_only=True) as db:
        units = db.execute("SELECT repo, status, reason FROM outcomes WHERE kind <> 'repo'").fetchall()
    results = ResultStore(workdir).results()
    by_repo: dict[str, list] = defaultdict(list)
    for r in results:
        by_repo[r.repo].append(r)
    out = []
    for repo in repos:
        mine = [u for u in units if u[0] == repo]
        rows = by_repo.get(repo, [])
        outcomes = Counter(r.outcome for r in rows)
        accepted = sum(1 for u in mine if u[1] == "accepted")
        verified = outcomes["verified"]
        secs = [r.timings.get("total", 0.0) for r in rows]
        ver_secs = [r.timings["total"] for r in rows if r.outcome == "verified" and "total" in r.timings]
        out.append({"repo": repo, "mined": len(mine), "accepted": accepted, "minted": len(rows),
                    **{o: outcomes[o] for o in OUTCOMES},
                    "rejected": dict(Counter(u[2] for u in mine if u[1] == "rejected")),
                    "yield": round(verified / accepted, 3) if accepted else None,
                    "s_per_verified": round(sum(secs) / verified, 1) if verified else None,
                    "median_s_verified": round(statistics.median(ver_secs), 1) if ver_secs else None})
    tot = {k: sum(r[k] for r in out) for k in ("mined", "accepted", "minted", *OUTCOMES)}
    all_secs = sum(r.timings.get("total", 0.0) for r in results if r.repo in repos)
    out.append({"repo": "TOTAL", **tot, "rejected": {},
                "yield": round(tot["verified"] / tot["accepted"], 3) if tot["accepted"] else None,
                "s_per_verified": round(all_secs / tot["verified"], 1) if tot["verified"] else None,
                "median_s_verified": None})
    return out


def markdown(rows: list[dict]) -> str:
    """The table as Markdown."""
    cols = ["repo", "mined", "accepted", "minted", *OUTCOMES, "yield", "s_per_verified", "median_s_verified"]
    head = "| " + " | ".join(c.replace("_", " ") for c in cols) + " |\n|" + "---|" * len(cols) + "\n"
    return head + "".join("| " + " | ".join("-" if r.get(c) is None else str(r.get(c)) for c in cols) + " |\n"
                          for r in rows)


def main(argv: list[str] | None = None) -> int:
    """Run (unless --table-only) and print the table; exit code of `swemint run` (0 = it ran)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"), help="root of owner+name/repo mirrors")
    ap.add_argument("--repos", nargs="+", default=list(REPOS))
    ap.add_argument("--last", type=int, default=300, help="first-parent commits of HEAD to mine per repository")
    ap.add_argument("--workers", type=int, default=2, help="build slots")
    ap.add_argument("--ray", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--set", action="append", help="extra `swemint run --set` overrides")
    ap.add_argument("--table-only", action="store_true", help="only print the table of WORKDIR")
    args = ap.parse_args(argv)
    args.workdir = args.workdir.absolute()
    rc = 0
    if not args.table_only:
        rc = run(args, write_config(args))
    rows = table(args.workdir, args.repos)
    (args.workdir / "yield.json").write_text(json.dumps(rows, indent=1) + "\n")
    text = markdown(rows)
    (args.workdir / "yield.md").write_text(text)
    print(text)
    if rc:
        print(f"swemint run exited {rc}; see {args.workdir / 'yield.log'}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
