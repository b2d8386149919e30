"""Environments in tiers against today's (issue 24): unique image bytes per verified instance and
minting time per instance, paired, one run of each on the same host at the same time.

    .venv/bin/python scripts/bench_tiers.py --ids-file data/bench_tiers_ids.txt            # run + report
    .venv/bin/python scripts/bench_tiers.py --ids-file data/bench_tiers_ids.txt --report   # report only
    .venv/bin/python scripts/bench_tiers.py --ids-file ... --cleanup                         # remove the images

Two arms, started together, each `swemint mint` of the same instances from its own worktree and
virtualenv into its own work directory under `--root`: `today` (`--today`, a worktree at the
code before the tiers, e.g. /work/base) and `tiers` (`--tiers`, default this checkout). Same
configuration for both (`--workers`, in-process: `--no-ray`), each with its own run id
(`bench-tiers-<arm>`) and image repository (`swemint-bench/tiers-<arm>`), so the arms never
touch each other's containers or images.

Measured per instance:
- minting time: the row's `timings.total` (wall seconds) and the CPU-seconds of the instance's
  containers (every container labelled with its run and instance id, sampled from the cgroups
  every second by `pipeline.cpu`; the driver process's own CPU is reported per arm);
- bytes: each layer of the arm's verified images above the toolchain images (a layer any image
  not labelled with one of the two runs holds, e.g. `swemint/python:*`, is a toolchain layer)
  at docker's own size for it (`layerdb/sha256/<chain id>/size`, what `docker system df`
  counts), split evenly between the verified images that share it. Per arm: the distinct bytes
  of those layers (the arm's "unique bytes") over the verified instances; docker's own
  per-image accounting (`docker system df -v`: size minus shared size) is given next to it.

Resumable: a rerun resumes both runs (the driver skips finished instances) and keeps the CPU
samples already taken (`<root>/<arm>/bench_cpu.json`). The report is written to
`<root>/bench_tiers.json`; images stay until `--cleanup` (the bytes are read from them).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ARMS = ("today", "tiers")
LAYERDB = Path("/var/lib/docker/image/overlay2/layerdb/sha256")


def run_id(arm: str) -> str:
    return f"bench-tiers-{arm}"


def repository(arm: str) -> str:
    return f"swemint-bench/tiers-{arm}"


# -- CPU of the arms' containers -------------------------------------------------------------------

class Sampler(threading.Thread):
    """Container CPU per instance for every arm: the containers labelled `swemint.run=<arm's run>`
    (found once a second), their cgroup counters read each second; each container keeps its
    largest reading. Saved to `<workdir>/bench_cpu.json` every 30 s and at `stop()`."""

    def __init__(self, workdirs: dict[str, Path]):
        super().__init__(daemon=True, name="bench-tiers-cpu")
        self.workdirs = workdirs
        self.seen: dict[str, dict[str, dict]] = {}
        for arm, wd in workdirs.items():
            p = wd / "bench_cpu.json"
            self.seen[arm] = json.loads(p.read_text()).get("containers", {}) if p.exists() else {}
        self._halt = threading.Event()

    def run(self) -> None:
        from envpool.docker_sandbox import docker_client
        from pipeline.cpu import container_cpu_seconds

        client = docker_client()
        last_save = time.monotonic()
        while not self._halt.wait(1.0):
            for arm in self.workdirs:
                try:
                    found = client.containers.list(filters={"label": f"swemint.run={run_id(arm)}"})
                except Exception:  # noqa: BLE001 - engine busy: next second
                    continue
                for c in found:
                    rec = self.seen[arm].setdefault(c.id, {"instance": c.labels.get("swemint.instance", ""),
                                                           "cpu_s": 0.0})
                    secs = container_cpu_seconds(c.id)
                    if secs is not None:
                        rec["cpu_s"] = max(rec["cpu_s"], round(secs, 3))
            if time.monotonic() - last_save > 30:
                self.save()
                last_save = time.monotonic()

    def save(self) -> None:
        for arm, wd in self.workdirs.items():
            wd.mkdir(parents=True, exist_ok=True)
            p = wd / "bench_cpu.json"
            old = json.loads(p.read_text()) if p.exists() else {}
            (wd / "bench_cpu.json.tmp").write_text(json.dumps({**old, "containers": self.seen[arm]}))
            os.replace(wd / "bench_cpu.json.tmp", p)

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=10)
        self.save()


def per_instance_cpu(workdir: Path) -> dict[str, float]:
    p = workdir / "bench_cpu.json"
    out: dict[str, float] = {}
    for rec in (json.loads(p.read_text()).get("containers", {}) if p.exists() else {}).values():
        out[rec["instance"]] = round(out.get(rec["instance"], 0.0) + rec["cpu_s"], 3)
    return out


def add_driver_cpu(workdir: Path, seconds: float) -> None:
    p = workdir / "bench_cpu.json"
    old = json.loads(p.read_text()) if p.exists() else {}
    old["driver_cpu_s"] = round(old.get("driver_cpu_s", 0.0) + seconds, 3)
    p.write_text(json.dumps(old))


# -- running the arms ------------------------------------------------------------------------------

def mint_command(checkout: Path, a, arm: str, workdir: Path) -> list[str]:
    return [str(checkout / ".venv" / "bin" / "swemint"), "mint", "-i", str(a.instances), "-m", str(a.mirrors),
            "-w", str(workdir), "--ids-file", str(a.ids_file), "--workers", str(a.workers), "--no-ray",
            "--set", f"mint.run_id={run_id(arm)}", "--set", f"mint.image_repository={repository(arm)}",
            *[x for s in a.sets for x in ("--set", s)]]


def run_arms(a) -> None:
    workdirs = {arm: a.root / arm for arm in ARMS}
    checkouts = {"today": a.today, "tiers": a.tiers}
    for wd in workdirs.values():
        wd.mkdir(parents=True, exist_ok=True)
    sampler = Sampler(workdirs)
    sampler.start()
    procs = {}
    try:
        for arm in ARMS:
            log = open(a.root / f"{arm}.log", "a")
            log.write(f"\n# bench_tiers {arm} started {time.strftime('%Y-%m-%dT%H:%M:%S')}\n")
            log.flush()
            procs[arm] = subprocess.Popen(mint_command(checkouts[arm], a, arm, workdirs[arm]), cwd=checkouts[arm],
                                          stdout=log, stderr=subprocess.STDOUT)
            (a.root / f"{arm}.pid").write_text(str(procs[arm].pid))
        left = dict(procs)
        while left:
            pid, status, usage = os.wait4(-1, 0)
            arm = next((k for k, p in left.items() if p.pid == pid), None)
            if arm is None:
                continue
            left.pop(arm).returncode = os.waitstatus_to_exitcode(status)
            add_driver_cpu(workdirs[arm], usage.ru_utime + usage.ru_stime)
            print(f"{arm}: swemint mint exited {procs[arm].returncode}", flush=True)
    finally:
        for p in procs.values():
            if p.returncode is None:
                p.terminate()
        sampler.stop()


# -- bytes -----------------------------------------------------------------------------------------

def chain_ids(diff_ids: list[str]) -> list[str]:
    """Docker's chain ids of a layer stack (`sha256:` diff ids, bottom first)."""
    out: list[str] = []
    for d in diff_ids:
        out.append(d if not out else "sha256:" + hashlib.sha256(f"{out[-1]} {d}".encode()).hexdigest())
    return out


