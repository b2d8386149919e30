"""The two sides of verification, shared by the Python path (`agents.minter`) and the polyglot
path (`agents.polymint`): "before" applies the test_patch to the base commit, "after" the
test_patch then the patch, each run a configured number of times within the instance's deadline,
every run in a fresh sandbox of the environment image (nothing one run leaves behind -- a
daemon, a rewritten file -- reaches the next). `trusted_runs` is the one policy on which runs
may be graded (`envpool.testrun.trust`).
"""

from __future__ import annotations

import time
from pathlib import Path

from agents.config import VerifyConfig
from agents.models import Instance, InstanceResult
from envpool.errors import PatchApplyError, SandboxTimeout, TestsNotRunError
from envpool.patches import apply_patch
from envpool.testrun.status import TestRunReport

RunOutcome = tuple[TestRunReport, list[str], list[str]]
"""One run: (report, anomalies, the anomalies only tampering explains)."""

Side = tuple[str, list[tuple[str, str]], int]
"""(side name, [(patch name, diff text), ...] applied in order, number of runs)."""

MIN_RUN_SECONDS = 30
"""A run starts only when at least this many seconds remain before the instance's deadline."""


def verification_sides(instance: Instance, verify: VerifyConfig) -> list[Side]:
    """[("before", [test_patch], verify.before_runs), ("after", [test_patch, patch], verify.after_runs)]."""
    return [("before", [("test_patch", instance.test_patch)], verify.before_runs),
            ("after", [("test_patch", instance.test_patch), ("patch", instance.patch)], verify.after_runs)]


def apply_side_patches(sb, side: str, patches: list[tuple[str, str]], methods: dict[str, str], instance_id: str,
                       log_path: Path | None) -> None:
    """Apply `patches` (name, diff text) in order in sandbox `sb`, recording in `methods[name]`
    how each applied (`envpool.patches.apply_patch`'s answer). Raises PatchApplyError
    ("<name> does not apply (<side>): ...") for the first that does not apply."""
    for name, text in patches:
        try:
            methods[name] = apply_patch(sb, text, label=f"{side}:{name}")
        except PatchApplyError as e:
            raise PatchApplyError(f"{name} does not apply ({side}): {e.message}", instance_id=instance_id,
                                  log_path=log_path) from e


def time_left(deadline: float, side: str, instance_id: str, log_path: Path | None) -> float:
    """Seconds left before `deadline` (a `time.monotonic()` value) for a run of `side`. Raises
    SandboxTimeout when fewer than MIN_RUN_SECONDS remain."""
    remaining = deadline - time.monotonic()
    if remaining < MIN_RUN_SECONDS:
        raise SandboxTimeout(f"instance time limit reached in the {side} runs", instance_id=instance_id,
                             log_path=log_path)
    return remaining


def trusted_runs(side: str, runs: list[RunOutcome], res: InstanceResult, instance_id: str,
                 log_path: Path | None) -> list[TestRunReport]:
    """The reports of `side` that may be graded: those without anomalies. Every anomaly goes
    into `res.anomalies` as `<side>#<n>: <anomaly>`. Raises TestsNotRunError when any run shows
    tampering (the instance's code works against the harness: nothing of it is graded), or when
    no run is left; SandboxTimeout when every run timed out."""
    trusted = []
    for n, (rep, found, tampered) in enumerate(runs, 1):
        res.anomalies.extend(f"{side}#{n}: {a}" for a in found)
        if tampered:
            raise TestsNotRunError(f"grading refused: the {side} run's report was tampered with ({tampered[0]})",
                                   instance_id=instance_id, log_path=log_path)
        if not found:
            trusted.append(rep)
    if trusted:
        return trusted
    if runs and all(rep.timed_out for rep, _, _ in runs):
        raise SandboxTimeout(f"the {side} test run timed out before it finished", instance_id=instance_id,
                             log_path=log_path)
    first = next((a for _, found, _ in runs for a in found), "no run")
    raise TestsNotRunError(f"no {side} run's report can be trusted: {first}", instance_id=instance_id,
                           log_path=log_path)
