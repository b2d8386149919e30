"""A local Ray that nobody else can talk to: token authentication always, every socket on loopback
for real, checked on the listening sockets rather than trusted from a parameter.

Why (see the platform notes): Ray's job API and GCS run code. Ray 2.60 started by `ray.init()`
with `_node_ip_address="127.0.0.1"` still binds the GCS, raylets and workers to `*` and the
dashboard agent to the host's routable address, because `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER` is
read when `ray` is first imported; with `RAY_AUTH_MODE=disabled` any process that reaches one of
those sockets (a build container on a Docker bridge, a neighbour on the LAN) runs code as the
driver's user.
"""

from __future__ import annotations

import atexit
import logging
import os
import secrets
import shutil
import tempfile
from pathlib import Path

from envpool.errors import InfraError

log = logging.getLogger(__name__)

_TOKEN_PATH: Path | None = None
_MADE: Path | None = None
"""The token folder this process made (None: none, or the token came from RAY_AUTH_TOKEN_PATH)."""
_BEFORE: dict[str, str | None] = {}
"""The auth variables as they were before `ensure_local_token` made that folder."""


def ensure_local_token(base: Path | None = None) -> Path:
    """Turn on Ray token auth for this process and the Ray it starts; returns the token file.

    One token per process (Ray caches the token it read, so a second local Ray in the same
    process must use the same file): 32 random bytes as hex in a fresh 0700 folder under `base`
    (default: the system temp dir), file mode 0600. Sets `RAY_AUTH_MODE=token` and
    `RAY_AUTH_TOKEN_PATH`; an explicit `RAY_AUTH_MODE=disabled` is overridden with a warning:
    swemint never starts Ray without authentication. The folder is removed by
    `release_local_token` (when the local Ray ends: `pipeline.ray_adapter.shutdown_local_ray`)
    or at the latest when the process exits normally (atexit; not after SIGKILL).
    """
    global _TOKEN_PATH, _MADE
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "disabled":
        log.warning("RAY_AUTH_MODE=disabled ignored: swemint starts its local Ray with token auth only")
    if _TOKEN_PATH is None or not _TOKEN_PATH.is_file():
        given = os.environ.get("RAY_AUTH_TOKEN_PATH")
        if given and Path(given).is_file():
            _TOKEN_PATH = Path(given)
        else:
            if base is not None:
                base.mkdir(parents=True, exist_ok=True)
            _BEFORE.clear()
            _BEFORE.update({k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")})
            folder = Path(tempfile.mkdtemp(prefix="swemint-ray-auth-", dir=base))
            os.chmod(folder, 0o700)
            path = folder / "auth_token"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32))
            _TOKEN_PATH, _MADE = path, folder
            atexit.register(release_local_token)  # a driver that never calls it (an exception, ^C)
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN_PATH"] = str(_TOKEN_PATH)
    os.environ.pop("RAY_AUTH_TOKEN", None)
    _refresh_ray_auth()
    return _TOKEN_PATH


def release_local_token() -> None:
    """Remove the token folder `ensure_local_token` made, once the local Ray it was made for has
    ended; `RAY_AUTH_MODE` / `RAY_AUTH_TOKEN_PATH` get back the values they had before. A token
    given by `RAY_AUTH_TOKEN_PATH` is never touched. Idempotent."""
    global _TOKEN_PATH, _MADE
    folder, _MADE = _MADE, None
    if folder is None:
        return
    if _TOKEN_PATH is not None and _TOKEN_PATH.parent == folder:
        _TOKEN_PATH = None
    if os.environ.get("RAY_AUTH_TOKEN_PATH", "").startswith(str(folder) + os.sep):
        for k, v in _BEFORE.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    shutil.rmtree(folder, ignore_errors=True)


def _refresh_ray_auth() -> None:
    """Make an already imported `ray` see the auth environment (its C++ config and token cache
    read it once; Ray's own `_enable_token_auth` refreshes the same way)."""
    try:
        from ray._raylet import AuthenticationTokenLoader, Config
    except ImportError:  # pragma: no cover - Ray is a dependency
        return
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def force_loopback() -> None:
    """Make a local Ray bind 127.0.0.1: the environment variable for the processes it spawns, and
    the constant `ray` computed from it at import (it may already be imported)."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    try:
        from ray._private import ray_constants
    except ImportError:  # pragma: no cover - Ray is a dependency
        return
    ray_constants.ENABLE_RAY_CLUSTER = False


def descendants(pid: int) -> set[int]:
    """Pids of every process below `pid` (from /proc/*/stat), `pid` itself excluded."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in found:
                found.add(c)
                todo.append(c)
    return found


def _hex_ip(hex_addr: str, v6: bool) -> str:
    import ipaddress

    raw = bytes.fromhex(hex_addr)
    if not v6:
        return str(ipaddress.IPv4Address(raw[::-1]))
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    ip = ipaddress.IPv6Address(words)
    return str(ip.ipv4_mapped or ip)


def listening_sockets(pids: set[int]) -> list[tuple[int, str, str, int]]:
    """(pid, process name, local address, port) of each listening TCP socket held by `pids`,
    read from /proc/net/tcp{,6} and /proc/<pid>/fd (Linux only; no dependency)."""
    listen: dict[str, tuple[str, int]] = {}
    for name, v6 in (("tcp", False), ("tcp6", True)):
        try:
            lines = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) > 9 and parts[3] == "0A":  # TCP_LISTEN
                addr, port = parts[1].split(":")
                listen[parts[9]] = (_hex_ip(addr, v6), int(port, 16))
    found = []
    for pid in sorted(pids):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inode = target[8:-1]
                if inode in listen:
                    found.append((pid, comm, *listen[inode]))
    return found


def exposed_sockets(root_pid: int | None = None) -> list[tuple[int, str, str, int]]:
    """Listening sockets of this process and everything below it (a local Ray's GCS, raylets,
    agents, workers) that are bound beyond loopback."""
    root = os.getpid() if root_pid is None else root_pid
    out = []
    for pid, comm, ip, port in listening_sockets(descendants(root) | {root}):
        if ip not in ("127.0.0.1", "::1") and not ip.startswith("127."):
            out.append((pid, comm, ip, port))
    return out


def assert_loopback_only(root_pid: int | None = None) -> None:
    """Raise InfraError naming each socket of the local Ray (this process's tree) that listens
    beyond loopback."""
    bad = exposed_sockets(root_pid)
    if bad:
        shown = ", ".join(f"{comm}[{pid}] on {ip}:{port}" for pid, comm, ip, port in bad[:6])
        raise InfraError(f"the local Ray listens beyond loopback ({shown}): refusing to run builds beside it")
