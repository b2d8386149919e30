"""Java: Maven projects (single or multi-module) and Ant ones (route ``ant``, planned by
`JavaEcosystem._ant_plan` from `agents.ecosystems.java_ant`) on a JDK chosen from the project's
own files.

Analysis (read from the mirror, no checkout):
- the Maven reactor: the root pom, its ``<modules>`` (profiles included) and the module owning each
  touched test file (the nearest folder with a pom.xml);
- Java language levels: ``maven.compiler.source/target/release`` and the maven-compiler-plugin's
  ``<source>/<target>/<release>``, with ``${...}`` resolved through the in-tree parent chain;
- a Gradle wrapper's version (gradle-wrapper.properties), ``.sdkmanrc`` / ``.java-version`` /
  ``.tool-versions``, and the JDKs CI runs (Travis ``jdk:``, GitHub ``java-version`` / ``jdk``).

`choose_jdk` turns these into one JDK major: feasible = compiles every level (javac's floor and
ceiling) and runs the Gradle wrapper; then an explicit pin, else a JDK that CI runs, else the
commit's era LTS (the date is a ceiling, the language level a floor). Gradle builds are refused
early (`EnvBuildError`): wrappers cannot download Gradle here and Debian only has 4.4.1.

Plan: setup makes the JKS truststore, runs the selected test classes once online (which resolves
and compiles everything up to Surefire and its provider, failures ignored), probes the touched
modules' whole offline test run under ``timeout full_module_seconds`` (recipe; success leaves
`FULL_MODULE_MARK` in the image) and, when that does not fit, the touched packages' test classes
(`package_classes`) under the same bound (`PACKAGE_MARK`), then runs the warm-up classes offline
(``-o``) to prove the test run needs no network (classes that exist at base: a pom that sets
``failIfNoTests`` fails on a selection of new classes). The test command runs offline with the
module's upstream modules (``-pl M -am``: a patch to another module is recompiled): the modules in
full when their mark is there, else the touched packages when theirs is, else the touched classes
(``-Dtest``; also the alternative configuration); only the touched classes
when the test_patch uses what the patch declares (`fix_api_in_tests`). The profiles and
properties of the CI's test runs join every Maven run, and a ``-SNAPSHOT`` parent no repository
serves gets a released stand-in (`agents.ecosystems.java_maven`). The Surefire XML reports are
concatenated into `REPORT` (parser ``java_junit``, ids ``pkg.Class#method``). A test class that
does not compile leaves no report: its tests are absent (= not passing).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import shlex
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from pathlib import Path

import yaml

from agents.gitrepo import GitTree
from agents.models import Instance
from agents.ecosystems import java_ant as ant
from agents.ecosystems import java_maven as mvn_ci
from agents.ecosystems.base import Ecosystem, PlanRequest, PolyPlan, Route, TestSpec, shell_args
from agents.ecosystems.debian import apt_install
from agents.ecosystems.owners import JVM_BUILD_FILES, owner_build
from agents.ecosystems.toolchain import satisfies
from agents.untrusted_yaml import load_untrusted_yaml
from envpool.errors import EnvBuildError
from envpool.testrun.limits import per_test
from envpool.testrun.polyglot.java import BUILD_FAILED_MARK, MAVEN_COMPILE_FAILED
from envpool.patches import changed_lines
from envpool.images import ImageConfig
from envpool.toolchains import version_key
from envpool.toolchains import java as jtc

__all__ = ["ECOSYSTEM", "JavaEcosystem", "JavaFacts", "MavenReactor", "choose_jdk", "java_facts",
           "jdk_major", "maven_reactor", "recipe"]

REPORT = "/tmp/swemint/junit.xml"
MVN_LOG = "/tmp/swemint/mvn.log"
"""The Maven console of a test run (read for a compile failure, `BUILD_FAILED_MARK`)."""
"""Where the test command concatenates the Surefire XML reports."""


@lru_cache(maxsize=1)
def recipe() -> dict:
    """The data of ``recipes/java.yaml`` (tables documented there)."""
    return yaml.safe_load((Path(__file__).parent / "recipes" / "java.yaml").read_text())


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


# ----------------------------------------------------------------------------- Maven reactor

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

    def properties(self, directory: str) -> dict[str, str]:
        """Properties visible in the pom of `directory`: the in-tree parent chain's, overridden
        by the child's."""
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
        props: dict[str, str] = {}
        for pom in reversed(chain):
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


