"""Java's Ant route: build.xml reading (imports, macros, test targets, selection, downloads),
CI targets, the plan, and the ``ant_junit`` parser (XML preferred, the plain console else)."""

from __future__ import annotations

import pytest

from agents.ecosystems import java as J
from agents.ecosystems.java import ant_build as A
from agents.models import Instance
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig
from envpool.testrun.outcome import TestStatus
from envpool.testrun.registry import get_parser
from envpool.toolchains import java_image as jtc
from tests.agents.ecosystems.conftest import make_tree

BUILD = """<project name="calc" default="dist" xmlns:ivy="antlib:org.apache.ivy.ant">
  <property name="test.includes" value="**/*Test.java"/>
  <import file="build/tests.xml"/>
  <target name="compile"><javac srcdir="src" destdir="out"/></target>
  <target name="dist" depends="compile"><jar destfile="calc.jar" basedir="out"/></target>
</project>"""
TESTS_XML = """<project name="calc.tests">
  <macrodef name="run-suite"><sequential>
    <junit fork="true"><formatter type="xml"/>
      <batchtest todir="reports"><fileset dir="test" includes="${test.includes}"/></batchtest>
    </junit></sequential></macrodef>
  <target name="deps"><get src="https://downloads.example.org/tool.jar" dest="lib/tool.jar"/></target>
  <target name="check" depends="compile, deps"><run-suite/></target>
  <target name="bench" depends="compile"><java classname="com.acme.Bench"/></target>
</project>"""


def test_build_xml_is_read_through_imports_and_macros(tmp_path):
    tree = make_tree(tmp_path, {"build.xml": BUILD, "build/tests.xml": TESTS_XML})
    build = A.ant_build(tree)
    assert build.files == ["build.xml", "build/tests.xml"] and build.ivy and build.default == "dist"
    check = build.targets["check"]
    assert check.runs_tests and check.xml_reports and check.select_props == ["test.includes"]
    assert check.depends == ["compile", "deps"] and check.file == "build/tests.xml"
    assert not build.targets["bench"].runs_tests and not build.targets["dist"].runs_tests
    assert build.downloads("check") == ["downloads.example.org"] and build.downloads("dist") == []
    assert A.test_target(build, []) == ("check", "runs tests")
    assert A.selection(build, "check", ["CalcTest", "MulTest"]) == {"test.includes": "**/CalcTest.*,**/MulTest.*"}
    assert A.selection(build, "check", []) == {}


def test_a_java_test_runner_counts_and_ci_targets_come_first(tmp_path):
    build_xml = """<project default="all">
      <target name="all"/>
      <target name="unit"><java classname="org.junit.runner.JUnitCore" fork="true"><arg value="a.BTest"/></java></target>
      <target name="test"><junitlauncher><test name="${testcase}"/></junitlauncher></target>
    </project>"""
    workflow = """jobs:
  t:
    strategy: {matrix: {goal: [unit, other]}}
    steps:
      - run: ant -noinput -Dx=1 ${{ matrix.goal }}
      - run: echo done && ant all
"""
    tree = make_tree(tmp_path, {"build.xml": build_xml, ".github/workflows/ci.yml": workflow})
    build = A.ant_build(tree)
    assert build.targets["unit"].runs_tests and build.targets["test"].select_props == ["testcase"]
    assert A.ci_ant_targets(tree) == ["unit", "all"]
    assert A.test_target(build, A.ci_ant_targets(tree)) == ("unit", "run by CI")
    assert A.test_target(build, ["all"]) == ("test", "named test")


def test_a_build_without_a_test_target_is_recognised_with_the_reason(tmp_path):
    tree = make_tree(tmp_path, {"build.xml": "<project default='x'><target name='x'><echo/></target></project>"})
    routes = J.ECOSYSTEM.routes(tree, "java")
    assert [(r.name, r.available) for r in routes] == [("ant", False)]
    assert "no target runs tests" in routes[0].reason
    assert A.ant_build(make_tree(tmp_path / "b", {"build.xml": "<project"})) is None


