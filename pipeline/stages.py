"""Pipeline stages as plain classes: no Ray here (NeMo Curator / datatrove pattern).

A stage declares the resources one item needs and turns a `WorkItem` into an
`InstanceResult`. Runners (`pipeline.ray_adapter`) decide where it runs; `run_safely` makes an
exception an `infra_error` row, so one bad item never fails a batch.
"""

from __future__ import annotations

import importlib
import logging
import time
import traceback
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from agents.config import MintConfig
from agents.models import EnvRecord, Instance, InstanceResult, Outcome
from envpool.errors import InfraError

log = logging.getLogger(__name__)
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
    """One unit of work: the instance, its host git directory (absolute), when re-verifying its
    own pooled environment (`env`), and reuse `candidates`: pooled environments of *other*
    instances of the repository, best first (MEnvAgent's hierarchical reuse; filled by the
    driver just before the item is submitted)."""

    instance: Instance
    repo_path: Path
    env: EnvRecord | None = None
    candidates: list[EnvRecord] = field(default_factory=list)


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
        registry: `host:port[/prefix]` to push verified images to (None = keep them local). A
            push failure turns the row into `infra_error` (the registry, not the instance, failed).
            A pooled environment (`item.env`) missing on this node is pulled from its `location`
            (by digest, its image id checked against the pool's).
        registry_auth: (username variable, password variable): names of the environment
            variables holding the registry's credentials, read on the worker when needed.
    """

    name = "mint"
    registry: str | None = None  # class default: stages pickled by older drivers lack the attribute
    registry_auth: tuple[str, str] | None = None

    def __init__(self, config: MintConfig, mint_fn: MintFn | None = None,
                 mint_function: str = DEFAULT_MINT_FUNCTION, resources: StageResources | None = None,
                 registry: str | None = None, registry_auth: tuple[str, str] | None = None):
        self.config = config
        self.mint_fn = mint_fn
        self.mint_function = mint_function
        self.resources = resources or StageResources(num_cpus=1.0, resources={"docker": 1.0})
        self.registry = registry
        self.registry_auth = registry_auth

    def _auth(self) -> dict | None:
        """The registry's `auth_config` from the worker's environment (InfraError when unset)."""
        if not self.registry_auth:
            return None
        from envpool.pool import registry_credentials

        return registry_credentials(*self.registry_auth)

    def process(self, item: WorkItem) -> InstanceResult:
        """Call the mint function; its own outcomes pass through unchanged (but see `registry`).

        First the free disk of this node is checked (the work directory and Docker's data root,
        `config.limits.min_free_disk_bytes`): below it the row is `infra_error` with a reason
        starting "low disk" (the driver then starts no new work) and nothing is built."""
        from envpool.hostfs import LowDisk, check_free_disk

        try:
            check_free_disk([self.config.workdir, *_docker_root()], self.config.limits.min_free_disk_bytes,
                            item.instance.instance_id)
        except LowDisk as e:
            return failure_row(item.instance, "infra_error", e.message, now_iso())
        fn = self.mint_fn or load_function(self.mint_function)
        kwargs: dict = {}
        if item.env is not None:
            if item.env.location not in ("", "local"):
                from envpool.pool import ensure_local

                ensure_local(item.env, auth=self._auth())  # InfraError -> run_safely -> infra_error row
            kwargs["env"] = item.env
        candidates = self._local_candidates(getattr(item, "candidates", None) or [])
        if candidates:
            kwargs["candidates"] = candidates
        res = fn(item.instance, item.repo_path, self.config, **kwargs)
        if self.registry and isinstance(res, InstanceResult) and res.outcome == "verified" and res.env is not None:
            res = self._publish(res)
        return res

    def _local_candidates(self, candidates: list[EnvRecord]) -> list[EnvRecord]:
        """Reuse candidates whose image is (made) present on this node; one that cannot be pulled
        (or whose pulled id is not the pool's) is dropped (reuse is an optimisation: the instance
        then builds from scratch)."""
        out = []
        for cand in candidates:
            if cand.location not in ("", "local"):
                from envpool.pool import ensure_local

                try:
                    ensure_local(cand, auth=self._auth())
                except InfraError as e:
                    log.info("reuse candidate %s dropped: %s", cand.instance_id, e.message)
                    continue
            out.append(cand)
        return out

    def _publish(self, res: InstanceResult) -> InstanceResult:
        """Push the verified image; `timings["publish"]` (seconds) is added, `total` left as is."""
        from envpool.pool import publish_image

        t0 = time.monotonic()
        try:
            ref = publish_image(res.env.image_tag, self.registry, auth=self._auth())
        except InfraError as e:
            return res.model_copy(update={"outcome": "infra_error", "env": None,
                                          "reason": f"verified, but the image was not published: {e.message}"})
        timings = {**res.timings, "publish": round(time.monotonic() - t0, 2)}
        return res.model_copy(update={"env": res.env.model_copy(update={"location": ref}), "timings": timings})


_DOCKER_ROOT: list[str] | None = None


def _docker_root() -> list[str]:
    """Docker's data root on this node when the engine is local and answers ([] otherwise);
    looked up once per process."""
    global _DOCKER_ROOT
    if _DOCKER_ROOT is None:
        _DOCKER_ROOT = []
        try:
            from envpool.docker_sandbox import docker_client

            root = docker_client().info().get("DockerRootDir")
            if root and Path(root).exists():
                _DOCKER_ROOT = [root]
        except Exception as e:  # noqa: BLE001 - no engine (fake minters): only the work directory is checked
            log.debug("no Docker root to check: %s", e)
    return _DOCKER_ROOT


def sweep_leftovers(run_id: str, instance_ids: Collection[str], keep_image_ids: Collection[str] = ()) -> dict:
    """Remove what a crashed run left on this node's Docker engine for `instance_ids`.

    Containers labelled `swemint.run=<run_id>` whose `swemint.instance` is in `instance_ids`
    are force-removed (a killed worker never reached its `finally`). Images with the same two
    labels are removed unless their id is in `keep_image_ids` (images the pool references): an
    environment committed by a run that died before writing the instance's result is
    **replaced**, not reused, because nothing recorded what it holds (setup script, F2P lists)
    and the rebuild commits the same tag again. Returns {"containers": n, "images": n,
    "errors": n}; never raises for a single container or image (an engine error is counted).
    """
    from envpool.docker_sandbox import docker_client

    wanted = set(instance_ids)
    keep = set(keep_image_ids)
    out = {"containers": 0, "images": 0, "errors": 0}
    if not wanted:
        return out
    client = docker_client()
    label = {"label": f"swemint.run={run_id}"}
    for c in client.containers.list(all=True, filters=label):
        if c.labels.get("swemint.instance") in wanted:
            try:
                c.remove(force=True)
                out["containers"] += 1
            except Exception as e:  # noqa: BLE001 - vanished meanwhile
                log.debug("sweep: container %s: %s", c.name, e)
                out["errors"] += 1
    for img in client.images.list(all=True, filters=label):
        if (img.labels or {}).get("swemint.instance") in wanted and img.id not in keep:
            try:
                client.images.remove(img.id, force=True)
                out["images"] += 1
            except Exception as e:  # noqa: BLE001 - in use by a container we did not start
                log.debug("sweep: image %s: %s", img.id[:19], e)
                out["errors"] += 1
    return out
