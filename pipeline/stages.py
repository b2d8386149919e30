"""Pipeline stages as plain classes: no Ray here (NeMo Curator / datatrove pattern).

A stage declares the resources one item needs and turns an item into its result. Runners
(`pipeline.ray_adapter`) decide where it runs; `run_safely` makes an exception an `infra_error`
row, so one bad item never fails a batch; `run_measured` also times it (wall and CPU seconds).

Minting is two stages with a typed hand-over, so analysis (CPU, any node) and builds (Docker
build slots) scale apart:

- `PlanStage` (any node, no Docker): checkout and analysis through the plan seam
  `plan_fn(instance, repo_path, config) -> MintPlan` (default `plan_instance`: the Repository
  Analysis agent's profile of the tree at `base_commit`, its `language`, the `version` at that
  commit).
- `MintStage` (the build stage; one `docker` slot): the build seam, `mint_instance`-shaped:
  `fn(instance, repo_path, config, *, env=None, candidates=None) -> InstanceResult`. With a
  plan, the instance it receives carries the plan's `language`; a function that also takes a
  `profile` keyword (`agents.flow.mint_instance` does) receives the plan's analysis, so the
  repository is analysed once, on the plan stage.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import time
import traceback
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from agents.mint_config import MintConfig
from agents.analysis import RepoProfile
from agents.models import EnvRecord, Instance, InstanceResult, Outcome
from envpool.errors import InfraError, InstanceInputError
from pipeline.cpu import ContainerCpu, cpu_now

log = logging.getLogger(__name__)
MintFn = Callable[..., InstanceResult]
"""`mint_instance(instance, repo_path, config, factory=None) -> InstanceResult`."""

DEFAULT_MINT_FUNCTION = "agents.minter:mint_instance"
DEFAULT_PLAN_FUNCTION = "pipeline.stages:plan_instance"


@dataclass
class StageResources:
    """What one item of a stage needs: `num_cpus` (cores, fractions allowed) and custom
    resources, e.g. {"docker": 1} = one build slot (the runner provides `workers` slots)."""

    num_cpus: float = 1.0
    resources: dict[str, float] = field(default_factory=dict)


class MintPlan(BaseModel):
    """What the plan stage hands to the build stage (no Docker was needed to learn it).

    `profile`: the Repository Analysis of `base_commit` (`agents.analysis.RepoProfile`: the
    ecosystems claiming the tree, manifests, runners, dependencies, the ranked candidate plans);
    the build stage gives it to the minter, which does not analyse again. `language`: the
    profile's, in the one vocabulary (the languages the registered ecosystems serve): the row's when it is in the
    vocabulary, else the detected ecosystem's (None when no ecosystem claims the tree).
    `ecosystem`: the best buildable candidate's ecosystem (`python`, `node`, `go`, `cfamily`, ...; None
    when none can be built: `profile.no_route` says why). `version`: the package's `X.Y` at
    `base_commit` (`agents.reuse.derive_version`; None when nothing says). `commit_time`:
    committer time of `base_commit` (UTC). `test_files`: files the test_patch touches.
    `seconds`: time taken.
    """

    model_config = ConfigDict(extra="forbid")
    instance_id: str
    language: str | None
    ecosystem: str | None
    version: str | None = None
    commit_time: datetime | None = None
    test_files: list[str] = Field(default_factory=list)
    profile: RepoProfile
    seconds: float = 0.0


@dataclass
class WorkItem:
    """One unit of work: the instance, its host git directory (absolute), when re-verifying its
    own pooled environment (`env`), and reuse `candidates`: pooled environments of *other*
    instances of the repository, best first (MEnvAgent's hierarchical reuse; filled by the
    driver just before the item is submitted). `plan`: the plan stage's result (None when the
    item goes straight to the build stage, as in `swemint mint`)."""

    instance: Instance
    repo_path: Path
    env: EnvRecord | None = None
    candidates: list[EnvRecord] = field(default_factory=list)
    plan: MintPlan | None = None


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


@dataclass
class Measured:
    """A stage call's outcome as a runner reports it: `value` (or `error`, the exception
    described), `wall_s`, `cpu_s` (this thread and its waited-for subprocesses) and
    `container_cpu_s` (the Docker containers of the item, `ContainerCpu`), all seconds; `node`."""

    value: Any = None
    error: str | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    container_cpu_s: float = 0.0
    node: str = ""
    """The node that ran the call (a Ray node id; "" in-process)."""


def run_measured(stage: Any, item: Any) -> Measured:
    """`stage.process(item)` timed; an exception (not KeyboardInterrupt) becomes `error`. A stage
    with `container_labels(item) -> dict` has its containers' CPU sampled while it runs."""
    t0, c0 = time.monotonic(), cpu_now()
    labels = getattr(stage, "container_labels", None)
    meter = ContainerCpu(labels(item)) if labels is not None else None
    out = Measured()
    try:
        if meter is not None:
            with meter:
                out.value = stage.process(item)
        else:
            out.value = stage.process(item)
    except Exception as e:  # noqa: BLE001 - every item must end as a result
        out.error = f"{getattr(stage, 'name', type(stage).__name__)} raised {describe_exception(e)}"
    out.wall_s = round(time.monotonic() - t0, 3)
    out.cpu_s = round(max(0.0, cpu_now() - c0), 3)
    out.container_cpu_s = meter.seconds if meter is not None else 0.0
    return out


