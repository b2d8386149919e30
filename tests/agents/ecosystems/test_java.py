"""Java analysis and plan decisions (no Docker): JDK choice from language levels, Gradle wrappers,
pins, CI and the commit's era; the Maven reactor and the module of a touched test; the plan's
commands; Gradle-only builds refused early; repairs."""

from __future__ import annotations

import os
import subprocess
from functools import partial
from datetime import date

import pytest

from agents.models import Instance
from agents.ecosystems.runs import TestRun
from envpool.testrun.status import TestRunReport
from agents.ecosystems import java as J
from envpool.errors import EnvBuildError
from envpool.fake_images import FakeImageStore
from envpool.images import ImageConfig
from envpool.toolchains import java_image as jtc
from tests.agents.ecosystems.conftest import make_tree as _make_tree

make_tree = partial(_make_tree, when="2022-03-01T12:00:00+00:00")  # the commit date the JDK era reads

ALL = [8, 11, 17, 21]


def pom(body: str = "", parent: str = "", modules: list[str] | None = None, artifact: str = "app") -> str:
    mods = "".join(f"<module>{m}</module>" for m in modules or [])
    return (f'<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>{parent}'
            f"<groupId>com.acme</groupId><artifactId>{artifact}</artifactId><version>1.0</version>"
            f"{'<packaging>pom</packaging><modules>' + mods + '</modules>' if mods else ''}{body}</project>")


PARENT = "<parent><groupId>com.acme</groupId><artifactId>parent</artifactId><version>1.0</version></parent>"
COMPILER = ("<build><pluginManagement><plugins><plugin><artifactId>maven-compiler-plugin</artifactId>"
            "<configuration><source>${java.version}</source><target>${java.version}</target></configuration>"
            "</plugin></plugins></pluginManagement></build>")


# ---------------------------------------------------------------- JDK choice


def test_gradle_6_wrapper_with_jdk_17_available_gets_a_jdk_gradle_6_runs_on():
    facts = J.JavaFacts(gradle="6.8.3", commit_date=date(2022, 6, 1))  # era LTS would be 17
    jdk, notes = J.choose_jdk(facts, [17, 11, 21])
    assert jdk == 11
    assert any("Gradle 6.8.3" in n for n in notes)


def test_gradle_6_wrapper_with_only_newer_jdks_is_a_clear_error():
    with pytest.raises(EnvBuildError, match="Gradle 6.0"):
        J.choose_jdk(J.JavaFacts(gradle="6.0"), [17, 21])


@pytest.mark.parametrize("gradle,expected", [("4.10.3", 8), ("5.6.4", 11), ("7.3", 17), ("7.6.1", 17), ("8.5", 21)])
def test_gradle_versions_run_on_the_newest_fitting_jdk_of_a_recent_era(gradle, expected):
    assert J.choose_jdk(J.JavaFacts(gradle=gradle, commit_date=date(2025, 1, 1)), ALL)[0] == expected


def test_source_1_6_needs_a_jdk_that_still_compiles_it():
    # javac 17 rejects 6 (JEP 182): only 8 and 11 remain; a 2017 commit gets 8
    assert J.choose_jdk(J.JavaFacts(levels=[6], commit_date=date(2017, 2, 8)), ALL)[0] == 8
    # even in a later era the level forbids 17/21
    assert J.choose_jdk(J.JavaFacts(levels=[6], commit_date=date(2024, 1, 1)), ALL)[0] == 11


def test_source_1_5_leaves_only_jdk_8():
    assert J.choose_jdk(J.JavaFacts(levels=[5], commit_date=date(2024, 1, 1)), ALL)[0] == 8
    with pytest.raises(EnvBuildError, match="language levels"):
        J.choose_jdk(J.JavaFacts(levels=[5]), [11, 17])


def test_release_17_is_a_floor_and_the_era_a_ceiling():
    assert J.choose_jdk(J.JavaFacts(levels=[17], commit_date=date(2022, 1, 1)), ALL)[0] == 17
    assert J.choose_jdk(J.JavaFacts(levels=[8], commit_date=date(2019, 5, 1)), ALL)[0] == 11
    assert J.choose_jdk(J.JavaFacts(levels=[21], commit_date=date(2019, 5, 1)), ALL)[0] == 21


