"""Repository Analysis agent: a typed profile of a repository at a commit, for every language, and
the ranked candidate plans the loop tries.

The profile says which ecosystems claim the tree (each registered ecosystem's `detect`), the
manifests and build systems present, test runners, CI files and the toolchain versions CI names,
and the dependencies the manifests declare (`recipes/layout.yaml` is the data). Candidates are
(ecosystem, build route) pairs, best first: only ecosystems serving the row's `language` when it
has one (a `language: java` row is never minted as Python), every claiming ecosystem otherwise;
each ecosystem lists its routes (`routes` hook), and a route it recognises but cannot build here
(`available=False`, e.g. "Ant build, no route") is kept to explain an `env_failed`.
"""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib

from pydantic import BaseModel, ConfigDict, Field

import agents.ecosystems as registry
from agents.ecosystems.layout import layout
from agents.ecosystems.owners import owner_ecosystem
from agents.gitrepo import GitTree
from agents.models import Instance, canonical_language
from envpool.patches import sections_by_path

class Candidate(BaseModel):
    """One candidate plan: `ecosystem` (its name) and build `route`, the ecosystem's `score` for
    the tree, and whether the route can be built here (`reason` says what is missing)."""

    model_config = ConfigDict(extra="forbid")
    ecosystem: str
    route: str
    score: int
    available: bool = True
    reason: str = ""

    @property
    def label(self) -> str:
        """`ecosystem:route`, as rounds record it."""
        return f"{self.ecosystem}:{self.route}"


class RepoProfile(BaseModel):
    """What the analysis found (module docstring). `language`: the row's (canonical) or the best
    claiming ecosystem's; `language_given`: the row named it. `ecosystems`: name -> detect score
    (> 0 only). `toolchain_hints`: CI key (`python`, `node`, ...) -> versions named there.
    `no_route`: why no candidate is available (empty when one is)."""

    model_config = ConfigDict(extra="forbid")
    commit: str
    language: str | None = None
    language_given: bool = False
    ecosystems: dict[str, int] = Field(default_factory=dict)
    manifests: list[str] = Field(default_factory=list)
    build_systems: list[str] = Field(default_factory=list)
    runners: list[str] = Field(default_factory=list)
    ci: list[str] = Field(default_factory=list)
    toolchain_hints: dict[str, list[str]] = Field(default_factory=dict)
    dependencies: list[str] = Field(default_factory=list)
    candidates: list[Candidate] = Field(default_factory=list)
    no_route: str = ""

    def available(self) -> list[Candidate]:
        """The candidates that can be built here, best first."""
        return [c for c in self.candidates if c.available]


def _files_near_root(tree: GitTree, depth: int = 1) -> list[str]:
    return [f for f in tree.files if f.count("/") <= depth]


def _manifests(tree: GitTree) -> tuple[list[str], list[str]]:
    names, builds = [], []
    for m in layout()["manifests"]:
        if tree.exists(m["file"]):
            names.append(m["file"])
            if m["build"] not in builds:
                builds.append(m["build"])
    return names, builds


def _runners(tree: GitTree) -> list[str]:
    out: list[str] = []
    files = tree.files[:20000]
    for r in layout()["runners"]:
        pat = r["glob"]
        if any(fnmatch.fnmatch(f, pat) or fnmatch.fnmatch(f.rsplit("/", 1)[-1], pat) for f in files):
            if r["runner"] not in out:
                out.append(r["runner"])
    return out


def _ci(tree: GitTree) -> tuple[list[str], dict[str, list[str]]]:
    files = [f for f in _files_near_root(tree, 2) if any(fnmatch.fnmatch(f, g) for g in layout()["ci"])]
    hints: dict[str, list[str]] = {}
    for f in files[:20]:
        text = tree.read(f, limit=200_000) or ""
        for key, pat in layout()["hints"].items():
            for m in re.finditer(pat, text):
                for v in re.findall(r"[\w.]+", m.group(1)):
                    if re.match(r"\d", v) and v not in hints.setdefault(key, []):
                        hints[key].append(v)
    return files, {k: v for k, v in hints.items() if v}


