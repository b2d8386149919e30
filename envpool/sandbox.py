"""The sandbox seam: how the layers above talk to a container (or a test double).

Kept apart from *where* the box runs (cf. SWE-ReX `deployment/` vs `runtime/`): `DockerSandbox`
(envpool.docker_sandbox) and `FakeSandbox` (envpool.fake) both satisfy `Sandbox`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

NetworkMode = Literal["bridge", "none"]


class ExecResult(BaseModel):
    """Result of one command run in a sandbox.

    `output` is stdout and stderr interleaved, decoded as UTF-8 with invalid bytes replaced,
    cut to the sandbox's output cap (bytes); `truncated` says whether it was cut.
    `exit_code` is 124 when the command was killed by its timeout (then `timed_out` is True).
    `duration` is in seconds.
    """

    model_config = ConfigDict(extra="forbid")
    command: str
    exit_code: int
    output: str = ""
    duration: float = 0.0
    timed_out: bool = False
    truncated: bool = False

    @property
    def ok(self) -> bool:
        """True when the command exited 0 within its timeout."""
        return self.exit_code == 0 and not self.timed_out


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
    part of committed images."""


@runtime_checkable
class Sandbox(Protocol):
    """A running container (or its double).

    All methods raise `envpool.errors.InfraError` when the engine itself fails.
    """

    spec: SandboxSpec

    def exec(self, command: str, *, timeout: float = 600, env: dict[str, str] | None = None,
             workdir: str | None = None, log_label: str | None = None) -> ExecResult:
        """Run `command` with `bash -lc` (timeout in seconds); never raises on a nonzero exit."""
        ...

    def put_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Write `data` to the absolute `path` inside the sandbox, creating parent folders."""
        ...

    def get_file(self, path: str) -> bytes:
        """Read the file at the absolute `path`; raises FileNotFoundError when absent."""
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
    """Starts sandboxes; a context manager closes them on every path."""

    def start(self, spec: SandboxSpec, log_path: Path | None = None) -> Sandbox:
        """Start a sandbox from `spec`; its commands' output is appended to `log_path`."""
        ...
