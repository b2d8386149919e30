#!/usr/bin/env python
"""Resume benchmark: `kill -9` the `swemint mint` driver half-way, rerun it, check nothing was
lost or doubled, and compare the dataset with an uninterrupted run.

    .venv/bin/python scripts/bench_resume.py                       # the demo input, --no-ray
    .venv/bin/python scripts/bench_resume.py --ray --workers 2
    .venv/bin/python scripts/bench_resume.py --via run                # the whole chain: `swemint run -i`
    .venv/bin/python scripts/bench_resume.py --instances dev.jsonl --mirrors /work/.mirror --ids-file ids.txt

Steps (each `swemint mint` is a subprocess, in its own work directory under --root):
1. `reference/`: an uninterrupted run (skipped with --no-reference).
2. `resumed/`: the same command, killed with SIGKILL once `kill_at` of the instances have a DONE
   marker; Ray processes the driver started that outlive it are killed by pid; then the same
   command again, to the end.
3. Measures: instances lost (selected, no dataset row), instances with two dataset rows, with
   two pool rows, with two Docker images (label `swemint.run` of the run + `swemint.instance`),
   dependency keys whose rows name two dependency images (the rerun built a layer anew instead
   of reusing the one the killed run made under its key: `agents.tiers`),
   containers of the run still present, instances started more than once that were not in
   flight at the kill, and whether the dataset equals the reference (rows sorted by
   instance_id, ignoring timings, log paths, image ids, the image repository and WORKDIR).

Each run commits its images under its own repository (`swemint/bench-resume-<token>`), never the
shared `swemint/env`, and they are removed at the end unless --keep. Exit code 0 when every count
is 0 and the content matches (or was not compared), 1 otherwise. Timings: seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

IGNORED_COLUMNS = ("timings", "total_seconds", "log_path", "image_id", "dependency_image_id")
"""Dataset columns that legitimately differ between two runs of the same input: each run commits
its own environment and dependency images (under its own repository, tags carrying its run), and
an image id hashes the image's config, creation time included. The dependency layer's
content-addressed `dependency_key` is compared; within the resumed run one image per key is
checked apart (`two_dependency_images`)."""

IMAGE_COLUMNS = ("image", "image_name", "image_local")
"""Columns naming an environment image: compared by tag, without the run's repository and hash."""

RUN_DIR = re.compile(r"(/tmp/swemint/[A-Za-z0-9_.]+)-[0-9a-f]{8}(?=/)")
"""Per-run scratch folders inside containers (the test command's cache dir and JUnit path)."""


def descendants(pid: int) -> list[int]:
    """Pids of every live descendant of `pid` (from /proc; Linux only)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def alive(pid: int) -> bool:
    """True when `pid` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def mint_command(args: argparse.Namespace, workdir: Path, image_repo: str) -> list[str]:
    """The `swemint mint` (or, with `--via run`, `swemint run`: the whole chain, the instance
    file as its source) command line of one run (the same for the killed run and the rerun)."""
    cmd = [sys.executable, "-m", "pipeline.cli", args.via, "-i", str(args.instances), "-w", str(workdir),
           "--workers", str(args.workers), "--ray" if args.ray else "--no-ray",
           "--set", f"mint.image_repository={image_repo}", "--set", "repos.allow_clone=false"]
    for m in args.mirrors:
        cmd += ["-m", str(m)]
    if args.ids_file:
        if args.via == "run":
            raise ValueError("--ids-file is for --via mint (swemint run takes the whole instance file)")
        cmd += ["--ids-file", str(args.ids_file)]
    for s in args.set or []:
        cmd += ["--set", s]
    return cmd


def run_to_end(cmd: list[str], log: Path) -> float:
    """Run `cmd` to completion with output appended to `log`; returns seconds. Raises
    CalledProcessError on a non-zero exit (1 = every row infra_error, 2 = configuration)."""
    t0 = time.monotonic()
    with log.open("a") as fh:
        subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, check=True, cwd=REPO_ROOT)
    return time.monotonic() - t0


def done_count(workdir: Path) -> int:
    """Instances with a DONE marker."""
    return sum(1 for _ in (workdir / "instances").glob("*/DONE"))


