"""Typed configuration of one instance's minting (plan -> execute -> verify).

Every model forbids unknown keys, so a typo in `configs/*.yaml` is an error.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from envpool.images import ImageConfig


class LimitsConfig(BaseModel):
    """Container limits: `cpus` in cores, `memory` in bytes, `pids` a count."""

    model_config = ConfigDict(extra="forbid")
    cpus: float = 2.0
    memory: int = 8 * 1024**3
    pids: int = 4096


class TimeoutsConfig(BaseModel):
    """Timeouts in seconds."""

    model_config = ConfigDict(extra="forbid")
    setup_step: float = 900.0
    """One setup command (an install step)."""
    test_run: float = 900.0
    """One whole test run (the runner is killed after it; partial results are still used)."""
    per_test: float = 120.0
    """One test (enforced by swemint's pytest plugin; the test is reported FAILED)."""
    instance: float = 3600.0
    """The whole instance, all phases."""


class VerifyConfig(BaseModel):
    """Reruns used to detect flaky tests (SWE-bench-Live reruns the after side 3 times)."""

    model_config = ConfigDict(extra="forbid")
    before_runs: int = Field(default=2, ge=1)
    after_runs: int = Field(default=3, ge=1)


class MintConfig(BaseModel):
    """Everything `agents.minter.mint_instance` needs besides the instance and its repository.

    `workdir`: root for logs, per-instance folders and generated files (never inside the repo).
    `run_id`: labels every container (`swemint.run=<run_id>`).
    `keep_images`: commit and keep the verified environment image (the pool).
    """

    model_config = ConfigDict(extra="forbid")
    workdir: Path = Path("work")
    run_id: str = "local"
    images: ImageConfig = Field(default_factory=ImageConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    timeouts: TimeoutsConfig = Field(default_factory=TimeoutsConfig)
    verify: VerifyConfig = Field(default_factory=VerifyConfig)
    keep_images: bool = True
    image_repository: str = "swemint/env"
