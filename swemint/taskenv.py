"""`TaskEnv`: one task's environment, for an agent or an RL trainer to act in and be graded.

The shape R2E-Gym and SWE-Gym users expect: open a task's environment, act in it (run commands,
read and write files), get the diff and a reward. One episode is one container started from the
row's verified image (`image_local` when this engine has it, else `image`), /testbed at the
row's `base_commit`, no network (as the row's test runs). `reset()` starts a fresh one (closing
the previous), `close()` removes it; use `with TaskEnv(row) as env:`.

The reward is the same grading as `swemint eval` (`pipeline.evaluate.grade`, which runs
`envpool.evaluation.evaluate_patch`): the episode's diff is applied in *another* fresh container
of the image, the files the row's `test_patch` touches are reset and the `test_patch` applied (so
an episode that edits the tests gains nothing), the tests run once with no network, and the
report is read on the host's authenticated channel and cross-checked (docs/security.md "Grading
integrity"). 1.0 when every FAIL_TO_PASS and PASS_TO_PASS test succeeds, else 0.0.

`diff()` is what the episode changed under /testbed since `reset()`: git's diff between a tree
of /testbed written at reset and /testbed now, through a private index file (the repository's
own index and HEAD are left alone), new files included, files matched by `.gitignore` and by
`DIFF_EXCLUDE` (interpreter caches a test run leaves) left out.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from envpool.sandbox import ExecResult, Sandbox, SandboxSpec

DIFF_EXCLUDE = ("**/__pycache__/**", "**/*.pyc", ".pytest_cache/**", "**/.pytest_cache/**")
"""Glob pathspecs `diff()` leaves out: bytecode and pytest's cache, which running the tests in the
episode writes (they are not the agent's change, and a binary hunk would not apply)."""
INDEX = "/tmp/.swemint-episode-index"
"""The private git index `diff()` uses (the repository's own index is never touched)."""


def _pathspecs() -> str:
    return " ".join(shlex.quote(f":(exclude,glob){p}") for p in DIFF_EXCLUDE)


class TaskEnv:
    """The environment of one verified dataset row.

    Args:
        row: a row of `verified.parquet` (a dict; `swemint.load_rows` reads them), with its
            `image`/`image_local`, `test_patch`, `FAIL_TO_PASS`, `PASS_TO_PASS`, test command and
            parser (SWE-bench v5 columns plus swemint's).
        factory: a sandbox factory (`envpool.sandbox.SandboxFactory`); default Docker with the
            `swemint.run` label `run_id`.
        run_id: label of every container of this environment (a leftover sweep finds them).
        timeout: seconds the reward's test run may take.
        limits: `cpus` (cores), `memory` (bytes), `pids` of the containers.

    Raises ValueError when the row is not a verified row with an image and a test command.
    """

    def __init__(self, row: dict[str, Any], *, factory=None, run_id: str = "taskenv", timeout: float = 1800,
                 limits: dict | None = None):
        if row.get("outcome", "verified") != "verified":
            raise ValueError(f"{row.get('instance_id')}: not a verified row (outcome {row.get('outcome')})")
        for key in ("instance_id", "test_patch", "test_command"):
            if not row.get(key):
                raise ValueError(f"{row.get('instance_id')}: the row has no {key}")
        if not (row.get("image_local") or row.get("image")):
            raise ValueError(f"{row['instance_id']}: the row has no image")
        self.row = row
        self.instance_id: str = row["instance_id"]
        self.run_id, self.timeout, self.limits = run_id, timeout, dict(limits or {})
        if factory is None:
            from envpool.docker_sandbox import DockerSandboxFactory

            factory = DockerSandboxFactory(run_id=run_id)
        self.factory = factory
        self._sb: Sandbox | None = None
        self._base_tree: str | None = None
        self.steps = 0
        """Actions of the current episode (`exec`, `read`, `write`)."""

    # -- episode ------------------------------------------------------------------------------
    @property
    def problem_statement(self) -> str:
        """The task as the agent reads it (the row's `problem_statement`)."""
        return self.row.get("problem_statement") or ""

    def image(self) -> str:
        """The image an episode starts from: `image_local` when this engine has it, else `image`."""
        local, published = self.row.get("image_local"), self.row.get("image")
        client = getattr(self.factory, "client", None)
        if local and published and local != published and client is not None:
            try:
                client.images.get(local)
            except Exception:  # noqa: BLE001 - not on this engine: the published reference
                return str(published)
        return str(local or published)  # __init__ refused a row with neither

    def reset(self) -> str:
        """Start a fresh episode: close the running container (if any), start a new one from the
        image, remember /testbed's tree; returns the problem statement (the first observation)."""
        from pipeline.evaluate import tests_spec

        self.close()
        spec = SandboxSpec(image=self.image(), run_id=self.run_id, instance_id=self.instance_id, network="none",
                           env=dict(tests_spec(self.row).env), **self.limits)
        self._sb = self.factory.start(spec)
        self.steps = 0
        r = self._sb.exec(f"cd /testbed && rm -f {INDEX} && GIT_INDEX_FILE={INDEX} git add -A -- . {_pathspecs()} "
                          f"&& GIT_INDEX_FILE={INDEX} git write-tree", timeout=600, log_label="episode-start")
        if not r.ok:
            self.close()
            raise RuntimeError(f"{self.instance_id}: cannot record /testbed at the start: {r.output[-500:]}")
        self._base_tree = r.output.strip().splitlines()[-1]
        return self.problem_statement

    def _box(self):
        if self._sb is None:
            self.reset()
        return self._sb

    def exec(self, command: str, timeout: float = 180, workdir: str = "/testbed") -> ExecResult:
        """Run `command` with bash in the episode's container (from `workdir`), at most `timeout`
        seconds; never raises on a nonzero exit (`.exit_code`, `.output`: stdout and stderr)."""
        self.steps += 1
        return self._box().exec(command, timeout=timeout, workdir=workdir, log_label=f"step-{self.steps}")

    def _path(self, path: str) -> str:
        return path if path.startswith("/") else f"/testbed/{path}"

    def read(self, path: str) -> str:
        """The text of `path` (relative to /testbed, or absolute); FileNotFoundError when absent."""
        self.steps += 1
        return self._box().get_file(self._path(path)).decode("utf-8", "replace")

    def write(self, path: str, text: str | bytes) -> None:
        """Write `text` to `path` (relative to /testbed, or absolute), creating folders."""
        self.steps += 1
        self._box().put_file(self._path(path), text)

    def diff(self) -> str:
        """The episode's change under /testbed since `reset()`, as a git diff (new files included;
        ignored files and `DIFF_EXCLUDE` left out); "" when nothing changed."""
        sb = self._box()
        r = sb.exec(f"cd /testbed && GIT_INDEX_FILE={INDEX} git add -A -- . {_pathspecs()} && "
                    f"GIT_INDEX_FILE={INDEX} git -c core.quotepath=off diff --cached --binary --no-color "
                    f"--no-ext-diff {shlex.quote(self._base_tree or 'HEAD')}", timeout=600, log_label="diff")
        if not r.ok:
            raise RuntimeError(f"{self.instance_id}: git diff failed: {r.output[-500:]}")
        return r.output

    def grade(self, patch: str | None = None, *, log_path: Path | None = None):
        """Grade `patch` (default: this episode's `diff()`) as `swemint eval` does, in a fresh
        container of the image; returns an `envpool.evaluation.EvalReport` (`resolved`, `reward`,
        `f2p_rate`, `p2p_rate`, per-list successes and failures, `error`)."""
        from pipeline.evaluate import grade

        if patch is None:
            patch = self.diff()
        return grade(self.row, patch, factory=self.factory, model="taskenv", timeout=self.timeout,
                     run_id=self.run_id, log_path=log_path, limits=self.limits or None)

    def reward(self, patch: str | None = None) -> float:
        """1.0 when `patch` (default: this episode's diff) resolves the task, else 0.0 (`grade`)."""
        return self.grade(patch).reward

    def close(self) -> None:
        """Remove the episode's container (safe to call twice)."""
        if self._sb is not None:
            try:
                self._sb.close()
            finally:
                self._sb = None
                self._base_tree = None

    def __enter__(self) -> TaskEnv:
        self.reset()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TaskEnv({self.instance_id!r}, running={self._sb is not None})"
