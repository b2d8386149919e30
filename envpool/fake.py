"""A sandbox test double: everything above `envpool` can be tested without Docker.

Idea from SWE-ReX `runtime/dummy.py`: commands are answered from a script instead of being run.
`FakeSandbox` keeps files in memory and answers `exec` by, in this order:

1. the first *handler* whose regex matches the command (`re.search`), sandbox's own before the
   factory's; a handler is an `ExecResult` or a callable `(command, sandbox) -> reply`;
2. the next queued reply (`script(...)`), sandbox's own queue before the factory's;
3. `default` (exit 0, no output), or `LookupError` when the sandbox is `strict`.

A reply may be an `ExecResult`, an `int` (exit code), a `str` (output, exit 0) or a tuple
`(exit_code, output)`. A reply whose `duration` exceeds the exec's timeout becomes a timeout
(exit 124, `timed_out`); with a `progress` limit (`StepProgress`), a reply with output counts
as a command that kept printing, so its limit is the ceiling. Every call is recorded in `calls` (and `commands`), with the bytes
given on stdin. As `DockerSandbox`, the output is capped at `output_cap` in the result and in the
log file (head, marker, tail), and with `channel=True` the reply's `channel` bytes are the
command's report stream, capped at `report_cap` (`channel_truncated`).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from envpool.docker_sandbox import DEFAULT_OUTPUT_CAP, DEFAULT_REPORT_CAP, cap_output
from envpool.errors import InfraError, OutputTooLarge
from envpool.fake_images import FakeImage, FakeImageStore
from envpool.sandbox import ExecResult, SandboxSpec, StepProgress
from envpool.testrun.channel import encode_frames

Reply = ExecResult | int | str | tuple
Handler = Reply | Callable[[str, "FakeSandbox"], Reply]


@dataclass
class ExecCall:
    """One recorded `exec` call: its arguments (timeout in seconds) and the result returned."""

    command: str
    timeout: float
    env: dict[str, str] | None
    workdir: str
    log_label: str | None
    result: ExecResult | None = None
    stdin: bytes | None = None
    channel: bool = False
    progress: StepProgress | None = None


class _Script:
    """Handlers (regex → reply) and a FIFO of replies; shared by sandbox and factory."""

    def __init__(self) -> None:
        self.handlers: list[tuple[re.Pattern[str], Handler]] = []
        self.queue: deque[Handler] = deque()

    def on(self, pattern: str | re.Pattern[str], reply: Handler) -> None:
        self.handlers.append((re.compile(pattern), reply))

    def script(self, *replies: Handler) -> None:
        self.queue.extend(replies)

    def match(self, command: str) -> Handler | None:
        for pattern, reply in self.handlers:
            if pattern.search(command):
                return reply
        return None


def _normalise(command: str, reply: Reply) -> ExecResult:
    if isinstance(reply, ExecResult):
        return reply.model_copy(update={"command": command})
    if isinstance(reply, bool):
        raise TypeError("a bool is not a valid fake exec reply")
    if isinstance(reply, int):
        return ExecResult(command=command, exit_code=reply)
    if isinstance(reply, str):
        return ExecResult(command=command, exit_code=0, output=reply)
    if isinstance(reply, tuple) and len(reply) == 2:
        return ExecResult(command=command, exit_code=int(reply[0]), output=str(reply[1]))
    raise TypeError(f"unsupported fake exec reply: {reply!r}")


def _abs(path: str) -> str:
    if not path.startswith("/"):
        raise ValueError(f"sandbox paths must be absolute, got {path!r}")
    return posixpath.normpath(path)


class FakeSandbox:
    """In-memory `Sandbox`: scripted `exec`, files in a dict, recorded calls.

    Args:
        spec: the SandboxSpec it was "started" from.
        log_path: when set, every exec's command and output are appended to it, like Docker's.
        factory: the factory whose handlers/queue are consulted after this sandbox's own.
        strict: raise LookupError for a command nothing answers (default: `default`).
        default: reply for unanswered commands when not strict (default: exit 0, no output).
        output_cap: bytes of output kept per exec (as `DockerSandbox`).
        report_cap: bytes of a report channel or file kept (as `DockerSandbox`).

    Attributes:
        files: absolute path → content; `modes`: absolute path → permission bits.
        calls: every ExecCall, in order; `commits`: every FakeImage made; `closed`: bool.
    """

    files_have_times = False  # no clock: commit_image has no stamp margin to wait out

    def __init__(self, spec: SandboxSpec, log_path: Path | None = None, *,
                 factory: FakeSandboxFactory | None = None, strict: bool = False,
                 default: Reply = 0, output_cap: int = DEFAULT_OUTPUT_CAP, report_cap: int = DEFAULT_REPORT_CAP):
        self.spec = spec
        self.log_path = log_path
        self.factory = factory
        self.strict = strict
        self.default = default
        self.output_cap = output_cap
        self.report_cap = report_cap
        self.files: dict[str, bytes] = {}
        self.modes: dict[str, int] = {}
        self.calls: list[ExecCall] = []
        self.commits: list[FakeImage] = []
        self.closed = False
        self.close_count = 0
        self.cpu_seconds: float | None = None
        """CPU-seconds the \"container\" used, as `DockerSandbox.cpu_seconds` after close: a
        handler may add to it (`sb.cpu_seconds = (sb.cpu_seconds or 0) + 2.0`) to play a cost."""
        self._script = _Script()

    # -- scripting ------------------------------------------------------------------------
    def on(self, pattern: str | re.Pattern[str], reply: Handler) -> FakeSandbox:
        """Answer every command matching `pattern` (re.search) with `reply`; first added wins."""
        self._script.on(pattern, reply)
        return self

    def script(self, *replies: Handler) -> FakeSandbox:
        """Queue replies, each consumed by one command no handler matched."""
        self._script.script(*replies)
        return self

    @property
    def commands(self) -> list[str]:
        """The commands run so far, in order."""
        return [c.command for c in self.calls]

    def _answer(self, command: str) -> Reply:
        scripts = [self._script] + ([self.factory._script] if self.factory else [])
        for s in scripts:
            handler = s.match(command)
            if handler is not None:
                return handler(command, self) if callable(handler) else handler
        for s in scripts:
            if s.queue:
                handler = s.queue.popleft()
                return handler(command, self) if callable(handler) else handler
        if self.strict:
            raise LookupError(f"FakeSandbox: no scripted reply for {command!r}")
        return self.default

    # -- the Sandbox protocol -------------------------------------------------------------
    def exec(self, command: str, *, timeout: float = 600, env: dict[str, str] | None = None,
             workdir: str | None = None, log_label: str | None = None, stdin: bytes | None = None,
             channel: bool = False, progress: StepProgress | None = None) -> ExecResult:
        """Answer `command` from the script (see module doc); raises InfraError once closed."""
        if self.closed:
            raise InfraError("exec on a closed sandbox", instance_id=self.spec.instance_id)
        call = ExecCall(command, timeout, dict(env) if env else None, workdir or self.spec.workdir,
                        log_label, stdin=stdin, channel=channel, progress=progress)
        self.calls.append(call)
        result = _normalise(command, self._answer(command))
        if progress and result.output and not result.timed_out:  # it printed: it ran on, up to the ceiling
            timeout = max(timeout, progress.ceiling)
        if result.duration > timeout and not result.timed_out:
            result = result.model_copy(update={"exit_code": 124, "timed_out": True,
                                               "duration": float(timeout)})
        data, cut = cap_output(result.output.encode("utf-8", errors="replace"), self.output_cap)
        if self.log_path:  # the log gets what the result keeps, as DockerSandbox's does
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log_path, "ab") as f:
                f.write(f"\n$ [{log_label or 'exec'}] {command}\n".encode() + data +
                        f"\n[exit {result.exit_code}, {result.duration:.1f} s]\n".encode())
        if cut:
            result = result.model_copy(update={"output": data.decode("utf-8", errors="replace"),
                                               "truncated": True})
        if not channel and result.channel:
            result = result.model_copy(update={"channel": b""})
        elif len(result.channel) > self.report_cap:
            result = result.model_copy(update={"channel": result.channel[:self.report_cap],
                                               "channel_truncated": True})
        call.result = result
        return result

    def put_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Store `data` at absolute `path` (ValueError for a relative path)."""
        p = _abs(path)
        self.files[p] = data.encode() if isinstance(data, str) else bytes(data)
        self.modes[p] = mode

    def get_file(self, path: str, max_bytes: int | None = None) -> bytes:
        """Content stored at `path`; FileNotFoundError when absent, OutputTooLarge when longer
        than `max_bytes` (default `report_cap`)."""
        p = _abs(path)
        if p not in self.files:
            raise FileNotFoundError(path)
        limit = self.report_cap if max_bytes is None else max_bytes
        if len(self.files[p]) > limit:
            raise OutputTooLarge(f"{path} has {len(self.files[p])} bytes, more than the limit of {limit}",
                                 instance_id=self.spec.instance_id)
        return self.files[p]

    def stream_file(self, path: str, chunk_size: int = 1 << 20) -> Iterator[bytes]:
        """Content stored at `path` in chunks of `chunk_size` (no limit, as
        `DockerSandbox.stream_file`); FileNotFoundError when absent."""
        p = _abs(path)
        if p not in self.files:
            raise FileNotFoundError(path)
        data = self.files[p]
        for i in range(0, len(data), chunk_size):
            yield data[i:i + chunk_size]

    def put_dir(self, src: Path, dest: str) -> None:
        """Store every file under host folder `src` below `dest` (modes kept)."""
        base = _abs(dest)
        src = Path(src)
        if not src.is_dir():
            raise FileNotFoundError(str(src))
        for f in sorted(src.rglob("*")):
            if f.is_file():
                rel = f.relative_to(src).as_posix()
                self.put_file(posixpath.join(base, rel), f.read_bytes(), f.stat().st_mode & 0o7777)

    def commit(self, repository: str, tag: str, labels: dict[str, str] | None = None,
               env: dict[str, str] | None = None) -> str:
        """Record an image `repository:tag` holding a copy of the files (and `env`, its ENV);
        returns a fake id. Its labels are its parent image's (when the factory's store holds it)
        with `labels` over them, as Docker's commit copies the parent's."""
        if self.closed:
            raise InfraError("commit of a closed sandbox", instance_id=self.spec.instance_id)
        ref = f"{repository}:{tag}"
        digest = hashlib.sha256(f"{ref}:{len(self.commits)}:{sorted(self.files)}".encode())
        parent = self.factory.images.get_image(self.spec.image) if self.factory else None
        image = FakeImage(id=f"sha256:{digest.hexdigest()}", ref=ref,
                          labels={**(parent.labels if parent is not None else {}), "swemint.managed": "1",
                                  **(labels or {})},
                          files=dict(self.files), modes=dict(self.modes), env=dict(env or {}), parent=self.spec.image)
        self.commits.append(image)
        if self.factory:
            self.factory.images[ref] = image
        return image.id

    def close(self) -> None:
        """Mark closed (idempotent; `close_count` counts the calls); the first close calls the
        factory's `cpu_listener` with this sandbox, as `DockerSandbox.close` does."""
        self.close_count += 1
        first = not self.closed
        self.closed = True
        listener = getattr(self.factory, "cpu_listener", None) if self.factory else None
        if first and listener is not None:
            listener(self)


