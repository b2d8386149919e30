"""Typed pipeline configuration, layered: `configs/default.yaml` < `-c file` < env `SWEMINT_SET`
< `--set key.sub=value` < explicit CLI flags. Every model forbids unknown keys, so a typo is an error.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agents.mint_config import MintConfig
from agents.models import Outcome
from envpool.eviction import BudgetConfig
from envpool.resources import resource
from pipeline.repos import RepoConfig
from pipeline.sources.crawl_config import CrawlConfig
from pipeline.yamlio import deep_merge, parse_override, read_yaml  # noqa: F401 - re-exported

DEFAULT_CONFIG = resource("configs/default.yaml")
"""The defaults: the checkout's `configs/default.yaml`, or the copy a wheel carries (envpool.resources)."""


class RayConfig(BaseModel):
    """How the driver reaches Ray.

    `address`: a cluster to join (else `$RAY_ADDRESS`; else a local Ray is started).
    `num_cpus`: CPUs of a local Ray (None = all of this host's). `task_num_cpus`: CPUs one mint
    task reserves (cores). `object_store_memory`: bytes for a local Ray (None = Ray's default).
    """

    model_config = ConfigDict(extra="forbid")
    address: str | None = None
    num_cpus: int | None = None
    task_num_cpus: float = 1.0
    object_store_memory: int | None = None
    temp_dir: Path | None = None
    include_dashboard: bool = False
    """Local runs only; a dashboard also serves the job API, which runs code."""
    bind_localhost: bool = True
    """Local runs: bind every Ray socket to 127.0.0.1 (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0), checked
    on the listening sockets after start. A local Ray always uses token auth (generated token)."""
    log_to_driver: bool = False
    """Stream worker output to the console (it interleaves with the progress bar)."""
    system_retries: int = Field(default=2, ge=0)
    """Times Ray runs a stage task again when its worker process or its node died (a node lost
    mid-run: its instances in flight are redone on another node); a task that raised or timed
    out is never run again (it is a row)."""
    docker_resource: bool = True
    """Reserve one custom `docker` resource per task (a build slot); a local Ray gets `workers`
    of them, a cluster must declare them on its nodes (else the requirement is dropped)."""


class FlowConfig(BaseModel):
    """How `swemint run` streams sources -> filter -> plan -> build -> export (`pipeline.streaming`).

    Bounds are counts of units; timeouts are seconds."""

    model_config = ConfigDict(extra="forbid")
    since_last: bool = True
    """List only GitHub PRs updated after each repository's watermark (items already decided are
    skipped either way)."""
    streaming: bool = True
    """Start planning and builds as soon as the first unit is accepted. False = the baseline:
    crawl and filter everything first, then mint."""
    mint: bool = True
    """False: stop after the filter (accepted rows wait in the crawl state for a later run)."""
    queue_size: int = Field(default=8, ge=1)
    """Backpressure: sources are asked for more only while fewer than this many units are
    undecided, accepted-and-waiting or being planned (builds in flight not counted)."""
    github_step: int = Field(default=5, ge=1)
    """Pull requests one crawler step examines (the streaming grain of the GitHub source)."""
    source_tasks: int = Field(default=2, ge=1)
    """Local mirrors mined at once (one task per repository)."""
    filter_workers: int = Field(default=4, ge=1)
    plan_workers: int = Field(default=2, ge=1)
    plan_num_cpus: float = Field(default=0.5, ge=0)
    """CPUs a plan task reserves (any node; no Docker)."""
    plan_function: str = "pipeline.stages:plan_instance"
    """Import path of the plan seam `fn(instance, repo_path, mint_config) -> MintPlan`."""
    plan_timeout: float = Field(default=900.0, gt=0)
    filter_timeout: float = Field(default=600.0, gt=0)
    source_timeout: float = Field(default=3600.0, gt=0)
    """Seconds one source step may take (a crawler step, mining one mirror)."""


class RegistryAuthConfig(BaseModel):
    """Credentials for `registry`, by the names of environment variables that hold them (set on
    the driver and on every `ray start` of a node that pushes or pulls). The values are read when
    an image is pushed or pulled and handed to the Docker engine's API only: never logged, never
    in a row, never in a container."""

    model_config = ConfigDict(extra="forbid")
    username_env: str = "SWEMINT_REGISTRY_USER"
    password_env: str = "SWEMINT_REGISTRY_PASSWORD"


