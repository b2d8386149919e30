"""Typed records of the experience memory (EnvPilot's Trajectory-Derived Memory, arXiv 2609.07357).

An `Experience` is one known obstacle of building a repository's test environment and its fix:
the problem (with the real error text), the solution in words, the machine-applicable `actions`,
and an `error_signature` (a regex) that recognises the error in a step's output. Actions are a
small discriminated union on `kind`; string fields may hold placeholders `${name}` or
`${name:-default}`, bound from the signature's named groups and the caller's variables when the
actions are handed out (see `agents.memory.actions.bind_actions`).
"""

from __future__ import annotations

from packaging.utils import canonicalize_name
import json
import re
from functools import lru_cache
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from envpool.errors import SwemintError

def memory_languages() -> tuple[str, ...]:
    """The memory's vocabulary: every language a registered ecosystem serves
    (`agents.ecosystems.languages`) and `any` (entries for every language)."""
    import agents.ecosystems as registry

    return (*registry.languages(), "any")


def family(ecosystem: str) -> tuple[str, ...]:
    """The languages whose entries a repository of `ecosystem` (a language) can use: its own, the
    other languages of the ecosystems serving it (`agents.ecosystems.kin`: a TS repository meets
    npm's problems; C++ meets C's), and `any`."""
    import agents.ecosystems as registry

    return (*registry.kin(ecosystem), "any")


def _in_vocabulary(value: str) -> str:
    if value not in memory_languages():
        raise ValueError(f"{value!r} is no language of the memory ({', '.join(memory_languages())})")
    return value


MemoryLanguage = Annotated[str, AfterValidator(_in_vocabulary)]
"""A field holding a language of the memory's vocabulary (`memory_languages`)."""


class ExperienceMemoryError(SwemintError):
    """Root of the experience memory's errors."""


class SeedError(ExperienceMemoryError):
    """A seed file holds an invalid entry; the message names the file and line."""


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ShellAction(_Action):
    """Run `command` in the build sandbox (bash, cwd /testbed)."""

    kind: Literal["shell"] = "shell"
    command: str = Field(min_length=1)


class UvLiftAction(_Action):
    """Move `package`'s date bound forward to where wheels for the interpreter exist, wheels only
    (swemint's uv repair: `--exclude-newer-package`, `--only-binary`)."""

    kind: Literal["uv_lift"] = "uv_lift"
    package: str = Field(min_length=1)

    @field_validator("package")
    @classmethod
    def _lower(cls, v: str) -> str:
        return v if "${" in v else v.lower()


class PinAction(_Action):
    """Constrain a (possibly transitive) dependency, in the ecosystem's own syntax
    (`markupsafe<2.1`, `node-sass@4`, `rake -v '<11'`)."""

    kind: Literal["pin"] = "pin"
    requirement: str = Field(min_length=1)


class InstallAction(_Action):
    """Add missing packages with the ecosystem's installer (pip/uv, npm, gem, ...)."""

    kind: Literal["install"] = "install"
    packages: list[str] = Field(min_length=1)


class EnvAction(_Action):
    """Set environment variable `name` to `value` for the build and the test run."""

    kind: Literal["env"] = "env"
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    value: str


class AptAction(_Action):
    """Install Debian packages (build headers, tools) into the image."""

    kind: Literal["apt"] = "apt"
    packages: list[str] = Field(min_length=1)


class ToolchainAction(_Action):
    """Use another toolchain version: `tool` (python, node, npm, go, rust, java, maven, php, ruby,
    gcc, cmake, debian) and `version`, a version or a constraint (`16`, `<3.10`, `>=1.21`)."""

    kind: Literal["toolchain"] = "toolchain"
    tool: str = Field(min_length=1)
    version: str = Field(min_length=1)


class UvOptionAction(_Action):
    """Switch a uv option shared by every install of the instance."""

    kind: Literal["uv_option"] = "uv_option"
    option: Literal["no_build_isolation", "prerelease_allow"]


