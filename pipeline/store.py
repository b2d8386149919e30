"""Durable per-instance state under WORKDIR, and the Parquet export.

Layout (one folder per instance, datatrove-style completion markers):

    WORKDIR/instances/<instance_id>/instance.json   the input row (so `export` needs no input file)
    WORKDIR/instances/<instance_id>/RUNNING         written when submitted (host, pid, time)
    WORKDIR/instances/<instance_id>/result.json     the InstanceResult (temp file + os.replace)
    WORKDIR/instances/<instance_id>/DONE            the outcome, written after result.json
    WORKDIR/attempts.jsonl                          one line per submission (instance_id, pid, host, at)
    WORKDIR/driver.lock                             flock held by the one running driver
    WORKDIR/dataset/{verified,all}.parquet          `export_dataset`

An instance is finished when DONE and result.json exist. A rerun never redoes `verified`, redoes
outcomes listed in `retry_outcomes`, and redoes instances left RUNNING by a crashed run.
Only the pipeline driver writes these files, each atomically (`atomic_write`: temp file, fsync,
rename, fsync of the folder), and `driver_lock` makes sure only one driver runs per WORKDIR (the
lock dies with its process, so a `kill -9`ed driver never blocks the rerun). A state file that
does not parse (torn by a crash, or edited) is never a crash: it is renamed to
`<name>.corrupt-<time>` (`quarantine`, logged as a warning) and the instance counts as not
finished, so the next run redoes it. Folder names come from `envpool.naming.folder_name`
(injective: two ids never share a folder, none escapes `instances/`).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from agents.models import Instance, InstanceResult
from envpool.naming import folder_name

log = logging.getLogger(__name__)

RESULT, RUNNING, DONE, INSTANCE = "result.json", "RUNNING", "DONE", "instance.json"
ATTEMPTS, LOCK = "attempts.jsonl", "driver.lock"


class WorkdirLocked(BlockingIOError):
    """Another live driver holds WORKDIR/driver.lock (its pid is in the message)."""


@contextmanager
def driver_lock(workdir: Path | str, wait: float = 0.0) -> Iterator[Path]:
    """Hold an exclusive `flock` on `workdir/driver.lock` for the block; yields the lock path.

    The lock file records the holder's pid and host. `wait`: seconds to keep trying while
    another process holds it (0: fail at once); then raises WorkdirLocked naming the holder. The
    kernel drops the lock when its process dies, `kill -9` included, so a crashed driver never
    blocks the rerun. Advisory and per host: on a shared file system that does not support
    flock, it protects only against drivers on this host.
    """
    path = Path(workdir) / LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + wait
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.1)
                    continue
                holder = path.read_text(encoding="utf-8", errors="replace").strip() or "unknown"
                raise WorkdirLocked(f"another swemint driver is running on {path.parent} ({holder})") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
        yield path
    finally:
        os.close(fd)  # releases the lock


safe_name = folder_name
"""The folder of an instance id (`envpool.naming.folder_name`, shared with `agents.minter`)."""


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot fsync a folder; the rename is still atomic
    finally:
        os.close(fd)


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a uniquely named temp path next to `path`; when the block ends normally the file
    written there is fsynced and renamed over `path` (then the folder is fsynced). Readers see
    the old or the new content, never a mix; concurrent writers never share a temp file. On an
    exception the temp file is removed and `path` left as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write `data` (text as UTF-8) to `path` atomically (`atomic_path`). Raises OSError."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path) as tmp:
        tmp.write_bytes(raw)


def quarantine(path: Path, why: str) -> Path | None:
    """Move an unreadable state file aside as `<name>.corrupt-<UTC time>-<pid>` and log a warning
    with `why`; returns the new path (None when the file vanished meanwhile)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = path.with_name(f"{path.name}.corrupt-{stamp}-{os.getpid()}")
    try:
        os.replace(path, target)
    except FileNotFoundError:
        return None
    log.warning("quarantined %s as %s: %s", path, target.name, why.splitlines()[0][:300] if why else "unreadable")
    return target