def test_ci_jdks_win_over_the_era_and_a_pin_wins_over_ci():
    facts = J.JavaFacts(levels=[8], ci=[8, 9, 10, 11, 12, 17, 18], commit_date=date(2024, 8, 20))
    assert J.choose_jdk(facts, ALL)[0] == 17  # newest CI JDK not newer than the era LTS (21)
    facts.pinned, facts.pinned_from = 11, ".sdkmanrc"
    jdk, notes = J.choose_jdk(facts, ALL)
    assert jdk == 11 and any(".sdkmanrc" in n for n in notes)


def test_jdk_major_reads_the_usual_spellings():
    assert [J.jdk_major(s) for s in ("1.8", "11.0.2-open", "oraclejdk8", "temurin-17.0.1", "17", None, "x")] == \
        [8, 11, 8, 17, 17, None, None]


# ---------------------------------------------------------------- analysis of a tree


def test_reactor_resolves_levels_through_the_parent_and_finds_the_module(tmp_path):
    tree = make_tree(tmp_path, {
        "pom.xml": pom("<properties><java.version>1.6</java.version></properties>" + COMPILER,
                       modules=["core", "core-testing"], artifact="parent"),
        "core/pom.xml": pom(parent=PARENT, artifact="core"),
        "core/src/main/java/com/acme/Calc.java": "package com.acme; public class Calc {}",
        "core-testing/pom.xml": pom(parent=PARENT, artifact="core-testing"),
        "core-testing/src/test/java/com/acme/CalcTest.java": "",
        ".travis.yml": "language: java\njdk:\n  - oraclejdk7\n  - oraclejdk8\n",
    }, when="2017-02-08T12:00:00+00:00")
    rx = J.maven_reactor(tree, near=["core-testing/src/test/java/com/acme/CalcTest.java"])
    assert rx.root == "" and rx.reactor == {"", "core", "core-testing"}
    assert rx.levels() == [6, 6]
    assert rx.module_of("core-testing/src/test/java/com/acme/CalcTest.java") == "core-testing"
    facts = J.java_facts(tree, rx)
    assert facts.ci == [7, 8] and facts.commit_date == date(2017, 2, 8)


def test_pins_and_github_matrix_are_read(tmp_path):
    tree = make_tree(tmp_path, {
        "pom.xml": pom("<properties><maven.compiler.release>11</maven.compiler.release></properties>"),
        ".sdkmanrc": "java=11.0.20-tem\n",
        ".github/workflows/ci.yml": "jobs:\n  t:\n    strategy:\n      matrix:\n        java: [11, 17]\n"
                                    "    steps:\n      - uses: actions/setup-java@v4\n        with:\n"
                                    "          java-version: ${{ matrix.java }}\n",
    })
    facts = J.java_facts(tree, J.maven_reactor(tree))
    assert (facts.levels, facts.pinned, facts.pinned_from, facts.ci) == ([11], 11, ".sdkmanrc", [11, 17])


def test_touched_test_sources_map_to_surefire_classes():
    got = J.test_classes(["m/src/test/java/a/FooTest.java", "m/src/test/java/a/TestUtil.java",
                          "m/src/test/java/a/Helper.java", "m/src/test/resources/x.json", "m/src/main/java/a/B.java",
                          "m/src/test/kotlin/a/BarTests.kt"])
    assert got == {"m/src/test/java/a/FooTest.java": ["FooTest"], "m/src/test/java/a/TestUtil.java": ["TestUtil"],
                   "m/src/test/java/a/Helper.java": [], "m/src/test/kotlin/a/BarTests.kt": ["BarTests"]}


# ---------------------------------------------------------------- plan


@pytest.fixture
def fake_image(image_store):
    """The JDK majors of the Java toolchain images the plans make, in a fake image store."""
    return JdksBuilt(image_store)


class JdksBuilt:
    """The JDK majors (strings) of the `swemint/java:<major>-...` images `store` made, in order;
    compares equal to a list of them."""

    def __init__(self, store):
        self.store = store

    def majors(self) -> list[str]:
        return [tag.split(":", 1)[1].split("-", 1)[0] for _, tag, _, _ in self.store.built
                if tag.startswith("swemint/java:")]

    def __eq__(self, other) -> bool:
        return self.majors() == other

    def __repr__(self) -> str:
        return repr(self.majors())


