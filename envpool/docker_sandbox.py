"""The one thin layer over the docker SDK: start, exec, copy files, commit, clean up.

Pitfalls handled (see shared platform notes): `mounts=` instead of `volumes=` (volumes are
baked into committed images); exit codes through `exec_create`/`exec_start`/`exec_inspect`;
exec timeouts with coreutils `timeout` inside the container (it signals the whole process
group); never host networking; everything labelled `swemint.run=<run id>`.
"""

from __future__ import annotations

import io
import logging
import os
import posixpath
import shlex
import tarfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from envpool.errors import InfraError
from envpool.netguard import BuildNetworkConfig, ensure_build_network
from envpool.sandbox import ExecResult, SandboxSpec

log = logging.getLogger(__name__)

CA_PATH_IN_CONTAINER = "/opt/swemint/ca.pem"
"""Where the host CA bundle is mounted (never over /etc/ssl/certs, which breaks ca-certificates)."""

CA_ENV_VARS = ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
               "NODE_EXTRA_CA_CERTS", "npm_config_cafile", "CARGO_HTTP_CAINFO", "GIT_SSL_CAINFO",
               "UV_CERT", "AWS_CA_BUNDLE")
"""Environment variables pointed at the mounted CA bundle in every exec of a build container."""

DEFAULT_OUTPUT_CAP = 4 * 1024 * 1024
"""Bytes of output kept in memory per exec (the log file gets everything)."""


OFFLINE_HOSTNAME = "testbed"
"""Hostname of test-run containers (`network_mode="none"`), resolvable through /etc/hosts to
127.0.1.1 as on a Debian laptop, so libraries that look up their own address at import work."""


