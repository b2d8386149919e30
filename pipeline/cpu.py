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
import threading
import time
from types import TracebackType

from envpool.cgroup import CGROUP, container_cpu_seconds, process_cpu_now

log = logging.getLogger(__name__)
__all__ = ["CGROUP", "ContainerCpu", "container_cpu_seconds", "cpu_now"]


def cpu_now() -> float:
    """Seconds: this thread's CPU time + the CPU time of this process's waited-for children
    (`envpool.cgroup.process_cpu_now`)."""
    return process_cpu_now()


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
