"""The one thin layer over the docker SDK: start, exec, copy files, commit, clean up.

Pitfalls handled (see shared platform notes): `mounts=` instead of `volumes=` (volumes are
baked into committed images); exit codes through `exec_create`/`exec_start`/`exec_inspect`;
exec timeouts with coreutils `timeout` inside the container (it signals the whole process
group) and a deadline on the host (a command that stops its watchdog, or a process that keeps
the output open, never blocks the caller); never host networking; everything labelled
`swemint.run=<run id>`.

Bounds (issue 11): each exec keeps at most `output_cap` bytes of output in memory and in the log
file (head and tail, a marker between), a report channel (`exec(channel=True)`: the command's
stderr) at most `report_cap` bytes, and `get_file(max_bytes=...)` streams a file with a limit.
Containers drop every capability but `sandbox.DEFAULT_CAPS`, run with `no-new-privileges`, and
get a disk quota on their writable layer where the storage driver enforces one (overlay2 on xfs
with pquota), else a bounded tmpfs at /tmp. On an engine with user-namespace remapping
(`userns-remap`, daemon-wide) root in a container is a subordinate uid on the host
(`remapped_root`); host folders mounted read-write are handed to that uid before the container
starts. Without it, the first container with a host mount in a process (and the driver at the
start of a run) logs a one-line warning.
"""

from __future__ import annotations

import io
import logging
import os
import posixpath
import queue
import re
import shlex
import socket
import tarfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from envpool.cgroup import container_cpu_seconds, engine_cpu_seconds
from envpool.errors import InfraError, OutputTooLarge
from envpool.hostfs import hand_over
from envpool.netguard import BuildNetworkConfig, ensure_build_network
from envpool.quoting import image_tag, label_value
from envpool.sandbox import ExecResult, SandboxSpec, StepProgress

log = logging.getLogger(__name__)

CA_PATH_IN_CONTAINER = "/opt/swemint/ca.pem"
"""Where the host CA bundle is mounted (never over /etc/ssl/certs, which breaks ca-certificates)."""

CA_ENV_VARS = ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
               "NODE_EXTRA_CA_CERTS", "npm_config_cafile", "CARGO_HTTP_CAINFO", "GIT_SSL_CAINFO",
               "UV_CERT", "AWS_CA_BUNDLE")
"""Environment variables pointed at the mounted CA bundle in every exec of a build container."""

DEFAULT_OUTPUT_CAP = 4 * 1024 * 1024
"""Bytes of output kept per exec, in memory and in the log file (head and tail)."""
DEFAULT_REPORT_CAP = 64 * 1024 * 1024
"""Bytes of a report channel or report file read from a sandbox; past it the report is not used."""
HOST_GRACE = 15.0
"""Seconds past an exec's timeout and kill delay after which the host stops waiting for it."""
LINGER_GRACE = 3.0
"""Seconds the host keeps reading after the command exited while something still holds its output."""


OFFLINE_HOSTNAME = "testbed"
"""Hostname of test-run containers (`network_mode="none"`), resolvable through /etc/hosts to
127.0.1.1 as on a Debian laptop, so libraries that look up their own address at import work."""


def host_ca_bundle() -> Path | None:
    """The host CA bundle to propagate (env `SWEMINT_CA_BUNDLE`, else Debian's), or None."""
    p = Path(os.environ.get("SWEMINT_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt"))
    return p if p.is_file() else None


USERNS_HINT = ("SWEMINT_USERNS=1 bash scripts/setup.sh when it starts the engine; else \"userns-remap\": "
               "\"default\" in /etc/docker/daemon.json")
"""How to switch remapping on (the warning of an engine without it, and the README)."""

_warned_engines: set[str] = set()


def _first_subid(path: Path, name: str) -> int | None:
    """Start of the first subordinate range of user `name` in an /etc/subuid-style file."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.strip().split(":")
        if len(parts) == 3 and parts[0] == name and parts[1].isdigit():
            return int(parts[1])
    return None


def remapped_root(info: dict, subuid: Path = Path("/etc/subuid"),
                  subgid: Path = Path("/etc/subgid")) -> tuple[int, int] | None:
    """The host (uid, gid) that root in a container is, from `docker info` (`info`): None when
    the engine does not remap user namespaces (no `name=userns` security option). A remapping
    engine keeps its data in `<data-root>/<uid>.<gid>` (`DockerRootDir`), which is read first;
    else the first subordinate ids of `dockremap` (`--userns-remap=default`) in `subuid` /
    `subgid`. Raises InfraError when remapping is on but neither says the ids."""
    opts = [str(o) for o in (info.get("SecurityOptions") or [])]
    if not any("name=userns" in o for o in opts):
        return None
    m = re.fullmatch(r"(\d+)\.(\d+)", posixpath.basename(str(info.get("DockerRootDir") or "").rstrip("/")))
    if m:
        return int(m.group(1)), int(m.group(2))
    uid, gid = _first_subid(subuid, "dockremap"), _first_subid(subgid, "dockremap")
    if uid is None or gid is None:
        raise InfraError("the engine remaps user namespaces but neither its data root nor /etc/subuid says "
                         "to which host uid root in a container maps")
    return uid, gid


def _docker():
    try:
        import docker
    except ImportError as e:  # pragma: no cover
        raise InfraError("the docker SDK is not installed (pip install docker)") from e
    return docker


def docker_client():
    """A docker SDK client from the environment; raises InfraError when no engine answers."""
    docker = _docker()
    try:
        client = docker.from_env(timeout=600)
        client.ping()
        return client
    except Exception as e:
        raise InfraError(f"no Docker engine answers ({e}); run scripts/ensure_docker.sh") from e


DEFAULT_KILL_AFTER = 10.0
"""Seconds between the SIGTERM sent at an exec's timeout and the SIGKILL that follows."""


