"""Typed configuration of one instance's minting (plan -> execute -> verify).

Every model forbids unknown keys, so a typo in `configs/*.yaml` is an error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agents.llm.llm_config import LLMConfig
from envpool.aptmirror import MirrorRetry
from envpool.images import ImageConfig
from envpool.naming import folder_name
from envpool.netguard import BuildNetworkConfig
from envpool.sandbox import DEFAULT_CAPS


class LimitsConfig(BaseModel):
    """Container and host bounds: `cpus` in cores, sizes in bytes, `pids` a count."""

    model_config = ConfigDict(extra="forbid")
    cpus: float = 2.0
    memory: int = 8 * 1024**3
    pids: int = 4096
    output_bytes: int = Field(default=4 * 1024**2, ge=4096)
    """Output kept per command, in memory and in run.log (its first quarter and last three
    quarters, a marker between)."""
    report_bytes: int = Field(default=64 * 1024**2, ge=4096)
    """A test report (stream or file) read from a container; a larger one is not graded."""
    disk_bytes: int | None = 20 * 1024**3
    """Quota on a container's writable layer where the storage driver enforces one (overlay2 on
    xfs with pquota); null = none."""
    tmp_bytes: int | None = 2 * 1024**3
    """tmpfs at /tmp (counted in `memory`) when the writable layer has no quota; null = none."""
    cap_add: list[str] = Field(default_factory=lambda: list(DEFAULT_CAPS))
    """Capabilities containers keep; all others are dropped (and no-new-privileges is set)."""
    min_free_disk_bytes: int = Field(default=10 * 1024**3, ge=0)
    """Free space needed on the work directory's and Docker's file systems before an instance
    starts; below it the instance is `infra_error` and no new instance starts."""

    def sandbox_fields(self) -> dict:
        """The `envpool.sandbox.SandboxSpec` fields these limits set."""
        return {"cpus": self.cpus, "memory": self.memory, "pids": self.pids, "disk": self.disk_bytes,
                "tmp_bytes": self.tmp_bytes, "cap_add": list(self.cap_add)}


class TimeoutsConfig(BaseModel):
    """Timeouts in seconds."""

    model_config = ConfigDict(extra="forbid")
    setup_step: float = 900.0
    """One setup command (an install step). A build step that keeps printing past it goes on
    (`setup_step_idle`)."""
    setup_step_idle: float | None = Field(default=300.0, gt=0)
    """A setup command past `setup_step` goes on while it printed output within this many
    seconds, up to `setup_step_ceiling` (`envpool.sandbox.StepProgress`: a full library build
    on a loaded host is slow, not hung); None: stopped at `setup_step`."""
    setup_step_ceiling: float = Field(default=2700.0, gt=0)
    """The latest a printing setup command is stopped (also never past the instance's deadline)."""
    test_run: float = 900.0
    """One whole test run (the runner is killed after it; partial results are still used)."""
    per_test: float = 120.0
    """One test: every run's SWEMINT_TEST_TIMEOUT, read by swemint's pytest plugin and each
    runner's own limit (`envpool.testrun.limits`); the test is reported FAILED."""
    instance: float = 3600.0
    """The whole instance, all phases."""


class VerifyConfig(BaseModel):
    """The test runs of a verification (`agents.adaptive`): how many per side, which, and
    whether each side is compiled once. Reruns detect flaky tests (SWE-bench-Live reruns the
    after side 3 times)."""

    model_config = ConfigDict(extra="forbid")
    before_runs: int = Field(default=2, ge=1)
    after_runs: int = Field(default=3, ge=1)
    policy: Literal["fixed", "adaptive"] = "adaptive"
    """`fixed`: every run of both sides in full, the before side first (the policy before issue
    26: 2 + 3 full runs). `adaptive`: before#1 and after#1 in full; no FAIL_TO_PASS candidate
    decides at once; else the reruns target the candidates and the tests whose status differs,
    and the after side's last run is full (`agents.adaptive`)."""
    full_before_rerun: bool = True
    """`adaptive` with a FAIL_TO_PASS candidate: before#2 runs in full, not targeted, so a
    PASS_TO_PASS test is seen twice before the patch as under `fixed` (flaky detection; the
    candidates and differing tests are in the full run). Costs one full run per instance with a
    candidate (full runs before + after: 2 + 2, else 1 + 2) and saves the targeted before#2."""
    compile_once: bool = True
    """Build each side once (its patches applied, the ecosystem's `build_command`, no test run),
    commit it as a snapshot image, and start every run of that side from it in a fresh
    container. False (or an ecosystem without `build_command`): every run applies the patches
    and builds in its own container."""
    compile_once_min_source_kb: int = Field(default=2048, ge=0)
    """Compile once only when the sources the build compiles are at least this many KiB, where
    the plan measured them (``state["compiled_source_kb"]``: Maven's compiled modules' Java
    sources, main and test). A small module compiles in a few CPU-seconds, less than the
    snapshot build's own tool start (Maven's ~8 CPU-s per build container; gson's ~1 MiB module:
    two builds cost more than the runs saved). 0: always, as before."""
    tooling_check: bool = True
    """A verified fix whose `patch` changes build or test tooling (the rule set's `tooling`:
    dotfiles and dot-folders, `*.config.*`, Makefiles, CMake, package manifests, pyproject.toml...;
    `envpool.patches.tooling_split`) gets one more run, targeted at its FAIL_TO_PASS: the `core`
    side, base + the patch without those hunks + test_patch. A FAIL_TO_PASS test that does not
    pass there depends on the fix's tooling, not its code: `invalid_task` (the fix may not touch
    what grades it, whatever route its tooling takes). A fix without tooling hunks costs nothing.
    False: no such run."""


class ReuseConfig(BaseModel):
    """Environment reuse (MEnvAgent, arXiv 2601.22859), every language: before a full build, try
    pooled environments of other instances of the same repository, adapted by EnvPatch and
    accepted only when they verify. Other repositories' environments are never reused; they share
    only the dependency tier, in which no repository's code ran (`agents.tiers`)."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    """Look up the pool and try candidates before a full build."""
    max_candidates: int = Field(default=2, ge=0)
    """Candidates the driver passes per instance (best first: same version, nearest newer
    commit, any); each costs one container start and a probe."""
    patch_rounds: int = Field(default=2, ge=0)
    """EnvPatch rounds per candidate (derive increments -> apply -> probe again)."""


class RepairConfig(MirrorRetry):
    """Bounds of the Execution agent's repairs, the same for every ecosystem. Its `mirror_*`
    fields (`envpool.aptmirror.MirrorRetry`, the one model of them; YAML ``repair.mirror_*``)
    bound the attempts of a setup step apt failed on the Debian mirror, of the Debian index
    image's build and of the grading tools' python3 at an image's commit (toolchain images'
    layers: `images.mirror`, the same model); still failing after them, the row is
    `infra_error`."""

    model_config = ConfigDict(extra="forbid")
    rounds: int = Field(default=2, ge=0)
    """Repairs per failing setup step (each followed by one retry of the step)."""
    install_rounds: int = Field(default=6, ge=1)
    """Attempts of one package install whose installer errors name their own fix (Python's uv:
    one date bound lifted per attempt)."""
    probe_rounds: int = Field(default=4, ge=1)
    """Attempts of one probe of the environment (the test runner starts, collection)."""
    debian_index: bool = True
    """Answer a missing command, header, library or pkg-config module with the Debian package
    Debian's file index names (apt-file in an index image made once per base image on the build
    network; `agents.debindex`). False: such needs go unanswered (the LLM or memory may still fix them)."""


class LoopConfig(BaseModel):
    """The loop plan -> execute -> verify -> re-plan (MEnvAgent's feedback, bounded)."""

    model_config = ConfigDict(extra="forbid")
    max_rounds: int = Field(default=4, ge=1)
    """Rounds per instance at most: each builds, reuses or amends an environment and verifies it."""
    amend_rounds: int = Field(default=1, ge=0)
    """Rounds past `max_rounds` for an amended image (class R): when the last round's verdict asks
    Execution to amend the environment (a package the tests lack, no rebuild), that cheap round
    still runs, at most this many times per instance."""
    max_builds: int = Field(default=3, ge=1)
    """Full environment builds per instance at most (the expensive kind of round)."""


class MemoryUseConfig(BaseModel):
    """The experience memory (EnvPilot, arXiv 2609.07357) as the rule backend uses it."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    """Consult the memory when the rules find no repair; the driver learns after each instance."""
    path: Path | None = None
    """DuckDB file; None = `WORKDIR/memory/experiences.duckdb`. Only the driver writes it; workers
    copy it (read-only, briefly) into memory, or use the seed set when it is locked or absent."""
    k: int = Field(default=3, ge=1)
    """Plans fetched per failure (each applied at most once per instance)."""
    before_plan: bool = True
    """Run the context-aware retrieval before planning (EnvPilot): entries it ranks in the top
    `before_plan_k` whose reliability reaches `before_plan_reliability` change the plan (a
    toolchain, a pin, an option, a Debian package, an environment variable, a test argument)."""
    before_plan_k: int = Field(default=10, ge=1)
    before_plan_reliability: float = Field(default=0.66, ge=0.0, le=1.0)
    """Laplace-smoothed success rate an entry needs before it changes a plan unasked (a learned
    entry that worked once of once has 2/3; a hand-written entry starts at 0.75: trusted), and
    only when it is specific to the project (`agents.memory.before.proactive`)."""
    learn: bool = True
    """The driver distils each finished instance into the memory and scores the uses its
    trajectory records (False: the memory is read, never written -- hand-written entries only)."""
    floor: float = Field(default=0.34, ge=0.0, le=1.0)
    """An entry scored at least `min_uses` times whose reliability fell below this is dropped:
    no longer retrieved, applied, or (a rule) consulted. Never a negative lesson (its applied
    counts confirmations: `Experience.dropped`)."""
    min_uses: int = Field(default=4, ge=1)


class CacheConfig(BaseModel):
    """The package cache bind-mounted into build containers (uv's, at /root/.cache/uv).

    A build container runs repository code as root, so whatever it can write, it can poison:
    a cache shared read-write by every build let one repository alter the wheels (pytest
    included) that later instances install. `scope`:
    - `instance` (default): a fresh folder per instance, removed when the instance ends (no
      state shared between instances; the cost is a cold cache per instance);
    - `repository`: one folder per repository, shared by its instances only (one trust domain:
      a repository can only affect its own instances), scrubbed of setuid bits after each use;
    - `off`: no cache mount (uv caches inside the container, which is not committed).
    Folders live under `WORKDIR/cache/uv` (mode 0700)."""

    model_config = ConfigDict(extra="forbid")
    scope: Literal["instance", "repository", "off"] = "instance"
    warm: bool = True
    """Download caches shared between instances of one repository (issue 26; `agents.seed`):
    a dependency tier built for a repository starts from the module cache, local Maven
    repository or cargo registry of that repository's newest dependency image, and a reuse
    candidate on another minor version of the toolchain seeds the full build with those folders
    instead of being rejected outright. The source image is only read. False: every build
    downloads for itself."""


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
    reuse: ReuseConfig = Field(default_factory=ReuseConfig)
    memory: MemoryUseConfig = Field(default_factory=MemoryUseConfig)
    repair: RepairConfig = Field(default_factory=RepairConfig)
    loop: LoopConfig = Field(default_factory=LoopConfig)
    ci_services: bool = True
    """Provide the servers the project's CI provides for its tests (a job's ``services:``, a
    step or action that starts PostgreSQL, MySQL/MariaDB or Redis, a compose file it brings up;
    `agents.ecosystems.ci_services`) inside the test container: the Debian server installed at
    setup, started on loopback before each test run (`agents.ecosystems.service_provision`).
    False: the tests get no server."""
    policy: Literal["rules", "llm", "hybrid"] = "rules"
    """Policy of every agent: `rules` (rules, then the memory; no network besides the package
    registries), `hybrid` (rules and memory first; the LLM when they have nothing: an unknown
    layout, a test configuration, a repair, an attribution), `llm` (the LLM leads -- it plans,
    repairs every failure and attributes, the rules' answers in its prompt; the memory goes into
    its prompt). `llm`/`hybrid` need `llm`."""
    llm: LLMConfig | None = None
    """The model for `llm` / `hybrid` (agents.llm.LLMConfig); ignored under `rules`."""
    llm_max_steps: int = Field(default=8, ge=1)
    """Model turns of one LLM repair (tool loop bound)."""
    llm_max_repairs: int = Field(default=3, ge=0)
    """LLM repairs per instance at most (cost bound)."""
    cache: CacheConfig = Field(default_factory=CacheConfig)
    """Scope of the package cache of build containers (see CacheConfig)."""
    build_network: BuildNetworkConfig = Field(default_factory=BuildNetworkConfig)
    """The network of setup containers (envpool.netguard): swemint's own bridge, dropped traffic
    to the host and to private, link-local and metadata ranges; registries through NAT."""

    def package_cache(self, instance_id: str, repo: str) -> Path | None:
        """The host folder of uv's cache for an instance (`cache.scope`), None when off."""
        root = Path(self.workdir) / "cache" / "uv"
        if self.cache.scope == "instance":
            return root / "instances" / folder_name(instance_id)
        if self.cache.scope == "repository":
            return root / "repos" / folder_name(repo.replace("/", "+"))
        return None

    @model_validator(mode="after")
    def _policy_needs_llm(self) -> MintConfig:
        if self.policy != "rules" and (self.llm is None or not self.llm.model.strip()):
            why = "none is configured" if self.llm is None else "mint.llm.model is empty"
            raise ValueError(f"mint.policy {self.policy} needs a usable `llm` block (mint.llm.model, "
                             f"mint.llm.api_key_env): {why}")
        return self

    def memory_path(self) -> Path:
        """The experience memory's DuckDB file (`memory.path`, else under `workdir`)."""
        return self.memory.path or Path(self.workdir) / "memory" / "experiences.duckdb"
