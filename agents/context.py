"""What every agent of one instance shares: the run context and the environment it ends up with.

`MintRun` is created by the flow (`agents.flow.mint_instance`) for one instance and handed to the
agents; `Environment` is an image an agent made (built, reused, amended or pooled), with the
scripts that reproduce it. Neither holds knowledge of any ecosystem.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agents.cost import CostMeter
from agents.gitrepo import GitTree
from agents.models import Instance, InstanceResult, StepRecord
from envpool.sandbox import SandboxSpec


class Trajectory:
    """Appends each step to `trajectory.jsonl` as it happens (a crash keeps what ran); `flush`
    rewrites the file from the kept steps, so repair notes added to a step after it was written
    (`repair: ...`, read by the memory's learning) are in the final file."""

    def __init__(self, path: Path):
        self.path = path
        self.steps: list[StepRecord] = []
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")

    def __call__(self, step: StepRecord) -> None:
        self.steps.append(step)
        with self.path.open("a") as f:
            f.write(step.model_dump_json() + "\n")

    def flush(self) -> None:
        """Rewrite the file from the kept steps."""
        self.path.write_text("".join(s.model_dump_json() + "\n" for s in self.steps))


@dataclass
class MintRun:
    """One instance being minted: the instance and its tree, the mint config, the sandbox
    factory, the row being filled (`res`), its folder, log and trajectory, the deadline
    (`time.monotonic()` value), the repair helper (memory, LLM; None when neither is on), the
    paths the test_patch touches and the row's language (vocabulary name)."""

    instance: Instance
    tree: GitTree
    config: object
    factory: object
    res: InstanceResult
    idir: Path
    log_path: Path
    traj: Trajectory
    deadline: float
    helper: object | None = None
    touched: list[str] = field(default_factory=list)
    """Paths the test_patch leaves in the tree (`envpool.patches.paths_after`: not a deleted file,
    not a rename's old name): what test selection may hand a runner."""
    language: str = ""
    made_images: list[str] = field(default_factory=list)
    cost: CostMeter = field(default_factory=CostMeter)
    """Container CPU-seconds by phase and test run (`agents.cost`; attached to `factory`)."""

    @property
    def iid(self) -> str:
        """The instance id."""
        return self.instance.instance_id

    def remaining(self) -> float:
        """Seconds left before the deadline."""
        return self.deadline - time.monotonic()

    def spec(self, image: str, network: str, env: dict[str, str] | None = None,
             caches: dict[str, str] | None = None) -> SandboxSpec:
        """A sandbox spec of this run (its limits and labels: `LimitsConfig.sandbox_fields`) for
        `image`; `caches`: cache name -> container path the plan wants (build sandboxes only):
        `uv` is mounted from the instance's package cache (`agents.envimage.cache_mounts`,
        `mint.cache.scope`), other names are not mounted."""
        from agents.envimage import cache_mounts

        cfg = self.config
        mounts = cache_mounts(cfg, self.iid, self.instance.repo) if "uv" in (caches or {}) else {}
        return SandboxSpec(image=image, run_id=cfg.run_id, instance_id=self.iid, network=network, env=dict(env or {}),
                           cache_mounts=mounts, **cfg.limits.sandbox_fields())


class Environment(BaseModel):
    """An environment image and how it was made.

    `source`: `built` (full setup), `reused` (a pooled environment of another instance of the
    repository adapted by EnvPatch; `reused_from`), `amended` (commands added after a
    verification), `pooled` (this instance's own pooled image). `commands`: what ran on top of
    the base image (the increments for a reused one); `test_env`: the environment of test runs.
    `dependency_key` / `dependency_image_id`: the dependency layer it stands on (`agents.tiers`).
    """

    model_config = ConfigDict(extra="forbid")
    image: str
    image_id: str = ""
    source: str = "built"
    setup_script: str = ""
    dockerfile: str = ""
    commands: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    test_env: dict[str, str] = Field(default_factory=dict)
    installed_packages: str = ""
    interpreter: str = ""
    reused_from: str | None = None
    reuse_kind: str | None = None
    dependency_key: str | None = None
    dependency_image_id: str | None = None
