"""Java on Ant (+ Ivy): the build read from build.xml, its test target, selection and reports.

Analysis (from the mirror, no checkout): the root ``build.xml`` and every file it ``<import>``s or
``<include>``s (paths relative to the importing file; ``${...}`` paths are skipped), its targets
(``depends``), its ``<macrodef>``s, and per target whether it runs tests: a ``<junit>``,
``<junitlauncher>`` or ``<testng>`` task, a ``<java>`` whose ``classname`` is a test runner
(JUnitCore, the JUnit Platform ConsoleLauncher, junit.textui.TestRunner, TestNG), or a macro
whose body does. Also read: the XML formatters (``<formatter type="xml">``, junitlauncher's
``legacy-xml`` listener), the properties a ``<batchtest>``/``<test>`` selection is made of
(``includes="${test.includes}"``, ``<test name="${testcase}">``), the Ivy antlib, and the hosts
``<get src=...>`` downloads from (a build that downloads from a host this machine cannot reach
fails at setup, its output naming the host).

The test target is the one the CI workflow files run (``ant ... <target>`` in a ``run:`` step,
``${{ matrix.X }}`` taken as the matrix's first value), else ``test``, else the first target
whose name holds "test" and runs tests, else any that runs tests.

Plan (`ant_plan`): Debian's ``ant``, ``ant-optional`` (the junit tasks), ``junit4`` (and ``ivy``
when the build uses the Ivy antlib) on the JDK image the Maven route would pick; Ant runs with
``-lib`` naming the junit (and ivy) jars so ``<junit>`` and ``<javac>`` find them through the Ant
runtime, and ``ANT_OPTS`` naming the truststore (Ivy resolves from Maven Central through the
host CA). Setup makes the truststore, then runs the test target once online (dependencies
downloaded, everything compiled; test failures ignored). The test command runs the target
offline (``network=none``), with the selection property set to the touched test classes when the
build has one (else the target runs in full), and writes to `REPORT` the ``TEST-*.xml`` files
the run left (newer than a stamp) or, when there are none, the console. Parser ``ant_junit``
(`envpool.testrun.polyglot.java.parse_ant_junit`): ids in JUnit 4's display form
``method(pkg.Class)``.
"""

from __future__ import annotations

import posixpath
import re
import shlex
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from urllib.parse import urlparse

from agents.ecosystems.java.maven_ci import ci_run_texts
from agents.gitrepo import GitTree
from envpool.testpaths import role

__all__ = ["AntBuild", "AntTarget", "REPORT", "TEST_RUNNERS", "ant_build", "ant_command", "ci_ant_targets",
           "test_target"]

REPORT = "/tmp/swemint/ant-junit.xml"
"""Where the test command leaves the run's JUnit XML reports (or its console)."""

TEST_RUNNERS = ("org.junit.runner.JUnitCore", "org.junit.platform.console.ConsoleLauncher",
                "junit.textui.TestRunner", "org.testng.TestNG")
"""``<java classname=...>`` values that run tests."""

_TEST_TASKS = {"junit", "junitlauncher", "testng"}
_SELECT_ATTR = re.compile(r"\$\{([\w.-]+)\}")


@dataclass
class AntTarget:
    """One ``<target>``: `file` it is defined in (repository relative), `depends` (names),
    `runs_tests`, whether a JUnit XML formatter is set, and `select_props` (properties its test
    selection is made of, with their default from a ``<property>``)."""

    name: str
    file: str
    depends: list[str] = field(default_factory=list)
    runs_tests: bool = False
    xml_reports: bool = False
    select_props: list[str] = field(default_factory=list)
    downloads: list[str] = field(default_factory=list)


@dataclass
class AntBuild:
    """The Ant build of a tree: `targets` by name (the first definition wins, as in Ant's import
    rule for the main file), `files` read, `ivy` (the Ivy antlib is used), `default` target."""

    targets: dict[str, AntTarget] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    ivy: bool = False
    default: str | None = None

    def closure(self, name: str) -> list[str]:
        """`name` and every target it depends on, transitively (unknown names skipped)."""
        out: list[str] = []
        todo = [name]
        while todo:
            t = todo.pop()
            if t in out or t not in self.targets:
                continue
            out.append(t)
            todo += self.targets[t].depends
        return out

    def downloads(self, name: str) -> list[str]:
        """Hosts the `<get>` tasks of `name`'s closure download from, sorted."""
        return sorted({h for t in self.closure(name) for h in self.targets[t].downloads})


def _strip(root: ET.Element) -> ET.Element:
    for el in root.iter():
        if isinstance(el.tag, str) and "}" in el.tag:
            el.tag = el.tag.split("}", 1)[1]
        elif isinstance(el.tag, str) and ":" in el.tag:
            el.tag = el.tag.split(":", 1)[1]
    return root


