"""The Maven reactor of a tree (`maven_reactor`): its poms (`parse_pom`), modules, their
parents and properties (a release property's JDK: `jdk_major`), and which module owns a path."""

from __future__ import annotations

import posixpath
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from agents.gitrepo import GitTree
from envpool.toolchains import version_key


def jdk_major(text: str | None) -> int | None:
    """A JDK major or Java level from free text: ``"1.8"`` -> 8, ``"11.0.2-open"`` -> 11,
    ``"oraclejdk8"`` / ``"temurin-17.0.1"`` -> 8 / 17, ``"17"`` -> 17; None when no number."""
    if text is None:
        return None
    m = re.search(r"(\d+(?:\.\d+)*)", str(text))
    if not m:
        return None
    key = version_key(m.group(1))
    if not key:
        return None
    return key[1] if key[0] == 1 and len(key) > 1 else key[0]


_PROP = re.compile(r"\$\{([^}]+)\}")


def _strip_ns(root: ET.Element) -> ET.Element:
    for el in root.iter():
        if isinstance(el.tag, str) and "}" in el.tag:
            el.tag = el.tag.split("}", 1)[1]
    return root


@dataclass
class Pom:
    """The parts of one pom.xml the plan needs. `dir` is repository relative ("" = root)."""

    dir: str
    properties: dict[str, str] = field(default_factory=dict)
    modules: list[str] = field(default_factory=list)
    parent_path: str | None = None
    levels: list[str] = field(default_factory=list)
    """Raw language levels (may hold ``${...}``), from properties and the compiler plugin."""
    profile_ids: list[str] = field(default_factory=list)
    surefire: list[str] = field(default_factory=list)
    """Raw versions (may hold ``${...}``) of maven-surefire-plugin in ``build/plugins`` and
    ``build/pluginManagement`` (a declaration without a version is not listed)."""
    surefire_in_profiles: list[str] = field(default_factory=list)
    """The same inside ``<profiles>`` (which may be inactive)."""


def _surefire_versions(build: ET.Element | None) -> list[str]:
    """Versions of maven-surefire-plugin declared in a ``<build>`` (plugins, pluginManagement)."""
    out = []
    for path in ("plugins/plugin", "pluginManagement/plugins/plugin"):
        for plugin in build.findall(path) if build is not None else []:
            if (plugin.findtext("artifactId") or "").strip() == "maven-surefire-plugin" and \
                    (plugin.findtext("version") or "").strip():
                out.append(plugin.findtext("version").strip())
    return out


def parse_pom(text: str, directory: str) -> Pom | None:
    """A `Pom` from the text of a pom.xml in `directory`; None when it is not XML."""
    try:
        root = _strip_ns(ET.fromstring(text.encode("utf-8")))
    except ET.ParseError:
        return None
    pom = Pom(dir=directory)
    props = root.find("properties")
    for el in list(props) if props is not None else []:
        if isinstance(el.tag, str):
            pom.properties[el.tag] = (el.text or "").strip()
    for mods in [root.find("modules"), *root.findall("profiles/profile/modules")]:
        for m in (list(mods) if mods is not None else []):
            if m.tag == "module" and (m.text or "").strip():
                pom.modules.append(m.text.strip())
    pom.profile_ids = [(p.findtext("id") or "").strip() for p in root.findall("profiles/profile")
                       if (p.findtext("id") or "").strip()]
    parent = root.find("parent")
    if parent is not None:
        rel = parent.find("relativePath")
        rel_text = "../pom.xml" if rel is None else (rel.text or "").strip()
        pom.parent_path = rel_text or None
    pom.surefire = _surefire_versions(root.find("build"))
    pom.surefire_in_profiles = [v for p in root.findall("profiles/profile") for v in _surefire_versions(p.find("build"))]
    for key in ("maven.compiler.release", "maven.compiler.source", "maven.compiler.target"):
        if pom.properties.get(key):
            pom.levels.append(pom.properties[key])
    for plugin in root.iter("plugin"):
        if (plugin.findtext("artifactId") or "").strip() != "maven-compiler-plugin":
            continue
        for conf in plugin.iter("configuration"):
            for tag in ("release", "source", "target"):
                v = conf.findtext(tag)
                if v and v.strip():
                    pom.levels.append(v.strip())
    return pom


def _norm(path: str) -> str:
    p = posixpath.normpath(path)
    return "" if p == "." else p


