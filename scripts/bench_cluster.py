#!/usr/bin/env python
"""Cluster benchmark on one host: the same instance list on one node and on N nodes (each with
its own Docker engine, a registry between them; `scripts/localcluster.py`), then on N nodes
with faults: a worker node killed mid-run and brought back, the driver killed and resubmitted.

    .venv/bin/python scripts/bench_cluster.py --instances ../shared/data/swebench_dev.jsonl \\
        --mirrors /work/.mirror --ids-file ids.txt --nodes 3 --out /work/runs/bench-cluster
    ... --runs single,cluster,faults        # which runs (default: all three)

Every run starts from fresh engines (nothing pulled or built before; the one-node run has no
registry, as one machine needs none, so its figure is the baseline a cluster is compared with), submits
`python -m pipeline.jobs.run` with `ray job submit`, and is measured with the same meter:

- **CPU**: every process of the cluster (the Ray nodes' process trees with the job's driver and
  workers, the engines' dockerd/containerd and their shims with everything under them -- the
  build containers' processes too --, the registry), sampled from /proc every 2 s
  (`utime+stime+cutime+cstime`, each process's last value). The build containers' CPU the job
  measures from their cgroups (`report.json` cost.cpu_parts.containers, the last job's only) is
  shown beside it, not added: it is already inside the meter. So the figure is paired: the same
  meter, the same instances, whatever else the host runs.
- **Per node** (`report.json` nodes, `WORKDIR/images/events.jsonl`, each engine's events):
  instances, images built / pulled / published (toolchains, dependency layers and environments
  apart), toolchain bootstraps, and the repositories of the environments it published (with a
  registry: where each repository's verified instances ran, the locality hint at work).
- **Registry**: bytes stored and bytes served (its log).
- **Faults**: rows lost (selected, no dataset row), rows doubled, pool rows doubled, registry
  tags per instance > 1, containers of the run left on any engine, unpooled images of finished
  instances left on any engine, and whether the killed node was swept when it came back.

Throughput: instances (and verified instances) per CPU-hour of the whole cluster. On a 2-core
host N nodes share the same 2 cores, so this shows the cost of the machinery (a registry,
N engines, N raylets), not scaling; see docs/cluster.md for measuring scaling on a real cluster.
Writes OUT/<run>/ (work directory, job logs) and OUT/bench.json; prints one table.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.localcluster import LocalCluster, group_pids, log, stop_on_signals  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def _proc_cpu(pid: int) -> float | None:
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(x) for x in f[11:15]) / TICK
    except (OSError, IndexError, ValueError):
        return None


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                ppid = int(Path(f"/proc/{e}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            out.setdefault(ppid, []).append(int(e))
    return out


class CpuMeter:
    """CPU seconds of every process of `cluster` between `start()` and `stop()` (see the module
    docstring); processes seen at start count from their value then."""

    def __init__(self, cluster: LocalCluster, every: float = 2.0):
        self.c, self.every = cluster, every
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self._stop = threading.Event()
        self._t: threading.Thread | None = None

    def _pids(self) -> set[int]:
        kids = _children()
        roots = set(self.c.ray_pids.values()) | set(self.c.engine_pids.values())
        if self.c.reg_pid:
            roots.add(self.c.reg_pid)
        for pid in list(self.c.ray_pids.values()):
            roots |= set(group_pids(pid))
        marks = [str(e.exec_root) for e in self.c.engines] + [str(e.data_root) for e in self.c.engines]
        for e in os.listdir("/proc"):  # containerd and shims of the engines (shims are reparented)
            if e.isdigit():
                try:
                    cmd = Path(f"/proc/{e}/cmdline").read_bytes().decode(errors="replace")
                except OSError:
                    continue
                if any(m in cmd for m in marks):
                    roots.add(int(e))
        found, todo = set(), list(roots)
        while todo:
            p = todo.pop()
            if p not in found:
                found.add(p)
                todo += kids.get(p, [])
        return found

    def sample(self, initial: bool = False) -> None:
        """Read every process's CPU once."""
        for pid in self._pids():
            v = _proc_cpu(pid)
            if v is None:
                continue
            if pid not in self.first:
                self.first[pid] = v if initial else 0.0
            self.last[pid] = v

    def start(self) -> None:
        """Baseline now; sample every `every` seconds until `stop`."""
        self.sample(initial=True)

        def loop() -> None:
            while not self._stop.wait(self.every):
                self.sample()

        self._t = threading.Thread(target=loop, daemon=True)
        self._t.start()

    def stop(self) -> float:
        """Seconds of CPU since `start`."""
        self.sample()
        self._stop.set()
        if self._t:
            self._t.join()
        return round(sum(self.last[p] - self.first[p] for p in self.last), 1)