def _parse(text: str) -> tuple[ET.Element | None, bool]:
    """(root with namespaces stripped, whether the Ivy antlib is declared)."""
    ivy = "antlib:org.apache.ivy.ant" in text or "antlib:fr.jayasoft.ivy.ant" in text
    try:
        return _strip(ET.fromstring(text.encode("utf-8"))), ivy
    except ET.ParseError:
        return None, ivy


def _runs_tests(el: ET.Element, macros: set[str]) -> bool:
    for sub in el.iter():
        tag = sub.tag if isinstance(sub.tag, str) else ""
        if tag in _TEST_TASKS or tag in macros:
            return True
        if tag == "java" and (sub.get("classname") or "") in TEST_RUNNERS:
            return True
    return False


def _xml_reports(el: ET.Element) -> bool:
    return any(f.get("type") == "xml" for f in el.iter("formatter")) or \
        any(li.get("type") == "legacy-xml" for li in el.iter("listener"))


def _select_props(el: ET.Element) -> list[str]:
    """Properties inside the test selection of `el`: ``<batchtest>``'s fileset includes and
    ``<test name=...>`` / junitlauncher ``<test name=...>``."""
    out: list[str] = []
    for t in el.iter("test"):
        out += _SELECT_ATTR.findall(t.get("name") or "")
    for bt in el.iter("batchtest"):
        for fs in bt.iter("fileset"):
            out += _SELECT_ATTR.findall(fs.get("includes") or "")
            for inc in fs.iter("include"):
                out += _SELECT_ATTR.findall(inc.get("name") or "")
    return list(dict.fromkeys(out))


def ant_build(tree: GitTree, root: str = "build.xml", max_files: int = 50) -> AntBuild | None:
    """The `AntBuild` of `tree` from `root` and what it imports (at most `max_files` files);
    None when `root` is missing or not XML."""
    build = AntBuild()
    todo = [root]
    macros_of: dict[str, ET.Element] = {}
    roots: list[tuple[str, ET.Element]] = []
    while todo and len(build.files) < max_files:
        path = todo.pop(0)
        if path in build.files:
            continue
        text = tree.read(path)
        if text is None:
            continue
        el, ivy = _parse(text)
        if el is None:
            continue
        build.files.append(path)
        build.ivy = build.ivy or ivy
        if path == root:
            build.default = el.get("default")
        roots.append((path, el))
        for imp in [*el.findall("import"), *el.findall("include")]:
            f = imp.get("file") or ""
            if f and "${" not in f:
                todo.append(posixpath.normpath(posixpath.join(posixpath.dirname(path), f)))
        for m in el.iter("macrodef"):
            if m.get("name"):
                macros_of[m.get("name")] = m
    macros: set[str] = set()
    changed = True
    while changed:  # a macro that calls a test-running macro runs tests too
        changed = False
        for name, m in macros_of.items():
            if name not in macros and _runs_tests(m, macros):
                macros.add(name)
                changed = True
    for path, el in roots:
        for t in el.findall("target"):
            name = t.get("name")
            if not name or name in build.targets:
                continue
            body = [t, *(macros_of[s.tag] for s in t.iter() if isinstance(s.tag, str) and s.tag in macros)]
            hosts = [urlparse(g.get("src") or "").hostname or "" for g in t.iter("get")]
            build.targets[name] = AntTarget(
                name=name, file=path, depends=[d.strip() for d in (t.get("depends") or "").split(",") if d.strip()],
                runs_tests=_runs_tests(t, macros), xml_reports=any(_xml_reports(b) for b in body),
                select_props=list(dict.fromkeys(p for b in body for p in _select_props(b))),
                downloads=sorted({h for h in hosts if h}))
    return build if root in build.files else None


_ANT_CALL = re.compile(r"(?:^|[;&|\s])(?:xvfb-run\s+)?ant\s+([^\n;&|]*)")


def ci_ant_targets(tree: GitTree) -> list[str]:
    """Target names the CI workflow files (GitHub Actions, Travis) pass to ``ant``, in order of
    appearance (`maven_ci.ci_run_texts`: ``${{ matrix.X }}`` is the matrix's first value);
    words holding another expression or ``$`` are dropped."""
    out: list[str] = []
    for _path, text in ci_run_texts(tree):
        for m in _ANT_CALL.finditer(text):
            for word in m.group(1).split():
                if word.startswith("-") or "=" in word or "$" in word:
                    continue
                if word not in out:
                    out.append(word)
    return out


