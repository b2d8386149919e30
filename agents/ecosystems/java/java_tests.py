"""The test configuration of a Java instance: the test classes the touched files name
(`test_classes`, `package_classes`), the classes warmed up before the runs, Maven's flags, and test sources fixed for an API the patch changes."""

from __future__ import annotations

import posixpath
import re
from pathlib import PurePosixPath

from agents.gitrepo import GitTree
from envpool.patches import changed_lines
from agents.ecosystems.java.java_recipe import recipe
from envpool.testpaths import role


def test_classes(touched: list[str]) -> dict[str, list[str]]:
    """Touched test source files -> {file: [simple class name]}: the files in the Java group's
    `source` role of the one test-path rule set (`envpool.testpaths`: a JVM source under a
    Maven/Gradle test source set, ``src/test*/java/...``); a class the runners take by default
    (the `class` role: Surefire's includes and Failsafe's ``*IT``) maps to its name, other test
    sources (helpers) to []."""
    source, runnable = role("java", "source"), role("java", "class")
    return {p: [PurePosixPath(p).stem] if runnable.matches(p) else [] for p in touched if source.matches(p)}


def warm_up_classes(tree: GitTree, tests: dict[str, list[str]], module_of) -> list[str]:
    """Test classes to run once online at setup so Surefire resolves its provider (it does so
    only when a test runs): the touched classes that exist at base; for a module with none, one
    existing test class of that module, the one nearest to the touched files.
    `module_of(path) -> module folder | None` (`MavenReactor.module_of`)."""
    out: list[str] = []
    by_module: dict[str | None, list[str]] = {}
    for path, classes in tests.items():
        by_module.setdefault(module_of(path), []).append(path)
        out += [c for c in classes if tree.exists(path)]
    for mod, paths in by_module.items():
        if any(tree.exists(p) and tests[p] for p in paths):
            continue
        prefix = f"{mod}/" if mod else ""
        existing = [f for f, cs in test_classes([f for f in tree.files if f.startswith(prefix)]).items()
                    if cs and module_of(f) == mod]
        if existing:
            near = posixpath.dirname(paths[0])
            best = max(existing, key=lambda f: (len(posixpath.commonpath([f, near])), f))
            out += test_classes([best])[best]
    return sorted(set(out))


def package_classes(tree: GitTree, tests: dict[str, list[str]], module_of) -> list[str]:
    """Simple names of the test classes in the touched test files' own packages (the folder of
    each touched test source, not its subfolders, in the same module) that Surefire's default
    includes take (`test_classes`, less ``*IT``, which Failsafe runs), plus the touched classes:
    the middle selection between a module in full and the touched classes, so that a row's
    PASS_TO_PASS holds the package's other tests. `module_of` as in `warm_up_classes`."""
    folders: dict[str, set] = {}
    for path in tests:
        folders.setdefault(posixpath.dirname(path), set()).add(module_of(path))
    near = [f for f in tree.files if (mods := folders.get(posixpath.dirname(f))) and module_of(f) in mods]
    integration = role("java", "integration")
    found = {c for p, cs in test_classes(near).items() for c in cs if not integration.matches(p)}
    return sorted(found | {c for cs in tests.values() for c in cs})


_TYPE_DECL = re.compile(r"\b(?:class|interface|enum|record)\s+([A-Z]\w*)")


_METHOD_DECL = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|protected|private|static|final|abstract|"
                          r"synchronized|default|native|strictfp)\s+)*(?:<[^>]*>\s*)?([\w.$]+(?:<[^()]*>)?(?:\[\])*)"
                          r"\s+(\w+)\s*\(")


_OTHER_DECL = re.compile(r"^\s*([A-Z][A-Z0-9_]{2,})\s*[({,;]|"  # an enum constant
                         r"\b(?:public|protected|private|static|final)\s+[\w.$<>\[\], ?]+?\s+(\w+)\s*[=;]")  # a field


_NOT_TYPES = frozenset({"return", "new", "throw", "else", "case", "yield", "assert", "await", "import", "package"})


def fix_api_in_tests(patch: str, test_patch: str) -> list[str]:
    """Names of types, enum constants (used as a word), non-private methods and fields (used as
    ``.name`` or ``name(``) whose declaration line the patch adds, removes or changes in a
    Java/Kotlin source and that the test_patch's changed lines use: a sign that the
    tests need the fix to compile, so the before side of a whole-module run would build nothing
    and every test of the module would look like FAIL_TO_PASS. Sorted; [] when none."""
    words: set[str] = set()  # types and enum constants: used as a word
    members: set[str] = set()  # methods and non-private fields: used as `.name` or `name(`
    for path, lines in changed_lines(patch).items():
        if not path.endswith((".java", ".kt")):
            continue
        for line in lines:
            words.update(m.group(1) for m in _TYPE_DECL.finditer(line))
            m = _METHOD_DECL.match(line)
            if m and m.group(1) not in _NOT_TYPES and not re.match(r"\s*private\b", line):
                members.add(m.group(2))
            m = _OTHER_DECL.search(line)
            if m and m.group(1):
                words.add(m.group(1))
            elif m and not re.search(r"\bprivate\b", line):
                members.add(m.group(2))
    used = "\n".join(line for path, lines in changed_lines(test_patch).items() if path.endswith((".java", ".kt"))
                     for line in lines)
    hits = {n for n in words if re.search(rf"(?<![\w$]){re.escape(n)}(?![\w$])", used)}
    hits |= {n for n in members if re.search(rf"(?:\.|::){re.escape(n)}(?![\w$])|(?<![\w$]){re.escape(n)}\s*\(", used)}
    return sorted(hits)


def mvn_flags() -> str:
    """Batch mode, no download progress, the recipe's skip properties."""
    return "-B -ntp " + " ".join(f"-D{p}" for p in recipe()["skip_properties"])