def cap_output(data: bytes, cap: int) -> tuple[bytes, bool]:
    """Cut `data` to its first cap/4 and last 3cap/4 bytes with a marker; returns (bytes, cut)."""
    if len(data) <= cap:
        return data, False
    head = cap // 4
    tail = cap - head
    marker = f"\n[... {len(data) - cap} bytes cut by swemint ...]\n".encode()
    return data[:head] + marker + (data[-tail:] if tail else b""), True


_cap = cap_output  # old private name


class _Capture:
    """Keeps the head and a rolling tail of a byte stream, so memory stays O(cap)."""

    def __init__(self, cap: int):
        self.cap = cap
        self.head_size = cap // 4
        self.tail_size = cap - self.head_size
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_size - len(self.head)
        if room > 0:
            self.head.extend(chunk[:room])
            chunk = chunk[room:]
        self.tail.extend(chunk)
        if len(self.tail) > 2 * self.tail_size + 65536:
            del self.tail[: len(self.tail) - self.tail_size]

    def result(self) -> tuple[bytes, bool]:
        if self.total <= self.cap:
            return bytes(self.head + self.tail), False
        tail = bytes(self.tail[-self.tail_size:]) if self.tail_size else b""
        marker = f"\n[... {self.total - self.cap} bytes cut by swemint ...]\n".encode()
        return bytes(self.head) + marker + tail, True


def _pump(sock, out: queue.Queue) -> None:
    """Move (stream, bytes) frames of an exec's attach socket to `out`; None at the end, the
    exception when reading fails (a socket the host closed ends quietly)."""
    from docker.utils.socket import frames_iter

    try:
        for stream, data in frames_iter(sock, tty=False):
            if data:
                out.put((stream, data))
        out.put(None)
    except (OSError, ValueError) as e:
        out.put(None if getattr(sock, "closed", False) or isinstance(e, ValueError) else e)
    except Exception as e:  # noqa: BLE001 - handed to the caller
        out.put(e)


class _LogTee:
    """Appends one exec's output to the log file, at most `cap` bytes: the first cap/4 as they
    come, then (at `close`) a marker with the count cut and the last 3cap/4."""

    def __init__(self, fh, cap: int):
        self.fh = fh
        self.capture = _Capture(cap)
        self.written = 0

    def feed(self, chunk: bytes) -> None:
        before = self.capture.total
        self.capture.feed(chunk)
        room = self.capture.head_size - before
        if self.fh and room > 0:
            self.fh.write(chunk[:room])
            self.fh.flush()
            self.written += min(room, len(chunk))

    def close(self) -> None:
        if not self.fh:
            return
        c = self.capture
        if c.total <= c.cap:
            self.fh.write(bytes(c.head[self.written:] + c.tail))
        else:
            self.fh.write(f"\n[... {c.total - c.cap} bytes cut by swemint ...]\n".encode())
            self.fh.write(bytes(c.tail[-c.tail_size:]) if c.tail_size else b"")