class RuleAction(_Action):
    """Let the rule engine that owns entry `rule` act (`agents.diagnosis` for a diagnosis rule:
    its `Diagnosis` drives the loop; an ecosystem's own repair code for its data-driven repair
    kinds). Never run by the memory itself: it makes a hand-written rule an entry of the one
    knowledge store, retrieved, scored and reported like every other entry."""

    kind: Literal["rule"] = "rule"
    engine: Literal["diagnosis", "ecosystem"]
    rule: str = Field(min_length=1)


class TestArgAction(_Action):
    """Add `arg` to the test command (`-p no:cacheprovider`, `-vet=off`, `-Drat.skip=true`)."""

    kind: Literal["test_arg"] = "test_arg"
    arg: str = Field(min_length=1)


REPLAY_REQUEST_KEYS: tuple[str, ...] = ("route", "toolchain", "avoid", "apt", "env", "test_args", "options")
"""The plan request's fields a replayed move may carry: data the ecosystem plans from, never
commands (`pre` / `post` are left out of a lesson)."""


class MoveAction(_Action):
    """One change of the loop that shaped a round of a row that verified in round >= 2 (issue 30):
    a generic next move (`agents.moves`: `ci_setup`, `test_option`, `status_units`, ...), the plan's
    own next test configuration (`test_config`), an amended image (`amend`) or a replan with
    Debian packages or on another toolchain (`apt`, `toolchain`), as data the planner replays
    before the first build of a later instance (`agents.memory.replay`).

    `request`: the plan request's change a rebuild merged (`REPLAY_REQUEST_KEYS` only: options,
    Debian packages, toolchain, ...). `stall`: for a retest move, the class of stall that asked
    for it (``no test ran``, ...): the ecosystem offers the move again for the later instance's
    own tree and plan. `test`: the name of the plan's test configuration that ran (`test_config`).
    `packages` / `install`: an amend's packages and how they were installed (`system`: Debian,
    `module`: the ecosystem's installer, `ci_pip`: the tools the project's CI installs from PyPI,
    read again from the later instance's CI). `evidence`: what called for it (for the report)."""

    kind: Literal["move"] = "move"
    move: str = Field(pattern=r"^[a-z_]+$")
    request: dict[str, Any] = Field(default_factory=dict)
    stall: str = ""
    test: str = ""
    packages: list[str] = Field(default_factory=list)
    install: Literal["", "system", "module", "ci_pip"] = ""
    evidence: str = ""

    @field_validator("request")
    @classmethod
    def _data_only(cls, v: dict[str, Any]) -> dict[str, Any]:
        bad = sorted(set(v) - set(REPLAY_REQUEST_KEYS))
        if bad:
            raise ValueError(f"a replayed request holds data only ({', '.join(REPLAY_REQUEST_KEYS)}), not {bad}")
        return v


Action = Annotated[Union[ShellAction, UvLiftAction, PinAction, InstallAction, EnvAction, AptAction,
                         ToolchainAction, UvOptionAction, TestArgAction, RuleAction, MoveAction],
                   Field(discriminator="kind")]
"""One machine-applicable step of a solution, discriminated by `kind`."""


@lru_cache(maxsize=4096)
def _compile(signature: str) -> re.Pattern[str]:
    return re.compile(signature, re.IGNORECASE)


def actions_key(actions: list) -> str:
    """A canonical string for a list of actions (order kept): the dedup key's action part."""
    return json.dumps([a.model_dump() for a in actions], sort_keys=True, separators=(",", ":"))


HAND_WRITTEN: tuple[str, ...] = ("seed", "rule")
"""Provenance sources written by the team: seed entries and rules that are data."""
TRUST_PRIOR = 2
"""Successes a hand-written entry is credited with before any use: it starts trusted
(reliability (0 + 1 + 2) / (0 + 2 + 2) = 0.75, above the before-plan gate) and keeps acting
where it acts now; a learned entry has no prior and earns its standing by its uses."""


