"""The image store of a Docker engine (`DockerImageStore`, the `envpool.sandbox.ImageStore` seam)
and the store code without a sandbox factory at hand uses (`active_store`).

Everything swemint asks of an engine's images goes through a store: the toolchain images
(`envpool.images`, `envpool.toolchains`), the environment images the minter commits and reuses
(`agents.envimage`, `agents.tiers`), the pool's and the pipeline's image housekeeping. A test
gives the code under test `envpool.fake_images.FakeImageStore` through `use_store` (or a
`FakeSandboxFactory`, whose `images` it is) instead of patching functions.
"""

from __future__ import annotations

import builtins
import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from envpool.cgroup import engine_cpu_seconds, note_image_cpu, wait_cpu
from envpool.errors import InfraError
from envpool.sandbox import ImageInfo, ImageStore, SandboxSpec

log = logging.getLogger(__name__)

NODE_LABEL = "swemint.node"
"""Engine label (`dockerd --label swemint.node=NAME`) naming the node an engine serves (image
events, `EnvRecord.node`)."""


def engine_node(client) -> str:
    """The node an engine serves: its `swemint.node` label, else the engine's name ("" when
    `info()` fails)."""
    try:
        info = client.info()
    except Exception:  # noqa: BLE001
        return ""
    for label in info.get("Labels") or []:
        key, _, value = str(label).partition("=")
        if key == NODE_LABEL and value:
            return value
    return str(info.get("Name") or "")


def _info(img) -> ImageInfo:
    attrs = getattr(img, "attrs", None) or {}
    return ImageInfo(id=img.id, tags=list(getattr(img, "tags", None) or []), labels=dict(img.labels or {}),
                     size=int(attrs.get("Size") or 0), repo_digests=list(attrs.get("RepoDigests") or []),
                     created=str(attrs.get("Created") or ""))