def in_flight(workdir: Path) -> list[str]:
    """Instance folders with a RUNNING marker and no DONE."""
    return sorted(p.parent.name for p in (workdir / "instances").glob("*/RUNNING") if not (p.parent / "DONE").exists())


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def has_container(run_id: str, folders: list[str]) -> bool:
    """True when this engine has a container of run `run_id` (label `swemint.run`) for an
    instance whose folder is in `folders` (label `swemint.instance`)."""
    from envpool.docker_sandbox import docker_client
    from envpool.naming import folder_name

    containers = docker_client().containers.list(all=True, filters={"label": f"swemint.run={run_id}"})
    labels = [(c.labels or {}).get("swemint.instance") for c in containers]
    return any(folder_name(iid) in folders for iid in labels if iid)


def run_and_kill(cmd: list[str], log: Path, workdir: Path, kill_after_done: int, limit_s: float,
                 delay_s: float = 2.0, survivor_wait_s: float = 15.0, run_id: str | None = None) -> dict:
    """Start `cmd`; once `kill_after_done` DONE markers exist and the next instance is in flight,
    wait `delay_s` seconds (into its build) -- with `run_id`, then also until that instance has a
    container of the run (so the kill leaves one for the rerun to sweep, however slow the host is)
    -- and SIGKILL the driver, give what it started `survivor_wait_s` seconds to exit and SIGKILL
    by pid what is still alive. Returns {seconds, done_at_kill, in_flight_at_kill,
    survivors_killed, survivors (process names)}. Raises RuntimeError when the run ends before
    the kill or takes longer than `limit_s`."""
    t0 = time.monotonic()
    with log.open("a") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO_ROOT)
    try:
        armed = None
        while (armed is None or time.monotonic() < armed + delay_s
               or (run_id is not None and not has_container(run_id, in_flight(workdir)))):
            if armed is None and done_count(workdir) >= kill_after_done and in_flight(workdir):
                armed = time.monotonic()
            if proc.poll() is not None:
                raise RuntimeError(f"the run ended (exit {proc.returncode}) before {kill_after_done} instances "
                                   f"were done; see {log}")
            if time.monotonic() - t0 > limit_s:
                raise RuntimeError(f"no {kill_after_done} DONE markers after {limit_s:.0f}s; see {log}")
            time.sleep(0.1)
        tree = descendants(proc.pid)
        flying = in_flight(workdir)
        done = done_count(workdir)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    except BaseException:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        raise
    names = {p: _comm(p) for p in tree}
    deadline = time.monotonic() + survivor_wait_s  # fate-sharing children notice the death
    while time.monotonic() < deadline and any(alive(p) for p in tree):
        time.sleep(0.5)
    survivors = [p for p in tree if alive(p)]
    for p in survivors:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return {"seconds": round(time.monotonic() - t0, 1), "done_at_kill": done, "in_flight_at_kill": flying,
            "survivors_killed": len(survivors), "survivors": sorted(names[p] for p in survivors)}


def normalised_rows(workdir: Path) -> list[dict]:
    """Rows of `workdir/dataset/all.parquet` comparable across runs, sorted by instance_id."""
    import pandas as pd

    df = pd.read_parquet(workdir / "dataset" / "all.parquet").drop(columns=list(IGNORED_COLUMNS), errors="ignore")
    rows = []
    for row in df.to_dict("records"):
        out = {}
        for k, v in row.items():
            if hasattr(v, "tolist"):
                v = v.tolist()
            if isinstance(v, float) and math.isnan(v):
                v = None
            if isinstance(v, str):
                v = RUN_DIR.sub(r"\1-*", v.replace(str(workdir), "<WORKDIR>"))
            out[k] = v
        for col in IMAGE_COLUMNS:
            if out.get(col):
                # tag only (each run has its own repository), without the spec+run hash: the tag of
                # an environment carries the run (work directory) that owns it
                out[col] = re.sub(r"-[0-9a-f]{12}$", "", out[col].rpartition(":")[2])
        rows.append(out)
    return sorted(rows, key=lambda r: r["instance_id"])


