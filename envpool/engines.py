"""Docker engines of one's own on this host: one per cluster node, sharing nothing.

Why several engines on one host (and not Docker-in-Docker node containers): a node's Ray
processes must stay on the host's loopback with token auth (`pipeline.raysec`), and a node
container would put them on a Docker network instead; a second `dockerd` is what
`tests/envpool/test_userns.py` already runs here, needs no image of its own (no registry can be
reached to pull `docker:dind`) and keeps the same build-network guard (`envpool.netguard`) on
the host's iptables, where it is checked today.

Each engine (`NodeEngine`) has its own data root (image store), exec root (containerd), pid
file, unix socket, containerd namespace, default bridge interface and address pool, so two
engines share no image, container, socket or bridge. The engine runs with `--iptables=false`:
a dockerd with iptables rewrites the shared DOCKER chains of the host's main engine at start.
What it would have set up is installed here instead, in chains of our own (`NODE_CHAIN`, filter
and nat): forwarding and masquerading for the node's subnets only. The engine declares its
build network's bridge interface as the engine label `swemint.build_bridge` (Linux interface
names are host-wide, so each engine's `swemint-build` network needs its own), which
`envpool.netguard.ensure_build_network` reads, so each node's build containers are behind the
same guard as the main engine's.

`python -m envpool.engines start|stop|status ...` drives it from scripts
(`scripts/cluster_demo.sh --nodes N`).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from envpool.errors import InfraError
from envpool.netguard import ENGINE_BRIDGE_LABEL as LABEL_BUILD_BRIDGE

log = logging.getLogger(__name__)

NODE_CHAIN = "SWEMINT-NODES"
"""iptables chain (filter and nat) with the forwarding and NAT rules of node engines."""
LABEL_NODE = "swemint.node"
"""Engine label naming the node (`n0`, `n1`, ...)."""
BASE_OCTET = 160
"""Node subnets are 10.(BASE_OCTET + slot).(16 * index).0/20: slot = one cluster on this host."""


class NodeEngine(BaseModel):
    """Where one node's engine lives and which addresses it uses (all derived by `node_engine`).

    `root`: the node's folder (data root `root/data`, socket, pid file, log). `exec_root`: a short
    path (unix socket paths are limited to 108 bytes). `bridge`: the default bridge interface,
    `bip` its address; `build_bridge`: the build network's interface; `pool`: the address pool of
    the engine's other networks; `cidr`: every address of the node (bip and pool), forwarded and
    masqueraded by `NODE_CHAIN`.
    """

    model_config = ConfigDict(extra="forbid")
    name: str
    root: Path
    exec_root: Path
    bridge: str
    build_bridge: str
    bip: str
    pool: str
    cidr: str

    @property
    def socket(self) -> Path:
        """The engine's unix socket."""
        return self.root / "docker.sock"

    @property
    def host(self) -> str:
        """`DOCKER_HOST` of the engine."""
        return f"unix://{self.socket}"

    @property
    def pidfile(self) -> Path:
        """The engine's pid file (dockerd writes it)."""
        return self.root / "docker.pid"

    @property
    def data_root(self) -> Path:
        """The engine's image store."""
        return self.root / "data"


def node_engine(slot: int, index: int, base: Path, run_base: Path = Path("/run/swemint-nodes")) -> NodeEngine:
    """The engine of node `index` (0-15) of cluster `slot` (0-7) with its folder under `base`.

    Names: node `s<slot>n<index>`, bridges `swc<slot>n<index>` / `swc<slot>b<index>`; addresses
    10.(160+slot).(16*index).0/20: the default bridge .1/24, the pool the upper /21 in /24s.
    Raises ValueError outside those ranges.
    """
    if not (0 <= slot <= 7 and 0 <= index <= 15):
        raise ValueError(f"slot {slot} / index {index}: slot 0-7, index 0-15")
    a, b = BASE_OCTET + slot, 16 * index
    name = f"s{slot}n{index}"
    return NodeEngine(name=name, root=Path(base) / name, exec_root=run_base / name,
                      bridge=f"swc{slot}n{index}", build_bridge=f"swc{slot}b{index}",
                      bip=f"10.{a}.{b}.1/24", pool=f"10.{a}.{b + 8}.0/21", cidr=f"10.{a}.{b}.0/20")


