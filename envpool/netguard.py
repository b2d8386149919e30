"""The build network: a Docker bridge of swemint's own whose containers reach the package
registries (NAT) but not the build host, its neighbours, private, link-local or metadata ranges.

Why: build containers run repository code nobody has read (`setup.py`, `build.rs`, npm
`postinstall`). Docker's default bridge reaches every host service bound to `*`, to the bridge
gateway or to the host's own address (INPUT policy ACCEPT on a stock Debian host), so a setup
script could talk to a local Ray (code execution on the host), a database or a cloud metadata
endpoint. Test runs use `network_mode="none"` and are not affected.

What `ensure_build_network` installs (idempotent; `python -m envpool.netguard --print` shows the
commands, `--install` runs them):

- the network `swemint-build` (bridge interface `swemint0`, inter-container traffic off);
- `INPUT -i swemint0 -j DROP` (and the IPv6 twin when ip6tables exists): nothing from a build
  container reaches a socket of the host itself, whatever address it is bound to;
- chain `SWEMINT-BUILD`, jumped to first from `DOCKER-USER` for packets entering from
  `swemint0`: DNS to the host's nameservers and the configured `allow` entries return early, then
  every destination in `blocked` (RFC 1918, loopback, link-local with the metadata address,
  CGNAT, multicast, reserved) and the host's own on-link subnets is dropped. Everything else
  (the registries, through the host's route) is forwarded with Docker's NAT.

Rules are only ever added, never flushed, so two processes ensuring them at once never open a
window; a rule that is no longer wanted (an old nameserver) stays until `--remove`.
Installing needs root and the engine on this host; when it cannot be installed the factory
refuses to start build containers (fail closed) unless `enabled` is false.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import shutil
import subprocess
import threading
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from envpool.errors import InfraError

log = logging.getLogger(__name__)

CHAIN = "SWEMINT-BUILD"
"""The iptables chain holding the build network's forwarding rules."""

DEFAULT_BLOCKED = ["0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
                   "172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4",
                   "240.0.0.0/4"]
"""Destinations no build container may reach: 'this network', RFC 1918 private, CGNAT, loopback,
link-local (169.254.169.254 is the cloud metadata service), IETF protocol assignments,
benchmarking, multicast and reserved (RFC 6890)."""


class BuildNetworkConfig(BaseModel):
    """The network of build (setup) containers and its host isolation.

    `enabled`: false runs build containers on Docker's default bridge with no isolation (unsafe:
    repository code can reach every host service; for engines whose host swemint cannot
    configure, with the rules installed there by hand). `name` / `bridge`: the Docker network
    and its Linux interface (at most 15 characters). `blocked`: CIDRs dropped on the way out.
    `block_host_subnets`: also drop the subnets of the host's own interfaces (its LAN
    neighbours, its gateway as a host). `allow`: `CIDR` or `CIDR:PORT` entries reachable even
    when in a blocked range (an allow-listed proxy or an internal registry). `allow_dns`: UDP/TCP
    53 to the nameservers of the host's resolv.conf (Docker's embedded DNS forwards from the
    container's namespace).
    """

    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    name: str = "swemint-build"
    bridge: str = "swemint0"
    blocked: list[str] = Field(default_factory=lambda: list(DEFAULT_BLOCKED))
    block_host_subnets: bool = True
    allow: list[str] = Field(default_factory=list)
    allow_dns: bool = True

    @field_validator("bridge")
    @classmethod
    def _iface(cls, v: str) -> str:
        if not (0 < len(v) <= 15) or not all(c.isalnum() or c in "-_." for c in v):
            raise ValueError(f"bridge interface name {v!r}: 1-15 characters of [A-Za-z0-9-_.]")
        return v

    @field_validator("blocked")
    @classmethod
    def _cidrs(cls, v: list[str]) -> list[str]:
        return [str(ipaddress.ip_network(c, strict=False)) for c in v]

    @field_validator("allow")
    @classmethod
    def _allow(cls, v: list[str]) -> list[str]:
        for entry in v:
            _split_allow(entry)
        return v