def instance(touched: str) -> Instance:
    return Instance(instance_id="acme__calc-1", repo="acme/calc", base_commit="0" * 40, patch="x",
                    test_patch=f"diff --git a/{touched} b/{touched}\n", language="java")


def test_multi_module_plan_runs_the_module_offline_with_its_upstream_modules(tmp_path, fake_image):
    test = "core-testing/src/test/java/com/acme/CalcTest.java"
    tree = make_tree(tmp_path, {
        "pom.xml": pom("<properties><java.version>1.8</java.version></properties>" + COMPILER,
                       modules=["core", "core-testing"], artifact="parent"),
        "core/pom.xml": pom(parent=PARENT, artifact="core"),
        "core-testing/pom.xml": pom(parent=PARENT, artifact="core-testing"),
        test: "",
        "core-testing/src/main/java/com/acme/Big.java": "x" * 3000,
        "core/src/main/java/com/acme/Other.java": "x" * 5000,  # upstream: not counted
    }, when="2024-08-20T08:00:00+00:00")
    eco = J.ECOSYSTEM
    assert eco.detect(tree, "java") == 10
    plan = eco.plan(tree, instance(test), [test], ImageConfig(route="debootstrap"))
    assert fake_image == ["21"]  # level 8, no CI, 2024 era -> 21
    assert plan.parser == "java_junit" and plan.report_path == J.REPORT
    assert "mvn -o " in plan.test_command and "-pl core-testing -am" in plan.test_command
    assert "-Dtest=CalcTest" in plan.test_command and "-Dsurefire.failIfNoSpecifiedTests=false" in plan.test_command
    assert "surefire-reports/TEST-*.xml" in plan.test_command and f"> {J.REPORT}" in plan.test_command
    # per-test limits as bash expands them (a doubled brace was `bad substitution` in every setup step)
    assert "-Dsurefire.timeout=$((${SWEMINT_TEST_TIMEOUT:-120}*5)) " in plan.test_command
    assert "-Djunit.jupiter.execution.timeout.default=${SWEMINT_TEST_TIMEOUT:-120}s " in plan.test_command
    assert all("{{" not in c for c in [plan.test_command, *plan.setup_commands])
    # compile once: the same modules with their test sources, offline, no test run
    assert J.ECOSYSTEM.build_command(plan).startswith("mvn -o ") and "-pl core-testing -am" in \
        J.ECOSYSTEM.build_command(plan) and " test-compile" in J.ECOSYSTEM.build_command(plan)
    # the touched module's sources measured for verify.compile_once_min_source_kb
    from agents.verification import worth_compiling_once
    assert plan.state["compiled_source_kb"] == 2
    assert not worth_compiling_once(plan, 2048) and worth_compiling_once(plan, 2) and worth_compiling_once(plan, 0)
    assert plan.setup_commands[0] == jtc.truststore_command()
    assert "mvn -B" in plan.setup_commands[1] and "mvn -o " in plan.setup_commands[2]
    assert "trustStore=" in plan.env["MAVEN_OPTS"] and plan.env["JAVA_HOME"] == jtc.JAVA_HOME
    assert plan.test_files == [test]


def test_single_module_plan_has_no_module_selection(tmp_path, fake_image):
    test = "src/test/java/com/acme/CalcTest.java"
    tree = make_tree(tmp_path, {"pom.xml": pom(), test: ""})
    plan = J.ECOSYSTEM.plan(tree, instance(test), [test], ImageConfig(route="debootstrap"))
    assert "-pl" not in plan.test_command and "-Dtest=CalcTest" in plan.test_command


def test_gradle_only_build_is_refused_early_naming_the_cause(tmp_path, fake_image):
    test = "src/test/java/com/acme/CalcTest.java"
    tree = make_tree(tmp_path, {
        "build.gradle": "apply plugin: 'java'\n",
        "gradle/wrapper/gradle-wrapper.properties": "distributionUrl=https\\://example.invalid/gradle-6.8.3-bin.zip\n",
        test: "",
    })
    assert J.ECOSYSTEM.detect(tree, None) == 9
    with pytest.raises(EnvBuildError, match=r"Gradle build \(wrapper 6.8.3\); it would run on JDK 11"):
        J.ECOSYSTEM.plan(tree, instance(test), [test], ImageConfig(route="debootstrap"))
    assert fake_image == []


