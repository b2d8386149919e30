"""The sandbox seam and the image-store seam beside it: how the layers above talk to a container
and to the images of its engine (or to test doubles).

Kept apart from *where* the box runs (cf. SWE-ReX `deployment/` vs `runtime/`): `DockerSandbox`
(envpool.docker_sandbox) and `FakeSandbox` (envpool.fake) both satisfy `Sandbox`;
`DockerImageStore` (envpool.imagestore) and `FakeImageStore` (envpool.fake_images) both satisfy
`ImageStore`.
"""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

NetworkMode = Literal["bridge", "none"]


class ExecResult(BaseModel):
    """Result of one command run in a sandbox.

    `output` is stdout and stderr in the order written (stdout only with `channel`), decoded as UTF-8
    with invalid bytes replaced, cut to the sandbox's output cap (bytes: its first quarter and
    last three quarters, a marker between); `truncated` says whether it was cut. `exit_code` is
    124 when the command was killed by its timeout or the host's deadline (then `timed_out`).
    `duration` is in seconds. `channel`: the command's stderr, raw, when the exec asked for a
    channel (a report stream kept apart from the console), at most the sandbox's report cap
    (`channel_truncated` past it). `lingering`: a process the command left behind kept its
    output open after it exited (the host stopped reading).
    """

    model_config = ConfigDict(extra="forbid")
    command: str
    exit_code: int
    output: str = ""
    duration: float = 0.0
    timed_out: bool = False
    truncated: bool = False
    channel: bytes = b""
    channel_truncated: bool = False
    lingering: bool = False

    @property
    def ok(self) -> bool:
        """True when the command exited 0 within its timeout."""
        return self.exit_code == 0 and not self.timed_out


class StepProgress(BaseModel):
    """A step limit that scales with measured progress (issue 25, S11): a command past its
    `timeout` goes on while it keeps printing, and is stopped once it has printed nothing for
    `idle` seconds, or at `ceiling` seconds from its start at the latest.

    Why output: a build that is working says so on its console -- make echoes every recipe,
    automake's silent rules still print ``CC  x.lo`` per object, CMake prints ``[ 42%] Building``,
    Maven a line per module and plugin, cargo ``Compiling x`` -- whatever the build system, so one
    rule serves autotools libraries and Java reactors alike; a hung step (a prompt, a lock wait, a
    deadlock) prints nothing. The alternative, building only what the touched tests need, needs
    each build system's target graph (CMake's helper has it; an autotools library's tests link the
    whole library, so its full build is what they need anyway) and does not shorten a reactor's
    compile of the modules the touched one depends on. A step that prints without progressing
    (a retry loop) ends at `ceiling`. Seconds."""

    model_config = ConfigDict(extra="forbid")
    idle: float = Field(gt=0)
    ceiling: float = Field(gt=0)


class SandboxSpec(BaseModel):
    """How to start a sandbox.

    Limits: `cpus` in cores (fractions allowed), `memory` in bytes, `pids` a count.
    `network`: "bridge" (NAT to the package registries; setup steps) or "none" (test runs).
    Never host networking: repository code must not reach the build host's loopback.
    """

    model_config = ConfigDict(extra="forbid")
    image: str
    run_id: str = "adhoc"
    instance_id: str | None = None
    network: NetworkMode = "bridge"
    cpus: float = 2.0
    memory: int = 8 * 1024**3
    pids: int = 4096
    workdir: str = "/testbed"
    env: dict[str, str] = Field(default_factory=dict)
    mount_ca: bool = True
    labels: dict[str, str] = Field(default_factory=dict)
    cache_mounts: dict[str, str] = Field(default_factory=dict)
    """Host folder -> container path, bind-mounted read-write (package caches). Mounts are not
    part of committed images. The caller owns the folder: one per instance (never shared
    writable between instances), scrubbed of setuid bits after use."""
    cap_add: list[str] = Field(default_factory=lambda: list(DEFAULT_CAPS))
    """Linux capabilities the container keeps; every other one is dropped (`cap_drop=ALL`)."""
    disk: int | None = 20 * 1024**3
    """Bytes of the container's writable layer where the storage driver enforces a quota
    (overlay2 on xfs with pquota); else (and with None) no quota, see `tmp_bytes`."""
    tmp_bytes: int | None = 2 * 1024**3
    """Size in bytes of a tmpfs mounted at /tmp when the writable layer has no quota (None: no
    tmpfs). Counts against `memory`."""


DEFAULT_CAPS: tuple[str, ...] = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
                                 "NET_BIND_SERVICE")
"""Capabilities build and test containers keep (apt/dpkg, pip/uv, npm, cargo, go, maven builds as
root need these). Dropped from Docker's defaults: NET_RAW (raw packets on the bridge), MKNOD,
SETFCAP, SETPCAP, SYS_CHROOT, AUDIT_WRITE. Containers also run with `no-new-privileges`."""