class Provenance(BaseModel):
    """Where an entry comes from: written by the team (`seed`: data/experiences; `rule`: a rule
    that is data, e.g. `recipes/diagnosis.yaml`, with `file`) or distilled from runs (`learned`),
    with the instance ids whose trajectories produced or reinforced it."""

    model_config = ConfigDict(extra="forbid")
    source: Literal["seed", "rule", "learned"] = "seed"
    instance_ids: list[str] = Field(default_factory=list)
    file: str = ""
    rule: str = ""
    """A learned entry taught by a hand-written rule's repair (`agents.memory.learn.rule_repairs`):
    the rule's entry id (`rule-diag-missing-header`). Such a lesson is bound to its rule and its
    repository: it serves only the repository whose run taught it (`retrieve.eligible`; the rule
    itself serves the others) and only while its rule is in the data and not dropped below the
    floor (`retrieve.Retriever`: dropped with it). Empty for every other entry."""

    @property
    def hand_written(self) -> bool:
        """True for the team's entries (seed, rule)."""
        return self.source in HAND_WRITTEN


_RANGE_PART = re.compile(r"^\s*(>=|<=|==|!=|>|<|~=|\^)?\s*v?\d+(?:\.\d+)*\s*$")


def _version_range(v: str) -> str:
    """`v` stripped when every comma-separated part is a comparator on a dotted version (`>=3.12`,
    `<1.21`, `>=3.8,<3.12`; the syntax of `agents.ecosystems.toolchain.satisfies`), else ValueError."""
    v = v.strip()
    if v and not all(_RANGE_PART.match(p) for p in v.split(",")):
        raise ValueError(f"not a version range: {v!r} (comparators on dotted versions: '>=3.12', '<1.21')")
    return v


class EntryContext(BaseModel):
    """The projects an entry is about (EnvPilot keys experience by the project's context).

    `repos`: the repositories (owner/name) whose trajectories taught a learned entry; `ecosystems`:
    ecosystems besides `Experience.ecosystem` (a diagnosis rule listing several); `build_systems`
    (`pip`, `poetry`, `maven`, `cmake`, `npm`, `cargo`, `go`, ...) and `dependencies` (normalised
    package names) of those projects, or named by a hand-written entry's actions. Empty lists
    mean "not specific"."""

    model_config = ConfigDict(extra="forbid")
    repos: list[str] = Field(default_factory=list)
    ecosystems: list[str] = Field(default_factory=list)
    build_systems: list[str] = Field(default_factory=list)
    dependencies: list[str] = Field(default_factory=list)
    candidates: list[str] = Field(default_factory=list)
    """The candidate plans (``<ecosystem>:<build>``, as `RoundRecord.candidate`) a lesson of the
    loop's moves is about (`MoveAction`): it is replayed only on a plan of one of them."""
    derived: bool = False
    """The context only narrows retrieval: `dependencies` read off a hand-written entry's
    actions, or a seed line's `context` naming the entry's subject (the package, framework or
    build system it is about) with `"derived": true`. It makes retrieval specific (an entry about
    packages or build systems the project names nowhere waits for the error that names them:
    `Retriever.retrieve`) but never lets the entry change a plan before a failure
    (`agents.memory.before.proactive`)."""
    toolchain: str = ""
    """The range of its ecosystem's toolchain a hand-written entry is about (`">=3.12"`: Python
    3.12 removed distutils; `"<1.21"`: a Go before 1.21; comparators as `PlanRequest.toolchain`,
    `agents.ecosystems.toolchain.satisfies`), compared with the project's toolchain version
    (`RepoContext.toolchain`, the plan's). Retrieval before planning holds the entry back when
    the project's toolchain is known and outside the range (`Retriever.retrieve`); unknown: not
    held back; after a failure, retrieval by the error text finds it whatever the toolchain.
    Empty: any toolchain."""
    files: list[str] = Field(default_factory=list)
    """Root-relative paths or globs of the files a hand-written entry concerns (`setup.py`):
    retrieval before planning holds it back when the project's known files (`RepoContext.files`,
    not empty) match none of them; after a failure the error text finds it. Empty: any project."""
    versions: dict[str, str] = Field(default_factory=dict)
    """package -> the versions of it a hand-written entry is about (`{"pytest": "<6.2.5"}`):
    retrieval before planning holds it back when the project declares the package
    (`RepoContext.declared`) with a specifier that admits none of those versions (`pytest>=7`);
    an unbounded or undeclared package is not held back."""
    generic: str = ""
    """Why a hand-written entry with no dependency or build-system context is about no package:
    any project of its ecosystems may meet it (a toolchain newer than the commit's era, the
    network, the language's own installer or compiler). A seed whose actions set an environment
    variable or a test argument carries either a context or this reason
    (tests/agents/memory/test_seed_subjects.py)."""

    @field_validator("toolchain")
    @classmethod
    def _range(cls, v: str) -> str:
        return _version_range(v)

    @field_validator("versions")
    @classmethod
    def _ranges(cls, v: dict[str, str]) -> dict[str, str]:
        return {canonicalize_name(k): _version_range(r) for k, r in v.items()}



