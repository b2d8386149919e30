"""Durable per-instance state under WORKDIR (the Parquet export is `pipeline.export`).

Layout (one folder per instance, datatrove-style completion markers):

    WORKDIR/instances/<instance_id>/instance.json   the input row (so `export` needs no input file)
    WORKDIR/instances/<instance_id>/RUNNING         written when submitted (host, pid, time)
    WORKDIR/instances/<instance_id>/result.json     the InstanceResult (temp file + os.replace)
    WORKDIR/instances/<instance_id>/DONE            the outcome, written after result.json
    WORKDIR/attempts.jsonl                          one line per submission (instance_id, pid, host, at)
    WORKDIR/driver.lock                             flock held by the one running driver
    WORKDIR/dataset/{verified,all}.parquet, README.md  `export_dataset` (pipeline.export)

An instance is finished when DONE and result.json exist. A rerun never redoes `verified`, redoes
outcomes listed in `retry_outcomes`, and redoes instances left RUNNING by a crashed run.
Only the pipeline driver writes here, and `driver_lock` makes sure only one driver runs per
WORKDIR (the lock dies with its process, so a `kill -9`ed driver never blocks the rerun).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from agents.models import Instance, InstanceResult

RESULT, RUNNING, DONE, INSTANCE = "result.json", "RUNNING", "DONE", "instance.json"
ATTEMPTS, LOCK = "attempts.jsonl", "driver.lock"


class WorkdirLocked(BlockingIOError):
    """Another live driver holds WORKDIR/driver.lock (its pid is in the message)."""


@contextmanager
def driver_lock(workdir: Path | str) -> Iterator[Path]:
    """Hold an exclusive `flock` on `workdir/driver.lock` for the block; yields the lock path.

    The lock file records the holder's pid and host. Raises WorkdirLocked at once (no waiting)
    when another process holds it. The kernel drops the lock when its process dies, `kill -9`
    included, so a crashed driver never blocks the rerun. Advisory and per host: on a shared
    file system that does not support flock, it protects only against drivers on this host.
    """
    path = Path(workdir) / LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = path.read_text(encoding="utf-8", errors="replace").strip() or "unknown"
            raise WorkdirLocked(f"another swemint driver is running on {path.parent} ({holder})") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
        yield path
    finally:
        os.close(fd)  # releases the lock


def safe_name(instance_id: str) -> str:
    """A folder name for `instance_id`: characters outside `[A-Za-z0-9_.-]` become `_` (the same
    rule as `agents.minter`, which writes its logs into this folder)."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", instance_id)
    return "_" + name if name in {"", ".", ".."} else name


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` via a temp file in the same folder and `os.replace`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class ResultStore:
    """Per-instance folders under `workdir/instances`.

    Args:
        workdir: the run's WORKDIR.
        retry_outcomes: finished outcomes to redo on a rerun (`verified` is never redone).
    """

    def __init__(self, workdir: Path | str, retry_outcomes: Iterable[str] = ()):
        self.workdir = Path(workdir)
        self.root = self.workdir / "instances"
        self.retry_outcomes = set(retry_outcomes) - {"verified"}

    def dir(self, instance_id: str) -> Path:
        """The folder of `instance_id` (not created)."""
        return self.root / safe_name(instance_id)

    def mark_running(self, instance: Instance) -> None:
        """Record `instance` (instance.json) and a RUNNING marker; clears an old DONE; appends a
        line to WORKDIR/attempts.jsonl (how often each instance was started, across runs)."""
        d = self.dir(instance.instance_id)
        atomic_write(d / INSTANCE, instance.model_dump_json())
        (d / DONE).unlink(missing_ok=True)
        stamp = {"host": socket.gethostname(), "pid": os.getpid(), "at": datetime.now(timezone.utc).isoformat()}
        atomic_write(d / RUNNING, json.dumps(stamp))
        with (self.workdir / ATTEMPTS).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"instance_id": instance.instance_id, **stamp}) + "\n")

    def attempts(self) -> Counter[str]:
        """instance_id -> how many times it was submitted in this WORKDIR (every run)."""
        path = self.workdir / ATTEMPTS
        if not path.exists():
            return Counter()
        out: Counter[str] = Counter()
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                out[json.loads(line)["instance_id"]] += 1
            except (ValueError, KeyError, TypeError):
                continue  # a line torn by a kill
        return out

    def started(self, instance_id: str) -> bool:
        """True when an earlier run got as far as submitting `instance_id` (its folder exists)."""
        return self.dir(instance_id).is_dir()

    def write_result(self, result: InstanceResult) -> Path:
        """Write result.json atomically, then DONE, then drop RUNNING; returns result.json's path."""
        d = self.dir(result.instance_id)
        path = d / RESULT
        atomic_write(path, result.model_dump_json(indent=1))
        atomic_write(d / DONE, result.outcome + "\n")
        (d / RUNNING).unlink(missing_ok=True)
        return path

    def read_result(self, instance_id: str) -> InstanceResult | None:
        """The finished result of `instance_id`, or None (never run, running, or crashed)."""
        d = self.dir(instance_id)
        if not (d / DONE).exists() or not (d / RESULT).exists():
            return None
        return InstanceResult.model_validate_json((d / RESULT).read_text(encoding="utf-8"))

    def read_instance(self, instance_id: str) -> Instance | None:
        """The instance row recorded by `mark_running`, or None."""
        p = self.dir(instance_id) / INSTANCE
        return Instance.model_validate_json(p.read_text(encoding="utf-8")) if p.exists() else None

    def is_running(self, instance_id: str) -> bool:
        """True when a RUNNING marker exists without DONE (running now, or a crashed run)."""
        d = self.dir(instance_id)
        return (d / RUNNING).exists() and not (d / DONE).exists()

    def needs_run(self, instance_id: str) -> bool:
        """False when finished with `verified` or an outcome not in `retry_outcomes`."""
        res = self.read_result(instance_id)
        return res is None or res.outcome in self.retry_outcomes

    def results(self) -> list[InstanceResult]:
        """Every finished result, sorted by instance id."""
        if not self.root.is_dir():
            return []
        out = []
        for d in sorted(self.root.iterdir()):
            if (d / DONE).exists() and (d / RESULT).exists():
                out.append(InstanceResult.model_validate_json((d / RESULT).read_text(encoding="utf-8")))
        return out

    def instances(self) -> dict[str, Instance]:
        """Every recorded instance row, by instance id."""
        if not self.root.is_dir():
            return {}
        out = {}
        for p in sorted(self.root.glob(f"*/{INSTANCE}")):
            inst = Instance.model_validate_json(p.read_text(encoding="utf-8"))
            out[inst.instance_id] = inst
        return out
