"""The build that owns a path (issue 25, "the wrong project"): the nearest ancestor folder holding
a build file, not the first build file found in the tree. A Gradle multi-project whose touched
module has no pom.xml is owned by its Gradle build, not by an example folder's pom.xml elsewhere.

`owner_build(files, path, systems)` reads file names only; `systems` maps a build system to the
file names that make a folder one of its builds (`BUILD_FILES` for the JVM ones).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

__all__ = ["JVM_BUILD_FILES", "owner_build"]

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