# -- job control ---------------------------------------------------------------------------------

def _api(cluster: LocalCluster, path: str) -> dict:
    req = urllib.request.Request(f"{cluster.address}{path}",
                                 headers={"Authorization": f"Bearer {cluster.token.read_text().strip()}"})
    with urllib.request.urlopen(req, timeout=20) as r:
        return json.load(r)


def submit_async(cluster: LocalCluster, workdir: Path, extra: list[str], sid: str) -> None:
    """`ray job submit --no-wait` (retrying while the job agent is not up)."""
    cmd = cluster.submit_command(workdir, "configs/cluster.yaml", extra, submission_id=sid)
    cmd.insert(3, "--no-wait")
    for attempt in range(10):
        r = subprocess.run(cmd, env=cluster.env(0), cwd=ROOT, capture_output=True, text=True)
        if r.returncode == 0:
            return
        if "No available agent" not in r.stdout + r.stderr or attempt == 9:
            raise RuntimeError(f"submit failed: {(r.stdout + r.stderr)[-2000:]}")
        time.sleep(5)


def job(cluster: LocalCluster, sid: str) -> dict:
    """The job's details (status, driver_info) from the job API."""
    return _api(cluster, f"/api/jobs/{sid}")


def wait_job(cluster: LocalCluster, sid: str, timeout: float = 14400) -> str:
    """Wait for a terminal status; returns it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = job(cluster, sid).get("status", "")
        if st in ("SUCCEEDED", "FAILED", "STOPPED"):
            return st
        time.sleep(5)
    return "TIMEOUT"


def save_logs(cluster: LocalCluster, sid: str, path: Path) -> None:
    """The job's output into `path`."""
    try:
        path.write_text(_api(cluster, f"/api/jobs/{sid}/logs").get("logs", ""))
    except OSError as e:
        path.write_text(f"(no logs: {e})")


def done_ids(workdir: Path) -> set[str]:
    """Instances with a DONE marker."""
    return {p.parent.name for p in (workdir / "instances").glob("*/DONE")}


def running_on(cluster: LocalCluster, i: int, run_id: str) -> set[str]:
    """Instances with a running container of the run on node `i`'s engine."""
    import docker

    try:
        client = docker.DockerClient(base_url=cluster.engines[i].host, timeout=30)
        out = {c.labels.get("swemint.instance", "") for c in client.containers.list(filters={
            "label": f"swemint.run={run_id}"})}
        client.close()
        return out - {""}
    except Exception:  # noqa: BLE001 - the engine is gone
        return set()


# -- measuring a finished run --------------------------------------------------------------------

def leftovers(cluster: LocalCluster, run_id: str, pooled_ids: set[str]) -> dict[str, dict[str, int]]:
    """Per node: containers of the run, and images of the run that no pool row names (dependency
    layers, shared by every instance with their key, are not leftovers)."""
    import docker

    out = {}
    for eng in cluster.engines:
        try:
            client = docker.DockerClient(base_url=eng.host, timeout=60)
            cont = len(client.containers.list(all=True, filters={"label": f"swemint.run={run_id}"}))
            imgs = [i for i in client.images.list(all=True, filters={"label": f"swemint.run={run_id}"})
                    if i.id not in pooled_ids and (i.labels or {}).get("swemint.tier") != "dependencies"]
            out[eng.name] = {"containers": cont, "unpooled_images": len(imgs)}
            client.close()
        except Exception as e:  # noqa: BLE001
            out[eng.name] = {"error": str(e)[:200]}
    return out