def test_a_tree_without_java_is_not_claimed(tmp_path):
    tree = make_tree(tmp_path, {"setup.py": "", "tests/test_x.py": ""})
    assert J.ECOSYSTEM.detect(tree, "python") == 0


def test_repair_reruns_an_offline_step_online_once():
    eco = J.ECOSYSTEM
    cmd = "mvn -o -B test"
    out = "[ERROR] Cannot access central (https://x) in offline mode and the artifact a:b:1 has not been downloaded"
    fix = eco.repair(None, cmd, out, set())
    assert fix == ["mvn -B test"]
    assert eco.repair(None, cmd, out, {"mvn -B test"}) is None
    assert eco.repair(None, "mvn -B test", "BUILD FAILURE", set()) is None


def test_warm_up_runs_an_existing_class_when_the_touched_test_is_new(tmp_path, fake_image):
    # Surefire resolves its provider only when a test runs: a new test class alone would leave
    # the offline test run without it (google__gson-1014)
    new = "gson/src/test/java/com/g/internal/bind/JsonTreeReaderTest.java"
    tree = make_tree(tmp_path, {
        "pom.xml": pom(modules=["gson"], artifact="parent"),
        "gson/pom.xml": pom(parent=PARENT, artifact="gson"),
        "gson/src/test/java/com/g/internal/bind/JsonElementReaderTest.java": "",
        "gson/src/test/java/com/g/GsonTest.java": "",
        "gson/src/test/java/com/g/internal/bind/Helper.java": "",
    })
    rx = J.maven_reactor(tree, near=[new])
    assert J.warm_up_classes(tree, J.test_classes([new]), rx.module_of) == ["JsonElementReaderTest"]
    plan = J.ECOSYSTEM.plan(tree, instance(new), [new], ImageConfig(route="debootstrap"))
    assert "-Dtest=JsonElementReaderTest " in plan.setup_commands[1]
    assert "-Dtest=JsonTreeReaderTest " in plan.test_command
    # the offline proof runs the class that exists at base (a pom with failIfNoTests fails on a
    # selection of new classes only: javaparser__javaparser-4561)
    assert "mvn -o " in plan.setup_commands[-1] and "-Dtest=JsonElementReaderTest " in plan.setup_commands[-1]


@pytest.mark.parametrize("requested,version,substituted", [("1.8", "8", False), ("9", "11", True),
                                                           ("17", "17", False), (None, "17", False)])
def test_ensure_image_gives_the_smallest_jdk_at_least_requested(requested, version, substituted, image_store):
    choice = jtc.ensure_image(requested, ImageConfig(route="debootstrap"))
    assert (choice.version, bool(choice.substitutions), choice.route) == (version, substituted, "debootstrap")
    assert choice.image.startswith(f"swemint/java:{version}-")


def test_ensure_image_refuses_a_jdk_newer_than_any_here():
    with pytest.raises(EnvBuildError, match="JDK 26 requested"):
        jtc.ensure_image("26", ImageConfig(route="debootstrap"), engine=FakeImageStore())


def test_official_images_keep_their_own_java_home():
    assert jtc.java_env("official")["JAVA_HOME"] == "/opt/java/openjdk"
    assert jtc.java_env("debootstrap")["JAVA_HOME"] == jtc.JAVA_HOME
    assert "-Djavax.net.ssl.trustStore=" + jtc.TRUSTSTORE in jtc.java_env()["MAVEN_OPTS"]


def test_repair_raises_a_refused_default_level_through_maven_config(tmp_path):
    out = "[ERROR] COMPILATION ERROR :\n[ERROR] Source option 5 is no longer supported. Use 6 or later.\n"
    (fix,) = J.ECOSYSTEM.repair(None, "cd sub && mvn -B test", out, set())
    root = tmp_path / "sub"
    root.mkdir()
    subprocess.run(["bash", "-c", fix], cwd=tmp_path, check=True)
    assert (root / ".mvn/maven.config").read_text().split() == ["-Dmaven.compiler.source=8",
                                                                "-Dmaven.compiler.target=8"]
    assert J.ECOSYSTEM.repair(None, "cd sub && mvn -B test", out, {fix}) is None