def test_the_ant_plan_installs_debian_ant_and_selects_the_touched_classes(tmp_path, image_store, monkeypatch):
    tree = make_tree(tmp_path, {"build.xml": BUILD, "build/tests.xml": TESTS_XML, "src/Calc.java": ""},
                     when="2022-01-01T00:00:00+00:00")
    touched = ["test/com/acme/CalcTest.java", "test/com/acme/Helper.java"]
    inst = Instance(instance_id="acme__calc-1", repo="acme/calc", base_commit="0" * 40, patch="x",
                    test_patch="", language="java")
    assert [r.name for r in J.ECOSYSTEM.routes(tree, "java")] == ["ant"]
    plan = J.ECOSYSTEM.plan(tree, inst, touched, ImageConfig(route="debootstrap"),
                            request=J.PlanRequest(route="ant"))
    assert plan.build == "ant" and plan.parser == "ant_junit" and plan.report_path == A.REPORT
    assert "ant ant-optional junit4 ivy" in plan.setup_commands[0]
    assert plan.setup_commands[1] == jtc.truststore_command()
    assert "-lib /usr/share/java/ivy.jar" in plan.setup_commands[2] and "'-Dtest.includes" not in plan.setup_commands[2]
    assert "'-Dtest.includes=**/CalcTest.*' check" in plan.test_command
    assert "TEST-*.xml" in plan.test_command and "trustStore" in plan.env["ANT_OPTS"]
    assert any("downloads.example.org" in n for n in plan.notes)


XML = b"""<?xml version="1.0"?><testsuite name="com.acme.CalcTest" tests="3">
<testcase classname="com.acme.CalcTest" name="testAdd"/>
<testcase classname="com.acme.CalcTest" name="testNeg"><failure message="x"/></testcase>
<testcase classname="com.acme.CalcTest" name="testMul"><error message="y"/></testcase>
</testsuite>"""
CONSOLE = """compile:
    [junit] Testsuite: com.acme.CalcTest
    [junit] Tests run: 3, Failures: 1, Errors: 1, Skipped: 0, Time elapsed: 0.02 sec
    [junit]
    [junit] Testcase: testAdd took 0.001 sec
    [junit] Testcase: testNeg took 0.01 sec
    [junit] \tFAILED
    [junit] expected:<-2> but was:<2>
    [junit] Testcase: testMul took 0 sec
    [junit] \tCaused an ERROR
BUILD SUCCESSFUL
"""


@pytest.mark.parametrize("raw", [XML, CONSOLE.encode()])
def test_ant_junit_reads_xml_and_the_plain_console_in_junit4_form(raw):
    rep = get_parser("ant_junit")(raw)
    assert rep.statuses == {"testAdd(com.acme.CalcTest)": TestStatus.PASSED,
                            "testNeg(com.acme.CalcTest)": TestStatus.FAILED,
                            "testMul(com.acme.CalcTest)": TestStatus.ERROR}
    assert rep.tests_ran


def test_ant_console_counts_are_cross_checked():
    text = CONSOLE.replace("Tests run: 3", "Tests run: 4")
    assert get_parser("ant_junit").check(text.encode())


def test_the_plan_refuses_a_tree_whose_build_xml_is_broken(tmp_path):
    tree = make_tree(tmp_path, {"build.xml": "<project"})
    inst = Instance(instance_id="acme__calc-1", repo="acme/calc", base_commit="0" * 40, patch="x",
                    test_patch="", language="java")
    with pytest.raises(EnvBuildError, match="not XML"):
        J.ECOSYSTEM.plan(tree, inst, ["test/ATest.java"], ImageConfig(), request=J.PlanRequest(route="ant"))


def test_a_failed_ant_setup_ends_with_its_cause_and_fails_unless_tests_ran(tmp_path):
    import subprocess

    log = ("Buildfile: /testbed/build.xml\n-ipp.download:\n      [get] Error getting https://projectlombok.org/x.jar\n"
           "\nBUILD FAILED\n/testbed/buildScripts/setup.ant.xml:160: java.net.UnknownHostException: projectlombok.org\n"
           + "\tat java.base/sun.nio.ch.NioSocketImpl.connect(NioSocketImpl.java:572)\n" * 30 + "Total time: 9 seconds\n")
    (tmp_path / "out.txt").write_text(log)
    failing = f"cat {tmp_path / 'out.txt'}; false"
    r = subprocess.run(["bash", "-c", A.setup_command(failing)], capture_output=True, text=True)
    assert r.returncode != 0
    tail = r.stdout[-300:]
    assert "UnknownHostException: projectlombok.org" in tail and "swemint: ant failed:" in tail
    tests_ran = "echo '    [junit] Tests run: 2, Failures: 1, Errors: 0'; false"
    assert subprocess.run(["bash", "-c", A.setup_command(tests_ran)], capture_output=True).returncode == 0
