"""Docker: a small Ant project (build.xml with a <junit> target, no pom.xml, no Gradle) that the
test writes mints end to end on the Ant route: Debian's ant and junit4, the touched test class
selected through the build's batchtest property, JUnit XML read by ``ant_junit``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import agents.ecosystems as polyglot
from agents.mint_config import MintConfig
from agents.minter import mint_instance
from tests.agents.ecosystems.conftest import make_instance, make_patches, make_repo
from tests.session import ENV_REPOSITORY, SESSION

pytestmark = [pytest.mark.docker, pytest.mark.slow]

BUILD = """<project name="calc" default="jar">
  <property name="test.includes" value="**/*Test.java"/>
  <target name="compile">
    <mkdir dir="out/main"/>
    <javac srcdir="src" destdir="out/main" includeantruntime="false" release="8"/>
  </target>
  <target name="compile-tests" depends="compile">
    <mkdir dir="out/test"/>
    <javac srcdir="test" destdir="out/test" includeantruntime="true" release="8" classpath="out/main"/>
  </target>
  <target name="jar" depends="compile"><jar destfile="out/calc.jar" basedir="out/main"/></target>
  <target name="test" depends="compile-tests">
    <mkdir dir="out/reports"/>
    <junit fork="true" printsummary="yes">
      <classpath><pathelement location="out/main"/><pathelement location="out/test"/></classpath>
      <formatter type="xml"/>
      <batchtest todir="out/reports"><fileset dir="test" includes="${test.includes}"/></batchtest>
    </junit>
  </target>
</project>
"""
WORKFLOW = """on: push
jobs:
  t:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/setup-java@v4
        with: {java-version: 17}
      - run: ant -noinput test
"""
CALC = ("package com.acme;\npublic class Calc {\n    public static int add(int a, int b) { return a - b; }\n"
        "    public static int neg(int a) { return -a; }\n}\n")
CALC_TEST = ("package com.acme;\nimport static org.junit.Assert.assertEquals;\nimport org.junit.Test;\n"
             "public class CalcTest {\n    @Test public void testNeg() { assertEquals(-2, Calc.neg(2)); }\n{extra}}\n")
OTHER_TEST = ("package com.acme;\nimport static org.junit.Assert.assertTrue;\nimport org.junit.Test;\n"
              "public class OtherTest {\n    @Test public void testTrue() { assertTrue(true); }\n}\n")
BASE = {"build.xml": BUILD, ".github/workflows/ci.yml": WORKFLOW, "src/com/acme/Calc.java": CALC,
        "test/com/acme/CalcTest.java": CALC_TEST.replace("{extra}", ""),
        "test/com/acme/OtherTest.java": OTHER_TEST}
TESTS = {"test/com/acme/CalcTest.java": CALC_TEST.replace(
    "{extra}", "    @Test public void testAdd() { assertEquals(5, Calc.add(2, 3)); }\n")}
FIX = {"src/com/acme/Calc.java": CALC.replace("a - b", "a + b")}


def test_an_ant_project_mints_on_the_ant_route_with_the_touched_class_selected(tmp_path, docker_client,
                                                                                  monkeypatch):
    monkeypatch.setattr(polyglot, "ECOSYSTEM_MODULES", ("java",))
    git_dir, base = make_repo(tmp_path, BASE)
    test_patch, patch = make_patches(git_dir, TESTS, FIX)
    mirror = tmp_path / "mirrors" / "acme+calc" / "repo"
    mirror.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(git_dir.parent), str(mirror)], check=True)
    inst = make_instance(base, "java", "2024-05-01T00:00:00Z", patch=patch, test_patch=test_patch)
    cfg = MintConfig(workdir=tmp_path / "work", run_id=f"test-java-ant-{SESSION}", image_repository=ENV_REPOSITORY)
    res = mint_instance(inst, mirror, cfg)
    try:
        assert res.outcome == "verified", (res.reason, Path(tmp_path / "work").as_posix())
        assert res.FAIL_TO_PASS == ["testAdd(com.acme.CalcTest)"]
        assert res.PASS_TO_PASS == ["testNeg(com.acme.CalcTest)"]  # OtherTest is not selected
        assert res.parser == "ant_junit" and "+ ant" in res.interpreter
        assert "'-Dtest.includes=**/CalcTest.*' test" in res.test_command
    finally:
        if res.image:
            docker_client.images.remove(res.image, force=True)
