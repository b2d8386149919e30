"""CPU-seconds of a piece of work: this thread, the subprocesses it waited for, and the Docker
containers it ran (which the kernel accounts to the engine's cgroups, not to us).

`cpu_now()` is this thread's CPU time plus that of waited-for children (`RUSAGE_CHILDREN`, which
is per process: exact in a Ray worker running one task, an over-count when threads of one
process run subprocesses at once). `ContainerCpu(labels)` looks for the containers carrying all
of `labels` once a second (Docker API) and reads their cgroup CPU counters every 0.2 s (cgroup
v1 `cpuacct.usage`, v2 `cpu.stat` `usage_usec`, cgroupfs and systemd layouts), keeping each
container's last value: what a container spends after its last read (< 0.2 s), and a container
that lives less than a second, are missed. Without a Docker engine or readable cgroups it
reports 0, never raises.
"""

from __future__ import annotations

import logging
import resource
import threading
import time
from pathlib import Path
from types import TracebackType

log = logging.getLogger(__name__)
CGROUP = Path("/sys/fs/cgroup")


def cpu_now() -> float:
    """Seconds: this thread's CPU time + the CPU time of this process's waited-for children."""
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.thread_time() + ch.ru_utime + ch.ru_stime


def container_cpu_seconds(container_id: str, root: Path = CGROUP) -> float | None:
    """CPU seconds used so far by the container `container_id` (full id), from its cgroup; None
    when no known cgroup file is readable."""
    v1 = [root / "cpuacct" / "docker" / container_id / "cpuacct.usage",
          root / "cpuacct" / "system.slice" / f"docker-{container_id}.scope" / "cpuacct.usage",
          root / "cpu,cpuacct" / "docker" / container_id / "cpuacct.usage"]
    for p in v1:
        try:
            return int(p.read_text().strip()) / 1e9
        except (OSError, ValueError):
            continue
    for p in (root / "system.slice" / f"docker-{container_id}.scope" / "cpu.stat",
              root / "docker" / container_id / "cpu.stat"):
        try:
            for line in p.read_text().splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
        except (OSError, ValueError):
            continue
    return None


class ContainerCpu:
    """Context manager summing the CPU seconds of containers labelled with all of `labels`
    while the block runs (`seconds` after exit). `interval`: seconds between counter reads;
    `discover_every`: seconds between looks for new containers."""

    def __init__(self, labels: dict[str, str], interval: float = 0.2, discover_every: float = 1.0):
        self.labels, self.interval, self.discover_every = labels, interval, discover_every
        self.seen: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._client = None

    @property
    def seconds(self) -> float:
        """CPU seconds of every container seen (each at its last sample)."""
        return round(sum(self.seen.values()), 3)

    def discover(self) -> None:
        """Look for matching containers now (an engine error ends the sampling)."""
        try:
            if self._client is None:
                from envpool.docker_sandbox import docker_client

                self._client = docker_client()
            found = self._client.containers.list(filters={"label": [f"{k}={v}" for k, v in self.labels.items()]})
        except Exception as e:  # noqa: BLE001 - no engine: nothing to measure
            log.debug("container CPU: %s", e)
            self._stop.set()
            return
        for c in found:
            self.seen.setdefault(c.id, 0.0)

    def sample(self) -> None:
        """Read the counters of the containers found so far (gone ones keep their last value)."""
        for cid in list(self.seen):
            secs = container_cpu_seconds(cid)
            if secs is not None:
                self.seen[cid] = max(secs, self.seen[cid])

    def _loop(self) -> None:
        last = float("-inf")
        while not self._stop.wait(self.interval):
            if time.monotonic() - last >= self.discover_every:
                self.discover()
                last = time.monotonic()
            self.sample()

    def __enter__(self) -> ContainerCpu:
        self._thread = threading.Thread(target=self._loop, daemon=True, name="swemint-container-cpu")
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
