"""The error tree of swemint: one root, `SwemintError`, for every error raised on purpose.

    SwemintError
    ├── InfraError          daemon, disk, registry, OOM of the host: says nothing about the instance
    │   ├── LowDisk         free space under a floor (envpool.hostfs)
    │   ├── AptMirrorError  apt could not use the Debian mirror, after its retries (envpool.aptmirror)
    │   └── IndexUnavailable  Debian's file index could not be built for a need a fix waits on (agents.debindex)
    ├── SandboxTimeout      a command or run exceeded its time limit (seconds)
    ├── InstanceInputError  bad instance data (missing field, unknown repository, bad JSON)
    ├── InvalidTaskError    the fix edits test code or test infrastructure (outcome invalid_task)
    ├── PatchApplyError     `patch` or `test_patch` does not apply, even after normalisation
    ├── EnvBuildError       the environment could not be built (our builder's failure)
    ├── OutputTooLarge      a report file or stream from a sandbox is over its size bound
    ├── TestsNotRunError    the runner never reached the tests, or its report is not trusted
    ├── LLMError            the LLM gateway's tree (agents.llm.llm_errors)
    ├── ExperienceMemoryError  the experience memory's tree (agents.memory)
    ├── YamlTooLarge        a repository's YAML over a bound (agents.untrusted_yaml; a YAMLError)
    ├── SourceError         the crawl sources' tree (pipeline.sources.source_errors)
    ├── PublishRefused      a dataset with rows others cannot run (pipeline.hub; a ValueError)
    ├── WorkdirLocked       another driver holds the work directory (pipeline.store; a BlockingIOError)
    ├── NewerRow            a stored row a newer swemint wrote (pipeline.store; a ValueError)
    └── ReadOnlyStore       a write on a store opened read-only (pipeline.store; a PermissionError)

Where an error is also a built-in kind (ValueError, KeyError, OSError) it derives from both, so
callers that catch the built-in keep working. Not in this tree: private control-flow exceptions
(a retry signal, a size cut-off), the pytest plugin's timeout (it runs inside the sandbox, without
swemint), `envpool.testpaths.RuleSetError` (a ValueError of a stdlib-only module that the status
tool runs inside every image) and `envpool.quoting.UnsafePath`, a ValueError (this module formats its messages with
`envpool.quoting`, which therefore cannot import it).

Every error may carry the `instance_id` and the `log_path` of the log to read (idea from
encode/httpx `_exceptions.py` and SWE-ReX `exceptions.py`). The message shows the id inert
(`envpool.quoting.one_line`: control characters escaped, cut to 80), so an error about a row
whose id holds a newline or an ANSI escape is still one plain line; `instance_id` keeps it as given.
"""

from __future__ import annotations

from pathlib import Path

from envpool.quoting import one_line


class SwemintError(Exception):
    """Root of every error swemint raises on purpose.

    Args:
        message: what went wrong, in words a user can act on.
        instance_id: the SWE-bench `instance_id` concerned, if any.
        log_path: the per-instance log file to read, if any.
    """

    def __init__(self, message: str, *, instance_id: str | None = None, log_path: Path | str | None = None):
        self.message = message
        self.instance_id = instance_id
        self.log_path = str(log_path) if log_path else None
        prefix = f"[{one_line(instance_id, 80)}] " if instance_id else ""
        suffix = f" (log: {self.log_path})" if self.log_path else ""
        super().__init__(f"{prefix}{message}{suffix}")


class InfraError(SwemintError):
    """Infrastructure failure (Docker daemon, disk full, registry down); outcome `infra_error`."""


class SandboxTimeout(SwemintError):
    """A command exceeded its timeout (seconds); outcome `timeout` when it ends an instance."""


class InstanceInputError(SwemintError):
    """The instance's own data is unusable (missing field, repository not found)."""


class InvalidTaskError(SwemintError):
    """The instance is no valid task: its `patch` (the fix) changes test code or test
    infrastructure, the things that grade it (`envpool.patches.grading_paths_problem`); outcome
    `invalid_task`."""


class PatchApplyError(SwemintError):
    """A patch did not apply after every normalisation; outcome `patch_failed`."""


class EnvBuildError(SwemintError):
    """The environment could not be built; outcome `env_failed`."""


class OutputTooLarge(SwemintError):
    """A file or stream from a sandbox exceeds its size bound (bytes); what it carried is not used."""


class TestsNotRunError(SwemintError):
    """The test runner never reached the tests; outcome `tests_not_run`."""

    __test__ = False  # not a pytest test class