def _printable(value):
    """`value` (dicts, lists, strings) with unencodable characters as backslash escapes."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable(v) for v in value]
    return value


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
        """Write result.json atomically, then DONE, then drop RUNNING; returns result.json's path.
        Text UTF-8 cannot encode (a lone surrogate in a test id a runner printed) is written as
        `\\udXXX` escapes, so one row's bad string never stops the batch."""
        d = self.dir(result.instance_id)
        path = d / RESULT
        try:
            text = result.model_dump_json(indent=1)
        except ValueError:  # pydantic's serialisation error for a lone surrogate
            text = InstanceResult.model_validate(_printable(result.model_dump())).model_dump_json(indent=1)
        atomic_write(path, text)
        atomic_write(d / DONE, result.outcome + "\n")
        (d / RUNNING).unlink(missing_ok=True)
        return path

    def _load_result(self, d: Path) -> InstanceResult | None:
        """result.json of folder `d` when DONE and it exist; a file that does not parse is
        quarantined (with DONE removed, so the instance counts as not finished) -> None."""
        if not (d / DONE).exists() or not (d / RESULT).exists():
            return None
        try:
            return InstanceResult.model_validate_json((d / RESULT).read_bytes())
        except (ValueError, OSError) as e:
            quarantine(d / RESULT, f"{type(e).__name__}: {e}")
            (d / DONE).unlink(missing_ok=True)
            return None

    @staticmethod
    def _load_instance(p: Path) -> Instance | None:
        if not p.exists():
            return None
        try:
            return Instance.model_validate_json(p.read_bytes())
        except (ValueError, OSError) as e:
            quarantine(p, f"{type(e).__name__}: {e}")
            return None

    def read_result(self, instance_id: str) -> InstanceResult | None:
        """The finished result of `instance_id`, or None (never run, running, crashed, or its
        result.json did not parse and was quarantined)."""
        return self._load_result(self.dir(instance_id))

    def read_instance(self, instance_id: str) -> Instance | None:
        """The instance row recorded by `mark_running`, or None (absent, or quarantined)."""
        return self._load_instance(self.dir(instance_id) / INSTANCE)

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
            res = self._load_result(d) if d.is_dir() else None
            if res is not None:
                out.append(res)
        return out

    def instances(self) -> dict[str, Instance]:
        """Every recorded instance row, by instance id (unreadable ones quarantined, left out)."""
        if not self.root.is_dir():
            return {}
        out = {}
        for p in sorted(self.root.glob(f"*/{INSTANCE}")):
            inst = self._load_instance(p)
            if inst is not None:
                out[inst.instance_id] = inst
        return out


_LIST = pa.list_(pa.string())
SCHEMA = pa.schema([
    ("instance_id", pa.string()), ("repo", pa.string()), ("base_commit", pa.string()),
    ("patch", pa.string()), ("test_patch", pa.string()), ("problem_statement", pa.string()),
    ("hints_text", pa.string()), ("created_at", pa.string()), ("version", pa.string()),
    ("FAIL_TO_PASS", _LIST), ("PASS_TO_PASS", _LIST), ("environment_setup_commit", pa.string()),
    ("language", pa.string()), ("image", pa.string()), ("image_id", pa.string()),
    ("dockerfile", pa.string()), ("setup_script", pa.string()), ("test_command", pa.string()),
    ("parser", pa.string()), ("interpreter", pa.string()), ("test_files", _LIST), ("flaky_tests", _LIST),
    ("outcome", pa.string()), ("reason", pa.string()), ("log_path", pa.string()),
    ("timings", pa.string()), ("total_seconds", pa.float64()), ("reused_from", pa.string()),
    ("incremental_commands", _LIST), ("llm_usage", pa.string()), ("test_infra_files", _LIST),
    ("anomalies", _LIST),
    ("source", pa.string()), ("pull_number", pa.int64()), ("issue_numbers", pa.list_(pa.int64())),
    ("commit", pa.string()), ("quality_score", pa.float64()), ("crawled_at", pa.string()),
])
"""Export columns: SWE-bench's (FAIL_TO_PASS / PASS_TO_PASS are ours, not gold;
`environment_setup_commit` is always null) then swemint's. `timings` is a JSON object string
(phase -> seconds; phases vary by run, a JSON string loads the same in pandas, DuckDB and HF
`datasets`); `total_seconds` is `timings["total"]` when present. `reused_from`: the instance
whose pooled environment was adapted; `incremental_commands`: what EnvPatch added on top of it;
`llm_usage`: JSON `{"total": ..., "by_agent": ...}` (tokens, USD) or null. `test_infra_files`:
test-infrastructure files the patches touch (`patch:<path>`, `test_patch:<path>`); `anomalies`:
why test runs were not graded (envpool.testrun.trust). Provenance (crawled rows; null
otherwise): `source` (`github` | `git`), `pull_number`, `issue_numbers`, `commit` (the PR's
merge commit or the mined commit), `quality_score` (the filter's, 0..1), `crawled_at`."""


