"""Typed records shared by the agents and the pipeline.

Field names follow SWE-bench (`instance_id`, `repo`, `base_commit`, `patch`, `test_patch`,
`problem_statement`, `FAIL_TO_PASS`, `PASS_TO_PASS`, `version`, `created_at`).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from envpool.naming import check_instance_id, check_language, check_repo, check_timestamp, check_version
from envpool.quoting import one_line, shown
from envpool.records import EnvRecord

Outcome = Literal["verified", "no_fail_to_pass", "patch_failed", "invalid_task", "env_failed",
                  "tests_not_run", "timeout", "infra_error"]
OUTCOMES: tuple[str, ...] = ("verified", "no_fail_to_pass", "patch_failed", "invalid_task", "env_failed",
                             "tests_not_run", "timeout", "infra_error")
"""Every row ends as one of these. `invalid_task`: the row's `patch` (the fix) changes test code
or test infrastructure (`envpool.patches.grading_paths`), so it would grade itself; refused
before any container, the reason naming the paths."""


def _swemint_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("swemint")
    except PackageNotFoundError:  # a checkout without an install
        return "unknown"


SWEMINT_VERSION = _swemint_version()
"""The installed swemint's version (package metadata), stamped into every stored row."""

RESULT_SCHEMA = 3
"""The shape of `InstanceResult` (with its nested records and OUTCOMES), stamped into every stored
row as `result_schema`. Bump it whenever a field or an outcome is added (or a field's type
changes): a swemint reading a row with a higher number refuses it (`pipeline.store`) rather than
moving it aside. 1: rows written before the stamp existed; 2: the stamp; 3: `cost.image_cpu_s`.
tests/pipeline/test_store_skew.py pins the shape of each number."""


LANGUAGE_ALIASES: dict[str, str] = {
    "py": "python", "python3": "python", "js": "javascript", "node": "javascript", "nodejs": "javascript",
    "jsx": "javascript", "ts": "typescript", "tsx": "typescript", "golang": "go", "c++": "cpp",
    "cxx": "cpp", "cc": "cpp", "c/c++": "cpp", "rs": "rust", "kotlin": "java"}
"""Other spellings (GitHub's `C++`, `Golang`, ...) -> the vocabulary's name. The vocabulary itself is
the languages the registered ecosystems declare (`agents.ecosystems.languages`: rows, sources, the
experience memory and the pool all use these names, `cpp`, never `c++`)."""


def canonical_language(value: str | None) -> str | None:
    """`value` in swemint's vocabulary (`agents.ecosystems.languages`): lower-cased, aliases mapped (`C++` ->
    `cpp`, `Go` -> `go`); a language outside the vocabulary is kept lower-cased; None/"" -> None."""
    if value is None or not str(value).strip():
        return None
    v = str(value).strip().lower()
    return LANGUAGE_ALIASES.get(v, v)


def parse_id_list(v: Any) -> list[str]:
    """Test ids from a FAIL_TO_PASS / PASS_TO_PASS value: a list, or a JSON-encoded list (the
    Hugging Face copies of SWE-bench, `swemint export --json-strings`); None or "" -> []."""
    if v is None or v == "":
        return []
    if isinstance(v, str):
        parsed = json.loads(v)
        if not isinstance(parsed, list):
            raise ValueError("expected a JSON list of test ids")
        return [str(x) for x in parsed]
    return [str(x) for x in v]