def docker_state(run_id: str) -> tuple[Counter, int]:
    """(images per instance, containers) carrying `swemint.run=<run_id>` on this engine."""
    from envpool.docker_sandbox import docker_client

    client = docker_client()
    label = {"label": f"swemint.run={run_id}"}
    images = Counter((img.labels or {}).get("swemint.instance", "?")
                     for img in client.images.list(all=True, filters=label))
    return images, len(client.containers.list(all=True, filters=label))


def cleanup(run_ids: list[str]) -> int:
    """Remove the containers and images labelled with `run_ids`; returns how many images went."""
    from envpool.docker_sandbox import docker_client

    client, n = docker_client(), 0
    for rid in run_ids:
        label = {"label": f"swemint.run={rid}"}
        for c in client.containers.list(all=True, filters=label):
            c.remove(force=True)
        for img in client.images.list(all=True, filters=label):
            try:
                client.images.remove(img.id, force=True)
                n += 1
            except Exception:  # noqa: BLE001 - a child of another removed image
                pass
    return n


def measure(workdir: Path, selected: list[str], in_flight: list[str], reference: Path | None) -> dict:
    """The resume checks of a finished, resumed WORKDIR (see module docstring)."""
    import duckdb
    import pandas as pd

    from pipeline.pipeline_config import run_id_for
    from pipeline.store import ResultStore

    df = pd.read_parquet(workdir / "dataset" / "all.parquet")
    rows = Counter(df["instance_id"])
    with duckdb.connect(str(workdir / "pool.duckdb"), read_only=True) as con:
        pool = Counter(r[0] for r in con.execute("SELECT instance_id FROM environments").fetchall())
    images, containers = docker_state(run_id_for(workdir))
    deps = Counter() if "dependency_key" not in df else Counter(
        k for k, _ in df[["dependency_key", "dependency_image_id"]].dropna().drop_duplicates().itertuples(index=False))
    attempts = ResultStore(workdir).attempts()
    out = {
        "selected": len(selected),
        "lost": sorted(set(selected) - set(rows)),
        "two_dataset_rows": sorted(i for i, n in rows.items() if n > 1),
        "two_pool_rows": sorted(i for i, n in pool.items() if n > 1),
        "two_pool_images": sorted(i for i, n in images.items() if n > 1),
        "two_dependency_images": sorted(k for k, n in deps.items() if n > 1),
        "containers_left": containers,
        "rebuilt": sorted(i for i, n in attempts.items() if n > 1),
        "rebuilt_not_in_flight": sorted(i for i, n in attempts.items() if n > 1 and i not in in_flight),
        "content_equal": None,
    }
    if reference is not None:
        a, b = normalised_rows(reference), normalised_rows(workdir)
        out["content_equal"] = a == b
        if a != b:
            diffs = [{"instance_id": x["instance_id"], **{k: [x[k], y.get(k)] for k in x if x[k] != y.get(k)}}
                     for x, y in zip(a, b, strict=False) if x != y]
            out["content_diff"] = diffs[:5] or "different instance sets"
    return out


def selected_ids(args: argparse.Namespace) -> list[str]:
    """Instance ids the runs select (the same filters as `swemint mint`)."""
    from pipeline.instances import load_and_select

    return [i.instance_id for i in load_and_select(args.instances, ids_file=args.ids_file).instances]