# ----------------------------------------------------------------------------- JDK choice

@dataclass
class JavaFacts:
    """What the tree says about its JDK. Majors are ints; `commit_date` bounds the era."""

    levels: list[int] = field(default_factory=list)
    gradle: str | None = None
    pinned: int | None = None
    pinned_from: str | None = None
    ci: list[int] = field(default_factory=list)
    commit_date: date | None = None


def _gradle_version(tree: GitTree) -> str | None:
    text = tree.read("gradle/wrapper/gradle-wrapper.properties")
    m = re.search(r"gradle-(\d+(?:\.\d+)*)(?:-[\w.]+)?-(?:bin|all)\.zip", text or "")
    return m.group(1) if m else None


def _pinned(tree: GitTree) -> tuple[int | None, str | None]:
    for path, pattern in ((".sdkmanrc", r"^\s*java\s*=\s*(\S+)"), (".java-version", r"^\s*(\S+)"),
                          (".tool-versions", r"^\s*java\s+(\S+)")):
        m = re.search(pattern, tree.read(path) or "", re.M)
        if m and jdk_major(m.group(1)):
            return jdk_major(m.group(1)), path
    return None, None


def _ci_values(obj, keys: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if str(k) in keys and not isinstance(v, dict):
                out.extend(str(x) for x in (v if isinstance(v, list) else [v]) if not isinstance(x, (dict, list)))
            else:
                out.extend(_ci_values(v, keys))
    elif isinstance(obj, list):
        for v in obj:
            out.extend(_ci_values(v, keys))
    return out


def _ci_jdks(tree: GitTree) -> list[int]:
    paths = [p for p in tree.files if p == ".travis.yml" or
             (p.startswith(".github/workflows/") and p.endswith((".yml", ".yaml")))]
    majors: set[int] = set()
    for p in paths:
        try:
            data = load_untrusted_yaml(tree.read(p) or "")
        except yaml.YAMLError:
            continue
        for v in _ci_values(data, ("jdk", "java", "java-version", "java_version")):
            if "${{" in v:
                continue
            m = jdk_major(v)
            if m and 5 <= m <= 40:
                majors.add(m)
    return sorted(majors)


def java_facts(tree: GitTree, reactor: MavenReactor | None) -> JavaFacts:
    """Collect `JavaFacts` from `tree` (and its Maven reactor when it has one)."""
    pinned, pinned_from = _pinned(tree)
    return JavaFacts(levels=reactor.levels() if reactor else [], gradle=_gradle_version(tree), pinned=pinned,
                     pinned_from=pinned_from, ci=_ci_jdks(tree), commit_date=tree.commit_time.date())


def _floor_table(table: dict, major: int) -> int | str | None:
    keys = sorted(int(k) for k in table if int(k) <= major)
    return table[keys[-1]] if keys else None


def gradle_jdk_range(gradle: str) -> tuple[int, int]:
    """(lowest, highest) JDK major that Gradle `gradle` runs on (recipe tables)."""
    g = version_key(gradle)
    runs = recipe()["gradle_runs_on_jdk"]
    top = max((int(j) for j, v in runs.items() if version_key(str(v)) <= g), default=8)
    mins = recipe()["gradle_min_jdk"]
    low = max((int(j) for v, j in mins.items() if version_key(str(v)) <= g), default=8)
    return low, top


def choose_jdk(facts: JavaFacts, available: list[int]) -> tuple[int, list[str]]:
    """The JDK major to use among `available`, and notes explaining the choice.

    Feasible: at least every language level, javac still accepts the lowest level
    (`javac_min_level`), and inside the Gradle wrapper's range. Then: the pinned JDK (the
    smallest feasible >= the pin), else the newest feasible JDK that CI runs and that is not
    newer than the era LTS (else the oldest CI one), else the era LTS (the newest feasible not
    newer than it, else the oldest feasible). Raises EnvBuildError when nothing is feasible.
    """
    notes: list[str] = []
    lo_level, hi_level = (min(facts.levels), max(facts.levels)) if facts.levels else (None, None)
    feasible = []
    for j in sorted(available):
        if hi_level is not None and j < hi_level:
            continue
        floor = _floor_table(recipe()["javac_min_level"], j)
        if lo_level is not None and floor is not None and lo_level < int(floor):
            continue
        if facts.gradle:
            g_lo, g_hi = gradle_jdk_range(facts.gradle)
            if not g_lo <= j <= g_hi:
                continue
        feasible.append(j)
    why = (f"language levels {sorted(set(facts.levels))}" if facts.levels else "no language level") + \
          (f", Gradle {facts.gradle} runs on JDK {gradle_jdk_range(facts.gradle)}" if facts.gradle else "")
    if not feasible:
        raise EnvBuildError(f"no available JDK ({', '.join(map(str, available))}) fits: {why}")
    era = None
    if facts.commit_date:
        released = [int(j) for j, d in recipe()["lts_released"].items()
                    if date.fromisoformat(str(d)) <= facts.commit_date]
        era = max(released) if released else min(int(j) for j in recipe()["lts_released"])

    def newest_not_after(cands: list[int]) -> int:
        below = [j for j in cands if era is None or j <= era]
        return max(below) if below else min(cands)

    if facts.pinned:
        up = [j for j in feasible if j >= facts.pinned]
        choice = up[0] if up else feasible[-1]
        notes.append(f"JDK {facts.pinned} pinned by {facts.pinned_from}")
    elif set(facts.ci) & set(feasible):
        choice = newest_not_after(sorted(set(facts.ci) & set(feasible)))
        notes.append(f"CI runs JDK {facts.ci}")
    else:
        choice = newest_not_after(feasible)
        notes.append(f"era LTS JDK {era}")
    notes.append(f"JDK {choice} chosen from feasible {feasible} ({why})")
    return choice, notes


# ----------------------------------------------------------------------------- plan

_TEST_SOURCE = re.compile(r"(?:^|/)src/(?:test|it|integration-test)\w*/(?:java|kotlin|groovy|scala)/(.+)\."
                          r"(?:java|kt|groovy|scala)$")


def test_classes(touched: list[str]) -> dict[str, list[str]]:
    """Touched test source files -> {file: [simple class name]}, only classes matching Surefire's
    default includes (`test_class_patterns`); other test sources (helpers) map to []."""
    out: dict[str, list[str]] = {}
    for path in touched:
        m = _TEST_SOURCE.search(path)
        if not m:
            continue
        name = posixpath.basename(m.group(1))
        ok = any(fnmatch.fnmatchcase(name, p) for p in recipe()["test_class_patterns"])
        out[path] = [name] if ok else []
    return out


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
    found = {c for cs in test_classes(near).values() for c in cs if not fnmatch.fnmatchcase(c, "*IT")}
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


FULL_MODULE_MARK = "/var/lib/swemint/java-full-module"
"""Left in the environment image when the touched modules' full test run built and finished
offline within the bound at setup; the test command then runs the modules in full."""

PACKAGE_MARK = "/var/lib/swemint/java-packages"
"""Left in the environment image when the modules' full run did not fit the bound but the
touched packages' test classes (`package_classes`) did; the test command then runs those."""


def selection_probe(run: str, bound: int, mark: str, what: str, unless: str | None = None) -> str:
    """Setup step: `run` (an offline test run of `what`) under ``timeout `bound```; exit 0 (tests
    may fail: ``-Dmaven.test.failure.ignore``) leaves `mark`. Skipped when the file `unless`
    exists (a wider selection already fits). Never fails the setup: a run that times out or does
    not build leaves the next narrower selection as T."""
    log = f"/tmp/swemint/{posixpath.basename(mark)}.log"
    body = (f"timeout {int(bound)} bash -c {shlex.quote(run)} > {log} 2>&1; rc=$?; tail -n 40 {log}; "
            f"if [ $rc -eq 0 ]; then touch {mark}; echo {shlex.quote(f'swemint: {what} run')}; "
            f"else echo \"swemint: {what} run exit $rc (124 = over {int(bound)} s): a narrower selection\"; fi")
    guard = f"if [ -e {unless} ]; then echo 'swemint: a wider selection fits'; else {body}; fi" if unless else body
    return f"mkdir -p /tmp/swemint /var/lib/swemint && rm -f {mark}; {guard}"


def mvn_flags() -> str:
    """Batch mode, no download progress, the recipe's skip properties."""
    return "-B -ntp " + " ".join(f"-D{p}" for p in recipe()["skip_properties"])


def _gradle_refusal(tree: GitTree, facts: JavaFacts, iid: str, owned: str = "") -> EnvBuildError:
    """The honest end of a Gradle build: its wrapper's distribution is unreachable here (issue 25:
    never another folder's pom.xml in its place). `owned`: which touched test it owns."""
    try:
        jdk, _ = choose_jdk(facts, jtc.available_jdks())
        on = f"; it would run on JDK {jdk}"
    except EnvBuildError as e:
        on = f"; {e.message}"
    return EnvBuildError(f"Gradle build (wrapper {facts.gradle or 'none'}){on}{owned}: Gradle wrapper distribution "
                         "unreachable (services.gradle.org cannot be reached here) and Debian ships only "
                         "Gradle 4.4.1; no pom.xml owns the touched tests", instance_id=iid)


_LEVEL_REFUSED = re.compile(r"(?:Source|Target) option \S+ is no longer supported|"
                            r"invalid (?:source|target) release: 1\.[1-5]\b")


GRADLE_FILES = frozenset({"build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts"})


class JavaEcosystem(Ecosystem):
    """Maven projects, Ant ones (`agents.ecosystems.java_ant`); Gradle ones are detected and
    refused with a clear reason."""

    name = "java"
    languages = ("java",)
    takes_test_args = True
    parsers = ("java_junit", "ant_junit")
    toolchain_module = "envpool.toolchains.java"

    def detect(self, tree: GitTree, language: str | None) -> int:
        """10 for a root pom.xml, 9 for a root Gradle build, 6 for a pom.xml one or two folders
        down when the instance says Java, 5 for a root Ant build.xml (see `routes`), else 0."""
        files = tree.file_set
        if "pom.xml" in files:
            return 10
        if files & GRADLE_FILES:
            return 9
        if (language or "").lower() in ("java", "kotlin") and any(
                f.endswith("/pom.xml") and f.count("/") <= 2 for f in tree.files):
            return 6
        if "build.xml" in files:
            return 5
        return 0

    def routes(self, tree: GitTree, language: str | None) -> list[Route]:
        """Maven when a pom.xml is there (at the root or one or two folders down), Gradle when its
        build files are (planned only to refuse it with the reason: its wrapper cannot download
        here), Ant when only a root build.xml is (`agents.ecosystems.java_ant`): available when
        one of its targets runs tests, else recognised with the reason."""
        files = tree.file_set
        out = []
        if "pom.xml" in files or any(f.endswith("/pom.xml") and f.count("/") <= 2 for f in tree.files):
            out.append(Route(name="maven"))
        if files & GRADLE_FILES:
            out.append(Route(name="gradle"))
        if "build.xml" in files and not out:
            build = ant.ant_build(tree)
            if build is not None and ant.test_target(build, ant.ci_ant_targets(tree)):
                out.append(Route(name="ant"))
            else:
                out.append(Route(name="ant", available=False,
                                 reason="Ant build (build.xml): no target runs tests (<junit>, <junitlauncher>, "
                                        "a <java> test runner)"))
        return out or [Route(name="maven")]

    def toolchain(self, requested: str | None, images: ImageConfig):
        """(ToolchainChoice, environment) of a JDK at least as new as `requested` (LLM plans)."""
        choice = jtc.ensure_image(requested, images)
        return choice, jtc.java_env(choice.route)

    def plan(self, tree: GitTree, instance: Instance, touched: list[str], images: ImageConfig,
             request: PlanRequest | None = None) -> PolyPlan:
        """Maven plan (see the module doc). `request.toolchain` narrows the JDKs (e.g. `>=11`
        after a class file too new for JDK 8), `request.test_args` join every Maven run.
        Raises EnvBuildError for a Gradle-only build, a tree without a pom above the touched
        tests, or no JDK that fits."""
        req = request or PlanRequest()
        iid = instance.instance_id
        if req.route == "ant":
            return self._ant_plan(tree, instance, touched, images, req)
        tests = test_classes(touched)
        owners = {p: owner_build(tree.files, p, JVM_BUILD_FILES) for p in tests}
        gradle = sorted((o[1], p) for p, o in owners.items() if o is not None and o[0] == "gradle")
        if req.route == "gradle" or gradle:  # the build that owns the touched tests is Gradle's
            facts = java_facts(tree, None)
            owned = f"; {gradle[0][1]} is owned by the Gradle build in {gradle[0][0] or '.'}/" if gradle else ""
            raise _gradle_refusal(tree, facts, iid, owned)
        reactor = maven_reactor(tree, near=touched)
        facts = java_facts(tree, reactor)
        if reactor is None:
            raise _gradle_refusal(tree, facts, iid)
        if not tests:
            raise EnvBuildError("the test patch touches no Java test source (src/test/...)", instance_id=iid)
        if unowned := sorted(p for p, o in owners.items() if o is None):
            raise EnvBuildError(f"no build file (pom.xml, Gradle, build.xml) owns the test file {unowned[0]}",
                                instance_id=iid)
        modules: dict[str, list[str]] = {}
        for path, classes in tests.items():
            mod = reactor.module_of(path)
            if mod is None:
                raise EnvBuildError(f"no pom.xml above the test file {path}", instance_id=iid)
            modules.setdefault(mod, [])
            modules[mod] += [c for c in classes if c not in modules[mod]]
        facts.gradle = None  # a Maven build: the Gradle wrapper (if any) is not used
        choice, notes = self._jdk(facts, images, req, iid)
        major = jdk_major(str(choice.version)) or 0
        env = jtc.java_env(choice.route)
        in_reactor = all(m in reactor.reactor for m in modules)
        classes = sorted({c for cs in modules.values() for c in cs})
        root = reactor.root
        cd = f"cd {shlex.quote(root)} && " if root else ""
        if in_reactor:
            rel = sorted(posixpath.relpath(m, root) if root else m for m in modules)
            sel = "" if rel == ["."] or rel == [""] else f"-pl {shlex.quote(','.join(rel))} -am "
            prep: list[str] = []
        else:  # a module outside the reactor: install the reactor, then build it on its own
            mod = sorted(modules)[0]
            notes.append(f"module {mod} is not in the reactor of {root or '.'}: built with -f after install")
            sel = f"-f {shlex.quote(posixpath.relpath(mod, root) if root else mod)}/pom.xml "
            prep = [f"{cd}mvn {mvn_flags()} -DskipTests install"]
        profiles, props, ci_notes = mvn_ci.ci_maven_options(
            tree, {i for p in reactor.poms.values() for i in p.profile_ids},
            [posixpath.relpath(m, root) if root else (m or ".") for m in modules], recipe()["ci_property_deny"])
        ci_args = ([f"-P{','.join(profiles)}"] if profiles else []) + [f"-D{k}={v}" for k, v in props.items()]
        notes += ci_notes
        state: dict = {}
        snap = mvn_ci.snapshot_parent(tree.read(posixpath.join(root, "pom.xml") if root else "pom.xml"), tree, root)
        if snap:
            release = mvn_ci.nearest_release(snap[2], mvn_ci.released_versions(snap[0], snap[1]))
            state["snapshot_parent"] = {"group": snap[0], "artifact": snap[1], "version": snap[2], "release": release}
            notes.append(f"parent {':'.join(snap)} is a SNAPSHOT outside the tree; Maven Central's nearest "
                         f"release: {release or 'none found'} (installed in its place if the parent does not resolve)")
        stand_ins, stood, tried = self._stand_ins(tree, reactor)
        if tried:
            state["substitutes_tried"] = tried
        def dtest(names) -> str:  # Surefire's selection of simple class names, "" for none
            return f"-Dtest={shlex.quote(','.join(names))} " if names else ""

        test_filter = dtest(classes)
        # per-test limits (`envpool.testrun.limits`): JUnit Jupiter's default timeout per test, and
        # Surefire's fork timeout (5 per-test limits) for JUnit 4, which has none: a hanging test
        # is its class's failure, not a run killed at the run limit
        # (plain text in the f-strings below: its ${...} braces are the shell's, never doubled)
        limits = f"-Dsurefire.timeout={per_test(5)} -Djunit.jupiter.execution.timeout.default={per_test()}s "
        tail = ("-fae -DfailIfNoTests=false -Dsurefire.failIfNoSpecifiedTests=false "
                f"{limits}-Dmaven.test.failure.ignore=true test")
        warm_classes = warm_up_classes(tree, tests, reactor.module_of)
        warm_filter = dtest(sorted(set(warm_classes))) or test_filter
        extra = "".join(f"{a} " for a in shell_args([*ci_args, *req.test_args]))

        def mvn(o: str, f: str) -> str:  # o: the offline flag, f: the test filter; -fae: a module that
            return f"mvn {o}{mvn_flags()} {extra}{sel}{f}{tail}"  # fails to compile hides no other

        touched_run = f"{cd}{mvn(o='-o ', f=test_filter)}"
        full_run = f"{cd}{mvn(o='-o ', f='')}"

        def with_reports(body: str) -> str:
            # Surefire writes no XML for a module whose sources do not compile: the console's
            # compile failure becomes a marker line of the report (a unit that failed to build)
            return (f"mkdir -p /tmp/swemint && find . -type d -name surefire-reports -path '*/target/*' "
                    f"-prune -exec rm -rf {{}} + ; {{ {body}; }} 2>&1 | tee {MVN_LOG}; rc=${{PIPESTATUS[0]}}; "
                    f"cd /testbed && find . -path '*/target/surefire-reports/TEST-*.xml' -exec cat {{}} + "
                    f"> {REPORT}; if grep -qE {shlex.quote(MAVEN_COMPILE_FAILED)} {MVN_LOG}; then "
                    f"echo {shlex.quote(BUILD_FAILED_MARK)} >> {REPORT}; fi; exit $rc")
        bound = int(recipe()["full_module_seconds"])
        needs_fix = fix_api_in_tests(instance.patch, instance.test_patch)
        test_command = with_reports(touched_run)
        if needs_fix:
            notes.append(f"tests: the touched classes only (the test patch uses {needs_fix[:5]}, which the patch "
                         "declares: the module would not build before the fix)")
        # (mark, run, what), widest first: each probe runs when no wider one fitted
        tiers = [] if needs_fix else [(FULL_MODULE_MARK, full_run, "modules in full")]
        pkg = package_classes(tree, tests, reactor.module_of) if tiers else []
        if pkg and set(pkg) != set(classes):
            tiers.append((PACKAGE_MARK, f"{cd}{mvn(o='-o ', f=dtest(pkg))}", "touched packages"))
        probes = [selection_probe(r, bound, mark, what, unless=tiers[i - 1][0] if i else None)
                  for i, (mark, r, what) in enumerate(tiers)]
        if tiers:
            chain = "; el".join(f"if [ -e {mark} ]; then {r}" for mark, r, _ in tiers)
            test_command = with_reports(f"{chain}; else {touched_run}; fi")
            middle = f"else the touched packages' {len(pkg)} test classes when they do, " if len(tiers) > 1 else ""
            notes.append(f"tests: the modules in full when that builds offline within {bound} s at setup, "
                         f"{middle}else the touched classes")
        setup = [jtc.truststore_command(), *stand_ins, *prep, f"{cd}{mvn(o='', f=warm_filter)}", *probes,
                 f"{cd}{mvn(o='-o ', f=warm_filter)}"]  # offline proof on classes that exist at base
        touched_spec = TestSpec(name="touched", test_command=with_reports(touched_run), parser="java_junit",
                                report_path=REPORT, test_files=sorted(tests))
        subs = list(choice.substitutions) + stood
        if facts.levels and min(facts.levels) < major:
            subs.append(f"Java level {min(facts.levels)} compiled by JDK {major}")
        return PolyPlan(ecosystem=self.name, toolchain=f"jdk {choice.version} + maven", image=choice.image,
                        route=choice.route, substitutions=subs, setup_commands=setup, env=env,
                        test_command=test_command, parser="java_junit", report_path=REPORT,
                        test_files=sorted(tests), test_alternatives=[] if needs_fix else [touched_spec],
                        notes=[*notes, f"modules {sorted(modules)}, classes {classes}"],
                        state={**state, "test_name": "touched" if needs_fix else "modules",
                               # compile once (`build_command`): the same modules and upstream
                               # modules compiled with their test sources, no test run
                               "build_command": f"{cd}mvn -o {mvn_flags()} {extra}{sel}-fae test-compile; true",
                               "build_for": [test_command, touched_spec.test_command]})

    def build_command(self, plan: PolyPlan) -> str | None:
        """Compile once (`verify.compile_once`): ``mvn -o ... test-compile`` of the plan's modules
        (``-pl M -am``, the CI's profiles and properties), made with the plan: every main and test
        source compiled, no test run; the runs' ``mvn test`` then finds nothing to compile. None
        when the plan's test command is not one it was made for (an LLM's)."""
        if plan.test_command not in (plan.state.get("build_for") or []):
            return None
        return plan.state.get("build_command")

    def portable_paths(self, plan: PolyPlan) -> list[str]:
        """Folders whose content does not depend on the toolchain's version (`agents.seed`):
        the local Maven repository (downloaded artifacts and plugins)."""
        return ["/root/.m2/repository"]

    @staticmethod
    def _stand_ins(tree: GitTree, reactor: MavenReactor) -> tuple[list[str], list[str], list[str]]:
        """(setup commands, substitutions, substitutes tried) for the out-of-tree SNAPSHOTs of
        the reactor's poms (`java_maven.snapshot_sources`): each with a release on Maven Central
        is installed as the snapshot before the first Maven step (a step that never fails the
        build: a snapshot a reachable repository serves still resolves); each without one is
        recorded as tried."""
        texts = {d: tree.read(posixpath.join(d, "pom.xml") if d else "pom.xml") or "" for d in reactor.poms}
        cmds, subs, tried = [], [], []
        for g, a, v, kind, what in mvn_ci.snapshot_sources(tree, texts):
            release = mvn_ci.nearest_release(v, mvn_ci.released_versions(g, a))
            if release is None:
                tried.append(f"{g}:{a}:{v} ({what}): no release on Maven Central")
                continue
            tried.append(f"{g}:{a}:{v} ({what}) -> Maven Central {release}")
            subs.append(f"{g}:{a}:{v} ({what}; a SNAPSHOT no reachable repository serves) -> Maven Central's "
                        f"release {release}, installed as {v}")
            cmds += [f"{{ {c}; }} || echo {shlex.quote(f'swemint: the stand-in {g}:{a}:{release} was not installed')}"
                     for c in mvn_ci.stand_in_commands(g, a, v, release, kind)]
        return cmds, subs, tried

    def _jdk(self, facts: JavaFacts, images: ImageConfig, req: PlanRequest, iid: str):
        """(ToolchainChoice, notes) of the JDK for `facts` among the JDKs `req` allows."""
        jdks = jtc.available_jdks(images)
        if req.toolchain or req.avoid:
            jdks = [j for j in jdks if str(j) not in req.avoid and satisfies(str(j), req.toolchain)]
            if not jdks:
                raise EnvBuildError(f"java: no JDK here satisfies {req.toolchain!r}", instance_id=iid)
        major, notes = choose_jdk(facts, jdks)
        return jtc.ensure_image(str(major), images), notes

    def _ant_plan(self, tree: GitTree, instance: Instance, touched: list[str], images: ImageConfig,
                  req: PlanRequest) -> PolyPlan:
        """The Ant route's plan (`agents.ecosystems.java_ant`, whose docstring says what runs).
        Raises EnvBuildError when build.xml is unreadable or no target runs tests."""
        iid = instance.instance_id
        build = ant.ant_build(tree)
        if build is None:
            raise EnvBuildError("Ant build: build.xml is not XML", instance_id=iid)
        ci = ant.ci_ant_targets(tree)
        found = ant.test_target(build, ci)
        if found is None:
            raise EnvBuildError("Ant build (build.xml): no target runs tests", instance_id=iid)
        target, why = found
        facts = java_facts(tree, None)
        choice, notes = self._jdk(facts, images, req, iid)
        env = {**jtc.java_env(choice.route), "ANT_OPTS": jtc.java_env(choice.route)["MAVEN_OPTS"]}
        classes = ant.touched_test_classes(touched, recipe()["test_class_patterns"])
        props = ant.selection(build, target, classes)
        extra = shell_args(req.test_args)
        run = ant.ant_command(target, props, build.ivy) + "".join(f" {a}" for a in extra)
        apt = ["ant", "ant-optional", "junit4", *(["ivy"] if build.ivy else [])]
        setup = [apt_install(apt), jtc.truststore_command(),
                 ant.setup_command(ant.ant_command(target, {}, build.ivy) + "".join(f" {a}" for a in extra))]
        hosts = build.downloads(target)
        notes += [f"ant target {target} ({why}; CI runs {ci or 'no ant target'})",
                  f"selection {props or 'none: the target runs in full'}, classes {classes}",
                  *([f"the build downloads with <get> from {hosts}"] if hosts else [])]
        return PolyPlan(ecosystem=self.name, toolchain=f"jdk {choice.version} + ant", image=choice.image,
                        route=choice.route, build="ant", substitutions=list(choice.substitutions),
                        setup_commands=setup, env=env, test_command=ant.test_command(run), parser="ant_junit",
                        report_path=ant.REPORT, test_files=sorted(p for p in touched if p.endswith(".java")),
                        notes=notes, state={"ant_target": target})

    def repair(self, plan: PolyPlan, command: str, output: str, tried: set[str]) -> list[str] | None:
        """An offline (``-o``) step that misses an artifact: run it once online. A TLS failure
        (PKIX): remake the truststore. javac refusing the compiler plugin's default level (a pom
        that names none, an old plugin defaulting to 1.5): raise it to 8 for every later Maven
        run through ``.mvn/maven.config`` (read by Maven >= 3.3.1; an untracked file, so the
        patches still apply). A parent POM that does not resolve while the plan found a released
        stand-in for its SNAPSHOT (`agents.ecosystems.java_maven`): install it. Else None."""
        fixes: list[list[str]] = []
        snap = (plan.state.get("snapshot_parent") if plan is not None else None) or {}
        if snap.get("release") and "Non-resolvable parent POM" in output:
            fixes.append(mvn_ci.stand_in_commands(snap["group"], snap["artifact"], snap["version"], snap["release"]))
        if "PKIX path" in output or "trustAnchors" in output:
            fixes.append([jtc.truststore_command()])
        if _LEVEL_REFUSED.search(output):
            m = re.match(r"cd (\S+) && ", command)
            conf = posixpath.join(m.group(1) if m else ".", ".mvn/maven.config")
            fixes.append([f"mkdir -p {posixpath.dirname(conf)} && printf '%s\\n' "
                          f"-Dmaven.compiler.source=8 -Dmaven.compiler.target=8 >> {conf}"])
        if " -o " in command and re.search(r"offline mode|has not been downloaded from it before|"
                                           r"Cannot access \S+ in offline", output):
            fixes.append([command.replace("mvn -o ", "mvn ", 1)])
        for fix in fixes:
            if "\n".join(fix) not in tried:
                return fix
        return None


ECOSYSTEM = JavaEcosystem()
"""The object `agents.ecosystems` registers (module name ``java``)."""