def _run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    try:
        r = subprocess.run(list(cmd), capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        raise InfraError(f"{' '.join(cmd)} failed: {e}") from e
    if check and r.returncode != 0:
        raise InfraError(f"{' '.join(cmd)} failed (exit {r.returncode}): {r.stderr.strip()[:400]}")
    return r


def slot_in_use(slot: int) -> bool:
    """True when an interface of cluster `slot` exists or a route overlaps its /16."""
    links = json.loads(_run("ip", "-j", "link", "show").stdout or "[]")
    if any(str(link.get("ifname", "")).startswith(f"swc{slot}") for link in links):
        return True
    net = ipaddress.ip_network(f"10.{BASE_OCTET + slot}.0.0/16")
    for route in json.loads(_run("ip", "-j", "-4", "route", "show").stdout or "[]"):
        dst = route.get("dst", "")
        if dst and dst != "default":
            try:
                if ipaddress.ip_network(dst, strict=False).overlaps(net):
                    return True
            except ValueError:
                continue
    return False


def free_slot() -> int:
    """The first cluster slot (0-7) no interface or route of this host uses. InfraError if none."""
    for slot in range(8):
        if not slot_in_use(slot):
            return slot
    raise InfraError("all 8 cluster slots are in use on this host (interfaces swc0*..swc7*)")


def _iptables(*args: str, table: str = "filter", check: bool = True) -> subprocess.CompletedProcess:
    return _run("iptables", "-w", "10", "-t", table, *args, check=check)


def _ensure_rule(table: str, chain: str, rule: list[str], first: bool = False) -> None:
    if _iptables("-C", chain, *rule, table=table, check=False).returncode == 0:
        return
    if first:
        _iptables("-I", chain, "1", *rule, table=table)
    else:
        _iptables("-A", chain, *rule, table=table)


def nat_rules(eng: NodeEngine) -> list[tuple[str, list[str]]]:
    """(table, rule after `-A NODE_CHAIN`) of one node: what its engine would have installed
    with iptables on, for its own subnets only. Pure."""
    return [("filter", ["-s", eng.cidr, "-j", "ACCEPT"]),
            ("filter", ["-d", eng.cidr, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"]),
            ("nat", ["-s", eng.cidr, "!", "-d", eng.cidr, "-j", "MASQUERADE"])]


def install_nat(eng: NodeEngine) -> None:
    """Forwarding and NAT for the node's subnets in `NODE_CHAIN` (created when missing, jumped
    to from the end of FORWARD, after DOCKER-USER and so after the build network's guard, and
    from POSTROUTING). Idempotent."""
    for table, hook in (("filter", "FORWARD"), ("nat", "POSTROUTING")):
        if _iptables("-S", NODE_CHAIN, table=table, check=False).returncode != 0:
            _iptables("-N", NODE_CHAIN, table=table)
        _ensure_rule(table, hook, ["-j", NODE_CHAIN])
    for table, rule in nat_rules(eng):
        _ensure_rule(table, NODE_CHAIN, rule)


def remove_nat(eng: NodeEngine) -> None:
    """Remove the node's rules from `NODE_CHAIN` (the chain and its jumps stay: other nodes)."""
    for table, rule in nat_rules(eng):
        while _iptables("-D", NODE_CHAIN, *rule, table=table, check=False).returncode == 0:
            pass


def _link_exists(name: str) -> bool:
    return _run("ip", "link", "show", name, check=False).returncode == 0


def _mounts_under(path: Path) -> list[str]:
    prefix = str(path).rstrip("/") + "/"
    with open("/proc/self/mounts") as f:
        return [line.split()[1] for line in f if (line.split()[1] + "/").startswith(prefix)]


def dockerd_command(eng: NodeEngine, insecure_registries: list[str] = ()) -> list[str]:
    """The dockerd command line of node engine `eng` (see the module docstring). Pure."""
    cmd = ["dockerd", f"--data-root={eng.data_root}", f"--exec-root={eng.exec_root}",
           f"--pidfile={eng.pidfile}", f"-H=unix://{eng.socket}", f"--bridge={eng.bridge}",
           f"--default-address-pool=base={eng.pool},size=24", "--iptables=false", "--ip-masq=false",
           f"--containerd-namespace=swemint-{eng.name}", f"--containerd-plugins-namespace=swemint-{eng.name}-plugins",
           f"--label={LABEL_NODE}={eng.name}", f"--label={LABEL_BUILD_BRIDGE}={eng.build_bridge}",
           "--storage-driver=overlay2", "--log-level=warn"]
    cmd += [f"--insecure-registry={r}" for r in insecure_registries]
    return cmd


def start_engine(eng: NodeEngine, insecure_registries: list[str] = (), timeout: float = 90.0) -> int:
    """Start the node's dockerd (in its own session) and return its pid once it answers.

    Creates the default bridge interface with its address, installs the node's NAT rules, then
    runs `dockerd_command`. An engine already running on the pid file is reused. Raises
    InfraError when it does not answer within `timeout` seconds (the log's tail in the message).
    """
    pid = engine_pid(eng)
    if pid is not None:
        return pid
    eng.root.mkdir(parents=True, exist_ok=True)
    eng.exec_root.mkdir(parents=True, exist_ok=True)
    if not _link_exists(eng.bridge):
        _run("ip", "link", "add", "name", eng.bridge, "type", "bridge")
        _run("ip", "addr", "add", eng.bip, "dev", eng.bridge)
    _run("ip", "link", "set", eng.bridge, "up")
    install_nat(eng)
    logf = open(eng.root / "dockerd.log", "ab")  # noqa: SIM115 - handed to the daemon
    proc = subprocess.Popen(dockerd_command(eng, insecure_registries), stdout=logf, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    logf.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        if _run("docker", "-H", eng.host, "version", "--format", "{{.Server.Version}}", check=False).returncode == 0:
            return proc.pid
        time.sleep(1)
    tail = (eng.root / "dockerd.log").read_text(errors="replace")[-1500:]
    if proc.poll() is None:
        proc.terminate()
    raise InfraError(f"the engine of node {eng.name} did not come up: {tail}")


def engine_pid(eng: NodeEngine) -> int | None:
    """Pid of the node's running dockerd (from its pid file), None when none runs."""
    try:
        pid = int(eng.pidfile.read_text().strip())
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except (OSError, ValueError):
        return None
    return pid if comm == "dockerd" else None


def kill_engine(eng: NodeEngine) -> int | None:
    """SIGKILL the node's dockerd, its containerd and shims, and every process of its containers
    (a node lost, for fault tests). Returns the dockerd pid killed (None: none ran)."""
    pid = engine_pid(eng)
    if pid is None:
        return None
    victims = [pid]
    for entry in os.listdir("/proc"):  # its containerd and the shims under its exec root
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if str(eng.exec_root) in cmdline and int(entry) != pid:
                victims.append(int(entry))
    victims += container_processes(eng)  # a lost node loses its builds too (not orphans left running)
    for p in victims:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pid


def container_processes(eng: NodeEngine, cgroup: Path = Path("/sys/fs/cgroup")) -> list[int]:
    """Pids in the cgroups of the node's containers (ids from its data root; cgroup v1 `pids`
    or v2 layout, parent `docker`)."""
    found: list[int] = []
    try:
        ids = [d.name for d in (eng.data_root / "containers").iterdir() if d.is_dir()]
    except OSError:
        return found
    for cid in ids:
        for procs in (cgroup / "pids" / "docker" / cid / "cgroup.procs", cgroup / "docker" / cid / "cgroup.procs"):
            try:
                found += [int(x) for x in procs.read_text().split()]
                break
            except (OSError, ValueError):
                continue
    return found


def stop_engine(eng: NodeEngine, remove_data: bool = False, timeout: float = 60.0) -> None:
    """Stop the node's dockerd (SIGTERM its pid, SIGKILL after `timeout`), then remove what it
    left on the host: mounts under its folders, its bridges, its NAT rules and its build
    bridge's guard rules; with `remove_data` also its folders (images included). Idempotent."""
    from envpool.netguard import remove_bridge_rules

    pid = engine_pid(eng)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while engine_pid(eng) is not None and time.monotonic() < deadline:
            time.sleep(0.5)
        if engine_pid(eng) is not None:
            kill_engine(eng)
            time.sleep(1)
    for root in (eng.exec_root, eng.root):
        for m in sorted(_mounts_under(root), key=len, reverse=True):
            _run("umount", "-l", m, check=False)
    for link in (eng.build_bridge, eng.bridge):
        if _link_exists(link):
            _run("ip", "link", "del", link, check=False)
    remove_nat(eng)
    remove_bridge_rules(eng.build_bridge)
    shutil.rmtree(eng.exec_root, ignore_errors=True)
    if remove_data:
        shutil.rmtree(eng.root, ignore_errors=True)


def _main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m envpool.engines", description="Docker engines of cluster nodes "
                                 "on one host (see envpool/engines.py).")
    ap.add_argument("action", choices=["start", "stop", "kill", "status", "free-slot"])
    ap.add_argument("--slot", type=int, default=0)
    ap.add_argument("--index", type=int, default=0)
    ap.add_argument("--base", type=Path, default=Path("/work/runs/cluster"))
    ap.add_argument("--insecure-registry", action="append", default=[])
    ap.add_argument("--remove-data", action="store_true")
    args = ap.parse_args(argv)
    if args.action == "free-slot":
        print(free_slot())
        return 0
    eng = node_engine(args.slot, args.index, args.base)
    if args.action == "start":
        print(start_engine(eng, args.insecure_registry))
    elif args.action == "stop":
        stop_engine(eng, remove_data=args.remove_data)
    elif args.action == "kill":
        print(kill_engine(eng) or "")
    else:
        print(json.dumps({**json.loads(eng.model_dump_json()), "pid": engine_pid(eng), "host": eng.host}))
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(_main())
    except InfraError as e:
        print(f"swemint: {e}", flush=True)
        raise SystemExit(1) from None