def run_bench(args: argparse.Namespace) -> dict:
    """Do the whole benchmark; returns the report (see `measure`, plus timings in seconds)."""
    root = Path(args.root or tempfile.mkdtemp(prefix="swemint-resume-")).absolute()
    root.mkdir(parents=True, exist_ok=True)
    if args.instances is None:
        from pipeline.demo import make_demo

        mirrors, args.instances = make_demo(root / "input")
        args.mirrors = [mirrors]
    token = uuid.uuid4().hex[:8]
    selected = selected_ids(args)
    kill_after = max(1, math.ceil(args.kill_at * len(selected)))
    if kill_after >= len(selected):
        raise ValueError(f"{len(selected)} instance(s): too few to kill a run half-way")
    from pipeline.pipeline_config import run_id_for

    ref_dir = None if args.no_reference else Path(args.reference or root / "reference")
    resumed = root / "resumed"
    run_ids = [run_id_for(resumed)]
    report: dict = {"root": str(root), "via": args.via, "mode": "ray" if args.ray else "in-process", "workers": args.workers,
                    "kill_after_done": kill_after}
    try:
        if ref_dir is not None and args.reference is None:
            run_ids.append(run_id_for(ref_dir))
            report["reference_s"] = round(run_to_end(mint_command(args, ref_dir, f"swemint/bench-resume-ref-{token}"),
                                                     root / "reference.log"), 1)
        cmd = mint_command(args, resumed, f"swemint/bench-resume-{token}")
        report["killed"] = run_and_kill(cmd, root / "resumed.log", resumed, kill_after, args.limit_s, args.kill_delay,
                                        run_id=run_id_for(resumed))
        report["rerun_s"] = round(run_to_end(cmd, root / "resumed.log"), 1)
        report.update(measure(resumed, selected, report["killed"]["in_flight_at_kill"], ref_dir))
        report["sweep"] = [line.split(" INFO ", 1)[-1] for line in
                           (resumed / "driver.log").read_text().splitlines() if "resume:" in line]
    finally:
        if not args.keep:
            report["images_removed"] = cleanup(run_ids)
    report["ok"] = (not report.get("lost") and not report.get("two_dataset_rows") and not report.get("two_pool_rows")
                    and not report.get("two_pool_images") and not report.get("two_dependency_images")
                    and report.get("containers_left") == 0
                    and not report.get("rebuilt_not_in_flight") and report.get("content_equal") is not False)
    return report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (see --help)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--instances", type=Path, help="SWE-bench instance file (default: the demo input)")
    p.add_argument("--mirrors", type=Path, action="append", default=[], help="mirror root (repeatable)")
    p.add_argument("--ids-file", type=Path)
    p.add_argument("--via", choices=("mint", "run"), default="mint",
                   help="the command killed and rerun: `swemint mint` or the whole chain, `swemint run`")
    p.add_argument("--ray", action=argparse.BooleanOptionalAction, default=False, help="default: --no-ray")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--kill-at", type=float, default=0.5, help="fraction of instances DONE at the kill")
    p.add_argument("--kill-delay", type=float, default=2.0,
                   help="seconds into the next instance's build before the kill")
    p.add_argument("--root", type=Path, help="where the work directories go (default: a new temp dir)")
    p.add_argument("--reference", type=Path, help="an existing uninterrupted WORKDIR to compare with")
    p.add_argument("--no-reference", action="store_true", help="skip the uninterrupted run and the comparison")
    p.add_argument("--set", action="append", help="extra `swemint mint --set` overrides")
    p.add_argument("--limit-s", type=float, default=3600, help="give up waiting for the kill point after this")
    p.add_argument("--keep", action="store_true", help="keep the runs' images")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run and print the report; exit code 0 when everything checks out."""
    args = parse_args(argv)
    report = run_bench(args)
    k = report["killed"]
    print(f"killed the driver after {k['done_at_kill']}/{report['selected']} done "
          f"(in flight: {', '.join(k['in_flight_at_kill']) or '-'}; processes alive 15 s later, killed: "
          f"{k['survivors_killed']} {k['survivors'] or ''})")
    for line in report.get("sweep", []):
        print(f"rerun: {line}")
    print(f"instances lost:                  {len(report['lost'])} {report['lost'] or ''}")
    print(f"instances with two dataset rows: {len(report['two_dataset_rows'])} {report['two_dataset_rows'] or ''}")
    print(f"instances with two pool images:  {len(report['two_pool_images'])} {report['two_pool_images'] or ''} "
          f"(pool rows: {len(report['two_pool_rows'])})")
    print(f"dependency keys with two images: {len(report['two_dependency_images'])} "
          f"{report['two_dependency_images'] or ''}")
    print(f"containers left by the runs:     {report['containers_left']}")
    print(f"rebuilt (in flight at the kill): {report['rebuilt'] or '-'}; rebuilt otherwise: "
          f"{report['rebuilt_not_in_flight'] or 0}")
    eq = report["content_equal"]
    print(f"content equals an uninterrupted run: {'not compared' if eq is None else eq}")
    print(json.dumps(report, default=str))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