def parse_created_at(value: str | datetime | None) -> datetime | None:
    """Parse SWE-bench `created_at` (ISO 8601, or `YYYY-MM-DD HH:MM:SS` without zone = UTC)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        dt = value
    else:
        s = str(value).strip().replace("Z", "+00:00")
        dt = datetime.fromisoformat(s)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


class Instance(BaseModel):
    """One SWE-bench-format task instance.

    Gold `FAIL_TO_PASS` / `PASS_TO_PASS` (lists, or JSON-encoded strings as in the HF copies)
    are kept for scoring only: nothing in swemint chooses tests, commands or versions by them.
    `environment_setup_commit` is accepted and ignored. Crawl provenance (`source`,
    `pull_number`, `issue_numbers`, `quality_score`, `commit`, `crawled_at`,
    `moved_to_test_patch`) has fields of its own; any other unknown field is kept as is (pydantic `model_extra`, and in `model_dump`).

    Fields that name things are checked when a row is made (issue 24: instance fields are data),
    each raising ValueError with a one-line reason that shows the value inert: `instance_id`,
    `repo`, `version` and `language` against the conservative patterns of `envpool.naming`
    (`owner__name-N`: letters, digits, `_ . -`, bounded, no `..`), `created_at` and `crawled_at`
    as ISO 8601 times, `source`, `commit` and `environment_setup_commit` as one printable line of
    at most 200 characters. The text fields (`patch`, `problem_statement`, ...) are free text:
    every place they reach a script, a path or a markup goes through `envpool.quoting`.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    instance_id: str
    repo: str
    base_commit: str
    patch: str
    test_patch: str
    problem_statement: str = ""
    hints_text: str = ""
    created_at: str | None = None
    version: str | None = None
    FAIL_TO_PASS: list[str] = Field(default_factory=list)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    environment_setup_commit: str | None = None
    language: str | None = None
    source: str | None = None
    """Where the row came from: e.g. `github`, `local:<mirror>`, `swe-bench` (as the input says)."""
    pull_number: int | None = None
    issue_numbers: list[int] = Field(default_factory=list)
    quality_score: float | None = None
    commit: str | None = None
    """The merge or squash commit of the PR (crawled rows)."""
    crawled_at: str | None = None
    moved_to_test_patch: list[str] = Field(default_factory=list)
    """Crawled rows: test infrastructure of the PR's diff (conftest.py, runner configuration,
    `envpool.patches.Split.moved`) the source's split put in the test_patch rather than the fix."""

    @field_validator("issue_numbers", mode="before")
    @classmethod
    def _issues(cls, v: Any) -> list[int]:
        if v is None or v == "":
            return []
        if isinstance(v, str):
            v = json.loads(v) if v.strip().startswith("[") else [x for x in v.replace(",", " ").split()]
        return [int(x) for x in v]

    @field_validator("pull_number", mode="before")
    @classmethod
    def _pull(cls, v: Any) -> int | None:
        return None if v is None or v == "" else int(v)

    @field_validator("language", mode="before")
    @classmethod
    def _language(cls, v: Any) -> str | None:
        return canonical_language(v)

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _ids(cls, v: Any) -> list[str]:
        return parse_id_list(v)

    @field_validator("created_at", "version", "crawled_at", mode="before")
    @classmethod
    def _str(cls, v: Any) -> str | None:
        if v is None:
            return None
        return v.isoformat() if isinstance(v, datetime) else str(v)

    @field_validator("instance_id")
    @classmethod
    def _instance_id(cls, v: str) -> str:
        return check_instance_id(v)

    @field_validator("repo")
    @classmethod
    def _repo(cls, v: str) -> str:
        return check_repo(v)

    @field_validator("version")
    @classmethod
    def _version(cls, v: str | None) -> str | None:
        return check_version(v) if v else v

    @field_validator("language", mode="after")
    @classmethod
    def _language_name(cls, v: str | None) -> str | None:
        return check_language(v) if v is not None else None

    @field_validator("created_at", "crawled_at")
    @classmethod
    def _time(cls, v: str | None, info) -> str | None:
        return check_timestamp(info.field_name, v) if v else v

    @field_validator("source", "commit", "environment_setup_commit")
    @classmethod
    def _short_line(cls, v: str | None, info) -> str | None:
        if v and (len(v) > 200 or one_line(v, 200) != v):
            raise ValueError(f"{info.field_name} {shown(v)} is not one printable line of at most 200 "
                             "characters")
        return v

    @property
    def created(self) -> datetime | None:
        """`created_at` as an aware UTC datetime (None when absent)."""
        return parse_created_at(self.created_at)


class StepRecord(BaseModel):
    """One step of a trajectory: what ran, by which agent and rule, and how it ended.

    `duration` in seconds; `output_excerpt` is the tail of the output (at most ~2 KB).
    """

    model_config = ConfigDict(extra="forbid")
    agent: str
    rule: str = ""
    command: str = ""
    exit_code: int | None = None
    output_excerpt: str = ""
    duration: float = 0.0
    tokens: int = 0
    note: str = ""


