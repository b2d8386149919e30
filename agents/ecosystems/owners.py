"""The build that owns a path (issue 25, "the wrong project"): the nearest ancestor folder holding
a build file, not the first build file found in the tree. A Gradle multi-project whose touched
module has no pom.xml is owned by its Gradle build, not by an example folder's pom.xml elsewhere.

`owner_build(files, path, systems)` reads file names only; `systems` maps a build system to the
file names that make a folder one of its builds (`BUILD_FILES` for the JVM ones).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

__all__ = ["ECOSYSTEM_BUILD_FILES", "JVM_BUILD_FILES", "owner_build", "owner_ecosystem"]

JVM_BUILD_FILES: dict[str, tuple[str, ...]] = {
    "maven": ("pom.xml",),
    "gradle": ("build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts"),
    "ant": ("build.xml",),
}
"""JVM build systems -> the file names that make a folder one of their builds."""


def owner_build(files: Iterable[str], path: str, systems: dict[str, tuple[str, ...]]) -> tuple[str, str] | None:
    """(system, folder) of the nearest folder at or above `path`'s folder holding one of
    `systems`' build files (folder "" = the repository root; systems in their order when one
    folder holds several); None when no folder above `path` holds any."""
    names = {n: s for s, ns in systems.items() for n in ns}
    by_dir: dict[str, set[str]] = {}
    for f in files:
        base = posixpath.basename(f)
        if base in names:
            by_dir.setdefault(posixpath.dirname(f), set()).add(names[base])
    d = posixpath.dirname(path)
    while True:
        if d in by_dir:
            return next(s for s in systems if s in by_dir[d]), d
        if not d:
            return None
        d = posixpath.dirname(d)


ECOSYSTEM_BUILD_FILES: dict[str, tuple[str, ...]] = {
    "node": ("package.json",),
    "go": ("go.mod",),
    "rust": ("Cargo.toml",),
    "python": ("pyproject.toml", "setup.py", "setup.cfg"),
    "java": tuple(n for ns in JVM_BUILD_FILES.values() for n in ns),
    "cfamily": ("CMakeLists.txt", "Makefile", "GNUmakefile", "configure.ac", "meson.build"),
    "php": ("composer.json",),
    "ruby": ("Gemfile",),
}
"""Ecosystems -> the file names that make a folder one of their builds (for `owner_ecosystem`)."""


def owner_ecosystem(files: Iterable[str], paths: Iterable[str]) -> tuple[str, str] | None:
    """(ecosystem, folder) when every path of `paths` that some build owns is owned (nearest
    build folder) by a folder *below the root* holding one ecosystem's build files only, all of
    the same ecosystem -- a nested project of another language, e.g. a Go repository's web UI
    (rule S18) -- else None. The root never decides here: its candidates are ranked already."""
    files = list(files)
    found: set[str] = set()
    folder = ""
    for p in paths:
        owner = owner_build(files, p, ECOSYSTEM_BUILD_FILES)
        if owner is None:
            continue
        if not owner[1]:
            return None
        systems = {s for s, ns in ECOSYSTEM_BUILD_FILES.items()
                   if any(f"{owner[1]}/{n}" in files for n in ns)}
        if len(systems) != 1:
            return None
        found |= systems
        folder = folder or owner[1]
    return (found.pop(), folder) if len(found) == 1 else None