def plan_instance(instance: Instance, repo_path: Path, config: MintConfig) -> MintPlan:
    """The default plan seam: the Repository Analysis agent (`agents.analysis.analyze`) on the
    tree at `base_commit`, read from the git directory (no work tree, no Docker), and the
    `version` at that commit (`agents.reuse.derive_version`).

    The row's `language` is honoured when a registered ecosystem serves it (`agents.ecosystems.languages`): a
    `language: java` row is analysed as Java only. A name outside it (a GitHub display language
    such as `shell` or `jupyter notebook` says nothing about the unit) is dropped, so the
    profile's language is the detected ecosystem's. Raises InstanceInputError when the commit is
    missing or a patch is empty.
    """
    import agents.ecosystems as registry
    from agents.analysis import analyze
    from agents.gitrepo import GitTree
    from agents.reuse import derive_version
    from envpool.patches import files_in_patch

    t0 = time.monotonic()
    iid = instance.instance_id
    if not instance.test_patch.strip() or not instance.patch.strip():
        raise InstanceInputError("empty patch or test_patch", instance_id=iid)
    tree = GitTree(repo_path, instance.base_commit, instance_id=iid)
    if instance.language not in registry.languages():
        instance = instance.model_copy(update={"language": None})
    profile = analyze(tree, instance)
    best = next(iter(profile.available()), None)
    return MintPlan(instance_id=iid, language=profile.language, ecosystem=best.ecosystem if best else None,
                    version=derive_version(instance, tree, registry.by_name(best.ecosystem) if best else None),
                    commit_time=tree.commit_time,
                    test_files=files_in_patch(instance.test_patch), profile=profile,
                    seconds=round(time.monotonic() - t0, 3))


class PlanStage:
    """Runs the plan seam on one item; returns the item with its `plan` set (a `WorkItem`), or
    an `infra_error` row (`input: ...`) when the instance cannot be planned (commit missing,
    empty patch). Any node, no Docker: `resources` default 0.5 CPU.

    Args:
        config: the MintConfig passed to the plan function.
        plan_fn: the function (default: `plan_function` imported lazily in the worker).
        plan_function: import path "module:function" of `plan_fn(instance, repo_path, config) -> MintPlan`.
    """

    name = "plan"

    def __init__(self, config: MintConfig, plan_fn: Callable[..., MintPlan] | None = None,
                 plan_function: str = DEFAULT_PLAN_FUNCTION, resources: StageResources | None = None):
        self.config, self.plan_fn, self.plan_function = config, plan_fn, plan_function
        self.resources = resources or StageResources(num_cpus=0.5)

    def process(self, item: WorkItem) -> WorkItem | InstanceResult:
        """The planned item, or the row of an instance that cannot be planned."""
        fn = self.plan_fn or load_function(self.plan_function)
        started = now_iso()
        try:
            plan = fn(item.instance, item.repo_path, self.config)
        except InstanceInputError as e:
            return failure_row(item.instance, "infra_error", f"input: {e.message}", started)
        item.plan = plan
        return item