def test_target(build: AntBuild, ci: list[str]) -> tuple[str, str] | None:
    """(target, why) the tests run with (module doc's order), or None when no target runs tests.
    A CI target counts when it, or a target it depends on, runs tests."""
    def tests_in(name: str) -> bool:
        return any(build.targets[t].runs_tests for t in build.closure(name))
    for name in ci:
        if name in build.targets and tests_in(name):
            return name, "run by CI"
    if "test" in build.targets and tests_in("test"):
        return "test", "named test"
    named = [t for t in build.targets.values() if "test" in t.name.lower() and t.runs_tests]
    if named:
        return named[0].name, "first test target"
    anyt = [t for t in build.targets.values() if t.runs_tests]
    return (anyt[0].name, "runs tests") if anyt else None


JUNIT_JARS = ("/usr/share/java/junit4.jar", "/usr/share/java/hamcrest-core.jar")
IVY_JAR = "/usr/share/java/ivy.jar"


def ant_command(target: str, props: dict[str, str], ivy: bool) -> str:
    """``ant`` running `target` with `props` (``-Dk=v``, quoted), the junit (and ivy) jars on
    Ant's classpath, no input prompts."""
    jars = [*JUNIT_JARS, *([IVY_JAR] if ivy else [])]
    libs = " ".join(f"-lib {j}" for j in jars)
    defs = "".join(f" {shlex.quote(f'-D{k}={v}')}" for k, v in props.items())
    return f"ant -noinput {libs}{defs} {shlex.quote(target)}"


TESTS_RAN = r"Tests run: [0-9]+|Testsuite: |Test [A-Za-z_$][A-Za-z0-9_$.]* FAILED"
"""A console line showing the junit task ran tests (so a failing exit is the tests', not the build's)."""


CAUSE_LINES = r"^BUILD FAILED|Exception: |Error getting |^/\S+:[0-9]+: "
"""Lines of a failed Ant run that say why (the failing build file line, an exception such as
``java.net.UnknownHostException: projectlombok.org``, a failed ``<get>``)."""


def setup_command(run: str) -> str:
    """Shell: `run` online; succeeds when ant succeeded or when tests ran (failing tests are not
    a setup failure; a compile error or a failed download is). A failed run ends its output with
    its cause lines (`CAUSE_LINES`), so the row's reason, which keeps the output's tail, names it."""
    log = "/tmp/swemint/ant-setup.log"
    return (f"mkdir -p /tmp/swemint && {{ {run}; }} > {log} 2>&1; rc=$?; cat {log}; "
            f"if [ $rc -ne 0 ]; then echo 'swemint: ant failed:'; grep -E {shlex.quote(CAUSE_LINES)} {log} | "
            f"head -n 5; fi; [ $rc -eq 0 ] || grep -qE {shlex.quote(TESTS_RAN)} {log}")


_JAVA_CLASS = re.compile(r"(?:^|/)([A-Z][\w$]*)\.java$")
"""A Java source file whose name is a class name (``Foo.java``, not ``package-info.java``)."""


def touched_test_classes(touched: list[str]) -> list[str]:
    """Simple names of the touched ``.java`` class files that are test classes the runners
    take by default (the Java group's `class` role of the one test-path rule set,
    `envpool.testpaths`: ``Test*``, ``*Test``, ``*Tests``, ``*TestCase``, ``*IT``), sorted."""
    runnable = role("java", "class")
    return sorted({m.group(1) for p in touched if (m := _JAVA_CLASS.search(p)) and runnable.matches(p)})


def selection(build: AntBuild, target: str, classes: list[str]) -> dict[str, str]:
    """Properties selecting `classes` in `target`'s batchtest (``**/Name.*`` patterns, comma
    separated): every selection property of the target's closure; {} when it has none or no
    class is given (the target then runs in full)."""
    if not classes:
        return {}
    props = [p for t in build.closure(target) for p in build.targets[t].select_props]
    value = ",".join(f"**/{c}.*" for c in classes)
    return {p: value for p in dict.fromkeys(props)}


def test_command(run: str, report: str = REPORT) -> str:
    """Shell: `run` (an ``ant`` command) with its console kept, then `report` = the
    ``TEST-*.xml`` files newer than a stamp made before the run, else the console; exit = ant's."""
    log = "/tmp/swemint/ant-console.log"
    return (f"mkdir -p /tmp/swemint && touch /tmp/swemint/ant-stamp && rm -f {report} && "
            f"{{ {run}; }} > {log} 2>&1; rc=$?; cat {log}; "
            f"find . -name 'TEST-*.xml' -newer /tmp/swemint/ant-stamp -exec cat {{}} + > {report}; "
            f"[ -s {report} ] || cp {log} {report}; exit $rc")