@runtime_checkable
class Sandbox(Protocol):
    """A running container (or its double).

    All methods raise `envpool.errors.InfraError` when the engine itself fails.
    """

    spec: SandboxSpec
    files_have_times: bool
    """Whether files written into it carry the real clock's times (a container: True; an in-memory
    double: False). `agents.envimage.commit_image` waits out the test-path reset's stamp margin
    only where they do."""

    def exec(self, command: str, *, timeout: float = 600, env: dict[str, str] | None = None,
             workdir: str | None = None, log_label: str | None = None, stdin: bytes | None = None,
             channel: bool = False, progress: StepProgress | None = None) -> ExecResult:
        """Run `command` with `bash -c` (timeout in seconds, enforced inside and by a host-side
        deadline); never raises on a nonzero exit. `stdin`: bytes fed to the command's stdin,
        then closed. `channel`: keep the command's stderr apart (`ExecResult.channel`).
        `progress`: past `timeout`, go on while the command prints (`StepProgress`)."""
        ...

    def put_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Write `data` to the absolute `path` inside the sandbox, creating parent folders."""
        ...

    def get_file(self, path: str, max_bytes: int | None = None) -> bytes:
        """Read the file at the absolute `path`; raises FileNotFoundError when absent and
        `envpool.errors.OutputTooLarge` when it has more than `max_bytes` bytes."""
        ...

    def put_dir(self, src: Path, dest: str) -> None:
        """Copy the host folder `src` to `dest` inside the sandbox."""
        ...

    def commit(self, repository: str, tag: str, labels: dict[str, str] | None = None,
               env: dict[str, str] | None = None) -> str:
        """Commit the filesystem as image `repository:tag` (with `env` in its ENV); returns the
        image id."""
        ...

    def close(self) -> None:
        """Stop and remove the container; safe to call twice."""
        ...


class SandboxFactory(Protocol):
    """Starts sandboxes; a context manager closes them on every path. `images` is the image
    store of the same engine. A factory may also have `isolation() -> dict` (what its engine
    gives containers; see `engine_isolation`)."""

    images: ImageStore

    def start(self, spec: SandboxSpec, log_path: Path | None = None) -> Sandbox:
        """Start a sandbox from `spec`; its commands' output is appended to `log_path`."""
        ...


class ImageInfo(BaseModel):
    """One image of an engine: its `id` (`sha256:...`), the `tags` naming it, its `labels`,
    `size` in bytes (0 when unknown), `repo_digests` (`repo@sha256:...` once pushed or pulled
    by digest) and `created`."""

    model_config = ConfigDict(extra="forbid")
    id: str
    tags: list[str] = Field(default_factory=list)
    labels: dict[str, str] = Field(default_factory=dict)
    size: int = 0
    repo_digests: list[str] = Field(default_factory=list)
    created: str = ""
    """When it was made (the engine's ISO timestamp; "" when unknown)."""


@runtime_checkable
class ImageStore(Protocol):
    """The images of one engine (or their double), beside the sandboxes it runs: what the
    toolchain images, the environment images and the pool ask of an engine. A factory's `images`
    is the store of its engine (`envpool.imagestore.DockerImageStore`, `envpool.fake_images.
    FakeImageStore`); `envpool.imagestore.active_store()` is the one code without a factory uses.

    Never raises for an absent image (`get` is None, `remove` False); raises
    `envpool.errors.InfraError` when the engine fails a build (`layer`, `bootstrap`)."""

    def get(self, ref: str) -> ImageInfo | None:
        """The image `ref` (a tag or an id), None when the engine has none."""
        ...

    def pull(self, ref: str) -> bool:
        """Pull `ref` from its registry; False (never raises) when none answers."""
        ...

    def tag(self, ref: str, repository: str, tag: str) -> None:
        """Name image `ref` `repository:tag` too."""
        ...

    def remove(self, ref: str, force: bool = False) -> bool:
        """Remove image `ref` (a tag: the name; an id: the image); False when absent or in use."""
        ...

    def list(self, labels: dict[str, str] | None = None) -> builtins.list[ImageInfo]:
        """The images carrying every label of `labels` (None: all images)."""
        ...

    def layer(self, parent: str, tag: str, script: str, labels: dict[str, str], timeout: float = 1800) -> str:
        """Image `tag`: `parent` with `script` run as root on the build network, committed with
        `labels`; returns `tag`. Raises InfraError when the script fails (its output's tail)."""
        ...

    def bootstrap(self, suite: str, tag: str, mirror: str, packages: builtins.list[str]) -> None:
        """Image `tag`: Debian `suite` made by debootstrap from `mirror` with `packages`, imported
        (the route where no container registry answers). Raises InfraError when it fails."""
        ...

    def push(self, ref: str, registry: str, auth: dict | None = None) -> str:
        """Push image `ref` to `registry` (`host:port[/prefix]`; `auth`: the docker API's
        `auth_config`); returns its reference by digest (`host/repo@sha256:...`). Raises
        InfraError when the image is missing or the push fails (registry down, credentials)."""
        ...

    def node(self) -> str:
        """The name of the node whose engine holds these images (the engine's `swemint.node`
        label, else its name; "" when it cannot say). Never raises."""
        ...


def engine_isolation(factory) -> dict[str, object]:
    """`factory.isolation()` (e.g. `{"user_namespaces": bool, "root_uid": int, ...}`) for a row,
    {} when the factory has none or it fails (never raises)."""
    fn = getattr(factory, "isolation", None)
    if fn is None:
        return {}
    try:
        return dict(fn())
    except Exception:  # noqa: BLE001 - a row without it says "not known"
        return {}