_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _py_deps(tree: GitTree) -> list[str]:
    out: list[str] = []
    for f in [f for f in _files_near_root(tree, 1) if re.search(r"requirements[^/]*\.(txt|in)$", f)][:5]:
        for line in (tree.read(f) or "").splitlines():
            m = _REQ.match(line)
            if m and not line.strip().startswith(("-", "#")):
                out.append(m.group(1))
    pyproject = tree.read("pyproject.toml")
    if pyproject:
        try:
            data = tomllib.loads(pyproject)
        except tomllib.TOMLDecodeError:
            data = {}
        proj = data.get("project", {}) or {}
        reqs = list(proj.get("dependencies", []) or [])
        for extra in (proj.get("optional-dependencies", {}) or {}).values():
            reqs += list(extra or [])
        reqs += list((data.get("tool", {}).get("poetry", {}).get("dependencies", {}) or {}))
        out += [m.group(1) for r in reqs if isinstance(r, str) and (m := _REQ.match(r))]
    cfg = re.search(r"^install_requires\s*=[ \t]*\n((?:[ \t]+\S[^\n]*\n?)+)", tree.read("setup.cfg") or "", re.M)
    if cfg:
        out += [m.group(1) for line in cfg.group(1).splitlines() if (m := _REQ.match(line.split("#")[0]))]
    py = re.search(r"install_requires\s*=\s*\[([^\]]*)\]", tree.read("setup.py") or "")
    if py:
        out += [m.group(1) for q in re.findall(r"['\"]([^'\"]+)['\"]", py.group(1)) if (m := _REQ.match(q))]
    return out


_GRADLE_CONF = (r"(?:implementation|api|compile|compileOnly|runtimeOnly|runtime|testImplementation|testCompile|"
                r"testCompileOnly|testRuntimeOnly|annotationProcessor|testAnnotationProcessor|kapt)")
"""Gradle dependency configurations whose `'group:name:version'` (or `group: ..., name: ...`)
declarations `declared_dependencies` reads."""


def declared_dependencies(tree: GitTree) -> list[str]:
    """The dependency names the repository's manifests declare at its commit (lower-cased,
    sorted): Python requirement files / pyproject / setup.cfg / setup.py install_requires,
    package.json (dependencies and devDependencies), go.mod `require`, Cargo.toml
    (dependencies, dev-dependencies), pom.xml `artifactId`s of dependencies and of plugins other than
    Maven's own, the root build.gradle(.kts) `name`s of dependency declarations, composer.json
    (require, require-dev), Gemfile / gemspec gems. Never raises on a malformed manifest."""
    names: list[str] = []
    try:
        names += _py_deps(tree)
    except Exception:  # noqa: BLE001 - a broken manifest declares nothing
        pass
    pkg = tree.read("package.json")
    if pkg:
        try:
            data = json.loads(pkg)
            for key in ("dependencies", "devDependencies"):
                names += list((data.get(key) or {}).keys())
        except (ValueError, AttributeError):
            pass
    gomod = tree.read("go.mod") or ""
    for block in re.findall(r"^require\s*\(([^)]*)\)", gomod, re.M):
        names += [ln.split()[0] for ln in block.splitlines() if ln.strip() and not ln.strip().startswith("//")]
    names += re.findall(r"^require\s+([^\s(]+)\s+v", gomod, re.M)
    cargo = tree.read("Cargo.toml")
    if cargo:
        try:
            data = tomllib.loads(cargo)
            for key in ("dependencies", "dev-dependencies"):
                names += list((data.get(key) or {}).keys())
            names += list(((data.get("workspace") or {}).get("dependencies") or {}).keys())
        except tomllib.TOMLDecodeError:
            pass
    pom = tree.read("pom.xml") or ""
    names += re.findall(r"<dependency>\s*<groupId>[^<]*</groupId>\s*<artifactId>([^<]+)</artifactId>", pom)
    for block in re.findall(r"<plugin>(.*?)</plugin>", pom, re.S):  # jacoco-maven-plugin; not Maven's own
        group = re.search(r"<groupId>\s*([^<\s]+)\s*</groupId>", block)
        art = re.search(r"<artifactId>\s*([^<\s]+)\s*</artifactId>", block)
        if art and (group.group(1) if group else "org.apache.maven.plugins") != "org.apache.maven.plugins":
            names.append(art.group(1))
    for f in ("build.gradle", "build.gradle.kts"):
        gradle = tree.read(f) or ""
        names += re.findall(rf"""\b{_GRADLE_CONF}\s*\(?\s*['"][\w.-]+:([\w.-]+)""", gradle)
        names += re.findall(rf"""\b{_GRADLE_CONF}\s*\(?\s*group\s*[:=]\s*['"][^'"]+['"]\s*,\s*name\s*[:=]\s*['"]([\w.-]+)""",
                            gradle)
    composer = tree.read("composer.json")
    if composer:
        try:
            data = json.loads(composer)
            for key in ("require", "require-dev"):
                names += [n for n in (data.get(key) or {}) if "/" in n]
        except (ValueError, AttributeError):
            pass
    for f in [f for f in _files_near_root(tree, 0) if f == "Gemfile" or f.endswith(".gemspec")]:
        names += re.findall(r"""(?:^|\s)(?:gem|add_(?:development_|runtime_)?dependency)\s*\(?\s*['"]([\w.-]+)['"]""",
                            tree.read(f) or "", re.M)
    return sorted({n.strip().lower() for n in names if n and n.strip()})