def test_the_first_before_run_probes_the_scope_and_later_runs_run_it(tmp_path, fake_image):
    """No probe at setup: the test command is the scope probe (the touched modules in full under
    the bound, else the touched classes); `scoped_plan` pins the scope a run printed."""
    test = "core/src/test/java/com/acme/CalcTest.java"
    tree = make_tree(tmp_path, {"pom.xml": pom(modules=["core"], artifact="parent"),
                                "core/pom.xml": pom(parent=PARENT, artifact="core"), test: ""})
    plan = J.ECOSYSTEM.plan(tree, instance(test), [test], ImageConfig(route="debootstrap"))
    bound = J.recipe()["full_module_seconds"]
    # setup: truststore, the online warm-up, the offline proof -- no selection probe
    assert len(plan.setup_commands) == 3 and not any("bash -c" in c for c in plan.setup_commands)
    assert plan.setup_commands[2].startswith("mvn -o ") and "-Dtest=CalcTest " in plan.setup_commands[2]
    assert f"timeout -k 30 {bound} bash -c" in plan.test_command and J.SCOPE_LINE in plan.test_command
    runs = plan.state["scopes"]["runs"]
    assert set(runs) == {"modules", "touched"} and plan.state["scopes"]["probe"] == plan.test_command
    assert "-Dtest=" not in runs["modules"].split("| tee")[0] and "-Dtest=CalcTest " in runs["touched"]
    assert plan.state["test_name"] == "modules"
    (alt,) = plan.test_alternatives
    assert alt.name == "touched" and "-Dtest=CalcTest " in alt.test_command and J.SCOPE_LINE not in alt.test_command
    # the scope a run printed (its last scope line) becomes the test command; compile once and
    # targeted reruns still apply to it
    run = TestRun(report=TestRunReport(statuses={}), output_tail=f"x\n[INFO] ---\x1b[0m\x1b[0m{J.SCOPE_LINE}modules\n")
    pinned = J.ECOSYSTEM.scoped_plan(plan, run)
    assert pinned.test_command == runs["modules"] and pinned.state["scope"] == "modules"
    assert J.ECOSYSTEM.build_command(pinned) == J.ECOSYSTEM.build_command(plan)
    assert J.ECOSYSTEM.targeted_plan(pinned, ["com.acme.CalcTest#adds"]) is not None
    assert J.ECOSYSTEM.scoped_plan(pinned, run) is None  # pinned once
    assert J.ECOSYSTEM.scoped_plan(plan, TestRun(report=TestRunReport(statuses={}), output_tail="cut off")) is None
    assert J.ECOSYSTEM.scoped_plan(plan.with_test(alt), run) is None


def _probe_in_bash(tmp_path, exits: dict[str, str], bound: int = 2) -> tuple[str, list[str]]:
    """Run `J.scope_probe` over a fake ``mvn`` in bash: `exits` maps a scope's marker argument
    (``full``, ``pkg``, ``touched``) to the shell its mvn runs (``exit 0``, ``sleep 9``, a compile
    failure). Returns (the output, the scopes whose mvn ran, in order)."""
    root = tmp_path / f"probe{len(list(tmp_path.glob('probe*')))}"
    (root / "bin").mkdir(parents=True)
    (root / "testbed").mkdir()
    body = "".join(f'if [ "$1" = {k} ]; then echo "$1" >> {root}/ran; {v}; fi\n' for k, v in exits.items())
    (root / "bin" / "mvn").write_text("#!/bin/bash\n" + body)
    (root / "bin" / "mvn").chmod(0o755)
    probe = J.scope_probe([("modules", "mvn full"), ("packages", "mvn pkg")], "mvn touched", bound)
    probe = probe.replace("/tmp/swemint", str(root / "t")).replace("cd /testbed", f"cd {root / 'testbed'}")
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, cwd=root / "testbed",
                         env={**os.environ, "PATH": f"{root / 'bin'}:{os.environ['PATH']}"})
    ran = (root / "ran").read_text().split() if (root / "ran").exists() else []
    return out.stdout, ran