def _split_allow(entry: str) -> tuple[str, int | None]:
    """`"10.0.0.5:3128"` -> ("10.0.0.5/32", 3128); `"10.0.0.0/24"` -> ("10.0.0.0/24", None).
    Raises ValueError for anything else."""
    cidr, port = entry, None
    if entry.count(":") == 1:
        cidr, p = entry.split(":")
        port = int(p)
        if not 0 < port < 65536:
            raise ValueError(f"allow entry {entry!r}: port out of range")
    net = ipaddress.ip_network(cidr, strict=False)
    if net.version != 4:
        raise ValueError(f"allow entry {entry!r}: IPv4 only (the build network has no IPv6)")
    return str(net), port


def host_interfaces() -> list[ipaddress.IPv4Interface]:
    """The host's IPv4 addresses with their prefixes (`ip -j -4 addr`), loopback included."""
    try:
        out = subprocess.run(["ip", "-j", "-4", "addr", "show"], capture_output=True, text=True,
                             timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise InfraError(f"cannot list the host's addresses (ip -j -4 addr: {e})") from e
    found = []
    for link in json.loads(out or "[]"):
        for a in link.get("addr_info", []):
            if a.get("family") == "inet":
                found.append(ipaddress.IPv4Interface(f"{a['local']}/{a['prefixlen']}"))
    return found


def primary_address() -> str:
    """The host's source address for outbound traffic (`ip -j route get 203.0.113.1`'s
    `prefsrc`; no packet is sent). Raises InfraError when there is no route."""
    try:
        out = subprocess.run(["ip", "-j", "route", "get", "203.0.113.1"], capture_output=True, text=True,
                             timeout=10, check=True).stdout
        return json.loads(out)[0]["prefsrc"]
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, IndexError) as e:
        raise InfraError(f"cannot find the host's primary address: {e}") from e


def host_nameservers(resolv_conf: Path = Path("/etc/resolv.conf")) -> list[str]:
    """IPv4 nameservers of the host's resolv.conf (loopback ones left out: Docker's embedded
    DNS reaches those from the host's own namespace)."""
    found = []
    try:
        lines = resolv_conf.read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "nameserver":
            try:
                ip = ipaddress.ip_address(parts[1])
            except ValueError:
                continue
            if ip.version == 4 and not ip.is_loopback:
                found.append(str(ip))
    return found


def forward_rules(cfg: BuildNetworkConfig, interfaces: list[ipaddress.IPv4Interface],
                  nameservers: list[str]) -> list[list[str]]:
    """The `SWEMINT-BUILD` chain, in order, as iptables argument lists after `-A CHAIN`.

    Early returns first (DNS to `nameservers`, `cfg.allow`), then one DROP per blocked CIDR,
    then the host's non-loopback subnets (when `cfg.block_host_subnets`). Pure: no system call.
    """
    rules: list[list[str]] = []
    if cfg.allow_dns:
        for ns in nameservers:
            for proto in ("udp", "tcp"):
                rules.append(["-d", f"{ns}/32", "-p", proto, "--dport", "53", "-j", "RETURN"])
    for entry in cfg.allow:
        cidr, port = _split_allow(entry)
        if port is None:
            rules.append(["-d", cidr, "-j", "RETURN"])
        else:
            rules.append(["-d", cidr, "-p", "tcp", "--dport", str(port), "-j", "RETURN"])
    drops = list(cfg.blocked)
    if cfg.block_host_subnets:
        for itf in interfaces:
            if not itf.ip.is_loopback:
                drops += [str(itf.network), f"{itf.ip}/32"]
    seen: set[str] = set()
    for cidr in drops:
        if cidr not in seen:
            seen.add(cidr)
            rules.append(["-d", cidr, "-j", "DROP"])
    return rules