class DockerImageStore:
    """`ImageStore` of the engine `client` (a docker SDK client; default: from the environment).
    `client` is kept for what only the engine's API does (registry pushes and pulls by digest:
    `envpool.image_registry`)."""

    def __init__(self, client=None):
        if client is None:
            from envpool.docker_sandbox import docker_client

            client = docker_client()
        self.client = client

    def get(self, ref: str) -> ImageInfo | None:
        """The image `ref`, None when absent (or the engine cannot say)."""
        try:
            return _info(self.client.images.get(ref))
        except Exception:  # noqa: BLE001 - docker.errors.ImageNotFound, or an engine hiccup: not here
            return None

    def pull(self, ref: str) -> bool:
        """`docker pull ref`; False when no registry answers."""
        try:
            self.client.images.pull(ref)
            return True
        except Exception as e:  # noqa: BLE001 - no registry here is the normal case
            log.info("pull %s failed: %s", ref, str(e)[:200])
            return False

    def tag(self, ref: str, repository: str, tag: str) -> None:
        """`docker tag ref repository:tag`; raises InfraError when `ref` is absent."""
        try:
            self.client.images.get(ref).tag(repository, tag)
        except Exception as e:  # noqa: BLE001
            raise InfraError(f"docker tag {ref} {repository}:{tag} failed: {e}") from e

    def remove(self, ref: str, force: bool = False) -> bool:
        """`docker rmi [-f] ref`; False when absent or in use."""
        try:
            self.client.images.remove(ref, force=force)
            return True
        except Exception:  # noqa: BLE001 - absent, or a container still uses it
            return False

    def list(self, labels: dict[str, str] | None = None) -> builtins.list[ImageInfo]:
        """Images with every label of `labels` (intermediate ones included)."""
        filters = {"label": [f"{k}={v}" for k, v in labels.items()]} if labels else None
        return [_info(i) for i in self.client.images.list(all=True, filters=filters)]

    def layer(self, parent: str, tag: str, script: str, labels: dict[str, str], timeout: float = 1800) -> str:
        """Run `script` in a build container of `parent` (bridge network, 8 GiB) and commit it as
        `tag` with `labels`."""
        from envpool.docker_sandbox import DockerSandboxFactory

        _sweep_dead_builds(self.client)
        run_id = f"{BUILD_RUN}-{os.getpid()}"  # the owner's pid: a killed owner's container is swept
        factory = DockerSandboxFactory(run_id=run_id, client=self.client)
        # the build container's cgroup CPU and the engine's commit: an image build's, not the
        # instance's that waited for it (`note_image_cpu`)
        factory.cpu_listener = lambda sb: note_image_cpu((sb.cpu_seconds or 0.0) + (sb.engine_cpu_seconds or 0.0))
        spec = SandboxSpec(image=parent, run_id=run_id, network="bridge", memory=8 * 1024**3)
        with factory.sandbox(spec) as sb:
            r = sb.exec(script, timeout=timeout, log_label="image-layer")
            if not r.ok:
                raise InfraError(f"building image {tag} failed (exit {r.exit_code}): {r.output[-3000:]}")
            repo, _, t = tag.rpartition(":")
            sb.commit(repo, t, labels=labels)
        return tag

    def node(self) -> str:
        """The engine's node name (`engine_node`: its `swemint.node` label, else its name; ""
        when the engine does not answer)."""
        return engine_node(self.client)

    def push(self, ref: str, registry: str, auth: dict | None = None) -> str:
        """`envpool.pool.publish_image` on this engine."""
        from envpool.pool import publish_image

        return publish_image(ref, registry, client=self.client, auth=auth)

    def bootstrap(self, suite: str, tag: str, mirror: str, packages: builtins.list[str]) -> None:
        """debootstrap --variant=minbase (25-45 s, ~210 MB) then `docker import` with the labels
        `swemint.route=debootstrap swemint.managed=1`. The CPU it costs (debootstrap's ~30
        CPU-seconds, tar, the docker CLI, the engine's import) is an image build's
        (`note_image_cpu`), not the instance's that waited for it."""
        if not shutil.which("debootstrap"):
            raise InfraError("debootstrap is not installed (apt-get install -y debootstrap)")
        children, engine = 0.0, 0.0  # CPU-seconds of the children this process waited for; the engine's import
        t0 = time.thread_time()  # this thread's share: the root's removal (~400 MB) above all
        try:
            with tempfile.TemporaryDirectory(prefix=f"swemint-{suite}-") as tmp:
                root = Path(tmp) / "root"
                cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(packages)}", suite, str(root),
                       mirror]
                log.info("bootstrapping %s: %s", tag, " ".join(cmd))
                code, out, cpu = _run_measured(cmd)
                children += cpu
                if code != 0:
                    raise InfraError(f"debootstrap {suite} failed: {out[-2000:]}")
                # apt in sid/forky needs Check-Valid-Until false (frozen snapshot mirror)
                (root / "etc/apt/apt.conf.d/99swemint").write_text(
                    'Acquire::Check-Valid-Until "false";\nAPT::Install-Recommends "false";\n')
                tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
                e0 = engine_cpu_seconds()
                code, out, cpu = 1, "", 0.0  # an import that cannot start (no docker CLI) spent nothing
                try:
                    code, out, cpu = _run_measured(
                        ["docker", "-H", engine_host(self.client), "import", "--change", 'CMD ["bash"]',
                         "--change", "LABEL swemint.route=debootstrap swemint.managed=1", "-", tag], stdin=tar.stdout)
                finally:
                    if tar.stdout is not None:
                        tar.stdout.close()
                    children += cpu + wait_cpu(tar)
                    e1 = engine_cpu_seconds()
                    engine = max(0.0, e1 - e0) if e0 is not None and e1 is not None else 0.0
                if code != 0:
                    raise InfraError(f"docker import {tag} failed: {out[-2000:]}")
        finally:
            own = time.thread_time() - t0
            note_image_cpu(children + own + engine, own, children)