def host_ca_bundle() -> Path | None:
    """The host CA bundle to propagate (env `SWEMINT_CA_BUNDLE`, else Debian's), or None."""
    p = Path(os.environ.get("SWEMINT_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt"))
    return p if p.is_file() else None


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

    def __init__(self, client, container, spec: SandboxSpec, log_path: Path | None,
                 output_cap: int = DEFAULT_OUTPUT_CAP, *, kill_after: float = DEFAULT_KILL_AFTER,
                 ca_mounted: bool | None = None):
        self.client = client
        self.container = container
        self.spec = spec
        self.log_path = log_path
        self.output_cap = output_cap
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
             workdir: str | None = None, log_label: str | None = None) -> ExecResult:
        """Run `command` under `bash -c` (not a login shell: PATH from `env` is kept).

        `timeout` in seconds (rounded up to whole seconds, at least 1): at the deadline the
        command's process group gets SIGTERM, `kill_after` seconds later SIGKILL; the result is
        then exit code 124 with `timed_out`. Output (stdout and stderr interleaved) is capped at
        `output_cap` bytes (`truncated`), decoded as UTF-8 with replacement, and appended in full
        to `log_path`. Never raises for a failing command; raises InfraError when the engine fails.
        """
        t = max(1, int(-(-timeout // 1)))
        kill = max(1, int(-(-self.kill_after // 1)))
        argv = ["timeout", "-k", str(kill), str(t), "bash", "-c", command]
        start = time.monotonic()
        api = self.client.api
        capture = _Capture(self.output_cap)
        try:
            ex = api.exec_create(self.container.id, argv, stdout=True, stderr=True,
                                 environment=self._exec_env(env), workdir=workdir or self.spec.workdir)
            stream = api.exec_start(ex["Id"], stream=True, demux=False)
            with open(self.log_path, "ab") if self.log_path else nullcontext() as logf:
                if logf:
                    logf.write(f"\n$ [{log_label or 'exec'}] {command}\n".encode())
                    logf.flush()
                for chunk in stream:
                    if logf:
                        logf.write(chunk)
                    capture.feed(chunk)
                code = self._exit_code(ex["Id"])
                dur = time.monotonic() - start
                if logf:
                    logf.write(f"\n[exit {code}, {dur:.1f} s]\n".encode())
        except Exception as e:
            if isinstance(e, InfraError):
                raise
            raise InfraError(f"docker exec failed: {e}", instance_id=self.spec.instance_id,
                             log_path=self.log_path) from e
        data, truncated = capture.result()
        code = -1 if code is None else int(code)
        # 124: TERM at the deadline worked; 137: timeout had to KILL the group (itself included)
        timed_out = code in (124, 137) and dur >= t - 0.5
        return ExecResult(command=command, exit_code=124 if timed_out else code,
                          output=data.decode("utf-8", errors="replace"), duration=dur,
                          timed_out=timed_out, truncated=truncated)

    # -- files ----------------------------------------------------------------------------
    def _mkdir(self, path: str) -> None:
        r = self.exec(f"mkdir -p {shlex.quote(path)}", timeout=30, workdir="/", log_label="mkdir")
        if not r.ok:
            raise InfraError(f"mkdir {path} failed in the container: {r.output[-500:]}",
                             instance_id=self.spec.instance_id, log_path=self.log_path)

    def put_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Write `data` at absolute `path` in the container (parents created, owner root).

        Raises ValueError for a relative path, InfraError when the copy fails.
        """
        if not path.startswith("/"):
            raise ValueError(f"sandbox paths must be absolute, got {path!r}")
        raw = data.encode() if isinstance(data, str) else data
        parent, name = posixpath.split(posixpath.normpath(path))
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
        self._mkdir(dest)
        bio = io.BytesIO()
        with tarfile.open(fileobj=bio, mode="w") as tar:
            tar.add(str(src), arcname=".")
        try:
            self.container.put_archive(dest, bio.getvalue())
        except Exception as e:
            raise InfraError(f"copy into container failed: {e}", instance_id=self.spec.instance_id) from e

    def get_file(self, path: str, _follow: int = 8) -> bytes:
        """Read the regular file at `path` (symlinks followed).

        Raises FileNotFoundError when absent, IsADirectoryError for a folder, InfraError when
        the engine fails.
        """
        docker = _docker()
        try:
            chunks, _ = self.container.get_archive(path)
        except docker.errors.NotFound as e:
            raise FileNotFoundError(path) from e
        except Exception as e:
            raise InfraError(f"copy out of container failed: {e}", instance_id=self.spec.instance_id) from e
        bio = io.BytesIO(b"".join(chunks))
        with tarfile.open(fileobj=bio) as tar:
            first = tar.next()
            if first is None:
                raise FileNotFoundError(path)
            if first.isdir():
                raise IsADirectoryError(path)
            if first.issym() and _follow > 0:
                target = posixpath.normpath(posixpath.join(posixpath.dirname(path), first.linkname))
                return self.get_file(target, _follow - 1)
            f = tar.extractfile(first)
            if f is None:
                raise FileNotFoundError(path)
            return f.read()

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
        try:
            img = self.container.commit(repository=repository, tag=tag, conf=conf)
        except Exception as e:
            raise InfraError(f"docker commit failed: {e}", instance_id=self.spec.instance_id) from e
        return img.id

    def close(self) -> None:
        """Remove the container (force); idempotent, never raises."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            self.container.remove(force=True)
        except Exception as e:  # noqa: BLE001 - close never raises; sweep() catches leftovers
            log.debug("removing container %s failed: %s", self.container.id[:12], e)


class DockerSandboxFactory:
    """Starts labelled, resource-limited containers.

    Args:
        run_id: value of the `swemint.run` label on everything started, unless a spec sets
            `run_id` explicitly.
        client: a docker SDK client (default: from the environment).
        output_cap: bytes of output kept per exec (see DockerSandbox).
        kill_after: seconds between SIGTERM and SIGKILL when an exec times out.
        build_network: the network "bridge" specs run on (`envpool.netguard`: swemint's own
            bridge, isolated from the host and private ranges; created and guarded on first use).
    """

    def __init__(self, run_id: str = "adhoc", client=None, *, output_cap: int = DEFAULT_OUTPUT_CAP,
                 kill_after: float = DEFAULT_KILL_AFTER, build_network: BuildNetworkConfig | None = None):
        self.run_id = run_id
        self.client = client or docker_client()
        self.output_cap = output_cap
        self.kill_after = kill_after
        self.build_network = build_network or BuildNetworkConfig()

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
        when that isolation cannot be installed.
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
        for host, target in spec.cache_mounts.items():  # package caches; not part of committed images
            Path(host).mkdir(parents=True, exist_ok=True)
            mounts.append(Mount(target=target, source=str(Path(host).resolve()), type="bind"))
        run_id = self._run_id(spec)
        if run_id != spec.run_id:
            spec = spec.model_copy(update={"run_id": run_id})
        labels = {**spec.labels, "swemint.run": run_id}
        if spec.instance_id:
            labels["swemint.instance"] = spec.instance_id
        name = f"swemint-{(spec.instance_id or 'x')[:40].replace('/', '_')}-{uuid.uuid4().hex[:8]}"
        name = "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)
        try:  # create + start, not run(): run() would try to pull a missing image
            container = self.client.containers.create(
                spec.image, ["sleep", "infinity"], name=name, labels=labels,
                network_mode=network_mode, mem_limit=spec.memory, memswap_limit=spec.memory,
                **offline, 
                nano_cpus=int(spec.cpus * 1e9), pids_limit=spec.pids, mounts=mounts,
                init=True, working_dir=spec.workdir, entrypoint=[])  # engine creates workdir
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
                             kill_after=self.kill_after, ca_mounted=ca_mounted)

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
        for c in self.client.containers.list(all=True, filters={"label": f"swemint.run={rid}"}):
            try:
                c.remove(force=True)
                n += 1
            except Exception as e:  # noqa: BLE001 - vanished meanwhile, or being removed
                log.debug("sweep: removing %s failed: %s", c.name, e)
        return n