@dataclass
class MavenReactor:
    """The Maven build of a tree: `root` (folder of the top pom, "" = repository root), every
    pom read (folder -> Pom), and `reactor` (folders reachable through ``<modules>``)."""

    root: str
    poms: dict[str, Pom]
    reactor: set[str]

    def chain(self, directory: str) -> list[Pom]:
        """The pom of `directory` and its in-tree parents, child first (empty for no pom)."""
        chain: list[Pom] = []
        d: str | None = directory
        seen: set[str] = set()
        while d is not None and d in self.poms and d not in seen:
            seen.add(d)
            pom = self.poms[d]
            chain.append(pom)
            if pom.parent_path is None:
                break
            target = _norm(posixpath.join(d, pom.parent_path))
            d = _norm(posixpath.dirname(target)) if target.endswith(".xml") else target
        return chain

    def properties(self, directory: str) -> dict[str, str]:
        """Properties visible in the pom of `directory`: the in-tree parent chain's, overridden
        by the child's."""
        props: dict[str, str] = {}
        for pom in reversed(self.chain(directory)):
            props.update(pom.properties)
        return props

    def resolve(self, value: str, directory: str) -> str:
        """`value` with ``${prop}`` replaced (5 rounds; unknown properties stay)."""
        props = self.properties(directory)
        for _ in range(5):
            new = _PROP.sub(lambda m: props.get(m.group(1), m.group(0)), value)
            if new == value:
                break
            value = new
        return value

    def surefire_pins(self, directory: str) -> tuple[list[str], bool]:
        """(the maven-surefire-plugin versions the in-tree pom chain of `directory` declares,
        profiles included, ``${...}`` resolved; whether one is declared outside profiles). A
        module without a declaration there runs what an out-of-tree parent pins or Maven's
        default binding (2.12.4 for Maven 3.8)."""
        versions: list[str] = []
        pinned = False
        for pom in self.chain(directory):
            versions += [self.resolve(v, directory) for v in pom.surefire + pom.surefire_in_profiles]
            pinned = pinned or bool(pom.surefire)
        return versions, pinned

    def levels(self) -> list[int]:
        """Every Java language level the reactor's poms name (resolved), as majors."""
        out = []
        for d, pom in self.poms.items():
            for raw in pom.levels:
                value = self.resolve(raw, d)
                major = None if "${" in value else jdk_major(value)
                if major is not None and 1 <= major <= 40:
                    out.append(major)
        return out

    def module_of(self, path: str) -> str | None:
        """The folder of the nearest pom.xml above `path` inside the project, or None."""
        d = _norm(posixpath.dirname(path))
        while True:
            if d in self.poms:
                return d
            if d == self.root or not d:
                return self.root if self.root in self.poms else None
            d = _norm(posixpath.dirname(d))


def maven_reactor(tree: GitTree, near: list[str] | None = None) -> MavenReactor | None:
    """The Maven reactor of `tree`: the root pom.xml, else the shallowest pom.xml above one of the
    `near` paths; every pom reachable through ``<modules>`` plus the poms on the way from the
    top to each `near` path. None when the tree has no pom.xml at all."""
    pom_dirs = {_norm(posixpath.dirname(f)) for f in tree.files if posixpath.basename(f) == "pom.xml"}
    if not pom_dirs:
        return None
    root = ""
    if "" not in pom_dirs:
        candidates = sorted((d for d in pom_dirs if any(p == d or p.startswith(d + "/") for p in near or [])),
                            key=lambda d: d.count("/"))
        if not candidates:
            candidates = sorted(pom_dirs, key=lambda d: (d.count("/"), d))
        root = candidates[0]
    poms: dict[str, Pom] = {}
    reactor: set[str] = set()

    def load(d: str) -> Pom | None:
        if d not in poms:
            text = tree.read(posixpath.join(d, "pom.xml") if d else "pom.xml")
            pom = parse_pom(text, d) if text else None
            if pom is None:
                return None
            poms[d] = pom
        return poms[d]

    todo = [root]
    while todo:
        d = todo.pop()
        if d in reactor:
            continue
        pom = load(d)
        if pom is None:
            continue
        reactor.add(d)
        for m in pom.modules:
            m = m[:-len("/pom.xml")] if m.endswith("/pom.xml") else m
            todo.append(_norm(posixpath.join(d, m)))
    for p in near or []:  # poms between the top and each touched file (standalone modules)
        d = _norm(posixpath.dirname(p))
        while d.startswith(root) and d != root:
            if d in pom_dirs:
                load(d)
            d = _norm(posixpath.dirname(d))
    # in-tree parents of what was loaded
    for d in list(poms):
        parent = poms[d].parent_path
        while parent:
            target = _norm(posixpath.join(d, parent))
            pd = _norm(posixpath.dirname(target)) if target.endswith(".xml") else target
            if pd in poms or pd not in pom_dirs:
                break
            pom = load(pd)
            d, parent = pd, pom.parent_path if pom else None
    return MavenReactor(root=root, poms=poms, reactor=reactor)

