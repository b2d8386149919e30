"""Diagnoses: the cause of a failure in terms the loop can act on (MEnvAgent's diagnosis ->
incremental repair; here also -> the next plan).

`diagnose(text, ecosystem, toolchain)` asks the ecosystem's own `diagnose` first, then the
shared rules of `agents/ecosystems/recipes/diagnosis.yaml` (data: a command, header, shared or
link library or pkg-config module the image lacks -> a `Need` that Execution answers from
Debian's own file index (`agents.debindex`), a standard-library package -> the Go release that
added it, version phrases in skip reasons, ...). The answer is a `Diagnosis`; None when no rule
knows the cause (then the LLM may be asked, under `hybrid`). `needs_in(text)` gives every need a
text names (a repository's test driver read at analysis time).
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from agents.debindex import DEBIAN_NAME, Need, NeedKind
from envpool.toolchains import version_key

RULES_PATH = Path(__file__).resolve().parent / "ecosystems" / "recipes" / "diagnosis.yaml"
DROPPED: ContextVar[frozenset[str]] = ContextVar("swemint_dropped_diagnosis_rules", default=frozenset())
"""Ids of rules whose knowledge-store entry fell below the floor (`agents.memory.knowledge`): the
loop sets it for its instance from the experience memory; `diagnose` skips them."""
MAX_TEXT = 40_000
"""Only the last this many characters of a text are searched (regex time is bounded)."""

Kind = Literal["toolchain_too_old", "toolchain_too_new", "missing_system", "missing_module", "no_route",
               "unknown"]


class Diagnosis(BaseModel):
    """Why a step or a run failed, as the loop acts on it.

    - `kind`: see `Kind`; `detail`: one line for the row and the trajectory.
    - `toolchain`: a version constraint for the next plan (`>=1.16`, `<3.12`, `>1.19.8`).
    - `packages`: Debian packages (missing_system) or modules (missing_module) to install.
    - `needs`: what the image lacks (missing_system), for the Debian index to answer with
      packages (`agents.debindex.DebianIndex.resolve`).
    - `rule`: the rule id that found it (`llm` when the model did); `evidence`: the output line
      it matched (what the memory learns the repair under).
    """

    model_config = ConfigDict(extra="forbid")
    kind: Kind
    detail: str = ""
    evidence: str = ""
    toolchain: str | None = None
    packages: list[str] = Field(default_factory=list)
    needs: list[Need] = Field(default_factory=list)
    rule: str = ""


class DiagnosisRule(BaseModel):
    """One rule of the data file (see its header)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    pattern: str
    kind: Kind
    ecosystems: list[str] = Field(default_factory=list)
    packages: list[str] = Field(default_factory=list)
    needs: NeedKind | None = None
    name: str | None = None
    lower: bool = False
    min: str | None = None
    max: str | None = None
    scope: list[Literal["output", "skip"]] = Field(default_factory=lambda: ["output", "skip"])


