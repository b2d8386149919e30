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
Only the pipeline driver writes these files, each atomically (`atomic_write`: temp file, fsync,
rename, fsync of the folder), and `driver_lock` makes sure only one driver runs per WORKDIR (the
lock dies with its process, so a `kill -9`ed driver never blocks the rerun).

Reading a state file that does not parse is never a crash; what happens depends on why and on who
reads (`ResultStore._load_result`):

- not JSON, torn, not an object, or JSON that does not validate for another reason: a store
  whose process holds the driver lock (`holds_driver_lock`) and that is not `read_only` renames
  it to `<name>.corrupt-<time>-<pid>` (`quarantine`, logged as a warning) and removes DONE, so
  the run redoes the instance; any other reader (`swemint eval`, `report`, `export`, `bench`,
  the Python API) logs a warning once, leaves every file as it is and skips the instance.
- a well-formed row written by a newer swemint (a `result_schema` stamp above this one's
  `agents.models.RESULT_SCHEMA`, or fields this version's model does not know): `NewerRow`, for
  every reader, the driver included, and nothing is moved: the driver must not redo, or
  overwrite, a verified row it cannot read. The driver checks every stored row when it starts
  (`MintBook`), so it refuses before any work.

Folder names come from `envpool.naming.folder_name` (injective: two ids never share a folder,
none escapes `instances/`).
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

from pydantic import ValidationError

from agents.models import RESULT_SCHEMA, SWEMINT_VERSION, Instance, InstanceResult
from envpool.errors import SwemintError
from envpool.naming import folder_name

log = logging.getLogger(__name__)

RESULT, RUNNING, DONE, INSTANCE = "result.json", "RUNNING", "DONE", "instance.json"
ATTEMPTS, LOCK = "attempts.jsonl", "driver.lock"


class WorkdirLocked(SwemintError, BlockingIOError):
    """Another live driver holds WORKDIR/driver.lock (its pid is in the message)."""


class NewerRow(SwemintError, ValueError):
    """A stored result.json that is well-formed JSON but was written by a newer swemint (its
    `result_schema` stamp is above `RESULT_SCHEMA`, or it has fields this version's model does
    not know). The message names the work directory, the instance and the cause in one line; the
    file is left as it is. Attributes: `path` (the result.json), `unknown` (dotted field names)."""

    def __init__(self, message: str, *, instance_id: str | None, path: Path, unknown: list[str]):
        super().__init__(message, instance_id=instance_id)
        self.path, self.unknown = path, unknown


class ReadOnlyStore(SwemintError, PermissionError):
    """A write (`mark_running`, `write_result`) on a store opened with `read_only=True`."""


_HELD: set[Path] = set()
"""Work directories (resolved) whose driver lock this process holds (`driver_lock`)."""


def holds_driver_lock(workdir: Path | str) -> bool:
    """True while this process holds `workdir`'s driver lock (`driver_lock`): only then does a
    store move unreadable files aside."""
    return Path(workdir).resolve() in _HELD


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
        held = Path(workdir).resolve()
        _HELD.add(held)
        try:
            yield path
        finally:
            _HELD.discard(held)
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


_UMASK = os.umask(0o022)
os.umask(_UMASK)  # read once, at import (umask has no getter)


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a uniquely named temp path next to `path`; when the block ends normally the file
    written there is fsynced and renamed over `path` (then the folder is fsynced). Readers see
    the old or the new content, never a mix; concurrent writers never share a temp file. The file
    gets the mode a plain ``open()`` gives (0666 less the umask), not mkstemp's 0600. On an
    exception the temp file is removed and `path` left as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; the file gets a plain open()'s mode
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
        read_only: for readers (`swemint eval`, `report`, `export`, `bench`, the Python API): never
            moves, removes or writes a file; `mark_running` / `write_result` raise ReadOnlyStore.
            A writable store still moves an unreadable file aside only while this process holds
            the work directory's driver lock (`holds_driver_lock`).

    Reads raise NewerRow for a row written by a newer swemint (see the module docstring).
    """

    def __init__(self, workdir: Path | str, retry_outcomes: Iterable[str] = (), *, read_only: bool = False):
        self.workdir = Path(workdir)
        self.root = self.workdir / "instances"
        self.retry_outcomes = set(retry_outcomes) - {"verified"}
        self.read_only = read_only
        self._warned: set[Path] = set()

    def dir(self, instance_id: str) -> Path:
        """The folder of `instance_id` (not created)."""
        return self.root / safe_name(instance_id)

    def _writable(self, what: str) -> None:
        if self.read_only:
            raise ReadOnlyStore(f"{what}: the store of {self.workdir} was opened read-only")

    def mark_running(self, instance: Instance) -> None:
        """Record `instance` (instance.json) and a RUNNING marker; clears an old DONE; appends a
        line to WORKDIR/attempts.jsonl (how often each instance was started, across runs)."""
        self._writable(f"mark_running({instance.instance_id})")
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
        The row is stamped with this swemint's version and `RESULT_SCHEMA`. Text UTF-8 cannot
        encode (a lone surrogate in a test id a runner printed) is written as `\\udXXX` escapes,
        so one row's bad string never stops the batch."""
        self._writable(f"write_result({result.instance_id})")
        d = self.dir(result.instance_id)
        path = d / RESULT
        result = result.model_copy(update={"swemint_version": SWEMINT_VERSION, "result_schema": RESULT_SCHEMA})
        try:
            text = result.model_dump_json(indent=1)
        except ValueError:  # pydantic's serialisation error for a lone surrogate
            text = InstanceResult.model_validate(_printable(result.model_dump())).model_dump_json(indent=1)
        atomic_write(path, text)
        atomic_write(d / DONE, result.outcome + "\n")
        (d / RUNNING).unlink(missing_ok=True)
        return path

    def moves_aside(self) -> bool:
        """Whether this store moves unreadable files aside: not `read_only`, and this process
        holds the work directory's driver lock."""
        return not self.read_only and holds_driver_lock(self.workdir)

    def _unreadable(self, path: Path, why: str, done: Path | None = None) -> None:
        """A state file that cannot be read: quarantined (and `done` removed) when `moves_aside`,
        else a warning (once per file) and every file left as it is."""
        if self.moves_aside():
            quarantine(path, why)
            if done is not None:
                done.unlink(missing_ok=True)
        elif path not in self._warned:
            self._warned.add(path)
            log.warning("skipped %s, left as it is (only the driver moves unreadable files aside): %s", path,
                        why.splitlines()[0][:300] if why else "unreadable")

    def _newer(self, path: Path, data: dict, unknown: list[str]) -> NewerRow:
        """The NewerRow for the row `data` of `path` (`unknown`: field names this model lacks)."""
        iid = data.get("instance_id") if isinstance(data.get("instance_id"), str) else path.parent.name
        theirs = data.get("swemint_version")
        schema = data.get("result_schema")
        by = f"the row says swemint {theirs}, result schema {schema}" \
            if isinstance(theirs, str) and isinstance(schema, int) else "the row carries no stamp"
        ours = f"swemint {SWEMINT_VERSION}, result schema {RESULT_SCHEMA}"
        cause = (f"has fields this version does not know ({', '.join(unknown[:8])}"
                 f"{f', +{len(unknown) - 8} more' if len(unknown) > 8 else ''})" if unknown
                 else f"says result schema {schema}, newer than this version's {RESULT_SCHEMA}")
        return NewerRow(f"work directory {self.workdir}: {path} {cause}: it was written by a newer swemint "
                        f"({by}; this is {ours}); upgrade swemint to read this work directory (the row is left "
                        "as it is)", instance_id=iid, path=path, unknown=unknown)

    def _load_result(self, d: Path) -> InstanceResult | None:
        """result.json of folder `d` when DONE and it exist, else None. A file that is not a JSON
        object, or that does not validate, is `_unreadable` (-> None). Raises NewerRow for a row
        written by a newer swemint (files untouched)."""
        if not (d / DONE).exists() or not (d / RESULT).exists():
            return None
        path = d / RESULT
        try:
            raw = path.read_bytes()
            res = InstanceResult.model_validate_json(raw)
        except OSError as e:
            self._unreadable(path, f"{type(e).__name__}: {e}", d / DONE)
            return None
        except ValidationError as e:
            return self._invalid(path, raw, e, d / DONE)
        if res.result_schema > RESULT_SCHEMA:
            raise self._newer(path, json.loads(raw), [])
        return res

    def _invalid(self, path: Path, raw: bytes, error: ValidationError, done: Path) -> None:
        """Sort a result.json that did not validate: raises NewerRow for a JSON object written by a
        newer swemint, else `_unreadable`."""
        try:
            data = json.loads(raw)
        except ValueError as e:  # not JSON, torn mid-write, not UTF-8
            self._unreadable(path, f"{type(e).__name__}: {e}", done)
            return None
        if not isinstance(data, dict):
            self._unreadable(path, f"not a JSON object but a {type(data).__name__}", done)
            return None
        schema = data.get("result_schema")
        unknown = [".".join(str(x) for x in err["loc"]) for err in error.errors() if err["type"] == "extra_forbidden"]
        if unknown or (isinstance(schema, int) and not isinstance(schema, bool) and schema > RESULT_SCHEMA):
            raise self._newer(path, data, unknown)
        self._unreadable(path, f"ValidationError: {error}", done)
        return None

    def _load_instance(self, p: Path) -> Instance | None:
        if not p.exists():
            return None
        try:
            return Instance.model_validate_json(p.read_bytes())
        except (ValueError, OSError) as e:
            self._unreadable(p, f"{type(e).__name__}: {e}")
            return None

    def read_result(self, instance_id: str) -> InstanceResult | None:
        """The finished result of `instance_id`, or None (never run, running, crashed, or its
        result.json unreadable: quarantined by the driver, skipped by readers). Raises NewerRow."""
        return self._load_result(self.dir(instance_id))

    def read_instance(self, instance_id: str) -> Instance | None:
        """The instance row recorded by `mark_running`, or None (absent, or unreadable)."""
        return self._load_instance(self.dir(instance_id) / INSTANCE)

    def is_running(self, instance_id: str) -> bool:
        """True when a RUNNING marker exists without DONE (running now, or a crashed run)."""
        d = self.dir(instance_id)
        return (d / RUNNING).exists() and not (d / DONE).exists()

    def needs_run(self, instance_id: str) -> bool:
        """False when finished with `verified` or an outcome not in `retry_outcomes`. Raises
        NewerRow (a row this version cannot read is never redone)."""
        res = self.read_result(instance_id)
        return res is None or res.outcome in self.retry_outcomes

    def results(self) -> list[InstanceResult]:
        """Every finished result, sorted by instance id (unreadable ones left out). Raises
        NewerRow at the first row written by a newer swemint."""
        if not self.root.is_dir():
            return []
        out = []
        for d in sorted(self.root.iterdir()):
            res = self._load_result(d) if d.is_dir() else None
            if res is not None:
                out.append(res)
        return out

    def instances(self) -> dict[str, Instance]:
        """Every recorded instance row, by instance id (unreadable ones left out)."""
        if not self.root.is_dir():
            return {}
        out = {}
        for p in sorted(self.root.glob(f"*/{INSTANCE}")):
            inst = self._load_instance(p)
            if inst is not None:
                out[inst.instance_id] = inst
        return out