def measure(cluster: LocalCluster, workdir: Path, ids: list[str], cpu_s: float, wall_s: float) -> dict:
    """Every figure of one run (see the module docstring)."""
    import duckdb
    import pandas as pd

    from envpool.image_registry import read_events
    from pipeline.pipeline_config import run_id_for

    report = json.loads((workdir / "report.json").read_text()) if (workdir / "report.json").exists() else {}
    run = report.get("run") or report
    ds = pd.read_parquet(workdir / "dataset" / "all.parquet") if (workdir / "dataset" / "all.parquet").exists() \
        else pd.DataFrame(columns=["instance_id", "outcome"])
    counts = Counter(ds.instance_id)
    with duckdb.connect(str(workdir / "pool.duckdb"), read_only=True) as con:
        pool = con.execute("SELECT instance_id, image_id, location FROM environments").fetchall()
    pool_counts = Counter(r[0] for r in pool)
    tags = Counter(loc.split("@")[0] + "#" + iid for iid, _, loc in pool if "@" in loc)
    events = read_events(workdir / "images")
    containers_cpu = float(((run.get("cost") or {}).get("cpu_parts") or {}).get("containers") or 0.0)
    total_cpu = cpu_s  # the meter walks the engines' shims: the containers' processes are in it
    finished = int(len(ds))
    verified = int((ds.outcome == "verified").sum()) if len(ds) else 0
    nodes = {}
    for i, eng in enumerate(cluster.engines):
        mine = [e for e in events if e.get("node") == eng.name]
        tool = [e for e in mine if e.get("kind") in ("toolchain", "base")]
        deps = [e for e in mine if e.get("kind") == "dependencies"]
        envs = [e for e in mine if e.get("kind") == "environment"]
        try:
            ev = cluster.engine_events(i)
        except Exception:  # noqa: BLE001
            ev = {}
        nodes[eng.name] = {
            "instances": sum((run.get("nodes") or {}).get(eng.name, {}).values()),
            "outcomes": (run.get("nodes") or {}).get(eng.name, {}),
            "toolchains_built": sum(e["action"] == "built" for e in tool),
            "toolchains_pulled": sum(e["action"] == "pulled" for e in tool),
            "toolchains_published": sum(e["action"] == "published" for e in tool),
            "dependencies_built": sum(e["action"] == "built" for e in deps),
            "dependencies_pulled": sum(e["action"] == "pulled" for e in deps),
            "environments_published": sum(e["action"] == "published" for e in envs),
            "environments_pulled": sum(e["action"] == "pulled" for e in envs),
            "repositories": dict(Counter(str(e.get("instance_id", "")).rsplit("-", 1)[0] for e in envs
                                         if e["action"] == "published")),
            "engine_events": {k: v for k, v in ev.items() if k in ("image.pull", "image.push", "image.import",
                                                                   "container.commit")}}
    return {
        "instances": len(ids), "finished": finished, "verified": verified,
        "outcomes": dict(Counter(ds.outcome)), "wall_s": round(wall_s, 1),
        "cpu_s": {"cluster_processes": cpu_s, "containers_in_it": round(containers_cpu, 1), "total": round(total_cpu, 1)},
        "instances_per_cpu_hour": round(finished / (total_cpu / 3600), 2) if total_cpu else None,
        "verified_per_cpu_hour": round(verified / (total_cpu / 3600), 2) if total_cpu else None,
        "nodes": nodes, "registry": cluster.registry_bytes() if cluster.with_registry else None,
        "rows_lost": sorted(set(ids) - set(counts)), "rows_doubled": sorted(i for i, n in counts.items() if n > 1),
        "pool_doubled": sorted(i for i, n in pool_counts.items() if n > 1),
        "registry_tags_doubled": sorted(k for k, n in tags.items() if n > 1),
        "leftovers": leftovers(cluster, run_id_for(workdir), {r[1] for r in pool}),
        "evictions": 0,
    }