def test_the_scope_probe_runs_the_widest_selection_that_fits(tmp_path):
    compile_failed = "echo '[ERROR] COMPILATION ERROR : '; exit 1"
    out, ran = _probe_in_bash(tmp_path, {"full": "exit 0", "pkg": "exit 0", "touched": "exit 0"})
    assert ran == ["full"] and out.strip().endswith(J.SCOPE_LINE + "modules")
    out, ran = _probe_in_bash(tmp_path, {"full": "sleep 9", "pkg": "exit 0", "touched": "exit 0"})
    assert ran == ["full", "pkg"] and "exit 124" in out and out.strip().endswith(J.SCOPE_LINE + "packages")
    out, ran = _probe_in_bash(tmp_path, {"full": "sleep 9", "pkg": "exit 1", "touched": "exit 3"})
    assert ran == ["full", "pkg", "touched"] and out.strip().endswith(J.SCOPE_LINE + "touched")
    # a compile failure (the test_patch's tests before the fix) says nothing about the time: the
    # widest scope stays, as the probe at base decided before
    out, ran = _probe_in_bash(tmp_path, {"full": compile_failed, "pkg": "exit 0", "touched": "exit 0"})
    assert ran == ["full"] and "COMPILATION ERROR" in out and out.strip().endswith(J.SCOPE_LINE + "modules")


def test_over_the_bound_the_touched_packages_test_classes_are_probed_then_the_touched_classes(tmp_path, fake_image):
    test = "core/src/test/java/com/acme/CalcTest.java"
    files = {"pom.xml": pom(modules=["core"], artifact="parent"), "core/pom.xml": pom(parent=PARENT, artifact="core"),
             test: "", "core/src/test/java/com/acme/NodeTest.java": "",
             "core/src/test/java/com/acme/Helper.java": "",  # not a test class by Surefire's includes
             "core/src/test/java/com/acme/ServerIT.java": "",  # Failsafe's, not Surefire's
             "core/src/test/java/com/acme/deep/DeepTest.java": "",  # a subpackage: not the package
             "other/src/test/java/com/acme/OtherTest.java": ""}  # same package name, another tree
    tree = make_tree(tmp_path, files)
    reactor = J.maven_reactor(tree, near=[test])
    assert J.package_classes(tree, J.test_classes([test]), reactor.module_of) == ["CalcTest", "NodeTest"]
    plan = J.ECOSYSTEM.plan(tree, instance(test), [test], ImageConfig(route="debootstrap"))
    runs = plan.state["scopes"]["runs"]
    assert list(runs) == ["modules", "packages", "touched"]
    assert "-Dtest=CalcTest,NodeTest " in runs["packages"] and "-Dtest=CalcTest " in runs["touched"]
    assert plan.test_command.count(f"timeout -k 30 {J.recipe()['full_module_seconds']} bash -c") == 2
    assert any("2 test classes" in n for n in plan.notes)


