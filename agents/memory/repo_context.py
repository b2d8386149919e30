"""Repository context -> likely-obstacle queries (the first half of context-aware retrieval).

The rules are data (`data/experiences/obstacles.yaml`): each names the ecosystems it applies to,
a query text, and conditions on the context (files present, frameworks, declared dependency
bounds, commit era, toolchain version, and the gap between the toolchain's release year and
the era). A context yields one query per matching rule; `agents.memory.retrieve` ranks the
memory once per query and fuses the lists (EnvPilot's context-aware retrieval).
"""

from __future__ import annotations

from packaging.utils import canonicalize_name
import fnmatch
import re
from datetime import datetime
from pathlib import Path

import yaml
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field, field_validator

from agents.ecosystems.python.profile import PythonProfile, memory_facts
from agents.memory.experience import MemoryLanguage, family
from envpool.resources import resource

RULES_FILE = resource("data/experiences/obstacles.yaml")


_norm = canonicalize_name  # PEP 503: `Foo_Bar` -> `foo-bar`


def _version(v: str | None) -> Version | None:
    try:
        return Version(v) if v else None
    except InvalidVersion:
        return None


class RepoContext(BaseModel):
    """What retrieval knows about a repository at a commit.

    `toolchain`: the interpreter/compiler version the build uses ("3.11", "18", "1.21", "17").
    `era`: the commit's year. `declared`: dependency name -> specifier as written ("<5",
    "==1.19.5", "^4.0.0"; "" when unbounded). `files`: notable paths present (globs match them).
    `flags`: facts such as "compiled", "scm_version", "vendored", "no_lockfile". `repo`: owner/name
    (learned lessons of the same repository apply without a context match); `build_systems`: the
    analysis' build systems (`pip`, `maven`, `cmake`, ...); `commands`: the CI's and the plan's
    commands (setup and test), words of the profile query; `candidate`: the plan's candidate;
    `own`: the distributions the repository itself builds (Python's project name, package.json's
    `name`, the cargo packages), normalised (PEP 503, lower case): a memory action never installs,
    pins or lifts one of them (`agents.memory.actions.own_refusals`).
    """

    model_config = ConfigDict(extra="forbid")
    ecosystem: MemoryLanguage
    toolchain: str | None = None
    era: int | None = None
    frameworks: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)
    declared: dict[str, str] = Field(default_factory=dict)
    flags: list[str] = Field(default_factory=list)
    repo: str = ""
    build_systems: list[str] = Field(default_factory=list)
    commands: list[str] = Field(default_factory=list)
    candidate: str = ""
    """The plan's candidate (``<ecosystem>:<build>``, as `RoundRecord.candidate`): lessons of the
    loop's moves are keyed by it (`agents.memory.replay`)."""
    own: list[str] = Field(default_factory=list)

    @field_validator("own")
    @classmethod
    def _own_norm(cls, v: list[str]) -> list[str]:
        return list(dict.fromkeys(_norm(n) for n in v if n and n.strip()))

    def dependency_names(self) -> set[str]:
        """The declared dependencies' names, normalised (`Foo_Bar` -> `foo-bar`)."""
        return {_norm(d) for d in self.declared}

    def profile_query(self, max_words: int = 200) -> str:
        """The project's own query (not a template): build systems, test frameworks, manifest
        and CI file names, declared dependencies and the words of its commands."""
        words = list(self.build_systems) + list(self.frameworks) + [f.rsplit("/", 1)[-1] for f in self.files]
        words += sorted(self.declared) + [w for c in self.commands for w in re.findall(r"[A-Za-z][\w.+-]{2,}", c)]
        return " ".join(list(dict.fromkeys(words))[:max_words])


class Condition(BaseModel):
    """All set fields must hold (lists: any element); unknown context facts make it false."""

    model_config = ConfigDict(extra="forbid")
    files_any: list[str] = Field(default_factory=list)
    """Glob patterns; true when a file in the context matches one."""
    frameworks_any: list[str] = Field(default_factory=list)
    dependencies_any: list[str] = Field(default_factory=list)
    flags_any: list[str] = Field(default_factory=list)
    era_before: int | None = None
    """The commit's year is before this year."""
    era_from: int | None = None
    toolchain_at_least: str | None = None
    toolchain_below: str | None = None
    toolchain_newer_than_era: int | None = None
    """The toolchain was released at least this many years after the commit's year."""
    declared_below: dict[str, str] = Field(default_factory=dict)
    """name -> version: the repository caps or pins `name` below `version` (any of them)."""