def layer_size(chain: str) -> int | None:
    try:
        return int((LAYERDB / chain.removeprefix("sha256:") / "size").read_text().strip())
    except (OSError, ValueError):
        return None


def byte_report(client, verified: dict[str, dict[str, str]]) -> dict:
    """`verified[arm][instance] = image`: per arm the bytes of the verified images' layers above
    the toolchain layers (distinct, and attributed per instance) and docker's df accounting."""
    runs = {run_id(arm) for arm in ARMS}
    base: set[str] = set()
    for img in client.images.list(all=True):
        if (img.labels or {}).get("swemint.run") not in runs:  # toolchains, other work on the engine
            base.update(chain_ids(img.attrs["RootFS"].get("Layers") or []))
    df = {i["Id"]: i for i in (client.df().get("Images") or [])}
    out: dict = {}
    for arm, images in verified.items():
        layers: dict[str, list[str]] = {}
        holders: dict[str, int] = {}
        df_unique = 0
        for iid, image in images.items():
            try:
                img = client.images.get(image)
            except Exception:  # noqa: BLE001 - removed: not counted
                continue
            own = [c for c in chain_ids(img.attrs["RootFS"].get("Layers") or []) if c not in base]
            layers[iid] = own
            for c in own:
                holders[c] = holders.get(c, 0) + 1
            d = df.get(img.id)
            if d and d.get("SharedSize", -1) >= 0:
                df_unique += d["Size"] - d["SharedSize"]
        sizes = {c: layer_size(c) or 0 for c in holders}
        per = {iid: round(sum(sizes[c] / holders[c] for c in own)) for iid, own in layers.items()}
        out[arm] = {"images": len(layers), "distinct_bytes": sum(sizes.values()), "per_instance": per,
                    "docker_df_unique_bytes": df_unique,
                    "shared_layers": sum(1 for c in holders if holders[c] > 1)}
    return out


# -- the report ------------------------------------------------------------------------------------

