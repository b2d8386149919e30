"""Pipeline stages as plain classes: no Ray here (NeMo Curator / datatrove pattern).

A stage declares the resources one item needs and turns a `WorkItem` into an
`InstanceResult`. Runners (`pipeline.ray_adapter`) decide where it runs; `run_safely` makes an
exception an `infra_error` row, so one bad item never fails a batch.
"""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from agents.config import MintConfig
from agents.models import EnvRecord, Instance, InstanceResult, Outcome

MintFn = Callable[..., InstanceResult]
"""`mint_instance(instance, repo_path, config, factory=None) -> InstanceResult`."""

DEFAULT_MINT_FUNCTION = "agents.minter:mint_instance"


@dataclass
class StageResources:
    """What one item of a stage needs: `num_cpus` (cores, fractions allowed) and custom
    resources, e.g. {"docker": 1} = one build slot (the runner provides `workers` slots)."""

    num_cpus: float = 1.0
    resources: dict[str, float] = field(default_factory=dict)


@dataclass
class WorkItem:
    """One unit of work: the instance, its host git directory (absolute) and, when re-verifying,
    its pooled environment."""

    instance: Instance
    repo_path: Path
    env: EnvRecord | None = None


class Stage(Protocol):
    """A Ray-agnostic stage: `process` must return a row, and may raise only on bugs/infra."""

    name: str
    resources: StageResources

    def process(self, item: WorkItem) -> InstanceResult:
        """Turn one item into its result row."""
        ...


def now_iso() -> str:
    """Current UTC time, ISO 8601."""
    return datetime.now(timezone.utc).isoformat()


def failure_row(instance: Instance, outcome: Outcome, reason: str, started_at: str = "",
                seconds: float | None = None) -> InstanceResult:
    """A result row for an item that produced none (`infra_error`, `timeout`); `seconds` -> timings["total"]."""
    return InstanceResult(instance_id=instance.instance_id, repo=instance.repo, outcome=outcome, reason=reason,
                          version=instance.version, started_at=started_at, finished_at=now_iso(),
                          timings={"total": round(seconds, 3)} if seconds is not None else {})


def describe_exception(exc: BaseException) -> str:
    """`Type: message (at file:line in func)` from the innermost frame; no locals, no secrets."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    msg = str(exc).strip().splitlines()[0][:500] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {msg}{where}"


def run_safely(stage: Stage, item: WorkItem) -> InstanceResult:
    """`stage.process(item)`; any exception (not KeyboardInterrupt) becomes an `infra_error` row,
    as does a return value that is not an InstanceResult for this instance."""
    started = now_iso()
    t0 = datetime.now(timezone.utc)
    try:
        res = stage.process(item)
    except Exception as e:  # noqa: BLE001 - every item must end as a row
        secs = (datetime.now(timezone.utc) - t0).total_seconds()
        return failure_row(item.instance, "infra_error", f"{stage.name} raised {describe_exception(e)}", started, secs)
    if not isinstance(res, InstanceResult) or res.instance_id != item.instance.instance_id:
        return failure_row(item.instance, "infra_error", f"{stage.name} returned {type(res).__name__} "
                           "instead of this instance's InstanceResult", started)
    return res


def load_function(spec: str) -> MintFn:
    """Import `"package.module:function"`; raises ImportError/AttributeError when absent."""
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr or "mint_instance")


class MintStage:
    """Runs `mint_instance` on one item (plan -> execute -> verify, inside Docker).

    Args:
        config: the MintConfig passed to every call.
        mint_fn: the function to call; default imports `mint_function` lazily in the worker.
        mint_function: import path "module:function" used when `mint_fn` is None.
        resources: per item; default 1 CPU and one `docker` build slot.
    """

    name = "mint"

    def __init__(self, config: MintConfig, mint_fn: MintFn | None = None,
                 mint_function: str = DEFAULT_MINT_FUNCTION, resources: StageResources | None = None):
        self.config = config
        self.mint_fn = mint_fn
        self.mint_function = mint_function
        self.resources = resources or StageResources(num_cpus=1.0, resources={"docker": 1.0})

    def process(self, item: WorkItem) -> InstanceResult:
        """Call the mint function; its own outcomes pass through unchanged."""
        fn = self.mint_fn or load_function(self.mint_function)
        if item.env is not None:
            return fn(item.instance, item.repo_path, self.config, env=item.env)
        return fn(item.instance, item.repo_path, self.config)
