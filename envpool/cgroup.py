"""CPU accounting read from the kernel: a container's cgroup, the host's `/proc/stat`, the load.

Docker accounts a container's processes to its cgroup, not to the process that started it, so
the CPU-seconds of a build or a test run are read from the cgroup's counter (cgroup v1
`cpuacct.usage` in nanoseconds; v2 `cpu.stat` `usage_usec`; cgroupfs and systemd layouts) just
before the container is removed (`envpool.docker_sandbox.DockerSandbox.close`): exact, with no
sampling. The host's busy CPU-seconds (`host_cpu_seconds`: every process of the machine, other
work included) and the load average put a row's numbers in context: repeats of one instance at
host load 4-15 differed by up to 7x in wall time, far less in CPU-seconds. Every reader returns
None (never raises) where the file is missing or unreadable.
"""

from __future__ import annotations

import os
import resource
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")
PROC_STAT = Path("/proc/stat")


def container_cpu_seconds(container_id: str, root: Path = CGROUP) -> float | None:
    """CPU seconds used so far by the container `container_id` (full id), from its cgroup; None
    when no known cgroup file is readable (the container is gone, or another layout)."""
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


def host_cpu_seconds(stat: Path = PROC_STAT) -> float | None:
    """Busy CPU-seconds of the whole host since boot (every core: user, nice, system, irq,
    softirq, steal; not idle or iowait), from the `cpu` line of /proc/stat; None when unreadable.
    Differences of two readings give the host's CPU spent between them."""
    try:
        with stat.open() as f:
            parts = f.readline().split()
    except OSError:
        return None
    if not parts or parts[0] != "cpu":
        return None
    try:
        v = [int(x) for x in parts[1:]]
    except ValueError:
        return None
    busy = sum(v[:3]) + sum(v[5:8])  # user nice system [idle iowait] irq softirq steal
    return busy / (os.sysconf("SC_CLK_TCK") or 100)


def load_average() -> list[float] | None:
    """The host's 1-, 5- and 15-minute load averages (None where the platform has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def cores() -> int:
    """Cores this process may run on (its affinity), else the host's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def process_cpu_now() -> float:
    """Seconds: this thread's CPU time + the CPU time of this process's waited-for children
    (`RUSAGE_CHILDREN` is per process: exact in a worker running one task, an over-count when
    threads of one process run subprocesses at once)."""
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.thread_time() + ch.ru_utime + ch.ru_stime


def wait_cpu(proc: subprocess.Popen) -> float:
    """Reap `proc` (blocking) and return the CPU-seconds it and the children it waited for used
    (`os.wait4`: exact for this one process, whatever other threads run meanwhile); its
    `returncode` is set as `wait()` would. 0.0 when it was reaped already."""
    if proc.returncode is not None:
        return 0.0
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except ChildProcessError:
        proc.wait()
        return 0.0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


_image_listener: ContextVar[Callable[[float, float], None] | None] = ContextVar("swemint_image_cpu", default=None)
_image_children_lock = threading.Lock()
_image_children = 0.0


def image_children_cpu() -> float:
    """CPU-seconds of this process's waited-for children that image builds reported so far
    (`note_image_cpu`'s `children_s`, every thread's, outside any meter too): `RUSAGE_CHILDREN`
    is per process, so a meter takes the growth of this over its span out of `process_cpu_now`'s
    (an instance minting in one thread while another debootstraps a base)."""
    with _image_children_lock:
        return _image_children


@contextmanager
def image_cpu_listener(listener: Callable[[float, float], None]) -> Iterator[None]:
    """Within the block (this thread or task), every image build `note_image_cpu` reports is
    passed to `listener(seconds, thread_s)`: an instance's cost meter
    (`agents.cost.CostMeter.watching_images`)."""
    token = _image_listener.set(listener)
    try:
        yield
    finally:
        _image_listener.reset(token)


def note_image_cpu(seconds: float | None, thread_s: float = 0.0, children_s: float = 0.0) -> None:
    """An image build (a Debian base, a toolchain layer: `envpool.imagestore.DockerImageStore`)
    cost `seconds` CPU-seconds in all -- its build containers' cgroups, the engine's commit or
    import, host processes -- of which `thread_s` were this thread's own (`time.thread_time`)
    and `children_s` this process's waited-for children (debootstrap, tar, the docker CLI), both
    of which `process_cpu_now` counts too: `children_s` in every thread's reading
    (`image_children_cpu`), `thread_s` in this thread's only. Tells the listener
    `image_cpu_listener` set, if any; never raises."""
    global _image_children
    if children_s:
        with _image_children_lock:
            _image_children += max(0.0, float(children_s))
    listener = _image_listener.get()
    if listener is None or not (seconds or thread_s):
        return
    try:
        listener(float(seconds or 0.0), float(thread_s or 0.0))
    except Exception:  # noqa: BLE001 - a meter never breaks a build
        pass


ENGINE_PROCESSES = ("dockerd", "containerd")
"""Names (`/proc/<pid>/comm`) of the engine's own processes, whose CPU a commit spends."""
_engine_pids: list[int] = []


def _proc_cpu(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / (os.sysconf("SC_CLK_TCK") or 100)
    except (OSError, ValueError, IndexError):
        return None


def engine_cpu_seconds(proc: Path = Path("/proc")) -> float | None:
    """CPU-seconds the local Docker engine's processes (`ENGINE_PROCESSES`) used since they
    started; None when none runs here (a remote engine). Differences of two readings around a
    `docker commit` give what the commit cost the engine (with whatever else it did meanwhile)."""
    global _engine_pids
    if not _engine_pids or any(_proc_cpu(p) is None for p in _engine_pids):
        found = []
        try:
            for d in proc.iterdir():
                if d.name.isdigit():
                    try:
                        if (d / "comm").read_text().strip() in ENGINE_PROCESSES:
                            found.append(int(d.name))
                    except OSError:
                        continue
        except OSError:
            return None
        _engine_pids = found
    vals = [v for v in (_proc_cpu(p) for p in _engine_pids) if v is not None]
    return sum(vals) if vals else None