def candidates_for(tree: GitTree, language: str | None) -> tuple[list[Candidate], dict[str, int], str]:
    """(candidates best first, detect scores > 0, the reason when none is available)."""
    lang = canonical_language(language)
    scores: dict[str, int] = {}
    cands: list[Candidate] = []
    serving = []
    for eco in registry.ecosystems():
        if lang and lang not in eco.languages:
            continue
        serving.append(eco)
        s = eco.detect(tree, language)
        if s <= 0:
            continue
        scores[eco.name] = s
        for i, r in enumerate(eco.routes(tree, language)):
            cands.append(Candidate(ecosystem=eco.name, route=r.name, score=s * 100 - i, available=r.available,
                                   reason=r.reason))
    cands.sort(key=lambda c: -c.score)
    if any(c.score > 100 for c in cands):  # a last resort (detect 1: Python for an unknown tree) only alone
        cands = [c for c in cands if c.score > 100]
    why = ""
    if not any(c.available for c in cands):
        missing = "; ".join(c.reason or f"{c.label}: no route" for c in cands if not c.available)
        if missing:
            why = f"{lang or 'this repository'}: {missing}"
        elif lang and not serving:
            why = f"language {lang!r}: no ecosystem builds it here"
        else:
            names, _ = _manifests(tree)
            why = (f"{lang or 'this repository'}: no build any route knows "
                   f"(root manifests: {', '.join(names) or 'none'})")
    return cands, scores, why


def analyze(tree: GitTree, instance: Instance) -> RepoProfile:
    """The profile of `tree` (the instance's base commit), with its ranked candidates."""
    cands, scores, why = candidates_for(tree, instance.language)
    nested = owner_ecosystem(tree.files, sections_by_path(instance.test_patch or ""))
    if nested and any(c.ecosystem == nested[0] for c in cands[1:]):  # S18: the nested project's build first
        cands = [c for c in cands if c.ecosystem == nested[0]] + [c for c in cands if c.ecosystem != nested[0]]
    manifests, builds = _manifests(tree)
    ci, hints = _ci(tree)
    lang = canonical_language(instance.language)
    if lang is None and cands:
        best = next((c for c in cands if c.available), cands[0])
        eco = registry.by_name(best.ecosystem)
        lang = eco.language_of(tree) if eco is not None else None
    return RepoProfile(commit=tree.commit, language=lang, language_given=instance.language is not None,
                       ecosystems=scores, manifests=manifests, build_systems=builds, runners=_runners(tree),
                       ci=ci, toolchain_hints=hints, dependencies=declared_dependencies(tree), candidates=cands,
                       no_route=why)
