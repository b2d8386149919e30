"""One vocabulary for a row's `language`: the names SWE-bench-style datasets and the experience
memory use (`python`, `javascript`, `typescript`, `go`, `rust`, `java`, `php`, `ruby`, `c`, `cpp`).

GitHub names languages for display (`C++`, `TypeScript`, `Jupyter Notebook`); `normalise`
turns them into this vocabulary at the source, so a row says `cpp`, never `c++`. Names outside
the vocabulary become a lower-case slug (`C#` -> `csharp`, `Jupyter Notebook` ->
`jupyter-notebook`) and `supported` says False for them: the plan stage then detects the
ecosystem from the tree instead (`pipeline.stages.plan_instance`).
"""

from __future__ import annotations

import re

LANGUAGES: tuple[str, ...] = ("python", "javascript", "typescript", "go", "rust", "java", "php", "ruby", "c",
                              "cpp")
"""The vocabulary (the experience memory's ecosystems, `agents.memory.models.ECOSYSTEMS`, without `any`)."""

_ALIASES = {"c++": "cpp", "cxx": "cpp", "c plus plus": "cpp", "golang": "go", "js": "javascript",
            "node": "javascript", "nodejs": "javascript", "ts": "typescript", "py": "python",
            "python3": "python", "c#": "csharp", "f#": "fsharp", "objective-c++": "objective-cpp"}


def normalise(name: str | None) -> str | None:
    """`name` in the vocabulary (`C++` -> `cpp`, `Go` -> `go`), another name as a lower-case slug,
    None for None / empty / `unknown`."""
    if name is None:
        return None
    low = name.strip().lower()
    if not low or low == "unknown":
        return None
    low = _ALIASES.get(low, low)
    return re.sub(r"[^a-z0-9+#.-]+", "-", low).strip("-") or None


def supported(language: str | None) -> bool:
    """True when `language` (already normalised) is in the vocabulary."""
    return language in LANGUAGES