# -- the runs ------------------------------------------------------------------------------------

def one_run(name: str, nodes: int, slots: int, args, ids: list[str], faults: bool = False) -> dict:
    """Start a cluster, run the job (with faults when asked), measure, stop the cluster."""
    out = args.out / name
    out.mkdir(parents=True, exist_ok=True)
    workdir = out / "work"
    cluster = LocalCluster(nodes, slots=slots, cpus=args.cpus, registry=nodes > 1)  # one node: no registry
    cluster.shared_dir = workdir / "images"
    extra = ["--instances", str(args.instances), "--set", f"ids_file={args.ids_file}",
             "--set", f"workers={nodes * slots}", *[a for m in args.mirrors for a in ("--mirrors", str(m))],
             "--set", "mint.limits.min_free_disk_bytes=0"]
    result: dict = {"name": name, "nodes": nodes, "slots_per_node": slots}
    try:
        cluster.up()
        meter = CpuMeter(cluster)
        meter.start()
        t0 = time.monotonic()
        if not faults:
            code = cluster.submit(workdir, extra=extra, log_path=out / "job.log", timeout=4 * 3600)
            result["job_exit"] = code
        else:
            result["faults"] = run_faults(cluster, workdir, extra, out, ids)
        wall = time.monotonic() - t0
        cpu = meter.stop()
        result |= measure(cluster, workdir, ids, cpu, wall)
    finally:
        cluster.down(keep=args.keep)
    (out / "result.json").write_text(json.dumps(result, indent=1))
    return result


