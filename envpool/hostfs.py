"""Host folders that containers write (package caches) and the host's free disk.

A build container runs as root and writes into its bind-mounted cache folder, so anything it
leaves there is owned by root on the host: a setuid-root binary would be a way to root for any
user who can reach it. `private_dir` creates such folders with mode 0700 under a 0700 parent
(no other user can reach them), and `scrub` clears setuid/setgid bits and removes device nodes,
FIFOs and sockets after a container used them. `remove_tree` deletes a per-instance folder.
On an engine that remaps user namespaces (userns-remap), root in a container is a subordinate
uid on the host: `hand_over` gives such a folder to that uid (still 0700, its parent stays
root's), so the container can write it and nothing it leaves there is owned by host root.

`check_free_disk` is the host-side guard run before each instance: below the floor it raises
`LowDisk` (an `InfraError`: the instance is `infra_error` and the driver starts no new work).
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

from envpool.errors import InfraError

log = logging.getLogger(__name__)

LOW_DISK = "low disk"
"""How a LowDisk message starts (the driver recognises rows that stopped for it)."""


class LowDisk(InfraError):
    """Free space under a floor (bytes) on a file system swemint writes to."""


def private_dir(path: Path, root: Path | None = None) -> Path:
    """Create `path` (and its parents) and make it and `root` (a parent of it) mode 0700;
    returns the resolved path. Raises OSError."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    for p in [path, *([Path(root)] if root is not None else [])]:
        try:
            os.chmod(p, 0o700)
        except OSError as e:  # a folder another user owns: leave it, say so
            log.warning("could not make %s private: %s", p, e)
    return path.resolve()


def hand_over(path: Path, uid: int, gid: int) -> int:
    """Make `path` and everything below it owned by `uid:gid` (the host ids a remapped engine
    gives root in a container); symlinks are re-owned, never followed. Entries already owned so
    are left alone. Returns how many entries changed; raises PermissionError when the caller may
    not chown (not root), other OSErrors of one entry are logged."""
    changed = 0
    entries = [str(path)]
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
        entries += [os.path.join(dirpath, n) for n in (*dirnames, *filenames)]
    for p in entries:
        try:
            st = os.lstat(p)
            if (st.st_uid, st.st_gid) != (uid, gid):
                os.lchown(p, uid, gid)
                changed += 1
        except PermissionError:
            raise
        except OSError as e:
            log.warning("hand over %s: %s", p, e)
    return changed


def scrub(path: Path) -> int:
    """Clear setuid/setgid bits below `path` and remove device nodes, FIFOs and sockets; symlinks
    are left as links (never followed). Returns how many entries were changed; never raises for
    one entry (it is logged)."""
    changed = 0
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
        for name in [*dirnames, *filenames]:
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
                mode = st.st_mode
                if stat.S_ISLNK(mode):
                    continue
                if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
                    os.unlink(p)
                    changed += 1
                elif mode & (stat.S_ISUID | stat.S_ISGID):
                    os.chmod(p, stat.S_IMODE(mode) & ~(stat.S_ISUID | stat.S_ISGID))
                    changed += 1
            except OSError as e:
                log.warning("scrub %s: %s", p, e)
    return changed


def remove_tree(path: Path) -> None:
    """Delete `path` and everything below it; never raises (a leftover is logged)."""
    if Path(path).exists():
        shutil.rmtree(path, ignore_errors=True)
        if Path(path).exists():
            log.warning("could not remove all of %s", path)


def free_bytes(path: Path) -> int | None:
    """Bytes free for unprivileged use on the file system of `path` (its nearest existing
    parent), None when it cannot be read."""
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return None


def check_free_disk(paths: Iterable[Path | str], min_bytes: int, instance_id: str | None = None) -> None:
    """Raise LowDisk ("low disk: N GiB free under P, M GiB needed") when a file system of `paths`
    has less than `min_bytes` free; paths that cannot be read are skipped."""
    if min_bytes <= 0:
        return
    for p in paths:
        free = free_bytes(Path(p))
        if free is not None and free < min_bytes:
            raise LowDisk(f"{LOW_DISK}: {free / 1024**3:.1f} GiB free under {p}, {min_bytes / 1024**3:.1f} GiB "
                          "needed (mint.limits.min_free_disk_bytes); no new instance starts", instance_id=instance_id)


def flock_wait(fh, seconds: float, poll: float = 1.0) -> bool:
    """Take an exclusive `fcntl.flock` on the open file `fh`, polling every `poll` seconds for at
    most `seconds`; True when held, False when the wait ran out (the caller decides: raise, or go
    on without the lock). One cross-process build lock for the image registry and the tiers."""
    import fcntl
    import time

    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(poll)