class FakeSandboxFactory:
    """Starts `FakeSandbox`es and records them; scripted replies here serve every sandbox.

    Args:
        run_id: the run label applied when a spec leaves `run_id` at its default.
        strict / default / output_cap / report_cap: passed to every sandbox.
        known_images: when given, starting an image not in it (nor committed) raises InfraError,
            like a missing image on a real engine.
        start_error: when set, every `start` raises it (e.g. InfraError for a dead daemon).
        isolation: what `isolation()` returns (default: an engine without user namespaces).
        pullable: refs the image store's `pull` finds (default: none, as without a registry).

    Attributes:
        specs: every SandboxSpec started, in order; `sandboxes`: the sandboxes;
        images: the engine's image store (`FakeImageStore`, ref -> FakeImage): images committed
            through this factory or made by its store's `layer` (a sandbox started from one
            begins with a copy of its files).
    """

    def __init__(self, run_id: str = "adhoc", *, strict: bool = False, default: Reply = 0,
                 output_cap: int = DEFAULT_OUTPUT_CAP, known_images: set[str] | None = None,
                 start_error: Exception | None = None, report_cap: int = DEFAULT_REPORT_CAP,
                 isolation: dict[str, object] | None = None, pullable: set[str] | None = None):
        self.run_id = run_id
        self._isolation = dict(isolation) if isolation is not None else {
            "user_namespaces": False, "root_uid": 0, "disk_quota": False, "security_options": []}
        self.strict = strict
        self.default = default
        self.output_cap = output_cap
        self.report_cap = report_cap
        self.known_images = known_images
        self.start_error = start_error
        self.specs: list[SandboxSpec] = []
        self.log_paths: list[Path | None] = []
        self.sandboxes: list[FakeSandbox] = []
        self.images = FakeImageStore(pullable=pullable)
        """The engine's images (`envpool.fake_images.FakeImageStore`): ref -> FakeImage."""
        self.cpu_listener = None
        """Called with each sandbox once closed (as `DockerSandboxFactory.cpu_listener`)."""
        self._script = _Script()

    def isolation(self) -> dict[str, object]:
        """The engine isolation given at construction (as `DockerSandboxFactory.isolation`)."""
        return dict(self._isolation)

    def on(self, pattern: str | re.Pattern[str], reply: Handler) -> FakeSandboxFactory:
        """Answer matching commands in every sandbox (after the sandbox's own handlers)."""
        self._script.on(pattern, reply)
        return self

    def script(self, *replies: Handler) -> FakeSandboxFactory:
        """Queue replies shared by all sandboxes (after each sandbox's own queue)."""
        self._script.script(*replies)
        return self

    def start(self, spec: SandboxSpec, log_path: Path | None = None) -> FakeSandbox:
        """Record `spec` and return a new FakeSandbox; raises InfraError as configured."""
        if self.start_error is not None:
            raise self.start_error
        if "run_id" not in spec.model_fields_set:
            spec = spec.model_copy(update={"run_id": self.run_id})
        image = self.images.get_image(spec.image)
        if image is None and self.known_images is not None and spec.image not in self.known_images:
            raise InfraError(f"image {spec.image} not found", instance_id=spec.instance_id)
        self.specs.append(spec)
        self.log_paths.append(log_path)
        sb = FakeSandbox(spec, log_path, factory=self, strict=self.strict, default=self.default,
                         output_cap=self.output_cap, report_cap=self.report_cap)
        if image is not None:
            sb.files.update(image.files)
            sb.modes.update(image.modes)
        self.sandboxes.append(sb)
        return sb

    @contextmanager
    def sandbox(self, spec: SandboxSpec, log_path: Path | None = None) -> Iterator[FakeSandbox]:
        """Context manager: start, yield, close on every path."""
        sb = self.start(spec, log_path)
        try:
            yield sb
        finally:
            sb.close()

    def sweep(self, run_id: str | None = None) -> int:
        """Close every open sandbox of `run_id` (default: this factory's); returns how many."""
        rid = run_id or self.run_id
        open_ones = [s for s in self.sandboxes if not s.closed and s.spec.run_id == rid]
        for s in open_ones:
            s.close()
        return len(open_ones)

    @property
    def open_sandboxes(self) -> list[FakeSandbox]:
        """Sandboxes started and not closed (a leak, once the code under test returned)."""
        return [s for s in self.sandboxes if not s.closed]