class RoundRecord(BaseModel):
    """One round of the loop (plan -> environment -> verify): what it tried and how it ended.

    `round` counts from 1; `source`: where the environment came from (`built`, `reused`,
    `pooled`, `amended`); `candidate`: the ecosystem and build route of the plan; `test`: the
    test configuration's name; `outcome`: the round's outcome (an Outcome, or `replan` when
    Execution gave up with a diagnosis); `feedback`: what the next round changes and why;
    `move`: the generic next move (`agents.moves`: `status_units`, `test_option`, ...) that shaped
    this round, with its `evidence` (the line of the tree or of the last round's output that
    called for it); empty when the round was not shaped by one.
    """

    model_config = ConfigDict(extra="forbid")
    round: int
    candidate: str = ""
    toolchain: str = ""
    source: str = ""
    test: str = ""
    outcome: str = ""
    reason: str = ""
    attribution: str = ""
    feedback: str = ""
    move: str = ""
    evidence: str = ""


class RunCost(BaseModel):
    """One container of the verification: a test run (`kind` `full` or `targeted`: reruns of the
    candidate FAIL_TO_PASS and the tests whose status differs) or a side's compile-once `build`
    (`agents.verification`). `label` (`before#1`, `after#2`, `after:build`), `wall_s`, `cpu_s`
    (the container's cgroup; None when unreadable), `tests` (ids reported)."""

    model_config = ConfigDict(extra="forbid")
    label: str
    kind: Literal["full", "targeted", "build"] = "full"
    wall_s: float = 0.0
    cpu_s: float | None = None
    tests: int = 0


class CostRecord(BaseModel):
    """What an instance cost (`agents.cost.CostMeter`), beside the wall-clock `timings`.

    - `phase_cpu_s`: phase (`analysis`, `reuse`, `setup`, `before`, `after`, `reruns`, `other`)
      -> CPU-seconds of the containers that ran in it (cgroup accounting, read as each container
      is removed: `envpool.cgroup`). `container_cpu_s`: their sum. `engine_cpu_s`: the Docker
      engine's own CPU during this instance's commits (dockerd + containerd; other work at the
      same time included), in no phase.
    - `process_cpu_s`: the minting thread and the subprocesses it waited for (analysis, git),
      less those of image builds.
    - `image_cpu_s`: images this instance found missing on the engine and built (a Debian base's
      debootstrap and import, a toolchain layer's build container and commit): a one-off per
      engine that every later instance of every run reuses, so not in `cpu_s`.
    - `cpu_s`: container + engine + process CPU-seconds: the instance's own cost.
    - `host_cpu_s`: busy CPU-seconds of the whole host over the instance's span (every process,
      other instances and other work included); `load_start` / `load_end`: 1/5/15-minute load
      averages; `cores`; `slots`: build slots (instances in flight at once; set by the pipeline).
    - `runs`: each verification container (`RunCost`); `floor_cpu_s`: dependency install (the
      `setup` or `reuse` containers) + the first full before run + the first full after run
      (with their side's build) -- the least any verification could spend.
    - `policy`: the verification policy and cache settings that ran (`verify.policy`,
      `verify.compile_once`, `cache.warm`, ...), so arms of a benchmark are told apart.
    """

    model_config = ConfigDict(extra="forbid")
    phase_cpu_s: dict[str, float] = Field(default_factory=dict)
    container_cpu_s: float = 0.0
    engine_cpu_s: float = 0.0
    process_cpu_s: float = 0.0
    image_cpu_s: float = 0.0
    cpu_s: float = 0.0
    host_cpu_s: float | None = None
    load_start: list[float] | None = None
    load_end: list[float] | None = None
    cores: int = 0
    slots: int | None = None
    runs: list[RunCost] = Field(default_factory=list)
    floor_cpu_s: float | None = None
    policy: dict[str, Any] = Field(default_factory=dict)