def run_faults(cluster: LocalCluster, workdir: Path, extra: list[str], out: Path, ids: list[str]) -> dict:
    """Kill a busy worker node after the first row, bring it back 20 s later, kill -9 the driver
    at half the rows and submit the same job again."""
    from pipeline.pipeline_config import run_id_for

    run_id = run_id_for(workdir)
    f: dict = {}
    submit_async(cluster, workdir, extra, "bench-a")
    deadline = time.monotonic() + 4 * 3600
    victim = None
    while time.monotonic() < deadline and victim is None:
        st = job(cluster, "bench-a").get("status")
        if st in ("SUCCEEDED", "FAILED", "STOPPED"):
            break
        if done_ids(workdir):
            for i in range(1, cluster.n):
                busy = running_on(cluster, i, run_id)
                if busy:
                    victim = i
                    f["node_killed"] = cluster.engines[i].name
                    f["in_flight_on_it"] = sorted(busy)
                    f["done_before_node_kill"] = len(done_ids(workdir))
                    cluster.kill_node(i)
                    break
        time.sleep(3)
    if victim is not None:
        time.sleep(20)
        cluster.restart_node(victim)
        f["node_back_after_s"] = 20
    half = max(1, len(ids) // 2)
    while time.monotonic() < deadline:
        st = job(cluster, "bench-a").get("status")
        if st in ("SUCCEEDED", "FAILED", "STOPPED"):
            break
        if len(done_ids(workdir)) >= half:
            info = job(cluster, "bench-a").get("driver_info") or {}
            pid = int(info.get("pid") or 0)
            if pid:
                running = {p.parent.name for p in (workdir / "instances").glob("*/RUNNING")} - done_ids(workdir)
                f["driver_killed_pid"] = pid
                f["done_before_driver_kill"] = sorted(done_ids(workdir))
                f["in_flight_at_driver_kill"] = sorted(running)
                os.kill(pid, signal.SIGKILL)
            break
        time.sleep(3)
    f["first_job"] = wait_job(cluster, "bench-a")
    save_logs(cluster, "bench-a", out / "job-a.log")
    if f.get("driver_killed_pid"):
        code = cluster.submit(workdir, extra=extra, log_path=out / "job-b.log", timeout=4 * 3600)
        f["second_job_exit"] = code
        starts = Counter()
        attempts = workdir / "attempts.jsonl"
        for line in attempts.read_text().splitlines() if attempts.exists() else []:
            try:
                starts[json.loads(line)["instance_id"]] += 1
            except (ValueError, KeyError):
                continue
        f["started_twice"] = sorted(i for i, n in starts.items() if n > 1)
        f["started_twice_not_in_flight"] = sorted(set(f["started_twice"]) - set(f["in_flight_at_driver_kill"]))
    log_text = "\n".join(p.read_text(errors="replace") for p in (out / "job-a.log", out / "job-b.log") if p.exists())
    f["node_lost_seen"] = "lost: Ray runs its builds" in log_text
    f["node_join_sweep_seen"] = "joined: sweeping" in log_text
    f["swept_lines"] = [ln.split(" INFO ")[-1] for ln in log_text.splitlines() if "swept " in ln][:10]
    return f


def table(results: list[dict]) -> str:
    """One line per run."""
    lines = [f"{'run':8} {'nodes':>5} {'done':>5} {'verif':>5} {'wall_s':>7} {'cpu_s':>8} {'inst/CPUh':>9} "
             f"{'lost':>4} {'dbl':>4}  per node (instances; toolchains built/pulled; envs published/pulled)"]
    for r in results:
        per = "; ".join(f"{n}: {v['instances']}, tc {v['toolchains_built']}/{v['toolchains_pulled']}, "
                        f"env {v['environments_published']}/{v['environments_pulled']}" for n, v in r["nodes"].items())
        lines.append(f"{r['name']:8} {r['nodes'] if isinstance(r['nodes'], int) else len(r['nodes']):>5} "
                     f"{r['finished']:>5} {r['verified']:>5} {r['wall_s']:>7} {r['cpu_s']['total']:>8} "
                     f"{r['instances_per_cpu_hour']!s:>9} {len(r['rows_lost']):>4} {len(r['rows_doubled']):>4}  {per}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instances", type=Path, required=True)
    ap.add_argument("--mirrors", type=Path, action="append", required=True)
    ap.add_argument("--ids-file", type=Path, required=True)
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--cpus", type=int, default=2, help="logical CPUs per Ray node")
    ap.add_argument("--out", type=Path, default=Path("/work/runs/bench-cluster"))
    ap.add_argument("--runs", default="single,cluster,faults")
    ap.add_argument("--keep", action="store_true", help="keep engines' folders")
    stop_on_signals()
    args = ap.parse_args(argv)
    args.out, args.instances, args.ids_file = args.out.absolute(), args.instances.absolute(), args.ids_file.absolute()
    args.mirrors = [m.absolute() for m in args.mirrors]
    ids = [x.strip() for x in args.ids_file.read_text().splitlines() if x.strip() and not x.startswith("#")]
    results = []
    for name in args.runs.split(","):
        log(f"run {name} on {len(ids)} instance(s)")
        if name == "single":
            results.append(one_run("single", 1, args.nodes, args, ids))
        elif name == "cluster":
            results.append(one_run("cluster", args.nodes, 1, args, ids))
        elif name == "faults":
            results.append(one_run("faults", args.nodes, 1, args, ids, faults=True))
        (args.out / "bench.json").write_text(json.dumps(results, indent=1))
        print(table(results), flush=True)
    print(json.dumps([{k: r.get(k) for k in ("name", "faults", "rows_lost", "rows_doubled", "pool_doubled",
                                             "registry_tags_doubled", "leftovers", "registry")} for r in results],
                     indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