def pytest_session(statuses: dict[str, str], exitstatus: int | None = None, *, collected: int | None = None,
                   pid: int = 4242, seal: bool = True) -> list[dict]:
    """The records swemint's pytest plugin sends for a session whose tests ended with
    `statuses` (node id -> "passed" / "failed" / "skipped" / "error"); `exitstatus` defaults to
    pytest's (1 with a failure or error, else 0); `seal=False` leaves the session unfinished."""
    recs: list[dict] = [{"kind": "session_start", "pytest": "8.4.2", "python": "3.11", "timeout": None, "pid": pid},
                        {"kind": "collected", "count": len(statuses) if collected is None else collected, "pid": pid}]
    for nodeid, outcome in statuses.items():
        if outcome == "error":
            recs.append({"kind": "test", "nodeid": nodeid, "when": "setup", "outcome": "failed", "pid": pid})
            continue
        recs.append({"kind": "test", "nodeid": nodeid, "when": "setup", "outcome": "passed", "pid": pid})
        recs.append({"kind": "test", "nodeid": nodeid, "when": "call", "outcome": outcome, "pid": pid})
    if exitstatus is None:
        exitstatus = 1 if any(o in ("failed", "error") for o in statuses.values()) else 0
    if seal:
        recs.append({"kind": "session_finish", "exitstatus": exitstatus, "counts": {}, "seal": True, "pid": pid})
    return recs


def pytest_reply(records: list[dict], exit_code: int | None = None, output: str = "", *,
                 sign: bool = True, duration: float = 0.0) -> Callable[[str, FakeSandbox], ExecResult]:
    """A handler that plays swemint's pytest plugin: it signs `records` with the key the runner
    gave on stdin (`sign=False`: unsigned frames, as a forger without the key would write) and
    returns them on the report channel, `output` as the console and `exit_code` (default: the
    sealed session's exit status, else 2)."""
    finish = next((r for r in reversed(records) if r.get("kind") == "session_finish"), None)
    code = exit_code if exit_code is not None else (finish["exitstatus"] if finish else 2)

    def reply(command: str, sb: FakeSandbox) -> ExecResult:
        stdin = sb.calls[-1].stdin if sb.calls else None
        key = bytes.fromhex(stdin.strip().decode()) if sign and stdin else None
        return ExecResult(command=command, exit_code=code, output=output, channel=encode_frames(records, key),
                          duration=duration)
    return reply