class _Bounded:
    """A byte buffer that keeps at most `cap` bytes (`truncated` once more came)."""

    def __init__(self, cap: int):
        self.cap = cap
        self.data = bytearray()
        self.truncated = False

    def feed(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if len(chunk) > room:
            self.truncated = True
        if room > 0:
            self.data.extend(chunk[:room])


class _ChunkReader(io.RawIOBase):
    """A read-only file over an iterator of byte chunks (the engine's archive stream), so
    `tarfile` can read it in stream mode without holding it whole."""

    def __init__(self, chunks):
        self.it = iter(chunks)
        self.rest = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while not self.rest:
            try:
                self.rest = next(self.it)
            except StopIteration:
                return 0
        n = min(len(b), len(self.rest))
        b[:n] = self.rest[:n]
        self.rest = self.rest[n:]
        return n


class DockerSandbox:
    """A running container. Use through `DockerSandboxFactory.sandbox()` so it is always removed.

    Attributes:
        spec: the SandboxSpec it was started from.
        container: the docker SDK container object.
        log_path: per-instance log file every exec's output is appended to (or None).
        output_cap: bytes of output kept per exec in `ExecResult.output`.
        kill_after: seconds from an exec's SIGTERM (at its timeout) to its SIGKILL.
        ca_mounted: whether the host CA bundle is mounted at CA_PATH_IN_CONTAINER (then the
            CA_ENV_VARS point at it in every exec).
    """

    files_have_times = True  # a real container: file times are the host's clock

    def __init__(self, client, container, spec: SandboxSpec, log_path: Path | None,
                 output_cap: int = DEFAULT_OUTPUT_CAP, *, kill_after: float = DEFAULT_KILL_AFTER,
                 ca_mounted: bool | None = None, report_cap: int = DEFAULT_REPORT_CAP,
                 host_grace: float = HOST_GRACE, tmpfs: tuple[str, ...] = (), on_close=None):
        self.tmpfs = tmpfs
        self.on_close = on_close
        """Called with this sandbox once it is closed (its `cpu_seconds` read): a cost meter."""
        self.cpu_seconds: float | None = None
        """CPU-seconds the container used (its cgroup, read at `close`; None before, or unreadable)."""
        self.engine_cpu_seconds = 0.0
        """CPU-seconds the local engine (dockerd, containerd) spent during this sandbox's commits."""
        """Folders mounted as tmpfs: the engine's archive API cannot see into them, so files
        there are copied through an exec (stdin in, the report channel out)."""
        self.client = client
        self.container = container
        self.spec = spec
        self.log_path = log_path
        self.output_cap = output_cap
        self.report_cap = report_cap
        self.host_grace = host_grace
        self.kill_after = kill_after
        self.ca_mounted = (spec.mount_ca and spec.network != "none") if ca_mounted is None else ca_mounted
        self._closed = False
        self._lock = threading.Lock()

    # -- commands -------------------------------------------------------------------------
    def _exec_env(self, env: dict[str, str] | None) -> dict[str, str]:
        merged: dict[str, str] = {}
        if self.ca_mounted:
            merged.update({k: CA_PATH_IN_CONTAINER for k in CA_ENV_VARS})
        merged.update(self.spec.env)
        merged.update(env or {})
        return merged

    def _exit_code(self, exec_id: str) -> int | None:
        # exec_inspect can still say Running for a moment after the stream ended
        api = self.client.api
        for _ in range(50):
            info = api.exec_inspect(exec_id)
            if not info.get("Running"):
                return info.get("ExitCode")
            time.sleep(0.05)
        return api.exec_inspect(exec_id).get("ExitCode")

    def exec(self, command: str, *, timeout: float = 600, env: dict[str, str] | None = None,
             workdir: str | None = None, log_label: str | None = None, stdin: bytes | None = None,
             channel: bool = False, progress: StepProgress | None = None) -> ExecResult:
        """Run `command` under `bash -c` (not a login shell: PATH from `env` is kept).

        `timeout` in seconds (rounded up to whole seconds, at least 1): at the deadline the
        command's process group gets SIGTERM, `kill_after` seconds later SIGKILL; the result is
        then exit code 124 with `timed_out`. With `progress` (`envpool.sandbox.StepProgress`)
        the command outlives `timeout` while it keeps printing: the in-container deadline is
        `progress.ceiling`, and the host stops it (SIGKILL of its process groups, exit 124,
        `timed_out`) once it is past `timeout` and has printed nothing for `progress.idle`
        seconds -- a command silent from the start still ends at `timeout`. The host stops
        waiting `host_grace` seconds after that (a command that stopped its own watchdog), kills
        what it can of the exec, and returns the same; it also stops `LINGER_GRACE` seconds after
        the command exited when a process it left keeps the output open (`lingering`). `stdin`:
        bytes written to the command's stdin, which is then closed (no stdin otherwise). Output
        (stdout and stderr in the order written: the command's stderr is its stdout's pipe, so
        bash's own messages name the command's line + 1; with `channel`, stdout only and stderr
        raw in `ExecResult.channel`, at most `report_cap` bytes) is capped at `output_cap` bytes
        (`truncated`), decoded as UTF-8 with replacement, and appended to `log_path` within the
        same cap. Never raises for a failing command; raises InfraError when the engine fails.
        """
        t = max(1, int(-(-timeout // 1)))
        hard = max(t, int(-(-progress.ceiling // 1))) if progress else t
        kill = max(1, int(-(-self.kill_after // 1)))
        marker = f"swemint-exec-{uuid.uuid4().hex[:12]}"  # $0 of the command's shell
        # one pipe for both streams unless stderr is its own channel: the engine frames stdout and
        # stderr apart, and their order across frames is the order it read two pipes in (a sub-make's
        # error arrived after its 'Leaving directory' line; S37's reader then lost the folder)
        script = command if channel else "exec 2>&1\n" + command
        argv = ["timeout", "-k", str(kill), str(hard), "bash", "-c", script, marker]
        start = time.monotonic()
        host_deadline = start + hard + kill + self.host_grace
        last_output = start
        silent = False  # stopped by the host: past `timeout` and silent for `progress.idle`
        api = self.client.api
        capture = _Capture(self.output_cap)
        report = _Bounded(self.report_cap)
        code: int | None = None
        exited_at: float | None = None
        host_timeout = lingering = False
        chunks: queue.Queue = queue.Queue()
        sock = None
        try:
            ex = api.exec_create(self.container.id, argv, stdin=stdin is not None, stdout=True, stderr=True,
                                 environment=self._exec_env(env), workdir=workdir or self.spec.workdir)
            sock = api.exec_start(ex["Id"], socket=True)
            raw = getattr(sock, "_sock", sock)
            threading.Thread(target=_pump, args=(sock, chunks), daemon=True, name="swemint-exec").start()
            if stdin is not None:  # after the reader started: output never waits on a full pipe
                raw.sendall(stdin)
                raw.shutdown(socket.SHUT_WR)
            with open(self.log_path, "ab") if self.log_path else nullcontext() as logf:
                tee = _LogTee(logf, self.output_cap)
                if logf:
                    logf.write(f"\n$ [{log_label or 'exec'}] {command}\n".encode())
                    logf.flush()
                next_check = start + 1.0
                while True:
                    now = time.monotonic()
                    try:
                        item = chunks.get(timeout=max(0.05, min(0.5, host_deadline - now)))
                    except queue.Empty:
                        item = ()
                    if item is None:
                        break
                    if isinstance(item, BaseException):
                        raise item
                    if item:
                        stream, data = item
                        last_output = time.monotonic()
                        if channel and stream == 2:
                            report.feed(data)
                        else:
                            tee.feed(data)
                            capture.feed(data)
                    now = time.monotonic()
                    if now >= next_check:
                        next_check = now + 1.0
                        info = api.exec_inspect(ex["Id"])
                        if not info.get("Running") and exited_at is None:
                            exited_at, code = now, info.get("ExitCode")
                    if exited_at is not None and now - exited_at > LINGER_GRACE:
                        lingering = True
                        break
                    if now > host_deadline:
                        host_timeout = True
                        break
                    if progress and exited_at is None and now > start + t and now - last_output > progress.idle:
                        silent = host_timeout = True
                        break
                if code is None and not host_timeout:
                    code = self._exit_code(ex["Id"])
                dur = time.monotonic() - start
                tee.close()
                if logf:
                    extra = (f" (silent for {progress.idle:.0f} s past its {t} s limit)" if silent and progress else
                             " (host deadline)" if host_timeout else "") + (" (output held open)" if lingering else "")
                    if channel:
                        extra += f" (report channel: {len(report.data)} bytes{', cut' if report.truncated else ''})"
                    logf.write(f"\n[exit {code}, {dur:.1f} s{extra}]\n".encode())
        except Exception as e:
            if isinstance(e, InfraError):
                raise
            raise InfraError(f"docker exec failed: {e}", instance_id=self.spec.instance_id,
                             log_path=self.log_path) from e
        finally:
            if sock is not None:
                try:
                    getattr(sock, "_sock", sock).close()
                except OSError:
                    pass
        if host_timeout:
            self._kill_exec(marker)
        data, truncated = capture.result()
        code = -1 if code is None else int(code)
        # 124: TERM at the deadline worked; 137: timeout had to KILL the group (itself included)
        timed_out = host_timeout or (code in (124, 137) and dur >= t - 0.5)
        return ExecResult(command=command, exit_code=124 if timed_out else code,
                          output=data.decode("utf-8", errors="replace"), duration=dur,
                          timed_out=timed_out, truncated=truncated, channel=bytes(report.data),
                          channel_truncated=report.truncated, lingering=lingering)

    def _kill_exec(self, marker: str) -> None:
        """SIGKILL the process groups of the exec whose shell is named `marker` (best effort)."""
        pattern = marker[:-1] + "[" + marker[-1] + "]"  # matches the marker, not this script's own cmdline
        script = (f"for p in /proc/[0-9]*; do if tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -q '{pattern}'; then "
                  "g=$(cut -d' ' -f5 $p/stat 2>/dev/null); [ -n \"$g\" ] && kill -9 -$g 2>/dev/null; "
                  "kill -9 ${p#/proc/} 2>/dev/null; fi; done; true")
        try:
            api = self.client.api
            ex = api.exec_create(self.container.id, ["timeout", "10", "sh", "-c", script], stdout=False, stderr=False)
            api.exec_start(ex["Id"], detach=True)
        except Exception as e:  # noqa: BLE001 - the container is removed at the end anyway
            log.debug("could not kill exec %s: %s", marker, e)

    # -- files ----------------------------------------------------------------------------
    def _mkdir(self, path: str) -> None:
        r = self.exec(f"mkdir -p {shlex.quote(path)}", timeout=30, workdir="/", log_label="mkdir")
        if not r.ok:
            raise InfraError(f"mkdir {path} failed in the container: {r.output[-500:]}",
                             instance_id=self.spec.instance_id, log_path=self.log_path)

    def _on_tmpfs(self, path: str) -> bool:
        p = posixpath.normpath(path)
        return any(p == t or p.startswith(t.rstrip("/") + "/") for t in self.tmpfs)

    def put_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Write `data` at absolute `path` in the container (parents created, owner root).

        Raises ValueError for a relative path, InfraError when the copy fails.
        """
        if not path.startswith("/"):
            raise ValueError(f"sandbox paths must be absolute, got {path!r}")
        raw = data.encode() if isinstance(data, str) else data
        parent, name = posixpath.split(posixpath.normpath(path))
        if self._on_tmpfs(path):
            q = shlex.quote(posixpath.normpath(path))
            r = self.exec(f"mkdir -p {shlex.quote(parent or '/')} && cat > {q} && chmod {mode & 0o7777:o} {q}",
                          timeout=600, workdir="/", log_label="put-file", stdin=raw)
            if not r.ok:
                raise InfraError(f"copy into container failed ({path}): {r.output[-300:]}",
                                 instance_id=self.spec.instance_id)
            return
        self._mkdir(parent or "/")
        bio = io.BytesIO()
        with tarfile.open(fileobj=bio, mode="w") as tar:
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            info.mode = mode
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(raw))
        try:
            self.container.put_archive(parent or "/", bio.getvalue())
        except Exception as e:
            raise InfraError(f"copy into container failed: {e}", instance_id=self.spec.instance_id) from e

    def put_dir(self, src: Path, dest: str) -> None:
        """Copy host folder `src` (recursively; modes and symlinks kept) to absolute `dest`.

        Raises FileNotFoundError when `src` is not a folder, InfraError when the copy fails.
        """
        if not Path(src).is_dir():
            raise FileNotFoundError(str(src))
        if not dest.startswith("/"):
            raise ValueError(f"sandbox paths must be absolute, got {dest!r}")
        bio = io.BytesIO()
        with tarfile.open(fileobj=bio, mode="w") as tar:
            tar.add(str(src), arcname=".")
        if self._on_tmpfs(dest):
            r = self.exec(f"mkdir -p {shlex.quote(dest)} && tar -xf - -C {shlex.quote(dest)}", timeout=600,
                          workdir="/", log_label="put-dir", stdin=bio.getvalue())
            if not r.ok:
                raise InfraError(f"copy into container failed ({dest}): {r.output[-300:]}",
                                 instance_id=self.spec.instance_id)
            return
        self._mkdir(dest)
        try:
            self.container.put_archive(dest, bio.getvalue())
        except Exception as e:
            raise InfraError(f"copy into container failed: {e}", instance_id=self.spec.instance_id) from e

    def get_file(self, path: str, max_bytes: int | None = None, _follow: int = 8) -> bytes:
        """Read the regular file at `path` (symlinks followed), streamed: at most `max_bytes`
        bytes (default: `report_cap`) are ever held.

        Raises FileNotFoundError when absent, IsADirectoryError for a folder, OutputTooLarge
        when the file is larger than the limit, InfraError when the engine fails.
        """
        docker = _docker()
        limit = self.report_cap if max_bytes is None else max_bytes
        if self._on_tmpfs(path):
            return self._get_file_by_exec(path, limit)
        try:
            chunks, stat = self.container.get_archive(path)
        except docker.errors.NotFound as e:
            raise FileNotFoundError(path) from e
        except Exception as e:
            raise InfraError(f"copy out of container failed: {e}", instance_id=self.spec.instance_id) from e
        size = int((stat or {}).get("size") or 0)
        if size > limit and not (stat or {}).get("linkTarget"):
            raise OutputTooLarge(f"{path} has {size} bytes, more than the limit of {limit}",
                                 instance_id=self.spec.instance_id)
        buf = bytearray()
        for chunk in chunks:  # the tar stream: the file plus headers and padding
            buf.extend(chunk)
            if len(buf) > limit + 64 * 1024:
                raise OutputTooLarge(f"{path} is larger than the limit of {limit} bytes",
                                     instance_id=self.spec.instance_id)
        with tarfile.open(fileobj=io.BytesIO(bytes(buf))) as tar:
            first = tar.next()
            if first is None:
                raise FileNotFoundError(path)
            if first.isdir():
                raise IsADirectoryError(path)
            if first.issym() and _follow > 0:
                target = posixpath.normpath(posixpath.join(posixpath.dirname(path), first.linkname))
                return self.get_file(target, max_bytes, _follow - 1)
            if first.size > limit:
                raise OutputTooLarge(f"{path} has {first.size} bytes, more than the limit of {limit}",
                                     instance_id=self.spec.instance_id)
            f = tar.extractfile(first)
            if f is None:
                raise FileNotFoundError(path)
            return f.read()

    def stream_file(self, path: str, chunk_size: int = 1 << 20) -> Iterator[bytes]:
        """The regular file at `path` as a stream of chunks (no size limit: the reader bounds what
        it keeps; `envpool.testrun.slim`). A file on a tmpfs (which the engine's archive API
        cannot see) is first copied to /var/tmp inside the container. Raises FileNotFoundError
        when absent, InfraError when the engine fails."""
        docker = _docker()
        src = path
        if self._on_tmpfs(path):
            src = f"/var/tmp/swemint-stream-{uuid.uuid4().hex[:8]}"
            r = self.exec(f"[ -f {shlex.quote(path)} ] || exit 20; mkdir -p /var/tmp && cp -L {shlex.quote(path)} {src}",
                          timeout=600, workdir="/", log_label="stream-file")
            if r.exit_code == 20:
                raise FileNotFoundError(path)
            if not r.ok:
                raise InfraError(f"copy out of container failed ({path}): {r.output[-300:]}",
                                 instance_id=self.spec.instance_id)
        try:
            raw, _ = self.container.get_archive(src, chunk_size=chunk_size)
        except docker.errors.NotFound as e:
            raise FileNotFoundError(path) from e
        except Exception as e:
            raise InfraError(f"copy out of container failed: {e}", instance_id=self.spec.instance_id) from e
        with tarfile.open(fileobj=_ChunkReader(raw), mode="r|") as tar:
            member = tar.next()
            if member is None or not member.isfile():
                raise FileNotFoundError(path)
            f = tar.extractfile(member)
            while f is not None and (data := f.read(chunk_size)):
                yield data

    def _get_file_by_exec(self, path: str, limit: int) -> bytes:
        q = shlex.quote(path)
        r = self.exec(f"[ -d {q} ] && exit 21; [ -e {q} ] || exit 20; "
                      f"[ \"$(stat -L -c %s {q})\" -gt {int(limit)} ] && exit 22; cat {q} >&2",
                      timeout=600, workdir="/", log_label="get-file", channel=True)
        if r.exit_code == 20:
            raise FileNotFoundError(path)
        if r.exit_code == 21:
            raise IsADirectoryError(path)
        if r.exit_code == 22 or r.channel_truncated or len(r.channel) > limit:
            raise OutputTooLarge(f"{path} is larger than the limit of {limit} bytes", instance_id=self.spec.instance_id)
        if not r.ok:
            raise InfraError(f"copy out of container failed ({path}): {r.output[-300:]}",
                             instance_id=self.spec.instance_id)
        return r.channel

    # -- images and lifetime --------------------------------------------------------------
    def commit(self, repository: str, tag: str, labels: dict[str, str] | None = None,
               env: dict[str, str] | None = None) -> str:
        """Commit the container as `repository:tag` (labels added); returns the image id.

        `env`: variables set in the image's config (ENV) on top of those its parent image has,
        so `docker run <image> <command>` sees the toolchain (PATH, GOPATH, ...) as the build
        did. Mounts (the CA bundle) are not part of the image. Raises InfraError on failure.
        """
        conf = {"Labels": {"swemint.managed": "1", **(labels or {})}, "Cmd": ["sleep", "infinity"]}
        if env:
            base = dict(e.split("=", 1) for e in (self.container.attrs.get("Config", {}).get("Env") or []) if "=" in e)
            conf["Env"] = [f"{k}={v}" for k, v in {**base, **env}.items()]
        e0 = engine_cpu_seconds()
        try:
            img = self.container.commit(repository=repository, tag=tag, conf=conf)
        except Exception as e:
            raise InfraError(f"docker commit failed: {e}", instance_id=self.spec.instance_id) from e
        finally:
            e1 = engine_cpu_seconds()
            if e0 is not None and e1 is not None:
                self.engine_cpu_seconds += max(0.0, e1 - e0)
        return img.id

    def close(self) -> None:
        """Read the container's CPU-seconds from its cgroup (`cpu_seconds`), remove it (force),
        then call `on_close(self)`; idempotent, never raises."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.cpu_seconds = container_cpu_seconds(self.container.id)
        try:
            self.container.remove(force=True)
        except Exception as e:  # noqa: BLE001 - close never raises; sweep() catches leftovers
            log.debug("removing container %s failed: %s", self.container.id[:12], e)
        if self.on_close is not None:
            try:
                self.on_close(self)
            except Exception as e:  # noqa: BLE001 - a meter never breaks a run
                log.debug("on_close of %s failed: %s", self.container.id[:12], e)


class DockerSandboxFactory:
    """Starts labelled, resource-limited containers.

    Args:
        run_id: value of the `swemint.run` label on everything started, unless a spec sets
            `run_id` explicitly.
        client: a docker SDK client (default: from the environment).
        output_cap: bytes of output kept per exec, in memory and in the log (see DockerSandbox).
        report_cap: bytes of a report channel or report file read from a sandbox.
        kill_after: seconds between SIGTERM and SIGKILL when an exec times out.
        host_grace: seconds past an exec's timeout and kill delay the host still waits.
        build_network: the network "bridge" specs run on (`envpool.netguard`: swemint's own
            bridge, isolated from the host and private ranges; created and guarded on first use).
    """

    def __init__(self, run_id: str = "adhoc", client=None, *, output_cap: int = DEFAULT_OUTPUT_CAP,
                 kill_after: float = DEFAULT_KILL_AFTER, build_network: BuildNetworkConfig | None = None,
                 report_cap: int = DEFAULT_REPORT_CAP, host_grace: float = HOST_GRACE):
        self.run_id = run_id
        self.client = client or docker_client()
        self.output_cap = output_cap
        self.report_cap = report_cap
        self.host_grace = host_grace
        self.kill_after = kill_after
        self.build_network = build_network or BuildNetworkConfig()
        self._quota: bool | None = None
        self._engine_info: dict | None = None
        self.cpu_listener: Callable[[DockerSandbox], None] | None = None
        """Called with each sandbox this factory started once it is closed (`DockerSandbox.on_close`):
        the instance's cost meter (`agents.cost.CostMeter`) sets it."""

    def disk_quota_supported(self) -> bool:
        """Whether the engine enforces `--storage-opt size` (overlay2 on xfs; pquota is checked
        by the first container that asks for it). Cached."""
        if self._quota is None:
            info = self._info()  # no info: no quota
            status = dict(info.get("DriverStatus") or [])
            self._quota = info.get("Driver") == "overlay2" and status.get("Backing Filesystem") == "xfs"
        return self._quota

    def _info(self) -> dict:
        """`docker info` of the engine, read once ({} when it cannot be read)."""
        if self._engine_info is None:
            try:
                self._engine_info = dict(self.client.info())
            except Exception as e:  # noqa: BLE001 - no info: nothing known beyond the spec
                log.debug("docker info failed: %s", e)
                return {}
        return self._engine_info

    def isolation(self) -> dict[str, object]:
        """What the engine gives containers beyond the spec, as recorded in each row:
        `user_namespaces` (userns-remap on: root in a container is not root on the host),
        `root_uid` (the host uid of root in a container: 0 without remapping; None if unknown),
        `disk_quota`, `security_options` (the engine's, e.g. `name=seccomp,profile=default`)."""
        info = self._info()
        opts = [str(o) for o in (info.get("SecurityOptions") or [])]
        ids: tuple[int | None, int | None] | None
        try:
            ids = remapped_root(info)
        except InfraError:
            ids = (None, None)
        return {"user_namespaces": ids is not None, "root_uid": ids[0] if ids else (0 if info else None),
                "disk_quota": self.disk_quota_supported(), "security_options": opts}

    def host_mount_owner(self) -> tuple[int, int] | None:
        """(uid, gid) to give host folders a container writes (remapped engine), else None; warns
        once per process and engine when root in containers is root on the host (the driver
        calls it at the start of a run). Raises InfraError as `remapped_root`."""
        info = self._info()
        ids = remapped_root(info) if info else None
        key = str(getattr(getattr(self.client, "api", None), "base_url", id(self.client)))
        if ids is None and info and key not in _warned_engines:
            _warned_engines.add(key)
            log.warning("Docker does not remap user namespaces (root in containers is root on the host); "
                        "to remap: %s", USERNS_HINT)
        return ids

    def _confinement(self, spec: SandboxSpec) -> dict:
        """create() arguments that confine the container: capabilities, no-new-privileges, and a
        disk quota or a bounded tmpfs at /tmp."""
        out: dict = {"cap_drop": ["ALL"], "cap_add": list(spec.cap_add), "security_opt": ["no-new-privileges:true"]}
        if spec.disk and self.disk_quota_supported():
            out["storage_opt"] = {"size": str(spec.disk)}
        elif spec.tmp_bytes:
            out["tmpfs"] = {"/tmp": f"rw,exec,nosuid,nodev,size={spec.tmp_bytes}"}
        return out

    def _run_id(self, spec: SandboxSpec) -> str:
        explicit = "run_id" in spec.model_fields_set and spec.run_id
        return spec.run_id if explicit else self.run_id

    def start(self, spec: SandboxSpec, log_path: Path | None = None) -> DockerSandbox:
        """Create and start a container for `spec`; raises InfraError on engine failure.

        The container runs `sleep infinity` under an init, with the spec's limits (memory
        without swap, pids, nano_cpus) and network ("bridge" or "none" only: ValueError else).
        "none" containers are named `testbed` in their /etc/hosts (127.0.1.1): no route out,
        loopback and the own hostname work. "bridge" means the guarded build network (`envpool.netguard.ensure_build_network`):
        registries through NAT, nothing of the host, its subnets or private ranges; InfraError
        when that isolation cannot be installed. Every capability but `spec.cap_add` is dropped,
        `no-new-privileges` is set, and the writable layer gets `spec.disk` bytes where the
        storage driver enforces quotas, else /tmp is a tmpfs of `spec.tmp_bytes`. On an engine
        that remaps user namespaces, `spec.cache_mounts` folders are first handed to the host uid
        of the container's root (`envpool.hostfs.hand_over`; InfraError when swemint may not).
        """
        docker = _docker()
        from docker.types import Mount

        if spec.network not in ("bridge", "none"):
            raise ValueError(f"network {spec.network!r} not allowed (bridge or none only)")
        network_mode = "none" if spec.network == "none" else ensure_build_network(self.client, self.build_network)
        # no route out, but like a laptop without Wi-Fi: loopback works and the own hostname resolves
        offline = ({"hostname": OFFLINE_HOSTNAME, "extra_hosts": {OFFLINE_HOSTNAME: "127.0.1.1"}}
                   if network_mode == "none" else {})
        mounts = []
        ca = host_ca_bundle()
        if spec.mount_ca and ca and spec.network != "none":
            mounts.append(Mount(target=CA_PATH_IN_CONTAINER, source=str(ca), type="bind", read_only=True))
        ca_mounted = bool(mounts)
        owner = self.host_mount_owner() if spec.cache_mounts else None
        for host, target in spec.cache_mounts.items():  # package caches; not part of committed images
            Path(host).mkdir(parents=True, exist_ok=True)
            if owner is not None:  # remapped root must write it; it stays 0700 under root's 0700 parent
                try:
                    hand_over(Path(host), *owner)
                except PermissionError as e:
                    raise InfraError(f"cannot give {host} to the engine's remapped root (uid {owner[0]}): {e}; "
                                     "run swemint as root or set mint.cache.scope: off",
                                     instance_id=spec.instance_id) from e
            mounts.append(Mount(target=target, source=str(Path(host).resolve()), type="bind"))
        run_id = self._run_id(spec)
        if run_id != spec.run_id:
            spec = spec.model_copy(update={"run_id": run_id})
        labels = {**spec.labels, "swemint.run": run_id}
        if spec.instance_id:
            labels["swemint.instance"] = label_value(spec.instance_id)
        name = f"swemint-{image_tag(spec.instance_id or 'x')[:40]}-{uuid.uuid4().hex[:8]}"
        confine = self._confinement(spec)
        try:  # create + start, not run(): run() would try to pull a missing image
            try:
                container = self._create(spec, name, labels, network_mode, mounts, {**confine, **offline})
            except docker.errors.APIError as e:
                if "storage_opt" not in confine or "storage-opt" not in str(e).lower():
                    raise
                self._quota = False  # overlay2 on xfs without pquota: fall back to the tmpfs
                log.info("no disk quota on this engine (%s); /tmp is a bounded tmpfs instead", e)
                confine = self._confinement(spec)
                container = self._create(spec, name, labels, network_mode, mounts, {**confine, **offline})
            container.start()
        except Exception as e:
            self._remove_by_name(name)  # created but not started: do not leak it
            if isinstance(e, docker.errors.ImageNotFound):
                raise InfraError(f"image {spec.image} not found", instance_id=spec.instance_id) from e
            raise InfraError(f"could not start a container from {spec.image}: {e}",
                             instance_id=spec.instance_id) from e
        if log_path:
            log_path.parent.mkdir(parents=True, exist_ok=True)
        return DockerSandbox(self.client, container, spec, log_path, self.output_cap,
                             kill_after=self.kill_after, ca_mounted=ca_mounted, report_cap=self.report_cap,
                             host_grace=self.host_grace, tmpfs=tuple(confine.get("tmpfs", {})),
                             on_close=self.cpu_listener)

    def _create(self, spec: SandboxSpec, name: str, labels: dict, network_mode: str, mounts: list, confine: dict):
        return self.client.containers.create(
            spec.image, ["sleep", "infinity"], name=name, labels=labels,
            network_mode=network_mode, mem_limit=spec.memory, memswap_limit=spec.memory,
            nano_cpus=int(spec.cpus * 1e9), pids_limit=spec.pids, mounts=mounts,
            init=True, working_dir=spec.workdir, entrypoint=[], **confine)  # engine creates workdir

    def _remove_by_name(self, name: str) -> None:
        try:
            self.client.containers.get(name).remove(force=True)
        except Exception as e:  # noqa: BLE001 - usually: it was never created
            log.debug("no half-started container %s to remove: %s", name, e)

    @contextmanager
    def sandbox(self, spec: SandboxSpec, log_path: Path | None = None) -> Iterator[DockerSandbox]:
        """Context manager: start, yield, and remove the container on every path."""
        sb = self.start(spec, log_path)
        try:
            yield sb
        finally:
            sb.close()

    def sweep(self, run_id: str | None = None) -> int:
        """Remove every container labelled `swemint.run=<run_id>` (default: this factory's).

        Returns how many were removed; never raises for a container that vanished meanwhile.
        """
        n = 0
        rid = run_id or self.run_id
        for c in self.client.containers.list(all=True, filters={"label": f"swemint.run={rid}"},
                                             ignore_removed=True):
            try:
                c.remove(force=True)
                n += 1
            except Exception as e:  # noqa: BLE001 - vanished meanwhile, or being removed
                log.debug("sweep: removing %s failed: %s", c.name, e)
        return n