PROVENANCE = ("source", "pull_number", "issue_numbers", "commit", "quality_score", "crawled_at")
"""Instance fields exported as they are (`agents.models.Instance`)."""


def _row(res: InstanceResult, inst: Instance | None) -> dict:
    i = inst.model_dump() if inst else {}
    return {
        "instance_id": res.instance_id, "repo": res.repo, "base_commit": i.get("base_commit"),
        "patch": i.get("patch"), "test_patch": i.get("test_patch"),
        "problem_statement": i.get("problem_statement"), "hints_text": i.get("hints_text"),
        "created_at": i.get("created_at"), "version": res.version or i.get("version"),
        "FAIL_TO_PASS": list(res.FAIL_TO_PASS), "PASS_TO_PASS": list(res.PASS_TO_PASS),
        "environment_setup_commit": None, "language": i.get("language"),
        "image": res.image, "image_id": res.image_id, "dockerfile": res.dockerfile,
        "setup_script": res.setup_script, "test_command": res.test_command, "parser": res.parser,
        "interpreter": res.interpreter, "test_files": list(res.test_files),
        "flaky_tests": list(res.flaky_tests), "outcome": res.outcome, "reason": res.reason,
        "log_path": res.log_path, "timings": json.dumps(res.timings, sort_keys=True),
        "total_seconds": res.timings.get("total"), "reused_from": res.reused_from,
        "incremental_commands": list(res.incremental_commands),
        "llm_usage": json.dumps(res.llm_usage, sort_keys=True) if res.llm_usage else None,
        "test_infra_files": list(res.test_infra_files), "anomalies": list(res.anomalies),
        **{k: i.get(k) for k in PROVENANCE},
    }


def export_parquet(results: Iterable[InstanceResult], instances: dict[str, Instance] | Iterable[Instance],
                   path: Path | str) -> int:
    """Write `results` (joined with their input rows by instance id) to Parquet at `path`.

    Instance fields are null for a result without an input row. Returns the row count.
    """
    if not isinstance(instances, dict):
        instances = {i.instance_id: i for i in instances}
    rows = [_row(r, instances.get(r.instance_id)) for r in results]
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:  # a unique temp file: concurrent exports never collide
        pq.write_table(table, tmp)
    return len(rows)


def export_dataset(store: ResultStore, instances: Iterable[Instance] = ()) -> dict[str, Path]:
    """Write `WORKDIR/dataset/verified.parquet` (verified only) and `all.parquet` (every outcome)
    from every finished result in `store`; `instances` add to the rows recorded in the store.
    Returns {"verified": path, "all": path}."""
    known = store.instances()
    known.update({i.instance_id: i for i in instances})
    results = store.results()
    out = store.workdir / "dataset"
    paths = {"verified": out / "verified.parquet", "all": out / "all.parquet"}
    export_parquet([r for r in results if r.outcome == "verified"], known, paths["verified"])
    export_parquet(results, known, paths["all"])
    return paths
