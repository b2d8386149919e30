#!/usr/bin/env python
"""A Ray cluster of N nodes on this one host, each node with a Docker engine of its own, a
registry with credentials between them, Ray token-authenticated on loopback.

    .venv/bin/python scripts/localcluster.py demo --nodes 3 [--workdir DIR] [--seed-images [TAG...]] [--keep]
        [--keep-images] [-- JOB ARGS]
    bash scripts/cluster_demo.sh --nodes 3 ...          # the same

What `LocalCluster.up()` starts, everything under one folder (`--base`, default
/work/runs/cluster/<name>) and a short temp folder for Ray's sockets:

- **Engines**: node `i` gets `envpool.engines.node_engine(slot, i)`: its own dockerd with its own
  data root, exec root, socket, pid file, default bridge and address pool, `--iptables=false`
  (the main engine's chains are not rewritten) and its build network's bridge named by an
  engine label, so the build containers of every node are behind the same guard as today's
  (`envpool.netguard`). Why several dockerds and not Docker-in-Docker: see `envpool.engines`.
- **Registry**: Debian's `docker-registry` on 127.0.0.1, htpasswd credentials (a random
  password) handed to every Ray node as `SWEMINT_REGISTRY_USER` / `SWEMINT_REGISTRY_PASSWORD`;
  the job gets `registry=127.0.0.1:PORT` and `registry_auth`, so verified images and toolchain
  images travel through it by digest. Its log (level info) says how many bytes were pulled.
- **Ray**: a head (`ray start --head --block`, node 0) and N-1 worker nodes
  (`python -m pipeline.raynode start --block --address ...`), all with
  `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`, token auth (`RAY_AUTH_TOKEN_PATH`, a fresh 0600 token),
  free loopback ports, `DOCKER_HOST` of their own engine and `--resources '{"docker": SLOTS}'`.
  Each node has a Ray temp dir of its own (`<tmp>/ray`, `<tmp>/ray1`, ...): a worker node
  started without `--temp-dir` shares the head's session folder, and so its
  `runtime_resources`, and each node's runtime-env agent unpacks the job's working_dir there
  with overwrite (rmtree, then unzip) -- on one host that deletes, under the running job
  driver and the other nodes' workers, the folder that is their cwd (every later `git` of the
  driver then fails: "Unable to read current working directory").
  After each start every listening socket of the node's processes is checked to be on
  loopback (`pipeline.raysec.assert_loopback_only`); a node beyond loopback stops the cluster.

Each process is started in its own session and stopped by its pid (process group); `ray stop`
is never used. `down()` stops Ray nodes, the registry and the engines and removes their folders
(`--keep` keeps them). `kill_node(i)` SIGKILLs a worker node's Ray processes and its engine (a
node lost), `restart_node(i)` brings it back on the same data root.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envpool import engines  # noqa: E402
from envpool.engines import NodeEngine  # noqa: E402

VENV = ROOT / ".venv" / "bin"
EXCLUDES = [".git/", ".venv/", ".mypy_cache/", ".ruff_cache/", ".pytest_cache/", "work/"]


def stop_on_signals() -> None:
    """SIGTERM and SIGINT raise KeyboardInterrupt, so `finally` stops what was started (a
    background job from a script ignores SIGINT unless it is given back its handler)."""
    def _raise(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, _raise)
    signal.signal(signal.SIGINT, _raise)


def log(msg: str) -> None:
    """One progress line on stderr."""
    print(f"[localcluster] {msg}", file=sys.stderr, flush=True)


def free_port(preferred: int = 0) -> int:
    """A free TCP port on 127.0.0.1 (`preferred` when free)."""
    s = socket.socket()
    try:
        try:
            s.bind(("127.0.0.1", preferred))
        except OSError:
            s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def group_pids(pgid: int) -> list[int]:
    """Pids whose process group is `pgid` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(entry))
    return out