class Experience(BaseModel):
    """One entry of the experience memory.

    `error_signature` is a Python regex, matched case-insensitively against the cleaned error
    text (ANSI codes removed); its named groups bind `${name}` placeholders in `actions`.
    `times_applied` / `times_worked` count how often the actions were tried and how often the
    failing step then passed. `negative` marks a failure with no known fix (or a fix that did not
    work): such entries are excluded from retrieval unless asked for.
    """

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    problem: str = Field(min_length=10)
    solution: str = Field(min_length=5)
    actions: list[Action] = Field(default_factory=list)
    ecosystem: MemoryLanguage
    tags: list[str] = Field(default_factory=list)
    error_signature: str = Field(min_length=3)
    provenance: Provenance = Field(default_factory=Provenance)
    times_applied: int = Field(default=0, ge=0)
    times_worked: int = Field(default=0, ge=0)
    negative: bool = False
    context: EntryContext = Field(default_factory=EntryContext)

    @field_validator("error_signature")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            re.compile(v, re.IGNORECASE)
        except re.error as e:
            raise ValueError(f"error_signature does not compile: {e}") from e
        return v

    @model_validator(mode="after")
    def _counts(self) -> Experience:
        if self.times_worked > self.times_applied:
            raise ValueError("times_worked cannot exceed times_applied")
        return self

    @property
    def moves(self) -> bool:
        """True for a lesson of the loop's moves (its actions are `MoveAction`s, replayed before
        the first build by `agents.memory.replay`)."""
        return bool(self.actions) and all(a.kind == "move" for a in self.actions)

    @property
    def signature_re(self) -> re.Pattern[str]:
        """`error_signature` compiled (IGNORECASE; compiled patterns are cached by text)."""
        return _compile(self.error_signature)

    @property
    def reliability(self) -> float:
        """Laplace-smoothed success rate (times_worked + 1 + p) / (times_applied + 2 + p), in [0, 1],
        where p = `TRUST_PRIOR` for hand-written entries (they start trusted) and 0 for learned
        ones (they earn trust)."""
        p = TRUST_PRIOR if self.provenance.hand_written else 0
        return (self.times_worked + 1 + p) / (self.times_applied + 2 + p)

    def dropped(self, floor: float, min_uses: int) -> bool:
        """Below the floor: at least `min_uses` scored uses and a reliability under `floor`. A
        dropped entry is no longer retrieved, applied, or (a diagnosis rule) consulted. A negative
        lesson is never dropped: its `times_applied` counts the instances that confirmed it (the
        error met again, unfixed) and its `times_worked` never grows, so the floor would drop it
        exactly when it had been confirmed most (found by issue 30's fresh-user trial)."""
        if self.negative:
            return False
        return self.times_applied >= min_uses and self.reliability < floor

    def search_text(self) -> str:
        """The text BM25 indexes: problem, solution, tags and the signature's literal words."""
        sig_words = re.sub(r"\\[a-zA-Z]|[^A-Za-z0-9_ ]+", " ", self.error_signature)
        ctx = self.context
        return " ".join([self.problem, self.solution, " ".join(self.tags), sig_words, " ".join(ctx.build_systems),
                         " ".join(ctx.dependencies)])