class InstanceResult(BaseModel):
    """The one row every instance ends as, whatever happened.

    `outcome` is exactly one of OUTCOMES, with a human `reason` and the `log_path` to read.
    `FAIL_TO_PASS` / `PASS_TO_PASS` are *ours* (gold stays on the Instance). `timings` maps
    phase name -> seconds (e.g. "checkout", "setup", "commit", "before", "after", "total";
    "reuse" = time spent on reuse candidates, included in "setup").
    """

    model_config = ConfigDict(extra="forbid")
    instance_id: str
    repo: str
    outcome: Outcome
    reason: str = ""
    log_path: str = ""
    FAIL_TO_PASS: list[str] = Field(default_factory=list)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    flaky_tests: list[str] = Field(default_factory=list)
    test_files: list[str] = Field(default_factory=list)
    test_command: str = ""
    parser: str = ""
    setup_script: str = ""
    dockerfile: str = ""
    image: str = ""
    image_id: str = ""
    interpreter: str = ""
    substitutions: list[str] = Field(default_factory=list)
    substitutes_tried: list[str] = Field(default_factory=list)
    """Released substitutes the plan tried for sources this host cannot reach (issue 25: a
    SNAPSHOT parent or dependency -> the nearest release on the registry, `<source> -> <release>`,
    or `<source>: no release ...`), from `Plan.state["substitutes_tried"]`; an `env_failed` row
    that still needs the network names them in its reason."""
    installed_packages: str = ""
    services: list[str] = Field(default_factory=list)
    """The servers the CI provides for the tests that the environment provides (`kind version
    on port N (where the CI says so)`; `agents.ecosystems.ci_services`): installed at setup,
    started before each test run (the row's `test_command` starts them too)."""
    patch_methods: dict[str, str] = Field(default_factory=dict)
    timings: dict[str, float] = Field(default_factory=dict)
    version: str | None = None
    reused_from: str | None = None
    """Instance id whose pooled environment this row's image was made from (None: full build)."""
    incremental_commands: list[str] = Field(default_factory=list)
    """Commands EnvPatch ran on top of the reused environment (`reused_from`), in order."""
    llm_usage: dict = Field(default_factory=dict)
    """LLM usage of this instance: `{"total": Usage, "by_agent": {agent: Usage}}` (tokens, USD;
    agents.llm.usage); empty when no model was called."""
    anomalies: list[str] = Field(default_factory=list)
    """Why test runs were not graded (`<side>#<n>: ...`, `tamper: ...` when only tampering
    explains it; envpool.testrun.trust); a run with an anomaly never counts."""
    test_infra_files: list[str] = Field(default_factory=list)
    """Test-infrastructure files the patches touch (`patch:<path>`, `test_patch:<path>`:
    conftest files, pytest plugins, sitecustomize, *.pth, runner configuration, jest/mocha set-up
    files...): a row to look at before trusting it (envpool.testrun.trust.infrastructure_flags)."""
    isolation: dict[str, object] = Field(default_factory=dict)
    """What the engine that built the row gave its containers (`SandboxFactory.isolation()`:
    `user_namespaces`, `root_uid`, `disk_quota`, `security_options`); empty when not known."""
    env: EnvRecord | None = None
    language: str | None = None
    """The row's language, or the detected ecosystem's when the row has none (vocabulary names)."""
    unreachable: str | None = None
    """For an `env_failed` row: the source this host cannot reach that its reason names
    (`"<source>: <line>"`, `agents.diagnosis.unreachable_source`), else None. Such a row needs
    the network to be built; measurements set it apart as network-bound."""
    round: int = 0
    """The round of the loop whose verification this row reports (the one that verified, when
    verified); 0 when no round ran."""
    rounds: list[RoundRecord] = Field(default_factory=list)
    """Every round, in order (see RoundRecord)."""
    reuse_kind: str | None = None
    """How `reused_from` was found: `same_repo` (the pool's hierarchy: an environment is reused
    only within its repository; rows of earlier runs may say `similar_repo`, the cross-repository
    reuse that `agents.tiers` replaced)."""
    reuse_overlap: float | None = None
    """Rows of earlier runs only (`similar_repo`: the share of declared dependencies); never set now."""
    dependency_key: str | None = None
    """Key (sha256 hex) of the dependency layer the environment stands on (`agents.tiers`: the
    tier shared across repositories), None when it stands on the toolchain image alone."""
    dependency_image_id: str | None = None
    """Image id of that dependency layer: rows with the same one share its layers byte for byte."""
    trajectory_path: str = ""
    cost: CostRecord | None = None
    """CPU-seconds by phase and container, host load, cores and slots (see CostRecord); None in
    rows made before it existed or by a runner that produced no row of its own."""
    started_at: str = ""
    finished_at: str = ""
    swemint_version: str = Field(default_factory=lambda: SWEMINT_VERSION)
    """The swemint that wrote the row (`pipeline.store.ResultStore.write_result` stamps its own);
    rows written before the stamp read as the current one."""
    result_schema: int = RESULT_SCHEMA
    """The row's shape (`RESULT_SCHEMA` of the swemint that wrote it): a reader whose own is
    lower refuses the row instead of guessing (`pipeline.store`)."""