def alive(pid: int) -> bool:
    """True when `pid` runs (not a zombie)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def stop_group(pid: int, grace: float = 30.0) -> None:
    """SIGTERM process group `pid` (started with its own session), SIGKILL what is left after
    `grace` seconds."""
    pids = set(group_pids(pid)) | {pid}
    for p in pids:
        try:
            os.kill(p, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(p) for p in pids | set(group_pids(pid))):
        time.sleep(0.5)
    for p in pids | set(group_pids(pid)):
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


class LocalCluster:
    """See the module docstring. `nodes`: Ray nodes (the head is node 0); `slots`: `docker`
    build slots per node; `cpus`: logical CPUs per node (a scheduling count); `base`: the
    folder of engines, registry and logs; `registry`: run one (with credentials)."""

    def __init__(self, nodes: int, base: Path | None = None, slots: int = 1, cpus: int = 2, registry: bool = True,
                 object_store_bytes: int = 256 * 1024**2, docker: bool = True):
        if nodes < 1:
            raise ValueError("nodes must be at least 1")
        self.n, self.slots, self.cpus, self.with_registry = nodes, slots, cpus, registry
        self.with_engines = docker
        """False: Ray nodes only (no engines of their own: tests of Ray's side without Docker)."""
        self.object_store_bytes = object_store_bytes
        self.slot = engines.free_slot()
        self.name = f"c{self.slot}-{secrets.token_hex(3)}"
        self.base = Path(base or Path("/work/runs/cluster") / self.name).absolute()
        self.base.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix="smc-", dir="/tmp"))  # short: Ray socket paths are length-limited
        self.engines: list[NodeEngine] = [engines.node_engine(self.slot, i, self.base) for i in range(nodes)]
        self.ray_pids: dict[int, int] = {}
        self.engine_pids: dict[int, int] = {}
        self.reg_pid: int | None = None
        self.reg_port = free_port()
        self.gcs_port = free_port()
        self.dash_port = free_port(8265)
        self.user, self.password = "swemint", secrets.token_hex(16)
        self.token = self.tmp / "auth_token"
        self.t0 = time.time()

    # -- environment ---------------------------------------------------------------------------
    @property
    def address(self) -> str:
        """The job API (dashboard) of the head."""
        return f"http://127.0.0.1:{self.dash_port}"

    @property
    def registry(self) -> str:
        """`host:port` of the registry."""
        return f"127.0.0.1:{self.reg_port}"

    def env(self, i: int | None = None) -> dict[str, str]:
        """Environment of Ray processes (of node `i`: its DOCKER_HOST) and of `ray job submit`."""
        env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(self.token),
               "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0",
               "PATH": f"{VENV}:{os.environ.get('PATH', '')}"}
        env.pop("RAY_ADDRESS", None)
        # a loaded 2-core host misses Ray's default health checks (a live node marked dead): wait longer
        env.setdefault("RAY_health_check_period_ms", "5000")
        env.setdefault("RAY_health_check_timeout_ms", "20000")
        env.setdefault("RAY_health_check_failure_threshold", "6")
        # ... and a raylet waits only 15 s for its dashboard agent's port file (the agent's imports
        # took 16 s there: "Timed out waiting for file .../dashboard_agent_listen_port_...")
        env.setdefault("RAY_agent_register_timeout_ms", "120000")
        # `ray start --block` (Ray 2.60) drains its node on SIGTERM for up to 30 s first (for Serve's
        # proxies); here nothing needs draining, and after a worker node had been killed the head
        # took the whole 30 s grace of stop_group to stop (tests/pipeline/test_multinode.py's
        # teardown 33 s -> 4 s without the drain): stop at once
        env.setdefault("RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S", "0")
        if self.with_registry:
            env |= {"SWEMINT_REGISTRY_USER": self.user, "SWEMINT_REGISTRY_PASSWORD": self.password}
        if i is not None and self.with_engines:
            env["DOCKER_HOST"] = self.engines[i].host
        return env

    def job_args(self) -> list[str]:
        """`--set` arguments every job on this cluster needs."""
        args = []
        if self.with_registry:
            args += ["--set", f"registry={self.registry}", "--set", "registry_auth.username_env=SWEMINT_REGISTRY_USER"]
        return args

    # -- start ---------------------------------------------------------------------------------
    def up(self) -> None:
        """Engines, registry, Ray head and workers (see the module docstring). Raises
        RuntimeError (after stopping what started) when a part does not come up."""
        try:
            fd = os.open(self.token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_hex(32))
            if self.with_registry:
                self.start_registry()
            for i in range(self.n if self.with_engines else 0):
                self.start_engine(i)
            self.start_head()
            for i in range(1, self.n):
                self.start_worker(i)
            self.wait_nodes(self.n)
        except BaseException:
            self.down(keep=True)
            raise
        self.save()

    def save(self) -> None:
        """`base/cluster.json`: what runs (pids, ports, folders; no secrets)."""
        state = {"name": self.name, "slot": self.slot, "tmp": str(self.tmp), "address": self.address,
                 "registry": self.registry if self.with_registry else None, "ray_pids": self.ray_pids,
                 "engine_pids": self.engine_pids, "registry_pid": self.reg_pid,
                 "engines": [json.loads(e.model_dump_json()) for e in self.engines]}
        (self.base / "cluster.json").write_text(json.dumps(state, indent=1))

    def start_registry(self) -> None:
        """docker-registry on 127.0.0.1 with htpasswd credentials (apt-get installs it and
        htpasswd when missing)."""
        missing = [p for p, b in (("docker-registry", "docker-registry"), ("apache2-utils", "htpasswd"))
                   if shutil.which(b) is None]
        if missing:
            log(f"installing {' '.join(missing)}")
            subprocess.run(["apt-get", "install", "-y", "-q", *missing], env={**os.environ, "DEBIAN_FRONTEND":
                           "noninteractive"}, capture_output=True, check=True, timeout=900)
        folder = self.base / "registry"
        (folder / "data").mkdir(parents=True, exist_ok=True)
        pw = subprocess.run(["htpasswd", "-Bbn", self.user, self.password], capture_output=True, text=True, check=True)
        (folder / "htpasswd").write_text(pw.stdout)
        (folder / "htpasswd").chmod(0o600)
        (folder / "registry.yml").write_text(
            "version: 0.1\nlog: {level: info, accesslog: {disabled: true}}\n"
            f"storage:\n  filesystem: {{rootdirectory: {folder / 'data'}}}\n  delete: {{enabled: true}}\n"
            f"auth:\n  htpasswd: {{realm: swemint, path: {folder / 'htpasswd'}}}\n"
            f"http:\n  addr: 127.0.0.1:{self.reg_port}\n  secret: {secrets.token_hex(16)}\n")
        logf = open(folder / "registry.log", "ab")  # noqa: SIM115 - handed to the process
        proc = subprocess.Popen(["docker-registry", "serve", str(folder / "registry.yml")], stdout=logf,
                                stderr=subprocess.STDOUT, start_new_session=True)
        logf.close()
        self.reg_pid = proc.pid
        for _ in range(60):
            try:
                urllib.request.urlopen(f"http://{self.registry}/v2/", timeout=2)
            except urllib.error.HTTPError as e:
                if e.code == 401:
                    break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError("docker-registry did not come up")
        log(f"registry on {self.registry} (pid {proc.pid}), credentials required (HTTP 401 without)")

    def start_engine(self, i: int) -> None:
        """Node `i`'s dockerd (`envpool.engines.start_engine`)."""
        pid = engines.start_engine(self.engines[i])
        self.engine_pids[i] = pid
        log(f"node {self.engines[i].name}: engine pid {pid} at {self.engines[i].host} "
            f"(data root {self.engines[i].data_root})")

    def _ray_ports(self) -> list[str]:
        return ["--dashboard-agent-listen-port", str(free_port()), "--dashboard-agent-grpc-port", str(free_port()),
                "--runtime-env-agent-port", str(free_port()), "--metrics-export-port", str(free_port()),
                "--object-store-memory", str(self.object_store_bytes)]

    def _spawn(self, i: int, cmd: list[str]) -> int:
        logf = open(self.base / f"ray-{self.engines[i].name}.log", "ab")  # noqa: SIM115 - handed to the process
        proc = subprocess.Popen(cmd, env=self.env(i), stdout=logf, stderr=subprocess.STDOUT, start_new_session=True,
                                cwd=ROOT)
        logf.close()
        self.ray_pids[i] = proc.pid
        return proc.pid

    def start_head(self) -> None:
        """`ray start --head --block` on loopback with token auth (node 0)."""
        resources = json.dumps({"docker": self.slots})
        pid = self._spawn(0, [str(VENV / "ray"), "start", "--head", "--block", "--num-cpus", str(self.cpus),
                              "--resources", resources, "--node-ip-address", "127.0.0.1", "--port", str(self.gcs_port),
                              "--dashboard-host", "127.0.0.1", "--dashboard-port", str(self.dash_port),
                              "--ray-client-server-port", str(free_port()), *self._ray_ports(),
                              "--temp-dir", str(self.tmp / "ray"), "--disable-usage-stats"])
        for _ in range(240):
            req = urllib.request.Request(f"{self.address}/api/version",
                                         headers={"Authorization": f"Bearer {self.token.read_text().strip()}"})
            try:
                urllib.request.urlopen(req, timeout=2)
                break
            except OSError:
                if not alive(pid):
                    raise RuntimeError(f"the Ray head died: {self._tail(0)}") from None
                time.sleep(1)
        else:
            raise RuntimeError(f"the Ray head did not answer: {self._tail(0)}")
        self._check_loopback(0)
        try:
            urllib.request.urlopen(f"{self.address}/api/jobs/", timeout=5)
            code = 200
        except urllib.error.HTTPError as e:
            code = e.code
        log(f"node {self.engines[0].name}: Ray head pid {pid}, job API {self.address}; "
            f"without the token it answers HTTP {code}")

    def start_worker(self, i: int, attempts: int = 3) -> None:
        """A worker node joining the head on loopback (`pipeline.raynode`), with a Ray temp dir of
        its own (`<tmp>/ray<i>`: its own runtime_resources; see the module docstring). Only what
        the node's log gained since this start counts (a restarted node's log holds the first start's "Ray
        runtime started"); a start that dies or does not come up (on a loaded host a raylet gives
        up after 15 s without its dashboard agent: "Timed out waiting for file
        .../dashboard_agent_listen_port_...") is stopped by its process group and tried again,
        `attempts` times in all. Raises RuntimeError with the log's tail after the last one."""
        log_path = self.base / f"ray-{self.engines[i].name}.log"
        for attempt in range(1, attempts + 1):
            offset = log_path.stat().st_size if log_path.exists() else 0
            pid = self._spawn(i, [str(VENV / "python"), "-m", "pipeline.raynode", "start", "--block",
                                  "--address", f"127.0.0.1:{self.gcs_port}", "--node-ip-address", "127.0.0.1",
                                  "--num-cpus", str(self.cpus), "--resources", json.dumps({"docker": self.slots}),
                                  "--temp-dir", str(self.tmp / f"ray{i}"), *self._ray_ports(),
                                  "--disable-usage-stats"])
            why = self._wait_started(i, pid, log_path, offset)
            if not why:
                break
            for p in group_pids(pid):
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
            if attempt == attempts:
                raise RuntimeError(why)
            log(f"node {self.engines[i].name}: start {attempt} failed, trying again ({why.splitlines()[-1][:160]})")
            time.sleep(5)
        time.sleep(3)  # the agents bind after the raylet
        self._check_loopback(i)
        log(f"node {self.engines[i].name}: Ray worker pid {pid}")

    @staticmethod
    def _wait_started(i: int, pid: int, log_path: Path, offset: int) -> str:
        """"" once node `i`'s start (process `pid`) logged "Ray runtime started" after byte
        `offset` of its log; else why not (it died, or 240 s passed)."""
        new = ""
        for _ in range(240):  # a loaded host needs minutes
            new = log_path.read_text(errors="replace")[offset:] if log_path.exists() else ""
            if "Ray runtime started" in new:
                return ""
            if not alive(pid):
                return f"Ray node {i} died: {new[-2000:]}"
            time.sleep(1)
        return f"Ray node {i} did not start: {new[-2000:]}"

    def _tail(self, i: int, n: int = 2000) -> str:
        try:
            return (self.base / f"ray-{self.engines[i].name}.log").read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def _check_loopback(self, i: int) -> None:
        from pipeline.raysec import assert_loopback_only, descendants, listening_sockets

        pid = self.ray_pids[i]
        assert_loopback_only(pid)
        n = len(listening_sockets(descendants(pid) | {pid}))
        log(f"node {self.engines[i].name}: all {n} listening sockets of its Ray processes are on loopback")

    def nodes_alive(self) -> list[dict]:
        """The cluster's alive nodes (Ray's state API through the job API, with the token)."""
        req = urllib.request.Request(f"{self.address}/api/v0/nodes?limit=100",
                                     headers={"Authorization": f"Bearer {self.token.read_text().strip()}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            data = json.load(r)
        rows = (data.get("data") or {}).get("result") or {}
        rows = rows.get("result", rows) if isinstance(rows, dict) else rows
        return [n for n in rows if n.get("state") == "ALIVE"]

    def wait_nodes(self, n: int, timeout: float = 120.0) -> None:
        """Wait until `n` nodes are alive. RuntimeError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if len(self.nodes_alive()) >= n:
                    log(f"{n} Ray node(s) alive")
                    return
            except OSError:
                pass
            time.sleep(2)
        raise RuntimeError(f"fewer than {n} Ray nodes alive after {timeout:.0f} s")

    # -- images --------------------------------------------------------------------------------
    def seed(self, tags: list[str], i: int = 0) -> None:
        """Copy `tags` from the host's main engine into node `i` (docker save | load) and publish
        them to the registry: toolchains the cluster then never builds (events: `seeded`)."""
        import docker

        from envpool.pool import publish_image
        from envpool.image_registry import record_event

        client = docker.DockerClient(base_url=self.engines[i].host, timeout=900)
        for tag in tags:
            t0 = time.monotonic()
            r = subprocess.run(f"docker save {tag} | docker -H {self.engines[i].host} load -q", shell=True,
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"seeding {tag}: {r.stderr[-500:]}")
            ref = publish_image(tag, self.registry, client=client, auth={"username": self.user, "password":
                                                                         self.password}) if self.with_registry else ""
            record_event(self.shared_dir, client, "seeded", tag, time.monotonic() - t0, ref)
            log(f"seeded {tag} into {self.engines[i].name}{' and published it as ' + ref if ref else ''}")
        client.close()

    shared_dir: Path | None = None
    """The job's `mint.images.shared_dir` (WORKDIR/images), for seed events."""

    # -- faults --------------------------------------------------------------------------------
    def kill_node(self, i: int) -> None:
        """SIGKILL node `i`'s Ray processes (its process group) and its engine: a node lost."""
        if i == 0:
            raise ValueError("node 0 is the head")
        pid = self.ray_pids.pop(i)
        victims = set(group_pids(pid)) | {pid}
        for p in victims:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        epid = engines.kill_engine(self.engines[i]) if self.with_engines else None
        self.engine_pids.pop(i, None)
        log(f"node {self.engines[i].name}: killed {len(victims)} Ray process(es) and engine {epid}")

    def restart_node(self, i: int) -> None:
        """Bring node `i` back: its engine on the same data root, then its Ray node."""
        if self.with_engines:
            self.start_engine(i)
        self.start_worker(i)
        self.save()

    # -- measure -------------------------------------------------------------------------------
    def engine_events(self, i: int, since: float | None = None) -> dict[str, int]:
        """Counts of node `i`'s engine events since `since` (epoch seconds; default: cluster
        start) as `type.action` (`image.pull`, `image.import`, `image.push`, `container.commit`...).
        Events before an engine restart are gone (dockerd keeps them in memory)."""
        import docker

        client = docker.DockerClient(base_url=self.engines[i].host, timeout=60)
        out: dict[str, int] = {}
        for ev in client.events(since=int(since or self.t0), until=int(time.time()) + 1, decode=True):
            key = f"{ev.get('Type')}.{str(ev.get('Action', '')).split(':')[0]}"
            out[key] = out.get(key, 0) + 1
        client.close()
        return out

    def registry_bytes(self) -> dict[str, int]:
        """`stored`: bytes in the registry's storage; `pulled`: bytes of blobs served (GET, from
        its log); `blobs_pulled`: how many."""
        folder = self.base / "registry"
        stored = sum(p.stat().st_size for p in (folder / "data").rglob("*") if p.is_file())
        pulled = n = 0
        text = (folder / "registry.log").read_text(errors="replace") if (folder / "registry.log").exists() else ""
        for line in text.splitlines():
            if ('msg="response completed"' in line and "http.request.method=GET" in line and "/blobs/sha256:" in line
                    and "http.response.status=200" in line):
                m = re.search(r"http\.response\.written=(\d+)", line)
                if m:
                    pulled += int(m.group(1))
                    n += 1
        return {"stored": stored, "pulled": pulled, "blobs_pulled": n}

    # -- jobs ----------------------------------------------------------------------------------
    def submit_command(self, workdir: Path, config: str = "configs/cluster.yaml", extra: list[str] = (),
                       module: str = "pipeline.jobs.run", submission_id: str | None = None) -> list[str]:
        """The `ray job submit` command of a job on this cluster (the README's form)."""
        cmd = [str(VENV / "ray"), "job", "submit", "--address", self.address, "--working-dir", str(ROOT),
               "--runtime-env-json", json.dumps({"excludes": EXCLUDES})]
        if submission_id:
            cmd += ["--submission-id", submission_id]
        return cmd + ["--", "python", "-m", module, "--config", config, "--workdir", str(workdir),
                      *self.job_args(), *extra]

    def submit(self, workdir: Path, config: str = "configs/cluster.yaml", extra: list[str] = (),
               module: str = "pipeline.jobs.run", log_path: Path | None = None, timeout: float = 7200) -> int:
        """Submit a job and wait for it; its output goes to `log_path` (and stderr). Retries while
        the job agent is not up yet. Returns `ray job submit`'s exit code."""
        log_path = log_path or self.base / "job.log"
        for attempt in range(6):
            with open(log_path, "w") as fh:
                r = subprocess.run(self.submit_command(workdir, config, extra, module), env=self.env(0), cwd=ROOT,
                                   stdout=fh, stderr=subprocess.STDOUT, timeout=timeout)
            text = log_path.read_text(errors="replace")
            if r.returncode == 0 or "No available agent" not in text or attempt == 5:
                sys.stderr.write(text[-6000:])
                return r.returncode
            log(f"the job agent is not up yet (attempt {attempt + 1}): retrying in 5 s")
            time.sleep(5)
        return 1

    # -- stop ----------------------------------------------------------------------------------
    def down(self, keep: bool = False) -> None:
        """Stop Ray nodes (workers first, head last), the registry and the engines, each by its
        pid; remove the engines' folders, bridges and rules, and (unless `keep`) the base folder."""
        for i in sorted(self.ray_pids, reverse=True):
            stop_group(self.ray_pids.pop(i))
        if self.reg_pid is not None:
            stop_group(self.reg_pid, grace=10)
            self.reg_pid = None
        for eng in self.engines if self.with_engines else []:
            engines.stop_engine(eng, remove_data=not keep)
        self.engine_pids.clear()
        shutil.rmtree(self.tmp, ignore_errors=True)
        if not keep:
            shutil.rmtree(self.base, ignore_errors=True)
        log(f"cluster {self.name} stopped{' (folders kept in ' + str(self.base) + ')' if keep else ''}")


def summary(cluster: LocalCluster, workdir: Path) -> int:
    """Print the dataset, pool, registry and per-node lines of a finished demo job; 0 when the
    dataset landed and every pooled environment is in the registry by digest."""
    import duckdb
    import pandas as pd

    from envpool.image_registry import read_events

    path = workdir / "dataset" / "all.parquet"
    if not path.is_file():
        print(f"no dataset at {path}")
        return 1
    df = pd.read_parquet(path)
    print(f"dataset: {len(df)} rows ({int((df.outcome == 'verified').sum())} verified) in {path}")
    with duckdb.connect(str(workdir / "pool.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT instance_id, location FROM environments ORDER BY instance_id").fetchall()
    for iid, loc in rows:
        print(f"pool: {iid} at {loc}")
    rc = 0 if len(df) else 1
    if cluster.with_registry:
        bad = [iid for iid, loc in rows if not loc.startswith(cluster.registry + "/") or "@sha256:" not in loc]
        if bad:
            print(f"pool rows without a registry location: {bad}")
            rc = 1
    report = json.loads((workdir / "report.json").read_text()) if (workdir / "report.json").exists() else {}
    nodes = (report.get("run") or report).get("nodes") or {}
    events = read_events(workdir / "images")
    for i, eng in enumerate(cluster.engines):
        mine = [e for e in events if e.get("node") == eng.name]
        counts = {a: sum(1 for e in mine if e["action"] == a) for a in ("built", "pulled", "published", "seeded")}
        print(f"node {eng.name}: instances {sum((nodes.get(eng.name) or {}).values())} {json.dumps(nodes.get(eng.name) or {})}; "
              f"images built {counts['built']}, pulled {counts['pulled']}, published {counts['published']}, "
              f"seeded {counts['seeded']}; engine events {json.dumps(cluster.engine_events(i))}")
    if cluster.with_registry:
        print(f"registry bytes: {json.dumps(cluster.registry_bytes())}")
    return rc


def keep_images(cluster: LocalCluster, workdir: Path, client=None) -> int:
    """Pull the images the verified rows of `workdir`'s dataset name (`REGISTRY/...@sha256:...`,
    this demo's registry, which stops with the demo) into this host's engine (`client`, default:
    the host's `DOCKER_HOST`), with the demo's credentials, so that `swemint eval -w WORKDIR`
    grades them after the teardown (an image referenced by digest is found locally once pulled).
    Prints a line per failure; returns how many rows' images are now on the host's engine."""
    import pandas as pd

    path = workdir / "dataset" / "all.parquet"
    if not path.is_file() or not cluster.with_registry:
        return 0
    df = pd.read_parquet(path)
    refs = sorted({str(r) for r in df[df.outcome == "verified"]["image"] if r})
    if client is None:
        from envpool.docker_sandbox import docker_client

        client = docker_client()
    auth = {"username": cluster.user, "password": cluster.password}
    got = 0
    for ref in refs:
        try:
            client.api.pull(ref, auth_config=auth)
            got += 1
        except Exception as e:  # noqa: BLE001 - one image's failure is named, the others go on
            print(f"not kept on this host's engine: {ref}: {str(e)[:200]}")
    print(f"kept {got} of {len(refs)} verified rows' images on this host's engine: "
          f"`.venv/bin/swemint eval -w {workdir} --gold` grades them after the demo")
    return got


GIB = 1 << 30


def disk_needed(nodes: int, slots: int, seed_bytes: int) -> int:
    """Bytes a demo of `nodes` nodes needs free under its base folder (all on one disk here): the
    seeded toolchain images (`seed_bytes`, their engine sizes; 2 GiB when unknown) twice -- node 0's
    copy, and the registry's plus the pulls of the other nodes, which take what their instances
    need -- plus 1 GiB per build slot for the environments the job builds. Measured on this host:
    the 3-node demo with two Python toolchains (sizes 2.05 GB) peaked at ~6.5 GB used; this gives
    7.1 GB. A floor, not a bound: a node that runs out mid-run still ends its rows `infra_error`."""
    seed = seed_bytes or 2 * GIB
    return 2 * seed + nodes * slots * GIB


def check_disk(base: Path, need: int) -> None:
    """Raise SystemExit(2) with one line naming the folder, the free and the needed GiB when the
    disk under `base` (or its nearest existing parent) has less than `need` bytes free: a node
    engine that fills the disk fails its pulls and copies with OCI errors that name no cause."""
    probe = Path(base).absolute()
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if free < need:
        raise SystemExit(f"localcluster: low disk: {free / GIB:.1f} GiB free under {probe}, the demo needs about "
                         f"{need / GIB:.1f} GiB (each node's engine holds its own copy of the toolchain images; "
                         "--min-free-gib 0 skips this check)")


def _image_bytes(tags: list[str]) -> int:
    """Sum of the sizes (bytes) of `tags` on this host's engine; 0 when the engine does not answer."""
    total = 0
    env = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}
    for tag in tags:
        r = subprocess.run(["docker", "image", "inspect", "--format", "{{.Size}}", tag], capture_output=True,
                           text=True, env=env)
        if r.returncode == 0 and r.stdout.strip().isdigit():
            total += int(r.stdout.strip())
    return total


def _main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["demo"])
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--slots", type=int, default=1, help="docker build slots per node")
    ap.add_argument("--cpus", type=int, default=2, help="logical CPUs per node (a Ray scheduling count)")
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--config", default="configs/cluster.yaml")
    ap.add_argument("--base", type=Path, help="folder of engines, registry and logs")
    ap.add_argument("--seed-images", nargs="*", metavar="TAG",
                    help="copy these images from the host's engine into node 0 and publish them "
                         "(no tag: the Python toolchains of `python -m envpool.images --tags`)")
    ap.add_argument("--no-registry", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep engines' folders and logs (the registry's storage "
                    "too, but nothing serves it after the demo)")
    ap.add_argument("--keep-images", action="store_true",
                    help="before the teardown, pull the verified rows' images (they name this demo's registry, "
                         "127.0.0.1:PORT/...@sha256:..., which stops with the demo) into this host's engine, "
                         "so `swemint eval -w WORKDIR` can grade them afterwards")
    ap.add_argument("--min-free-gib", type=float, default=None,
                    help="refuse to start with less free disk under --base (default: an estimate from the "
                         "nodes, slots and seeded images; 0 skips the check)")
    stop_on_signals()
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    seeds = None if args.seed_images is None else (args.seed_images or _python_toolchains())
    need = (int(args.min_free_gib * GIB) if args.min_free_gib is not None
            else disk_needed(args.nodes, args.slots, _image_bytes(seeds or [])))
    if need > 0:
        check_disk(args.base or Path("/work/runs/cluster"), need)
    cluster = LocalCluster(args.nodes, base=args.base, slots=args.slots, cpus=args.cpus,
                           registry=not args.no_registry)
    workdir = (args.workdir or cluster.base / "work").absolute()
    cluster.shared_dir = workdir / "images"
    rc = 1
    try:
        cluster.up()
        if seeds is not None:
            cluster.seed(seeds)
        t0 = time.monotonic()
        code = cluster.submit(workdir, args.config, ["--set", f"workers={args.nodes * args.slots}", *extra])
        log(f"job finished in {time.monotonic() - t0:.0f} s (exit {code})")
        rc = summary(cluster, workdir) if code == 0 else code
        if code == 0 and cluster.with_registry:
            if args.keep_images:
                keep_images(cluster, workdir)
            else:
                print(f"note: the rows name images in this demo's registry ({cluster.registry}), which stops with "
                      "the demo, and the node engines go too: `swemint eval` of this work directory finds no "
                      "image afterwards; rerun with --keep-images to pull them into this host's engine first")
    finally:
        cluster.down(keep=args.keep)
    return rc


def _python_toolchains() -> list[str]:
    r = subprocess.run([str(VENV / "python"), "-m", "envpool.images", "--tags"], capture_output=True, text=True,
                       cwd=ROOT, env={k: v for k, v in os.environ.items() if k != "DOCKER_HOST"})
    return [t for t in r.stdout.split() if t]


if __name__ == "__main__":
    raise SystemExit(_main())