def report(a) -> dict:
    from envpool.docker_sandbox import docker_client
    from pipeline.instances import load_and_select
    from pipeline.store import ResultStore

    ids = [i.instance_id for i in load_and_select(a.instances, ids_file=a.ids_file).instances]
    rows = {arm: {r.instance_id: r for r in ResultStore(a.root / arm, read_only=True).results() if r.instance_id in ids}
            for arm in ARMS if (a.root / arm).exists()}
    cpu = {arm: per_instance_cpu(a.root / arm) for arm in rows}
    verified = {arm: {i: r.image for i, r in rs.items() if r.outcome == "verified" and r.image}
                for arm, rs in rows.items()}
    by = byte_report(docker_client(), verified)
    table = []
    for iid in ids:
        line = {"instance_id": iid}
        for arm, rs in rows.items():
            r = rs.get(iid)
            line[arm] = None if r is None else {
                "outcome": r.outcome, "language": r.language, "wall_s": r.timings.get("total"),
                "container_cpu_s": cpu[arm].get(iid), "bytes": by[arm]["per_instance"].get(iid),
                "reused_from": r.reused_from, "reuse_kind": r.reuse_kind,
                "dependency_key": getattr(r, "dependency_key", None)}
        table.append(line)
    summary = {}
    for arm, rs in rows.items():
        ver = [r for r in rs.values() if r.outcome == "verified"]
        walls = [r.timings["total"] for r in rs.values() if "total" in r.timings]
        cpus = [cpu[arm].get(i, 0.0) for i in rs]
        drv = json.loads((a.root / arm / "bench_cpu.json").read_text()).get("driver_cpu_s") \
            if (a.root / arm / "bench_cpu.json").exists() else None
        n = len(ver)
        summary[arm] = {
            "instances": len(rs), "verified": n,
            "unique_bytes_per_verified": round(by[arm]["distinct_bytes"] / n) if n else None,
            "docker_df_unique_bytes_per_verified": round(by[arm]["docker_df_unique_bytes"] / n) if n else None,
            "shared_layers": by[arm]["shared_layers"],
            "wall_s_per_instance": round(sum(walls) / len(walls), 1) if walls else None,
            "wall_s_median": round(statistics.median(walls), 1) if walls else None,
            "container_cpu_s_per_instance": round(sum(cpus) / len(cpus), 1) if cpus else None,
            "driver_cpu_s": drv,
            "reused": sum(bool(r.reused_from) and r.outcome == "verified" for r in rs.values()),
            "on_a_dependency_layer": sum(bool(getattr(r, "dependency_key", None)) for r in ver)}
    both = [x for x in table if all(x.get(arm) and x[arm]["outcome"] == "verified" for arm in ARMS)]
    if both:
        summary["paired_verified_both"] = {
            "instances": len(both),
            **{f"{arm}_{k}": round(sum((x[arm][k] or 0) for x in both) / len(both), 1)
               for arm in ARMS for k in ("wall_s", "container_cpu_s", "bytes")}}
    out = {"summary": summary, "instances": table}
    (a.root / "bench_tiers.json").write_text(json.dumps(out, indent=1))
    return out


def show(out: dict) -> None:
    mb = (lambda b: "-" if b is None else f"{b / 1e6:.0f}")
    print("arm | instances | verified | unique MB/verified | docker-df unique MB/verified | wall s/inst | "
          "container CPU s/inst | reused (same repo) | on a dependency layer")
    for arm in ARMS:
        s = out["summary"].get(arm)
        if s:
            print(f"{arm} | {s['instances']} | {s['verified']} | {mb(s['unique_bytes_per_verified'])} | "
                  f"{mb(s['docker_df_unique_bytes_per_verified'])} | {s['wall_s_per_instance']} | "
                  f"{s['container_cpu_s_per_instance']} | {s['reused']} | {s['on_a_dependency_layer']}")
    if "paired_verified_both" in out["summary"]:
        print("paired (verified in both):", json.dumps(out["summary"]["paired_verified_both"]))
    print("\ninstance | today: outcome, wall s, CPU s, MB | tiers: outcome, wall s, CPU s, MB")
    for x in out["instances"]:
        cells = []
        for arm in ARMS:
            r = x.get(arm)
            cells.append("-" if r is None else f"{r['outcome']}, {r['wall_s']}, {r['container_cpu_s']}, "
                                               f"{mb(r['bytes'])}" + (f" (reused {r['reused_from']})"
                                                                      if r['reused_from'] else ""))
        print(f"{x['instance_id']} | " + " | ".join(cells))


def cleanup() -> None:
    from envpool.docker_sandbox import docker_client

    client = docker_client()
    for arm in ARMS:
        for img in client.images.list(filters={"label": f"swemint.run={run_id(arm)}"}):
            try:
                client.images.remove(img.id, force=True)
            except Exception:  # noqa: BLE001 - in use, or a child goes first
                pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ids-file", type=Path, required=True)
    ap.add_argument("-i", "--instances", type=Path, default=Path("/work/shared/data/swebench_dev.jsonl"))
    ap.add_argument("-m", "--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--root", type=Path, default=Path("/work/runs/i24-tiers-bench"))
    ap.add_argument("--today", type=Path, default=Path("/work/base"), help="checkout of the code before the tiers")
    ap.add_argument("--tiers", type=Path, default=ROOT, help="checkout with the tiers")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--set", dest="sets", action="append", default=[], help="config override for both arms")
    ap.add_argument("--report", action="store_true", help="report the stored rows only")
    ap.add_argument("--cleanup", action="store_true", help="remove both arms' images")
    a = ap.parse_args(argv)
    a.root.mkdir(parents=True, exist_ok=True)
    if a.cleanup:
        cleanup()
        return 0
    if not a.report:
        run_arms(a)
    show(report(a))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