class UnreachableRule(BaseModel):
    """One rule of the data file's `unreachable` list: a failure naming a source this host
    cannot reach (`name`: fixed, else the pattern's `name` group)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    pattern: str
    name: str | None = None


class DiagnosisData(BaseModel):
    """The data file: the Debian index queries (`agents.debindex`), rules, the unreachable-source
    rules, Go std packages -> release (apt's words for a mirror it could not use are
    `envpool/aptmirror.yaml`)."""

    model_config = ConfigDict(extra="forbid")
    index: dict = Field(default_factory=dict)
    rules: list[DiagnosisRule] = Field(default_factory=list)
    unreachable: list[UnreachableRule] = Field(default_factory=list)
    reachable_hosts: list[str] = Field(default_factory=list)
    go_std_since: dict[str, str] = Field(default_factory=dict)


@lru_cache(maxsize=1)
def load_rules(path: str = str(RULES_PATH)) -> DiagnosisData:
    """The diagnosis data (validated; a malformed rule is a pydantic ValidationError)."""
    return DiagnosisData.model_validate(yaml.safe_load(Path(path).read_text(encoding="utf-8")))


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I | re.M)


def version_of(toolchain: str | None) -> str | None:
    """The version part of a toolchain label (`go 1.19.8` -> `1.19.8`, `3.9` -> `3.9`)."""
    m = re.search(r"\d+(?:\.\d+)*", toolchain or "")
    return m.group(0) if m else None


def _group(m: re.Match[str], *names: str) -> str | None:
    for n in names:
        for key in (n, n + "2", n + "3"):
            if key in m.re.groupindex and m.group(key):
                return m.group(key)
    return None


def _need(rule: DiagnosisRule, m: re.Match[str]) -> Need | None:
    """The rule's need: its kind, the `name` group (or the rule's fixed name); None when the name
    is not a plain token."""
    name = rule.name or _group(m, "name")
    if rule.needs is None or not name:
        return None
    if rule.lower:  # CMake's Find-module name (`BLAS`) as a library's file name (`libblas.so`)
        name = name.lower()
    try:
        return Need(kind=rule.needs, name=name)
    except ValueError:
        return None


def _from_rule(rule: DiagnosisRule, m: re.Match[str], data: DiagnosisData, toolchain: str | None) -> Diagnosis | None:
    line = m.group(0).strip()[:200]
    if rule.kind == "missing_system":
        need = _need(rule, m)
        named = _group(m, "package")  # a Debian package the output itself names
        packages = list(rule.packages) + ([named] if named and DEBIAN_NAME.fullmatch(named) else [])
        if need is None and not packages:
            return None
        what = need.label if need else packages[0]
        return Diagnosis(kind="missing_system", detail=f"the image lacks {what}: {line}", packages=packages,
                         needs=[need] if need else [], rule=rule.id, evidence=line)
    if rule.kind == "missing_module":
        mod = _group(m, "module")
        return Diagnosis(kind="missing_module", detail=line, packages=[mod] if mod else [], rule=rule.id) \
            if mod else None
    if rule.kind in ("toolchain_too_old", "toolchain_too_new"):
        want = _group(m, "version")
        std = _group(m, "stdpkg")
        if std:
            want = data.go_std_since.get(std)
        sym = _group(m, "stdsym")
        if sym:  # a name only counts when the table knows it (else the project's own)
            member = _group(m, "member")
            want = data.go_std_since.get(f"{sym}.{member}" if member else sym)
            if want is None:
                return None
        classfile = _group(m, "classfile")
        if classfile:  # class file version N -> Java N-44
            want = str(int(classfile) - 44)
        level = _group(m, "level")
        current = version_of(toolchain)
        if rule.kind == "toolchain_too_old":
            floor = want or rule.min
            constraint = f">={floor}" if floor else (f">{current}" if current else None)
        else:
            ceiling = rule.max or (f"{int(level) + 4}" if level and level.isdigit() else None)
            classmax = _group(m, "classmax")
            if classmax:  # the compiler reads class files up to version N: Java N-44 at most
                ceiling = str(int(classmax) - 44 + 1)
            constraint = f"<{ceiling}" if ceiling else (f"<{current}" if current else None)
        if constraint is None:
            return None
        return Diagnosis(kind=rule.kind, detail=line, toolchain=constraint, rule=rule.id)
    return Diagnosis(kind=rule.kind, detail=line, rule=rule.id)


def diagnose(text: str, ecosystem: str, toolchain: str | None = None, *, scope: str = "output",
             eco: Any = None) -> Diagnosis | None:
    """The first diagnosis of `text` (a failed step's output, a run's output, or skip reasons
    when `scope="skip"`) for `ecosystem` (an ecosystem name: `python`, `go`, `node`, ...);
    `toolchain`: the label of the toolchain used (to ask for a newer / older one). `eco`: the
    ecosystem object (`agents.ecosystems.base.Ecosystem`), whose `diagnose` is asked first. None when nothing matches. Rules whose
    entry the memory dropped below its floor (`DROPPED`) are skipped."""
    text = (text or "")[-MAX_TEXT:]
    if not text.strip():
        return None
    found = eco.diagnose(text) if eco is not None else None
    if found is not None:
        return found
    data = load_rules()
    dropped = DROPPED.get()
    for rule in data.rules:
        if scope not in rule.scope or (rule.ecosystems and ecosystem not in rule.ecosystems) or rule.id in dropped:
            continue
        found = [d for m in _compiled(rule.pattern).finditer(text)
                 if (d := _from_rule(rule, m, data, toolchain)) is not None]
        if found:
            return _highest_floor(found) if rule.kind == "toolchain_too_old" else found[0]
    return None


def _highest_floor(found: list[Diagnosis]) -> Diagnosis:
    """Of one rule's `toolchain_too_old` diagnoses, the one asking for the newest toolchain
    (`>=1.18` over `>=1.16`: one re-plan instead of two); the first when none names a floor."""
    floors = [(version_key(d.toolchain[2:]), i) for i, d in enumerate(found) if (d.toolchain or "").startswith(">=")]
    return found[max(floors)[1]] if floors else found[0]


def unreachable_source(text: str) -> str | None:
    """`"<source>: <matched line>"` when `text` (an `env_failed` row's reason, a failed step's
    output) names a source this host cannot reach, by the first `unreachable` rule of the data
    file that matches (`RubyGems (rubygems.org)`, `GitHub` for cargo git dependencies,
    `projectlombok.org` from ``java.net.UnknownHostException: projectlombok.org``, ...); None
    otherwise, and for a host of the data file's `reachable_hosts` (a registry this host reaches:
    failing to resolve it is the build's fault, not the network's). Only the last `MAX_TEXT`
    characters are searched."""
    text = (text or "")[-MAX_TEXT:]
    data = load_rules()
    reachable = {h.lower() for h in data.reachable_hosts}
    for rule in data.unreachable:
        for m in _compiled(rule.pattern).finditer(text):
            name = rule.name or _group(m, "name") or rule.id
            if name.lower() in reachable:  # a registry this host reaches: the build's own fault
                continue
            return f"{name}: {m.group(0).strip()[:200]}"
    return None


def needs_in(text: str) -> list[Need]:
    """Every need the shared `missing_system` rules find in `text` (each once, in order): what a
    test driver's own messages say it requires (`You need tcl 8.5 or newer` -> command tclsh)."""
    text = (text or "")[-MAX_TEXT * 5:]
    out: list[Need] = []
    for rule in load_rules().rules:
        if rule.kind != "missing_system" or rule.ecosystems or rule.needs is None:
            continue
        for m in _compiled(rule.pattern).finditer(text):
            need = _need(rule, m)
            if need is not None and need not in out:
                out.append(need)
    return out