class ObstacleRule(BaseModel):
    """One likely obstacle: `query` is searched when `when` holds for an ecosystem listed."""

    model_config = ConfigDict(extra="forbid")
    id: str
    ecosystems: list[MemoryLanguage]
    query: str = Field(min_length=3)
    when: Condition = Field(default_factory=Condition)
    weight: float = Field(default=1.0, gt=0)
    """The weight of this query's ranked list in the fusion (generic rules: below 1)."""


class ObstacleRules(BaseModel):
    """The rule file: rules plus each toolchain's release year per version."""

    model_config = ConfigDict(extra="forbid")
    toolchain_years: dict[str, dict[str, int]] = Field(default_factory=dict)
    rules: list[ObstacleRule] = Field(default_factory=list)

    @classmethod
    def load(cls, path: Path | str = RULES_FILE) -> ObstacleRules:
        """Parse a YAML rule file (raises pydantic.ValidationError on a malformed rule)."""
        return cls.model_validate(yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {})

    def release_year(self, ecosystem: str, version: str | None) -> int | None:
        """Release year of `version` of the ecosystem's toolchain (longest known prefix)."""
        table = self.toolchain_years.get(ecosystem, {})
        parts = (version or "").split(".")
        for n in range(len(parts), 0, -1):
            year = table.get(".".join(parts[:n]))
            if year:
                return year
        return None

    def holds(self, c: Condition, ctx: RepoContext) -> bool:
        """Whether condition `c` holds for `ctx`."""
        if c.files_any and not any(fnmatch.fnmatch(f, pat) for f in ctx.files for pat in c.files_any):
            return False
        frameworks = {_norm(f) for f in ctx.frameworks}
        if c.frameworks_any and not frameworks & {_norm(f) for f in c.frameworks_any}:
            return False
        declared = {_norm(k): v for k, v in ctx.declared.items()}
        if c.dependencies_any and not set(declared) & {_norm(d) for d in c.dependencies_any}:
            return False
        if c.flags_any and not set(ctx.flags) & set(c.flags_any):
            return False
        if (c.era_before or c.era_from) and ctx.era is None:
            return False
        if c.era_before and not ctx.era < c.era_before:  # type: ignore[operator]
            return False
        if c.era_from and not ctx.era >= c.era_from:  # type: ignore[operator]
            return False
        tool = _version(ctx.toolchain)
        if (c.toolchain_at_least or c.toolchain_below) and tool is None:
            return False
        if c.toolchain_at_least and tool < Version(c.toolchain_at_least):  # type: ignore[operator]
            return False
        if c.toolchain_below and tool >= Version(c.toolchain_below):  # type: ignore[operator]
            return False
        if c.toolchain_newer_than_era is not None:
            year = self.release_year(ctx.ecosystem, ctx.toolchain)
            if year is None or ctx.era is None or year - ctx.era < c.toolchain_newer_than_era:
                return False
        if c.declared_below and not any(caps_below(declared.get(_norm(n)), v) for n, v in c.declared_below.items()):
            return False
        return True

    def queries(self, ctx: RepoContext) -> list[ObstacleRule]:
        """The rules of the context's ecosystem family that hold for `ctx`, in file order."""
        fam = family(ctx.ecosystem)
        return [r for r in self.rules if set(r.ecosystems) & set(fam) and self.holds(r.when, ctx)]


def caps_below(spec: str | None, version: str) -> bool:
    """Whether a specifier (`<5`, `==4.6.11`, `~=4.6`, `^4.0`, `4.x`) keeps a dependency below
    `version`: some upper bound or pin of it is lower. None/empty -> False."""
    if not spec:
        return False
    limit = Version(version)
    for part in re.split(r"[,|\s]+", spec.strip()):
        m = re.match(r"^(<=|<|==|===|~=|\^|~)?\s*v?(\d+(?:\.\d+)*)", part)
        if not m:
            continue
        op, v = m.group(1) or "==", _version(m.group(2))
        if v is None:
            continue
        if op == "<" and v <= limit or op in ("<=", "==", "===", "~=", "^", "~") and v < limit:
            return True
    return False


def context_from_python_profile(profile: PythonProfile, interpreter: str | None = None,
                                created: datetime | None = None, files: list[str] | None = None) -> RepoContext:
    """A RepoContext from the Python ecosystem's packaging profile (its facts:
    `agents.ecosystems.python.profile.memory_facts`), the chosen interpreter ("3.11"), the
    instance's created_at and the shared profile's `files` (manifests, CI files)."""
    facts = memory_facts(profile)
    return RepoContext(ecosystem="python", toolchain=interpreter, era=created.year if created else None,
                       frameworks=facts.frameworks, files=list(dict.fromkeys(list(files or []) + facts.files)),
                       declared=facts.declared, flags=facts.flags, own=facts.own)
