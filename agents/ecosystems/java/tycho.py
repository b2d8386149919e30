"""Eclipse Tycho (OSGi bundle) builds, said honestly (rule S21, issue 25 "network-bound that
is not" -- here one that is): a touched Java file owned by a Maven module whose packaging is a
Tycho one (``eclipse-test-plugin``, ``eclipse-plugin``, ``eclipse-feature``, ...) is built by
Tycho, which resolves the bundle's target platform from p2 repositories (``<layout>p2</layout>``
repositories, ``.target`` files), not from Maven Central; no substitute release exists for a
p2 site. Such a row is `env_failed` naming the p2 sources, instead of "the test patch touches
no Java test source" (Tycho test bundles keep their tests in ``src/``, not ``src/test/java``).
"""

from __future__ import annotations

import posixpath
import re

from agents.ecosystems.owners import owner_build

__all__ = ["TYCHO_PACKAGINGS", "tycho_bundle"]

TYCHO_PACKAGINGS = ("eclipse-test-plugin", "eclipse-plugin", "eclipse-feature", "eclipse-repository",
                    "eclipse-target-definition")
_PACKAGING = re.compile(r"<packaging>\s*([\w.-]+)\s*</packaging>")
_P2_REPO = re.compile(r"<repository>(?:(?!</repository>).)*?<url>\s*([^<\s]+)\s*</url>(?:(?!</repository>).)*?"
                      r"<layout>\s*p2\s*</layout>|<repository>(?:(?!</repository>).)*?<layout>\s*p2\s*</layout>"
                      r"(?:(?!</repository>).)*?<url>\s*([^<\s]+)\s*</url>", re.S)
_TARGET_LOCATION = re.compile(r"<repository\b[^>]*\blocation=\"([^\"]+)\"")


def tycho_bundle(tree, touched: list[str]) -> str | None:
    """Why the touched Java files cannot be built here when a Tycho module owns one (module
    docstring), else None."""
    for path in touched:
        if not path.endswith(".java"):
            continue
        owner = owner_build(tree.files, path, {"maven": ("pom.xml",)})
        if owner is None:
            continue
        pom = posixpath.join(owner[1], "pom.xml")
        m = _PACKAGING.search(tree.read(pom) or "")
        if not m or m.group(1) not in TYCHO_PACKAGINGS:
            continue
        sources: list[str] = []
        for p in ["pom.xml", pom, *sorted(f for f in tree.files if f.endswith(".target"))[:20]]:
            text = tree.read(p) or ""
            found = [a or b for a, b in _P2_REPO.findall(text)] + _TARGET_LOCATION.findall(text)
            sources += [u for u in found if u not in sources]
        named = ", ".join(sources[:4]) if sources else "the p2 repositories its target platform names"
        return (f"Eclipse Tycho build: {pom} is an {m.group(1)} bundle (owns {path}); Tycho resolves its "
                f"target platform from p2 repositories ({named}), which are not Maven Central and cannot be "
                "reached here (network-bound)")
    return None
