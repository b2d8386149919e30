"""Java: Maven projects (single or multi-module) and Ant ones (route ``ant``, planned by
`JavaEcosystem._ant_plan` from `agents.ecosystems.java.ant_build`) on a JDK chosen from the project's
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
and compiles everything up to Surefire and its provider, failures ignored), then the warm-up
classes offline (``-o``) to prove the test run needs no network (classes that exist at base: a
pom that sets ``failIfNoTests`` fails on a selection of new classes). The first before run is the
selection probe (`scope_probe`): the touched modules' whole offline test run under ``timeout
full_module_seconds`` (recipe), and when that does not fit, the touched packages' test classes
(`package_classes`) under the same bound, else the touched classes; the scope it ran is every
later run's test command and the row's (`scoped_plan`). The test command runs offline with the
module's upstream modules (``-pl M -am``: a patch to another module is recompiled): the modules in
full when their mark is there, else the touched packages when theirs is, else the touched classes
(``-Dtest``; also the alternative configuration); only the touched classes
when the test_patch uses what the patch declares (`fix_api_in_tests`). The profiles and
properties of the CI's test runs join every Maven run, and a ``-SNAPSHOT`` parent no repository
serves gets a released stand-in (`agents.ecosystems.java.maven_ci`). The Surefire XML reports are
concatenated into `REPORT` (parser ``java_junit``, ids ``pkg.Class#method``). A test class that
does not compile leaves no report: its tests are absent (= not passing).

Modules: `maven_pom` (the reactor), `java_jdk` (the JDK), `java_tests` (selection),
`maven_ci` (the CI's Maven options, SNAPSHOT stand-ins), `ant_build` (the Ant route),
`java_recipe` (the data file `java.yaml`); this package holds the Ecosystem.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from agents.gitrepo import GitTree
from agents.models import Instance
import agents.ecosystems.java.ant_build as ant
import agents.ecosystems.java.maven_ci as mvn_ci
from agents.ecosystems.base import Ecosystem, PlanRequest, PolyPlan, Route, TestSpec, shell_args
from agents.ecosystems.debian import apt_install
from agents.ecosystems.owners import JVM_BUILD_FILES, owner_build
from agents.ecosystems.java.tycho import tycho_bundle
from agents.ecosystems.toolchain import satisfies
from envpool.errors import EnvBuildError
from envpool.testrun.limits import per_test
from envpool.testrun.polyglot.java import BUILD_FAILED_MARK, MAVEN_COMPILE_FAILED
from envpool.images import ImageConfig
from envpool.toolchains import java_image as jtc
from envpool.toolchains import version_key
from agents.ecosystems.java.java_recipe import recipe
from agents.ecosystems.java.maven_pom import MavenReactor, jdk_major, maven_reactor
from agents.ecosystems.java.java_jdk import JavaFacts, _ci_jdks, choose_jdk, java_facts
from agents.ecosystems.java.maven_new_module import MODULE_MISSING, new_module_owners, pom_sections, prefetch_command
from agents.ecosystems.java.java_tests import (fix_api_in_tests, mvn_flags, package_classes, test_classes,
                                               warm_up_classes)


__all__ = ["ECOSYSTEM", "JavaEcosystem", "JavaFacts", "MavenReactor", "PlanRequest", "REPORT", "SCOPE_LINE", "_ci_jdks",
           "choose_jdk", "fix_api_in_tests", "java_facts", "jdk_major", "maven_reactor", "package_classes", "recipe",
           "scope_probe", "surefire_lists_methods", "test_classes", "test_source_modules", "warm_up_classes"]

REPORT = "/tmp/swemint/junit.xml"


MVN_LOG = "/tmp/swemint/mvn.log"
"""The Maven console of a test run (read for a compile failure, `BUILD_FAILED_MARK`)."""


"""Where the test command concatenates the Surefire XML reports."""


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


SCOPE_LINE = "swemint-java-scope: "
"""What the scope probe (`scope_probe`) prints before the scope it ran: ``modules``, ``packages``
or ``touched``."""


def scope_probe(tiers: list[tuple[str, str]], touched_run: str, bound: int) -> str:
    """Bash: the first before run as the selection probe. Each of `tiers` ((scope, offline Maven
    run), widest first) runs under ``timeout bound``; the first that ends with exit 0, or stops at
    a compile failure (the test_patch's tests before the fix: the time says nothing), is the run
    -- its output printed, `SCOPE_LINE` and its scope after it; one over the bound or failing
    otherwise leaves its output and the next narrower; none: `touched_run` (``touched``). The
    Surefire reports of a dropped attempt are removed. Exit status: the chosen run's."""
    rm = "find . -type d -name surefire-reports -path '*/target/*' -prune -exec rm -rf {} + "
    log = "/tmp/swemint/scope-probe.log"
    out = f"{touched_run}; rc=$?; echo {shlex.quote(SCOPE_LINE + 'touched')}"
    for name, run in reversed(tiers):
        fits = (f"[ $rc -eq 0 ] || {{ [ $rc -ne 124 ] && grep -qE {shlex.quote(MAVEN_COMPILE_FAILED)} {log}; }}")
        out = (f"( cd /testbed && timeout -k 30 {int(bound)} bash -c {shlex.quote(run)} ) > {log} 2>&1; rc=$?; cat {log}; "
               f"if {fits}; then echo {shlex.quote(SCOPE_LINE + name)}; else "
               f"echo \"swemint: the {name} run exit $rc (124 = over {int(bound)} s): a narrower selection\"; "
               f"( cd /testbed && {rm}); {out}; fi")
    return f"mkdir -p /tmp/swemint; {out}; (exit $rc)"
TARGETS_MARK = "@SWEMINT_TARGETS@"
"""Where a plan's targeted-rerun template (``state["targeted"]``) takes the ``-Dtest`` selection."""
_TARGET_ID = re.compile(r"^(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)((?:\$[A-Za-z_]\w*)*)#([A-Za-z_]\w*)(?:[(\[].*)?$")
"""A JUnit id ``pkg.Class#method[(...)[n]]`` or, in a nested class, ``pkg.Outer$Inner#method``
(`envpool.testrun.polyglot.java.java_id`): (top-level class, ``$Inner...`` or "", method)."""
METHOD_LISTS_SINCE = (2, 19)
"""The first Surefire that takes a ``-Dtest`` of several ``Class#m`` patterns or a ``m1+m2`` list
(2.12.4, Maven 3.8's default binding, fails every selected class with a
StringIndexOutOfBoundsException on either; 2.19.1 runs them)."""


def surefire_lists_methods(reactor: MavenReactor, dirs: list[str]) -> bool:
    """Whether every module of `dirs` runs a Surefire that takes method lists
    (`METHOD_LISTS_SINCE`): its in-tree pom chain declares maven-surefire-plugin outside
    profiles, and every version the chain declares (profiles too) resolves to one at least that
    new. False when a module declares none there (an out-of-tree parent's or Maven's default
    Surefire: unknown) or a version does not resolve."""
    for d in dirs:
        versions, pinned = reactor.surefire_pins(d)
        if not pinned or any(not version_key(v) or version_key(v) < METHOD_LISTS_SINCE for v in versions):
            return False
    return bool(dirs)


def test_source_modules(tree: GitTree, reactor: MavenReactor) -> set[str]:
    """The reactor's modules (`MavenReactor.reactor`, reached through ``<modules>``: what ``-am``
    may build) that hold test sources (``<folder>/src/test/...``); a pom outside the reactor (an
    integration-test project under ``src/it/``) is not one."""
    out: set[str] = set()
    for f in tree.files:
        at = ("/" + f).find("/src/test/")
        if at >= 0:
            d = f[:at].rstrip("/")
            if d in reactor.reactor:
                out.add(d)
    return out


def compiled_source_kb(tree, modules: list[str]) -> int | None:
    """KiB of the Java and Kotlin sources (main and test) of the touched `modules` (``M/src/``;
    the upstream modules ``-am`` adds are not counted): the compile-once build's size
    (`verify.compile_once_min_source_kb`). None for a tree that does not list sizes."""
    sizes = getattr(tree, "sizes", None)
    if not isinstance(sizes, dict):
        return None
    prefixes = tuple(f"{m}/src/" if m not in ("", ".") else "src/" for m in modules)
    return sum(n for p, n in sizes.items() if p.startswith(prefixes) and p.endswith((".java", ".kt"))) // 1024


class JavaEcosystem(Ecosystem):
    """Maven projects, Ant ones (`agents.ecosystems.java.ant_build`); Gradle ones are detected and
    refused with a clear reason."""

    name = "java"
    languages = ("java",)
    takes_test_args = True
    parsers = ("java_junit", "ant_junit")
    toolchain_module = "envpool.toolchains.java_image"

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
        here), Ant when only a root build.xml is (`agents.ecosystems.java.ant_build`): available when
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
        if tycho := tycho_bundle(tree, touched):
            raise EnvBuildError(tycho, instance_id=iid)
        if not tests:
            raise EnvBuildError("the test patch touches no Java test source (src/test/...)", instance_id=iid)
        if unowned := sorted(p for p, o in owners.items() if o is None):
            raise EnvBuildError(f"no build file (pom.xml, Gradle, build.xml) owns the test file {unowned[0]}",
                                instance_id=iid)
        modules: dict[str, list[str]] = {}
        fresh = new_module_owners(tree, sorted(tests), instance.patch, instance.test_patch)
        for path, classes in tests.items():
            mod = fresh.get(path) or reactor.module_of(path)
            if mod is None:
                raise EnvBuildError(f"no pom.xml above the test file {path}", instance_id=iid)
            modules.setdefault(mod, [])
            modules[mod] += [c for c in classes if c not in modules[mod]]
        facts.gradle = None  # a Maven build: the Gradle wrapper (if any) is not used
        choice, notes = self._jdk(facts, images, req, iid)
        major = jdk_major(str(choice.version)) or 0
        env = jtc.java_env(choice.route)
        in_reactor = all(m in reactor.reactor or m in fresh.values() for m in modules)
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

        def with_reports(body: str, failed: str = MAVEN_COMPILE_FAILED) -> str:
            # Surefire writes no XML for a module whose sources do not compile: the console's
            # compile failure (`failed`) becomes a marker line of the report (a unit that failed to build)
            return (f"mkdir -p /tmp/swemint && find . -type d -name surefire-reports -path '*/target/*' "
                    f"-prune -exec rm -rf {{}} + ; {{ {body}; }} 2>&1 | tee {MVN_LOG}; rc=${{PIPESTATUS[0]}}; "
                    f"cd /testbed && find . -path '*/target/surefire-reports/TEST-*.xml' -exec cat {{}} + "
                    f"> {REPORT}; if grep -qE {shlex.quote(failed)} {MVN_LOG}; then "
                    f"echo {shlex.quote(BUILD_FAILED_MARK)} >> {REPORT}; fi; exit $rc")
        bound = int(recipe()["full_module_seconds"])
        needs_fix = fix_api_in_tests(instance.patch, instance.test_patch)
        test_command = with_reports(touched_run)
        if fresh:  # a module the patch creates: fetched in a scratch copy, its touched classes run; before
            # the fix Maven cannot select it: the module's unit failed to build (its tests absent)
            return self._new_module_plan(instance, choice, facts, env, notes, state, stand_ins, stood, fresh, root,
                                         classes, tests, with_reports(touched_run, f"{MAVEN_COMPILE_FAILED}|{MODULE_MISSING}"),
                                         mvn,
                                         build=f"{cd}mvn -o {mvn_flags()} {extra}{sel}-fae test-compile; true")
        if needs_fix:
            notes.append(f"tests: the touched classes only (the test patch uses {needs_fix[:5]}, which the patch "
                         "declares: the module would not build before the fix)")
        # (scope, run), widest first: the first before run tries each under the bound and the
        # first that fits is the scope of every later run (`scope_probe`, `scoped_plan`)
        tiers = [] if needs_fix else [("modules", full_run)]
        pkg = package_classes(tree, tests, reactor.module_of) if tiers else []
        if pkg and set(pkg) != set(classes):
            tiers.append(("packages", f"{cd}{mvn(o='-o ', f=dtest(pkg))}"))
        scopes: dict[str, str] = {}
        if tiers:
            test_command = with_reports(scope_probe(tiers, touched_run, bound))
            scopes = {name: with_reports(r) for name, r in [*tiers, ("touched", touched_run)]}
            middle = f"else the touched packages' {len(pkg)} test classes when they do, " if len(tiers) > 1 else ""
            notes.append(f"tests: the modules in full when that builds offline within {bound} s in the first before "
                         f"run, {middle}else the touched classes")
        # the offline proof on classes that exist at base: the test runs need no network
        proof = f"{cd}{mvn(o='-o ', f=warm_filter)}"
        setup = [jtc.truststore_command(), *stand_ins, *prep, f"{cd}{mvn(o='', f=warm_filter)}", proof]
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
                               "compiled_source_kb": compiled_source_kb(tree, list(modules)),
                               # compile once (`build_command`): the same modules and upstream
                               # modules compiled with their test sources, no test run
                               "build_command": f"{cd}mvn -o {mvn_flags()} {extra}{sel}-fae test-compile; true",
                               "build_for": [test_command, touched_spec.test_command, *scopes.values()],
                               # the scope the first before run decides (`scoped_plan`): its command
                               "scopes": {"probe": test_command, "runs": scopes} if scopes else None,
                               # targeted reruns (`targeted_plan`): the touched run's Maven command
                               # with the targets' -Dtest in place of the mark
                               "targeted": {"template": with_reports(f"{cd}{mvn(o='-o ', f=TARGETS_MARK)}"),
                                            "for": [test_command, touched_spec.test_command, *scopes.values()],
                                            # every module that may report a target (the touched
                                            # ones, the reactor's with test sources: -am runs them)
                                            "method_lists": surefire_lists_methods(
                                                reactor, sorted(set(modules) | test_source_modules(tree, reactor)))}})

    def _new_module_plan(self, instance, choice, facts, env, notes, state, stand_ins, stood, fresh, root,
                         classes, tests, test_command, mvn, build: str) -> PolyPlan:
        """The plan of touched tests in a module the patch creates (`maven_new_module`): setup is
        the truststore, the SNAPSHOT stand-ins and the scratch-copy prefetch of the module
        (``-pl M -am`` online, then offline); the runs are the touched classes with ``-pl M -am``
        (absent before: the module does not exist). Raises EnvBuildError when the patches' pom
        sections are too large to carry."""
        module = sorted(set(fresh.values()))[0]
        rel = posixpath.relpath(module, root) if root else module
        prefetch = prefetch_command(pom_sections(instance.patch, instance.test_patch), rel, root,
                                    mvn(o="", f=""), mvn(o="-o ", f=""))
        if prefetch is None:
            raise EnvBuildError(f"module {module} is new in the patch and its pom.xml sections are too large "
                                "to prefetch its dependencies", instance_id=instance.instance_id)
        notes.append(f"module {module} is new in the patch (its pom.xml is added): selected with -pl {rel} -am, "
                     "its dependencies fetched in a scratch copy with the patches' pom.xml sections; its tests "
                     "are absent before the fix")
        major = jdk_major(str(choice.version)) or 0
        subs = list(choice.substitutions) + stood
        if facts.levels and min(facts.levels) < major:
            subs.append(f"Java level {min(facts.levels)} compiled by JDK {major}")
        return PolyPlan(ecosystem=self.name, toolchain=f"jdk {choice.version} + maven", image=choice.image,
                        route=choice.route, substitutions=subs,
                        setup_commands=[jtc.truststore_command(), *stand_ins, prefetch], env=env,
                        test_command=test_command, parser="java_junit", report_path=REPORT,
                        test_files=sorted(tests), test_alternatives=[],
                        notes=[*notes, f"modules [{module!r}] (new), classes {classes}"],
                        state={**state, "test_name": "touched", "new_module": module,
                               "build_command": build, "build_for": [test_command]})

    def build_command(self, plan: PolyPlan) -> str | None:
        """Compile once (`verify.compile_once`): ``mvn -o ... test-compile`` of the plan's modules
        (``-pl M -am``, the CI's profiles and properties), made with the plan: every main and test
        source compiled, no test run; the runs' ``mvn test`` then finds nothing to compile. None
        when the plan's test command is not one it was made for (an LLM's)."""
        if plan.test_command not in (plan.state.get("build_for") or []):
            return None
        return plan.state.get("build_command")

    def scoped_plan(self, plan: PolyPlan, run) -> PolyPlan | None:
        """`plan` with the scope its first before run decided (`scope_probe`: the last
        `SCOPE_LINE` of the run's output) as the test command of every later run, and of the
        row; None when the plan's test command is not the scope probe or the run printed no
        scope (cut off: the next run probes again)."""
        rec = plan.state.get("scopes") or {}
        if not rec or plan.test_command != rec.get("probe"):
            return None
        # (not anchored at the line's start: Maven's last line may end in a colour reset, no newline)
        found = re.findall(rf"{re.escape(SCOPE_LINE)}(\w+)\s*$", run.output_tail or "", re.M)
        cmd = (rec.get("runs") or {}).get(found[-1]) if found else None
        if cmd is None:
            return None
        return plan.model_copy(update={"test_command": cmd, "state": {**plan.state, "scope": found[-1]}}, deep=True)

    def targeted_plan(self, plan: PolyPlan, ids: list[str]) -> PolyPlan | None:
        """`plan` running only the tests `ids` (``pkg.Class#method``, ``pkg.Outer$Inner#method``;
        a targeted rerun, `agents.adaptive`): the plan's Maven command (same modules, flags,
        reports) with a Surefire ``-Dtest`` of simple class names, as the plan's own selection
        (``**/Class.java``). A class is ``Class``; a nested class -- a FAIL_TO_PASS test in a
        JUnit 5 ``@Nested`` class or a JUnit 4 static nested one (``Enclosed``) -- is
        ``Outer*``: the top-level class and every class whose name starts with it, its nested
        classes at any depth among them (measured on 2.12.4 to 3.6.1: ``Outer$Inner#m`` runs
        nothing on 3.6.0-M1, ``Outer`` alone not the @Nested classes on 2.22.2 and 3.0.0-M5,
        SUREFIRE-1633; JUnit 4's nested classes then run twice, through ``Enclosed`` and as
        classes of their own, under one id). The selection is
        ``-Dtest=Class#m1+m2,Outer*#m3`` (a parameterised invocation ``m(int)[2]`` selects its
        method) when the plan's modules declare a Surefire that takes method lists
        (`surefire_lists_methods`) or there is one class and one method (every version since
        2.7.3), else the classes alone, ``-Dtest=Class,Outer*`` (a superset: every version).
        None for an id not of these forms (``Outer$1#m``, a class id alone) and for a plan made
        without the template or with another test command (Ant, an LLM's): the rerun is then
        full."""
        from envpool.quoting import shell_word

        rec = plan.state.get("targeted") or {}
        if not ids or plan.test_command not in (rec.get("for") or []) or TARGETS_MARK not in rec.get("template", ""):
            return None
        methods: dict[str, list[str]] = {}
        for i in ids:
            m = _TARGET_ID.match(i)
            if m is None:
                return None
            ms = methods.setdefault(m.group(1) + ("*" if m.group(2) else ""), [])
            if m.group(3) not in ms:
                ms.append(m.group(3))
        if rec.get("method_lists") or sum(map(len, methods.values())) == 1:
            sel = ",".join(f"{c}#{'+'.join(ms)}" for c, ms in sorted(methods.items()))
        else:
            sel = ",".join(sorted(methods))
        cmd = rec["template"].replace(TARGETS_MARK, f"-Dtest={shell_word(sel)} ", 1)
        return plan.with_test(TestSpec(name=f"{plan.state.get('test_name', 'touched')}:targeted", test_command=cmd,
                                       parser=plan.parser, report_path=plan.report_path,
                                       parser_options=dict(plan.parser_options), test_files=list(plan.test_files)))

    def snapshot_env(self, plan: PolyPlan) -> dict[str, str]:
        """Runs from a Maven compile-once snapshot (`build_command`): ``MAVEN_OPTS`` gets
        ``-Dmaven.compiler.useIncrementalCompilation=false``, so maven-compiler-plugin compiles
        only stale sources instead of a whole module when it sees a change. Before 3.10
        (``createMissingPackageInfoClass``, MCOMPILER-205) it sees one in every build of a module
        with a ``package-info.java`` that compiles to no class, recompiles the module and then its
        test classes (gson's 3.0: every run recompiled both). The snapshot's build did the full
        compile after the side's patches, so stale-only is exact there; the row's test command
        (full incremental detection) is unchanged. Empty when the plan has no build command."""
        if self.build_command(plan) is None:
            return {}
        opts = f"{plan.env.get('MAVEN_OPTS', '')} -Dmaven.compiler.useIncrementalCompilation=false"
        return {"MAVEN_OPTS": opts.strip()}

    def portable_paths(self, plan: PolyPlan) -> list[str]:
        """Folders whose content does not depend on the toolchain's version (`agents.seed`):
        the local Maven repository (downloaded artifacts and plugins)."""
        return ["/root/.m2/repository"]

    @staticmethod
    def _stand_ins(tree: GitTree, reactor: MavenReactor) -> tuple[list[str], list[str], list[str]]:
        """(setup commands, substitutions, substitutes tried) for the out-of-tree SNAPSHOTs of
        the reactor's poms (`maven_ci.snapshot_sources`): each with a release on Maven Central
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
        """The Ant route's plan (`agents.ecosystems.java.ant_build`, whose docstring says what runs).
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
        classes = ant.touched_test_classes(touched)
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
        stand-in for its SNAPSHOT (`agents.ecosystems.java.maven_ci`): install it. Else None."""
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