def _diff(path: str, minus: list[str], plus: list[str]) -> str:
    body = "".join(f"-{x}\n" for x in minus) + "".join(f"+{x}\n" for x in plus)
    return (f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -1,{len(minus)} +1,{len(plus)} @@\n{body}")


@pytest.mark.parametrize("fix, test, expected", [
    (["    public static int mul(int a, int b) { return a * b; }"], ["    assertEquals(6, Calc.mul(2, 3));"], ["mul"]),
    (["  UPPER_CASE_WITH_UNDERSCORES() {"], ["    policy(FieldNamingPolicy.UPPER_CASE_WITH_UNDERSCORES);"],
     ["UPPER_CASE_WITH_UNDERSCORES"]),
    (["public final class Splitter {"], ["    Splitter s = null;"], ["Splitter"]),
    (["    private final List<Node> nodes = new ArrayList<>();"], ["    List<Node> nodes = root.nodes();"], []),
    (["        return compute(a);"], ["    compute(1);"], []),  # a call, not a declaration
    (["    public int add(int a, int b) { return a + b; }"], ["    assertEquals(5, Calc.add(2, 3));"], ["add"]),
])
def test_tests_that_use_what_the_patch_declares_keep_the_touched_classes_only(fix, test, expected):
    patch = _diff("src/main/java/a/Calc.java", [], fix)
    test_patch = _diff("src/test/java/a/CalcTest.java", [], test)
    assert J.fix_api_in_tests(patch, test_patch) == expected


def test_a_test_patch_needing_the_fix_to_compile_runs_only_the_touched_classes(tmp_path, fake_image):
    test = "src/test/java/com/acme/CalcTest.java"
    tree = make_tree(tmp_path, {"pom.xml": pom(), test: ""})
    inst = instance(test).model_copy(update={
        "patch": _diff("src/main/java/com/acme/Calc.java", [], ["  public static int mul(int a, int b) { return 0; }"]),
        "test_patch": _diff(test, [], ["    assertEquals(6, Calc.mul(2, 3));"])})
    plan = J.ECOSYSTEM.plan(tree, inst, [test], ImageConfig(route="debootstrap"))
    assert J.SCOPE_LINE not in plan.test_command and "-Dtest=CalcTest " in plan.test_command
    assert not plan.state.get("scopes") and plan.test_alternatives == []
    assert any("['mul']" in n for n in plan.notes)


def surefire(version: str, where: str = "plugins") -> str:
    """A pom's ``<build>`` declaring maven-surefire-plugin `version` in `where` (``plugins`` or
    ``pluginManagement``)."""
    plugin = (f"<plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-surefire-plugin</artifactId>"
              f"<version>{version}</version></plugin>")
    inner = f"<plugins>{plugin}</plugins>"
    return f"<build>{inner if where == 'plugins' else f'<pluginManagement>{inner}</pluginManagement>'}</build>"


def targeted_tree(tmp_path, root_body: str = ""):
    """(tree, plan) of a two-module project (the touched test in `core`) whose root pom has
    `root_body`."""
    test = "core/src/test/java/com/acme/CalcTest.java"
    tree = make_tree(tmp_path, {"pom.xml": pom(root_body, modules=["core"], artifact="parent"),
                                "core/pom.xml": pom(parent=PARENT, artifact="core"), test: ""})
    return tree, J.ECOSYSTEM.plan(tree, instance(test), [test], ImageConfig(route="debootstrap"))


def test_a_targeted_rerun_selects_the_target_methods_with_surefires_dtest(tmp_path, fake_image):
    """`targeted_plan` on a Surefire that takes method lists (the root pom pins 2.22.2 through a
    property): the touched run's Maven command (modules, limits, reports; no scope probe) with
    ``-Dtest=Class#m1+m2,...`` of simple class names, a parameterised invocation by its method;
    None for an id of another form or another test command."""
    tree, plan = targeted_tree(tmp_path, "<properties><surefire.version>2.22.2</surefire.version></properties>"
                                         + surefire("${surefire.version}", "pluginManagement"))
    assert plan.state["targeted"]["method_lists"] is True
    ids = ["com.acme.CalcTest#adds", "com.acme.CalcTest#param(int)[2]", "com.acme.CalcTest#adds",
           "com.acme.util.OtherTest#works"]
    t = J.ECOSYSTEM.targeted_plan(plan, ids)
    assert t is not None and t.parser == "java_junit" and t.report_path == J.REPORT
    assert "-Dtest='CalcTest#adds+param,OtherTest#works' -fae " in t.test_command
    assert J.SCOPE_LINE not in t.test_command and "-pl core -am" in t.test_command
    assert t.test_command.count("-Dtest=") == 1 and "surefire-reports/TEST-*.xml" in t.test_command
    assert "mvn -o " in t.test_command and "-Dsurefire.failIfNoSpecifiedTests=false" in t.test_command
    # the touched alternative is targeted the same way; a class id alone, an anonymous class not
    alt = plan.with_test(plan.test_alternatives[0])
    assert J.ECOSYSTEM.targeted_plan(alt, ids[:1]).test_command == \
        J.ECOSYSTEM.targeted_plan(plan, ids[:1]).test_command
    assert J.ECOSYSTEM.targeted_plan(plan, ["com.acme.CalcTest"]) is None
    assert J.ECOSYSTEM.targeted_plan(plan, ["com.acme.CalcTest$1#adds"]) is None
    assert J.ECOSYSTEM.targeted_plan(plan.model_copy(update={"test_command": "mvn test"}), ids) is None


def test_a_fail_to_pass_test_in_a_nested_class_is_selected_with_its_top_level_class_and_a_star(tmp_path, fake_image):
    """A FAIL_TO_PASS test in a nested test class (JUnit 5 @Nested, JUnit 4 Enclosed; id
    ``pkg.Outer$Inner#m``, javaparser-4538's ``NodeTest$PostOrderIteratorTest#rootHasNoChild``) is
    ``Outer*#m``: on every Surefire measured (2.12.4 to 3.6.1) that runs it, and `m` of the
    other classes named ``Outer...``; ``Outer$Inner#m`` ran nothing on 3.6.0-M1, ``Outer`` not the
    @Nested classes on 2.22.2 and 3.0.0-M5. With method lists, merged with the other targets;
    without, alone it keeps its method (one class and one method: every version)."""
    nested = "com.github.javaparser.ast.NodeTest$PostOrderIteratorTest#rootHasNoChild"
    _, plan = targeted_tree(tmp_path, surefire("3.2.5"))
    t = J.ECOSYSTEM.targeted_plan(plan, [nested])
    assert "-Dtest='NodeTest*#rootHasNoChild' -fae " in t.test_command
    deep = ["com.acme.NodeTest$A$B#deep", "com.acme.NodeTest$C#other", nested, "com.acme.NodeTest#top",
            "com.acme.CalcTest#adds"]
    assert "-Dtest='CalcTest#adds,NodeTest#top,NodeTest*#deep+other+rootHasNoChild' -fae " in \
        J.ECOSYSTEM.targeted_plan(plan, deep).test_command
    _, bare = targeted_tree(tmp_path / "bare")  # no Surefire declared: Maven's default (2.12.4 on Maven 3.8)
    assert bare.state["targeted"]["method_lists"] is False
    assert "-Dtest='NodeTest*#rootHasNoChild' -fae " in J.ECOSYSTEM.targeted_plan(bare, [nested]).test_command


def test_without_method_lists_several_targets_select_their_classes(tmp_path, fake_image):
    """Where Surefire may not take method lists (`surefire_lists_methods` False: no version
    declared in the tree, or one before 2.19 -- 2.12.4 fails every selected class on
    ``A#m,B#n`` and on ``A#m1+m2``), more than one target selects their classes,
    ``-Dtest=Class,Outer*`` (every version); one target keeps ``Class#method``."""
    for body in ("", surefire("2.12.4"), f"<profiles><profile><id>old</id>{surefire('2.18.1')}</profile></profiles>"
                 + surefire("2.22.2")):
        _, plan = targeted_tree(tmp_path / str(len(body)), body)
        assert plan.state["targeted"]["method_lists"] is False, body
        t = J.ECOSYSTEM.targeted_plan(plan, ["com.acme.CalcTest#adds", "com.acme.CalcTest#subs",
                                             "com.acme.NodeTest$Inner#rootHasNoChild"])
        assert "-Dtest='CalcTest,NodeTest*' -fae " in t.test_command
        assert "-Dtest='CalcTest#adds' -fae " in J.ECOSYSTEM.targeted_plan(plan, ["com.acme.CalcTest#adds"]).test_command


def test_method_lists_need_a_declared_surefire_of_2_19_or_later_in_every_module_with_tests(tmp_path):
    """`surefire_lists_methods`: the in-tree pom chain of each module declares
    maven-surefire-plugin outside profiles and every declared version (profiles too, properties
    resolved) is 2.19 or later."""
    tree = make_tree(tmp_path, {
        "pom.xml": pom("<properties><sf>3.0.0-M5</sf></properties>" + surefire("${sf}", "pluginManagement"),
                       modules=["a", "b", "c"], artifact="parent"),
        "a/pom.xml": pom(parent=PARENT, artifact="a"),
        "b/pom.xml": pom(surefire("${undefined.version}"), parent=PARENT, artifact="b"),
        "c/pom.xml": pom(f"<profiles><profile><id>x</id>{surefire('2.12.4')}</profile></profiles>", parent=PARENT,
                         artifact="c"),
        "a/src/test/java/ATest.java": "", "d/src/test/java/DTest.java": ""})
    reactor = J.maven_reactor(tree, ["a/src/test/java/ATest.java"])
    assert J.surefire_lists_methods(reactor, ["a"]) and J.surefire_lists_methods(reactor, [""])
    assert not J.surefire_lists_methods(reactor, ["a", "b"])  # a version that does not resolve
    assert not J.surefire_lists_methods(reactor, ["c"])  # a profile's 2.12.4
    assert not J.surefire_lists_methods(reactor, [])
    assert J.test_source_modules(tree, reactor) == {"a"}  # d has no pom
    assert reactor.surefire_pins("c") == (["2.12.4", "3.0.0-M5"], True)
