"""The two sides of verification, shared by the Python path (`agents.minter`) and the polyglot
path (`agents.polymint`): "before" applies the test_patch to the base commit, "after" the
test_patch then the patch, each in a fresh sandbox of the environment image, run a configured
number of times within the instance's deadline.
"""

from __future__ import annotations

import time
from pathlib import Path

from agents.config import VerifyConfig
from agents.models import Instance
from envpool.errors import PatchApplyError, SandboxTimeout
from envpool.patches import apply_patch

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