def _iptables(binary: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    try:
        r = subprocess.run([binary, "-w", "10", *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        raise InfraError(f"{binary} {' '.join(args)} failed: {e}") from e
    if check and r.returncode != 0:
        raise InfraError(f"{binary} {' '.join(args)} failed (exit {r.returncode}): {r.stderr.strip()[:500]}")
    return r


def _ensure(binary: str, chain: str, rule: list[str], *, first: bool) -> bool:
    """Add `rule` to `chain` unless present (`-C`); `first`: insert at the top. True if added."""
    if _iptables(binary, "-C", chain, *rule, check=False).returncode == 0:
        return False
    if first:
        _iptables(binary, "-I", chain, "1", *rule)
    else:
        _iptables(binary, "-A", chain, *rule)
    return True


def install_rules(cfg: BuildNetworkConfig, interfaces: list[ipaddress.IPv4Interface] | None = None,
                  nameservers: list[str] | None = None) -> int:
    """Install the host rules for `cfg.bridge` (see the module docstring); returns how many rules
    were added (0 when all were there). Raises InfraError when iptables is missing or refuses."""
    binary = shutil.which("iptables")
    if binary is None:
        raise InfraError("iptables is not installed: the build network's host isolation cannot be set up")
    interfaces = host_interfaces() if interfaces is None else interfaces
    nameservers = host_nameservers() if nameservers is None else nameservers
    added = 0
    if _iptables(binary, "-S", CHAIN, check=False).returncode != 0:
        _iptables(binary, "-N", CHAIN)
    if _iptables(binary, "-S", "DOCKER-USER", check=False).returncode != 0:
        _iptables(binary, "-N", "DOCKER-USER")  # the engine makes it at start; be robust to order
    rules = forward_rules(cfg, interfaces, nameservers)
    returns = [r for r in rules if r[-1] == "RETURN"]
    for rule in reversed(returns):  # early returns keep their order at the top
        added += _ensure(binary, CHAIN, rule, first=True)
    for rule in rules:
        if rule[-1] == "DROP":
            added += _ensure(binary, CHAIN, rule, first=False)
    added += _ensure(binary, "DOCKER-USER", ["-i", cfg.bridge, "-j", CHAIN], first=True)
    if _iptables(binary, "-C", "FORWARD", "-j", "DOCKER-USER", check=False).returncode != 0:
        added += _ensure(binary, "FORWARD", ["-j", "DOCKER-USER"], first=True)
    added += _ensure(binary, "INPUT", ["-i", cfg.bridge, "-j", "DROP"], first=True)
    ip6 = shutil.which("ip6tables")
    if ip6 and Path("/proc/net/if_inet6").exists():
        for chain in ("INPUT", "FORWARD"):
            if _iptables(ip6, "-S", chain, check=False).returncode == 0:
                added += _ensure(ip6, chain, ["-i", cfg.bridge, "-j", "DROP"], first=True)
    return added


def remove_bridge_rules(bridge: str) -> None:
    """Remove the rules `install_rules` added for one bridge interface (its jump to the chain,
    its INPUT drops); the chain stays, other bridges use it. Never raises for a missing rule."""
    for binary, chain, rule in (("iptables", "DOCKER-USER", ["-i", bridge, "-j", CHAIN]),
                                ("iptables", "INPUT", ["-i", bridge, "-j", "DROP"]),
                                ("ip6tables", "INPUT", ["-i", bridge, "-j", "DROP"]),
                                ("ip6tables", "FORWARD", ["-i", bridge, "-j", "DROP"])):
        path = shutil.which(binary)
        while path and _iptables(path, "-D", chain, *rule, check=False).returncode == 0:
            pass


def remove_rules(cfg: BuildNetworkConfig) -> None:
    """Remove what `install_rules` added (jumps, the INPUT drops and the chain); never raises
    for a rule that is not there."""
    remove_bridge_rules(cfg.bridge)
    path = shutil.which("iptables")
    if path:
        _iptables(path, "-F", CHAIN, check=False)
        _iptables(path, "-X", CHAIN, check=False)


def _engine_is_local(client) -> bool:
    """True when the client talks to the engine over a local unix socket (the docker SDK's base
    URL is then `http+docker://localhost` or `http+unix://...`)."""
    base = str(getattr(getattr(client, "api", None), "base_url", "") or "")
    return base.startswith(("http+docker://localhost", "http+unix://", "unix://"))


_lock = threading.Lock()
_ensured: dict[tuple[str, str], float] = {}
RECHECK_S = 300.0
"""Seconds a process trusts its last successful `ensure_build_network` before checking again."""


ENGINE_BRIDGE_LABEL = "swemint.build_bridge"
"""An engine label (`dockerd --label swemint.build_bridge=IFACE`) naming the build network's
interface on that engine; it wins over `BuildNetworkConfig.bridge`. Interface names are
host-wide, so several engines on one host (cluster nodes, `envpool.engines`) need one each."""


def engine_build_bridge(client) -> str | None:
    """The engine's `ENGINE_BRIDGE_LABEL`, None when it has none (or `info()` fails)."""
    try:
        labels = client.info().get("Labels") or []
    except Exception:  # noqa: BLE001 - an engine that does not answer fails at the network step
        return None
    for label in labels:
        key, _, value = str(label).partition("=")
        if key == ENGINE_BRIDGE_LABEL and value:
            return value
    return None


def ensure_build_network(client, cfg: BuildNetworkConfig) -> str:
    """The Docker network name build containers use, created and guarded when needed.

    With `cfg.enabled`: the bridge network `cfg.name` (interface `cfg.bridge`, or the engine's
    `ENGINE_BRIDGE_LABEL` when it declares one, inter-container
    traffic disabled, label `swemint.managed=1`) plus `install_rules(cfg)`, checked again at most
    every RECHECK_S seconds per process. Raises InfraError when the engine is not on this host
    or the rules cannot be installed: build containers are never started unguarded by accident.
    Without `cfg.enabled`: Docker's default `bridge`, with a warning.
    """
    if not cfg.enabled:
        log.warning("build network isolation is off: build containers use Docker's default bridge "
                    "and can reach every service of the host")
        return "bridge"
    bridge = engine_build_bridge(client)
    if bridge and bridge != cfg.bridge:
        cfg = cfg.model_copy(update={"bridge": BuildNetworkConfig(bridge=bridge).bridge})
    key = (str(getattr(client.api, "base_url", "")), cfg.name)
    with _lock:
        if time.monotonic() - _ensured.get(key, -1e9) < RECHECK_S:
            return cfg.name
        if not _engine_is_local(client):
            raise InfraError(f"the Docker engine ({key[0]}) is not on this host: swemint cannot install the "
                             "build network's host isolation there; install it on the engine's host "
                             "(python -m envpool.netguard --install) and set build_network.enabled=false")
        _create_network(client, cfg)
        install_rules(cfg)
        _ensured[key] = time.monotonic()
    return cfg.name


def _create_network(client, cfg: BuildNetworkConfig) -> None:
    import docker

    found = client.networks.list(names=[cfg.name])
    for net in found:
        if net.name == cfg.name:
            opts = (net.attrs or {}).get("Options") or {}
            if opts.get("com.docker.network.bridge.name") not in (None, cfg.bridge):
                raise InfraError(f"network {cfg.name} exists on another interface "
                                 f"({opts.get('com.docker.network.bridge.name')}); remove it or set build_network.name")
            return
    try:
        client.networks.create(cfg.name, driver="bridge", check_duplicate=True,
                               options={"com.docker.network.bridge.name": cfg.bridge,
                                        "com.docker.network.bridge.enable_icc": "false"},
                               labels={"swemint.managed": "1"})
    except docker.errors.APIError as e:
        if "already exists" not in str(e):
            raise InfraError(f"could not create the build network {cfg.name}: {e}") from e


def _main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m envpool.netguard",
                                 description="The build network's host isolation (see envpool/netguard.py).")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--print", action="store_true", help="print the iptables rules for this host")
    g.add_argument("--install", action="store_true", help="create the network and install the rules")
    g.add_argument("--remove", action="store_true", help="remove the rules (the network stays)")
    args = ap.parse_args(argv)
    cfg = BuildNetworkConfig()
    if args.print:
        print(f"iptables -N {CHAIN}")
        for rule in forward_rules(cfg, host_interfaces(), host_nameservers()):
            print(f"iptables -A {CHAIN} {' '.join(rule)}")
        print(f"iptables -I DOCKER-USER 1 -i {cfg.bridge} -j {CHAIN}")
        print(f"iptables -I INPUT 1 -i {cfg.bridge} -j DROP")
        print(f"ip6tables -I INPUT 1 -i {cfg.bridge} -j DROP; ip6tables -I FORWARD 1 -i {cfg.bridge} -j DROP")
        return 0
    if args.remove:
        remove_rules(cfg)
        return 0
    import docker

    name = ensure_build_network(docker.from_env(timeout=120), cfg)
    print(f"build network {name} on {cfg.bridge}: guarded")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