def _run_measured(cmd: builtins.list[str], stdin=None) -> tuple[int, str, float]:
    """Run `cmd` to its end: (exit code, its stderr else stdout as text, the CPU-seconds it and
    its waited-for children used: `envpool.cgroup.wait_cpu`). Output goes through temporary
    files, so the process is reaped by `os.wait4` (which reports its CPU), not by `communicate`."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=out, stderr=err)
        try:
            cpu = wait_cpu(proc)
        except BaseException:  # interrupted: do not leave it running (as `subprocess.run`)
            proc.kill()
            wait_cpu(proc)
            raise
        out.seek(0)
        err.seek(0)
        text_out, text_err = (f.read().decode(errors="replace") for f in (out, err))
    return proc.returncode, text_err or text_out, cpu


BUILD_RUN = "image-build"
"""Run id prefix of image-layer build containers (`DockerImageStore.layer`): `image-build-<pid>`."""


def _sweep_dead_builds(client) -> int:
    """Remove build containers whose owning process (the pid in `image-build-<pid>`) is gone from
    this host -- a layer build killed mid-way (SIGTERM/SIGKILL skip the sandbox's own removal) --
    and old-style `image-build` ones; returns how many. Failures are logged, never raised."""
    removed = 0
    try:
        for c in client.containers.list(all=True, filters={"label": "swemint.run"}, ignore_removed=True):
            run = (c.labels or {}).get("swemint.run", "")
            if run != BUILD_RUN and not run.startswith(BUILD_RUN + "-"):
                continue
            pid = run[len(BUILD_RUN) + 1:]
            if pid.isdigit() and Path(f"/proc/{pid}").exists():
                continue  # its builder is alive (this process or another build in progress)
            if not pid and not _older_than(c, OLD_STYLE_AGE):
                continue  # an old-style one (no pid) may still be building: only past any build's limit
            c.remove(force=True)
            removed += 1
    except Exception as e:  # noqa: BLE001 - a sweep never fails the build
        log.warning("sweeping dead image-build containers failed: %s", e)
    return removed


OLD_STYLE_AGE = 4 * 3600
"""Seconds after which a build container without an owner pid is surely abandoned (layer timeout 1800)."""


def _older_than(container, seconds: float) -> bool:
    """Whether the container was created more than `seconds` ago (False when unknown)."""
    from datetime import datetime, timezone

    created = (getattr(container, "attrs", None) or {}).get("Created", "")
    try:
        when = datetime.fromisoformat(created[:26].rstrip("Z") + "+00:00")
    except ValueError:
        return False
    return (datetime.now(timezone.utc) - when).total_seconds() > seconds


def engine_host(client) -> str:
    """The `-H` of the docker CLI for `client`'s engine: its unix socket, else DOCKER_HOST's
    value, else the default socket."""
    base = str(getattr(getattr(client, "api", None), "base_url", "") or "")
    sock = getattr(getattr(getattr(client, "api", None), "_custom_adapter", None), "socket_path", None)
    if sock:
        return f"unix://{sock}"
    if base.startswith(("tcp://", "https://", "http://")) and "localhost" not in base:
        return base.replace("http://", "tcp://").replace("https://", "tcp://")
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


_active: ContextVar[ImageStore | None] = ContextVar("swemint_image_store", default=None)


@contextmanager
def use_store(store: ImageStore) -> Iterator[ImageStore]:
    """Within the block (this thread or task), `active_store()` is `store`: the minter sets its
    factory's store for an instance, a test its `FakeImageStore`."""
    token = _active.set(store)
    try:
        yield store
    finally:
        _active.reset(token)


def active_store(engine=None) -> ImageStore:
    """The image store to use: `engine`'s (`store_of`) when one is given, else the store
    `use_store` set, else the engine of the environment (`DOCKER_HOST`). Raises InfraError when
    that engine does not answer."""
    if engine is not None:
        return store_of(engine)
    store = _active.get()
    return store if store is not None else DockerImageStore()  # an empty fake store is falsy


def store_of(engine) -> ImageStore:
    """The image store of `engine`: a store as it is; a sandbox factory's `images` (a
    `FakeSandboxFactory`'s) or the store of its docker `client` (a `DockerSandboxFactory`'s);
    a docker SDK client wrapped."""
    if isinstance(engine, ImageStore):
        return engine
    own = getattr(engine, "images", None)
    if isinstance(own, ImageStore):
        return own
    client = getattr(engine, "client", None)
    return DockerImageStore(client if client is not None else engine)