def planned_instance(instance: Instance, plan: MintPlan | None) -> Instance:
    """`instance` with the plan's `language`, and its `version` when the row has none (the row
    as stored and exported)."""
    if plan is None:
        return instance
    return instance.model_copy(update={"language": plan.language, "version": instance.version or plan.version})


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
        slots: build slots of the run (`workers`: instances in flight at once), written into
            each row's `cost.slots`.
    """

    name = "mint"
    registry: str | None = None  # class default: stages pickled by older drivers lack the attribute
    registry_auth: tuple[str, str] | None = None
    slots: int | None = None

    def __init__(self, config: MintConfig, mint_fn: MintFn | None = None,
                 mint_function: str = DEFAULT_MINT_FUNCTION, resources: StageResources | None = None,
                 registry: str | None = None, registry_auth: tuple[str, str] | None = None,
                 slots: int | None = None):
        self.config = config
        self.mint_fn = mint_fn
        self.mint_function = mint_function
        self.resources = resources or StageResources(num_cpus=1.0, resources={"docker": 1.0})
        self.registry = registry
        self.registry_auth = registry_auth
        self.slots = slots

    def _auth(self) -> dict | None:
        """The registry's `auth_config` from the worker's environment (InfraError when unset)."""
        if not self.registry_auth:
            return None
        from envpool.pool import registry_credentials

        return registry_credentials(*self.registry_auth)

    def container_labels(self, item: WorkItem) -> dict[str, str]:
        """Labels of the containers minting `item` runs (sampled for their CPU time)."""
        return {"swemint.run": self.config.run_id, "swemint.instance": item.instance.instance_id}

    def process(self, item: WorkItem) -> InstanceResult:
        """Call the mint function; its own outcomes pass through unchanged (but see `registry`).
        With `item.plan`: the instance carries the plan's language (its version stays the
        source's: the minter's own choices must not change), the function gets the plan's
        `profile=` when it takes it (the minter then does not analyse again), and a row without
        a version gets the plan's. A verified row's `env.node` names the node that verified it
        (`this_node`).

        First the free disk of this node is checked (the work directory and Docker's data root,
        `config.limits.min_free_disk_bytes`): below it the row is `infra_error` with a reason
        starting "low disk" (the driver then starts no new work) and nothing is built."""
        from envpool.hostfs import LowDisk, check_free_disk

        try:
            check_free_disk([self.config.workdir, *_docker_root()], self.config.limits.min_free_disk_bytes,
                            item.instance.instance_id)
        except LowDisk as e:
            return failure_row(item.instance, "infra_error", e.message, now_iso())
        self._clear_earlier_attempt(item)
        fn = self.mint_fn or load_function(self.mint_function)
        kwargs: dict = {}
        plan = getattr(item, "plan", None)
        instance = item.instance
        if plan is not None:
            instance = instance.model_copy(update={"language": plan.language})
            if _takes(fn, "profile"):
                kwargs["profile"] = plan.profile
        if item.env is not None:
            if item.env.location not in ("", "local"):
                self._ensure_local(item.env)  # InfraError -> run_safely -> infra_error row
            kwargs["env"] = item.env
        candidates = self._local_candidates(getattr(item, "candidates", None) or [])
        if candidates:
            kwargs["candidates"] = candidates
        res = fn(instance, item.repo_path, self.config, **kwargs)
        if plan is not None and isinstance(res, InstanceResult) and not res.version and plan.version:
            res = res.model_copy(update={"version": plan.version})
        if isinstance(res, InstanceResult) and res.outcome == "verified" and res.env is not None:
            res = res.model_copy(update={"env": res.env.model_copy(update={"node": this_node()})})
            if self.registry:
                res = self._publish(res)
        if isinstance(res, InstanceResult) and res.cost is not None and self.slots is not None:
            res = res.model_copy(update={"cost": res.cost.model_copy(update={"slots": self.slots})})
        return res

    def _clear_earlier_attempt(self, item: WorkItem) -> None:
        """Remove what an earlier attempt of this instance left on this node: Ray runs a build
        again when its worker process or node died (`ray.system_retries`), and the dead attempt's
        containers (and an image it committed without a result) would stay. Only one attempt of
        an instance runs at a time, so this never touches a live one; the instance's own pooled
        image (`item.env`) is kept. Never raises (no engine here: nothing to clear)."""
        keep = [item.env.image_id] if item.env is not None and item.env.image_id else []
        try:
            got = sweep_leftovers(self.config.run_id, [item.instance.instance_id], keep)
        except Exception as e:  # noqa: BLE001 - no engine (a fake minter's test), or it did not answer
            log.debug("no earlier attempt cleared for %s: %s", item.instance.instance_id, e)
            return
        if got.get("containers") or got.get("images"):
            log.warning("%s: removed %d container(s) and %d image(s) of an earlier attempt on this node",
                        item.instance.instance_id, got["containers"], got["images"])

    def _local_candidates(self, candidates: list[EnvRecord]) -> list[EnvRecord]:
        """Reuse candidates whose image is (made) present on this node; one that cannot be pulled
        (or whose pulled id is not the pool's) is dropped (reuse is an optimisation: the instance
        then builds from scratch). A candidate whose image is not here at all (evicted by a
        budget; on another node, no registry) fails its sandbox in the minter, which then tries
        the next one or builds (`agents.envpatch.adapt_environment`)."""
        out = []
        for cand in candidates:
            if cand.location not in ("", "local"):
                try:
                    self._ensure_local(cand)
                except InfraError as e:
                    log.info("reuse candidate %s dropped: %s", cand.instance_id, e.message)
                    continue
            out.append(cand)
        return out

    def _ensure_local(self, record: EnvRecord) -> None:
        """`envpool.pool.ensure_local` on this node; a pull is one `pulled` line of the images'
        events (`envpool.image_registry.record_event`)."""
        from envpool.docker_sandbox import docker_client
        from envpool.pool import ensure_local
        from envpool.image_registry import record_event

        client = docker_client()
        t0 = time.monotonic()
        if ensure_local(record, client=client, auth=self._auth()):
            record_event(self.config.images.shared_dir, client, "pulled", record.image_tag, time.monotonic() - t0,
                         record.location, kind="environment", instance_id=record.instance_id)

    def _publish(self, res: InstanceResult) -> InstanceResult:
        """Push the verified image (through the engine's image store, `envpool.imagestore.
        active_store`); `timings["publish"]` (seconds) is added, `total` left as is."""
        from envpool.imagestore import active_store

        t0 = time.monotonic()
        try:
            ref = active_store().push(res.env.image_tag, self.registry, auth=self._auth())
        except InfraError as e:
            return res.model_copy(update={"outcome": "infra_error", "env": None,
                                          "reason": f"verified, but the image was not published: {e.message}"})
        try:
            from envpool.docker_sandbox import docker_client
            from envpool.image_registry import record_event

            record_event(self.config.images.shared_dir, docker_client(), "published", res.env.image_tag,
                         time.monotonic() - t0, ref, kind="environment", instance_id=res.instance_id)
        except Exception as e:  # noqa: BLE001 - a lost count, never a lost row
            log.debug("publish event not recorded: %s", e)
        timings = {**res.timings, "publish": round(time.monotonic() - t0, 2)}
        return res.model_copy(update={"env": res.env.model_copy(update={"location": ref}), "timings": timings})


def this_node() -> str:
    """The node whose engine this worker builds on (`envpool.imagestore.active_store().node()`:
    the engine's `swemint.node` label, else its name), recorded in a verified row's `env.node`;
    "" when no engine answers (never raises)."""
    from envpool.imagestore import active_store

    try:
        return active_store().node()
    except Exception:  # noqa: BLE001 - no engine here (a fake minter's test): not known
        return ""


def _takes(fn: Callable, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


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
    for c in client.containers.list(all=True, filters=label, ignore_removed=True):
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