class PipelineConfig(BaseModel):
    """Configuration of `swemint mint` / `swemint run` / `python -m pipeline.jobs.{mint,run}`.

    `workdir`: root of per-instance state, logs, pool (`pool.duckdb`), dataset. `mirrors`: roots
    searched for git mirrors. `workers`: build slots (instances in flight at once).
    `instance_timeout`: seconds before a running instance is abandoned as `timeout` (None =
    `mint.timeouts.instance` + 300). `mint.workdir` follows `workdir` unless set explicitly, and
    so does `mint.run_id` (the `swemint.run` label on every container and image): `run_id_for(workdir)`,
    and `mint.images.registry` / `registry_auth` / `shared_dir` follow `registry`, `registry_auth`
    and `WORKDIR/images` (toolchain images made once per cluster, `envpool.image_registry`),
    so that a rerun can remove exactly the leftovers of a crashed run on the same WORKDIR and
    nothing of other runs sharing the Docker engine. An explicit `mint.run_id` must then be
    unique per WORKDIR. `workdir` and `mirrors` are made absolute (Ray workers do not share the
    driver's cwd).
    """

    model_config = ConfigDict(extra="forbid")
    workdir: Path = Path("work")
    mirrors: list[Path] = Field(default_factory=list)
    instances: Path | None = None
    ids: list[str] = Field(default_factory=list)
    ids_file: Path | None = None
    language: str | None = None
    limit: int | None = Field(default=None, ge=0)
    workers: int = Field(default=1, ge=1)
    use_ray: bool = True
    retry_outcomes: list[Outcome] = ["infra_error", "timeout"]
    """Finished outcomes redone by a rerun; `verified` is never redone (unless `reverify`)."""
    reverify: bool = False
    """Re-verify instances already verified, in their pooled environment (no setup): the warm path."""
    instance_timeout: float | None = Field(default=None, gt=0)
    mint_function: str = "agents.minter:mint_instance"
    """Import path of the per-instance function (tests and experiments swap it)."""
    registry: str | None = None
    """A Docker registry (`host:port[/prefix]`, e.g. `127.0.0.1:5000`) that every verified image
    is pushed to by the worker that built it; the pool then records the reference as `location`,
    and a worker that reuses a pooled environment missing on its node pulls it. None = images
    stay on the node that built them (a single host)."""
    registry_auth: RegistryAuthConfig | None = None
    """Credentials for `registry` (environment variable names); None = push and pull anonymously."""
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    """Disk budgets of the pool: each node's engine, the registry (`envpool.eviction`)."""
    repos: RepoConfig = Field(default_factory=RepoConfig)
    ray: RayConfig = Field(default_factory=RayConfig)
    mint: MintConfig = Field(default_factory=MintConfig)
    sources: CrawlConfig = Field(default_factory=lambda: CrawlConfig(github=None))
    """Where `swemint run` finds units: GitHub, local mirrors, the filter (`pipeline.sources.crawl_config`).
    `instances` (a SWE-bench file) is a source too."""
    flow: FlowConfig = Field(default_factory=FlowConfig)

    @model_validator(mode="before")
    @classmethod
    def _mirrors_as_list(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("mirrors"), (str, Path)):
            data = {**data, "mirrors": [data["mirrors"]]}
        return data

    @model_validator(mode="after")
    def _derive(self) -> PipelineConfig:
        # absolute: Ray workers do not share the driver's working directory
        self.workdir = self.workdir.expanduser().absolute()
        self.mirrors = [m.expanduser().absolute() for m in self.mirrors]
        if "workdir" not in self.mint.model_fields_set:
            self.mint.workdir = self.workdir
        if "run_id" not in self.mint.model_fields_set:
            self.mint.run_id = run_id_for(self.workdir)
        if self.registry is not None:
            self.registry = self.registry.strip().rstrip("/") or None
        images = self.mint.images
        if images.registry is None:  # toolchains travel through the same registry
            images.registry = self.registry
        if images.registry_auth is None and self.registry_auth is not None:
            images.registry_auth = (self.registry_auth.username_env, self.registry_auth.password_env)
        if images.shared_dir is None:
            images.shared_dir = self.workdir / "images"
        return self

    @property
    def timeout_s(self) -> float:
        """Seconds after which a running instance becomes a `timeout` row."""
        return self.instance_timeout or self.mint.timeouts.instance + 300.0

    @property
    def pool_path(self) -> Path:
        """The DuckDB file of the environment pool."""
        return self.workdir / "pool.duckdb"


def run_id_for(workdir: Path) -> str:
    """The default run label of `workdir`: `wd-` + 12 hex digits of the SHA-256 of its absolute
    path (stable across reruns, distinct between work directories)."""
    return "wd-" + hashlib.sha256(str(Path(workdir).expanduser().absolute()).encode()).hexdigest()[:12]


def minted_run_id(cfg: PipelineConfig) -> str:
    """The run id `cfg.workdir` was minted with, for commands that act on a run's images after it
    (`swemint pool prune`, `pool refresh-tools`): `mint.run_id` when given (it differs from the
    path-derived default), else the one the last mint recorded in WORKDIR/mint_config.json (a mint
    with `--set mint.run_id=X` labelled its images `swemint.run=X`: `prune --all` found none of
    them under the path-derived id), else `run_id_for(workdir)` (work directories with no record)."""
    import json

    default = run_id_for(cfg.workdir)
    if cfg.mint.run_id != default:
        return cfg.mint.run_id
    try:
        recorded = json.loads((cfg.workdir / "mint_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default
    got = (recorded.get("mint") or {}).get("run_id") if isinstance(recorded, dict) else None
    if isinstance(got, str) and 0 < len(got) <= 200 and got.isprintable():
        return got
    return default


def load_config(config_file: Path | None = None, overrides: list[str] | None = None,
                **flags: Any) -> PipelineConfig:
    """Build a PipelineConfig: defaults file, then `config_file`, then the overrides in env
    `SWEMINT_SET` (shell-quoted `key.sub=value` items separated by spaces, as `PYTEST_ADDOPTS` does
    for pytest: one setting for every command a job or a test suite starts), then `overrides`
    (`--set`), then `flags` whose value is not None (CLI options given explicitly).

    Raises pydantic.ValidationError on unknown keys or bad values, ValueError on a bad override
    (one from `SWEMINT_SET` says so).
    """
    data: dict = read_yaml(DEFAULT_CONFIG) if DEFAULT_CONFIG.is_file() else {}
    if config_file is not None:
        data = deep_merge(data, read_yaml(config_file))
    for item in shlex.split(os.environ.get("SWEMINT_SET", "")):
        try:
            data = deep_merge(data, parse_override(item))
        except ValueError as e:
            raise ValueError(f"env SWEMINT_SET: {e}") from None
    for item in overrides or []:
        data = deep_merge(data, parse_override(item))
    data = deep_merge(data, {k: v for k, v in flags.items() if v is not None})
    return PipelineConfig.model_validate(data)
