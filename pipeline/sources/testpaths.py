"""Which changed files are tests: per-ecosystem path rules kept as data, and the diff split.

A PR's diff becomes SWE-bench's `patch` (non-test files, the gold fix) and `test_patch` (test
files) by path alone. `DEFAULT_RULES` maps an ecosystem to three kinds of pattern:

- `dirs`: a directory component (any level, case-insensitive, globs allowed) that makes every
  file below it a test file: `tests/`, `__tests__/`, Go's `testdata/`, C#'s `*.Tests/`.
- `names`: a glob on the file name (case-sensitive): `test_*.py`, `*_test.go`, `*.spec.ts`.
- `paths`: a glob on the whole path, `**` spanning directories: `**/src/test/**` (Maven).

Rules are data: `SplitConfig` (config.py) picks ecosystems and adds globs without code changes.
The defaults agree with `envpool.patches.is_test_path` on ordinary paths (a test pins this),
add `testdata/`, `__mocks__/`, `*IT.java`, `*.Tests/` and a few more, and deliberately do not
treat a bare `it/` folder as tests (`locales/it/` is Italian; Maven's `src/it/` still counts).
Known limit: Rust unit tests live inside `src/*.rs` (`#[cfg(test)]`); only `tests/` splits.
File sections are found like `envpool.patches.split_patch`, whose path parser we reuse.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import PurePosixPath

from envpool.patches import file_sections, files_in_patch

DEFAULT_RULES: dict[str, dict[str, list[str]]] = {
    "python": {"dirs": ["test", "tests", "testing"],
               "names": ["test_*.py", "*_test.py", "*_tests.py", "test.py", "tests.py",
                         "conftest.py"]},
    "go": {"dirs": ["testdata"], "names": ["*_test.go"]},
    "javascript": {"dirs": ["__tests__", "__mocks__", "test", "tests", "spec", "specs", "e2e"],
                   "names": ["*.test.js", "*.spec.js", "*.test.jsx", "*.spec.jsx", "*.test.mjs",
                             "*.spec.mjs", "*.test.cjs", "*.spec.cjs"]},
    "typescript": {"dirs": ["__tests__", "__mocks__", "test", "tests", "spec", "specs", "e2e"],
                   "names": ["*.test.ts", "*.spec.ts", "*.test.tsx", "*.spec.tsx", "*.test.mts",
                             "*.spec.mts", "*.test.cts", "*.spec.cts"]},
    "java": {"paths": ["**/src/test/**", "**/src/it/**"],
             "names": ["*Test.java", "*Tests.java", "*IT.java"]},
    "kotlin": {"paths": ["**/src/test/**"], "names": ["*Test.kt", "*Tests.kt"]},
    "scala": {"paths": ["**/src/test/**"], "names": ["*Test.scala", "*Tests.scala", "*Spec.scala"]},
    "rust": {"dirs": ["tests"]},
    "ruby": {"dirs": ["spec", "test"], "names": ["*_spec.rb", "*_test.rb", "test_*.rb"]},
    "php": {"dirs": ["tests"], "names": ["*Test.php"]},
    "csharp": {"dirs": ["*.Tests", "*.UnitTests", "*.IntegrationTests"],
               "names": ["*Test.cs", "*Tests.cs"]},
    "c": {"dirs": ["test", "tests"], "names": ["test_*.c", "*_test.c", "*_test.cc", "*_test.cpp",
                                               "*_unittest.cc", "*_tests.cpp"]},
}
"""Ecosystem -> {"dirs": [...], "names": [...], "paths": [...]} (each key optional)."""


def _glob_regex(glob: str) -> str:
    """A path glob as a regex: `**/` any directories (or none), `**` anything, `*` and `?`
    within one path component, `[...]` as in fnmatch."""
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


class TestPathRules:
    """Compiled rules: `is_test(path)` is True when any selected ecosystem's rule matches.

    `rules`: ecosystem -> patterns (default `DEFAULT_RULES`); `ecosystems`: the ones to use
    (None = all); `extra_dirs` / `extra_names` / `extra_paths`: added to every ecosystem.
    Raises KeyError for an unknown ecosystem name.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, rules: Mapping[str, Mapping[str, list[str]]] | None = None,
                 ecosystems: Iterable[str] | None = None, *, extra_dirs: Iterable[str] = (),
                 extra_names: Iterable[str] = (), extra_paths: Iterable[str] = ()):
        rules = DEFAULT_RULES if rules is None else rules
        chosen = list(rules) if ecosystems is None else [e.lower() for e in ecosystems]
        dirs, names, paths = set(extra_dirs), set(extra_names), set(extra_paths)
        for eco in chosen:
            rule = rules[eco]
            dirs.update(rule.get("dirs", []))
            names.update(rule.get("names", []))
            paths.update(rule.get("paths", []))
        self.ecosystems = chosen
        self._dir_exact = {d.lower() for d in dirs if not any(c in d for c in "*?[")}
        self._dir_globs = [d.lower() for d in dirs if d.lower() not in self._dir_exact]
        self._names = sorted(names)
        self._paths = re.compile("|".join(f"(?:{_glob_regex(p)})" for p in sorted(paths)) or "(?!)")

    def is_test(self, path: str) -> bool:
        """True when `path` (relative, `/`-separated) is a test file under these rules."""
        parts = PurePosixPath(path).parts
        if not parts:
            return False
        for d in (p.lower() for p in parts[:-1]):
            if d in self._dir_exact or any(fnmatch.fnmatchcase(d, g) for g in self._dir_globs):
                return True
        if any(fnmatch.fnmatchcase(parts[-1], n) for n in self._names):
            return True
        return bool(self._paths.fullmatch(path))


@lru_cache(maxsize=1)
def default_rules() -> TestPathRules:
    """`TestPathRules` over every ecosystem of `DEFAULT_RULES` (shared, immutable)."""
    return TestPathRules()


def split_diff(diff: str, rules: TestPathRules | None = None) -> tuple[str, str]:
    """Split a git diff into (patch, test_patch), sections kept verbatim and in order.

    A section is a test section when any path it names (old or new, via
    `envpool.patches.files_in_patch`) is a test path under `rules` (default: all ecosystems).
    """
    rules = rules or default_rules()
    code: list[str] = []
    tests: list[str] = []
    for section in file_sections(diff):
        paths = files_in_patch(section)
        (tests if paths and any(rules.is_test(p) for p in paths) else code).append(section)
    return "".join(code), "".join(tests)
