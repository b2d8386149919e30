"""A two-module Maven project written by the test, minted end to end (real Docker, Maven Central).

Module `calc` holds the bug (``Calc.add`` subtracts) and `CalcTest`; module `mul` has only tests.
The test patch adds `CalcTest#testAdd` and `MulTest`, which calls ``Calc.mul`` that only the fix
adds, so `mul`'s tests do not compile before the fix: they must come out FAIL_TO_PASS (absent
before, never passed), `CalcTest#testAdd` too, and `CalcTest#testNeg` PASS_TO_PASS. The JDK is
pinned by `.sdkmanrc` (17: the bookworm image, shared with other runs).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import agents.ecosystems as polyglot
from agents.mint_config import MintConfig
from agents.minter import mint_instance
from agents.models import Instance
from tests.agents.ecosystems.conftest import make_instance, make_patches, make_repo
from tests.session import SESSION, ENV_REPOSITORY

pytestmark = [pytest.mark.docker, pytest.mark.slow]

JUNIT = "<dependency><groupId>junit</groupId><artifactId>junit</artifactId><version>4.13.2</version>" \
        "<scope>test</scope></dependency>"
PARENT = "<parent><groupId>com.acme</groupId><artifactId>parent</artifactId><version>1.0</version></parent>"


def module_pom(name: str, deps: str) -> str:
    return (f'<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>{PARENT}'
            f"<artifactId>{name}</artifactId><dependencies>{deps}</dependencies></project>")


BASE = {
    ".sdkmanrc": "java=17.0.9-tem\n",
    "pom.xml": '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
               "<groupId>com.acme</groupId><artifactId>parent</artifactId><version>1.0</version>"
               "<packaging>pom</packaging><modules><module>calc</module><module>mul</module></modules>"
               "<properties><maven.compiler.source>1.8</maven.compiler.source>"
               "<maven.compiler.target>1.8</maven.compiler.target>"
               "<project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties></project>",
    "calc/pom.xml": module_pom("calc", JUNIT),
    "mul/pom.xml": module_pom("mul", JUNIT + "<dependency><groupId>com.acme</groupId><artifactId>calc</artifactId>"
                                            "<version>1.0</version></dependency>"),
    "calc/src/main/java/com/acme/Calc.java":
        "package com.acme;\npublic class Calc {\n"
        "    public static int add(int a, int b) { return a - b; }\n"
        "    public static int neg(int a) { return -a; }\n}\n",
    "calc/src/test/java/com/acme/CalcTest.java":
        "package com.acme;\nimport static org.junit.Assert.assertEquals;\nimport org.junit.Test;\n"
        "public class CalcTest {\n    @Test public void testNeg() { assertEquals(-2, Calc.neg(2)); }\n}\n",
    "mul/src/main/java/com/acme/mul/Marker.java": "package com.acme.mul;\npublic class Marker {}\n",
}
TESTS = {
    "calc/src/test/java/com/acme/CalcTest.java":
        "package com.acme;\nimport static org.junit.Assert.assertEquals;\nimport org.junit.Test;\n"
        "public class CalcTest {\n    @Test public void testNeg() { assertEquals(-2, Calc.neg(2)); }\n"
        "    @Test public void testAdd() { assertEquals(5, Calc.add(2, 3)); }\n}\n",
    "mul/src/test/java/com/acme/mul/MulTest.java":
        "package com.acme.mul;\nimport static org.junit.Assert.assertEquals;\nimport org.junit.Test;\n"
        "import com.acme.Calc;\n"
        "public class MulTest {\n    @Test public void testMul() { assertEquals(6, Calc.mul(2, 3)); }\n}\n",
}
FIX = {
    "calc/src/main/java/com/acme/Calc.java":
        "package com.acme;\npublic class Calc {\n"
        "    public static int add(int a, int b) { return a + b; }\n"
        "    public static int neg(int a) { return -a; }\n"
        "    public static int mul(int a, int b) { return a * b; }\n}\n",
}


def mirror_instance(tmp_path: Path) -> tuple[Instance, Path]:
    """Base commit in a bare mirror, patch / test_patch as git diffs."""
    git_dir, base = make_repo(tmp_path, BASE)
    test_patch, patch = make_patches(git_dir, TESTS, FIX)
    mirror = tmp_path / "mirrors" / "acme+calc" / "repo"
    mirror.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(git_dir.parent), str(mirror)], check=True)
    return make_instance(base, "java", "2024-05-01T00:00:00Z", patch=patch, test_patch=test_patch), mirror


def test_two_module_maven_project_mints_with_a_non_compiling_test_class_as_fail_to_pass(
        tmp_path, docker_client, monkeypatch):
    monkeypatch.setattr(polyglot, "ECOSYSTEM_MODULES", ("java",))
    inst, mirror = mirror_instance(tmp_path)
    cfg = MintConfig(workdir=tmp_path / "work", run_id=f"test-java-{SESSION}", image_repository=ENV_REPOSITORY)
    res = mint_instance(inst, mirror, cfg)
    try:
        assert res.outcome == "verified", (res.reason, (tmp_path / "work").as_posix())
        assert sorted(res.FAIL_TO_PASS) == ["com.acme.CalcTest#testAdd", "com.acme.mul.MulTest#testMul"]
        assert res.PASS_TO_PASS == ["com.acme.CalcTest#testNeg"]
        assert res.interpreter.startswith("jdk 17") and res.parser == "java_junit"
        assert "mvn -o " in res.test_command and "-pl calc,mul -am" in res.test_command
    finally:
        if res.image:
            docker_client.images.remove(res.image, force=True)


KEEPS = "".join(f"    @Test public void testKeeps{n}() {{ assertEquals({n}, Calc.add({n}, 0)); }}\n" for n in range(4))


def test_maven_reruns_are_targeted_at_the_candidate_with_surefires_dtest(tmp_path, docker_client, monkeypatch):
    """Adaptive verification on Maven (`JavaEcosystem.targeted_plan`): with one candidate
    (`CalcTest#testAdd`) among six tests, before#2 and after#2 run ``-Dtest=CalcTest#testAdd``
    (one test reported), after#3 the whole selection; the lists are the full runs'."""
    monkeypatch.setattr(polyglot, "ECOSYSTEM_MODULES", ("java",))
    calc_test = "calc/src/test/java/com/acme/CalcTest.java"
    base = {**BASE, calc_test: BASE[calc_test].replace("    @Test public void testNeg", KEEPS + "    @Test public void testNeg")}
    tests = {calc_test: base[calc_test].replace("}\n}\n", "}\n    @Test public void testAdd() { assertEquals(5, Calc.add(2, 3)); }\n}\n")}
    git_dir, sha = make_repo(tmp_path, base)
    test_patch, patch = make_patches(git_dir, tests, {"calc/src/main/java/com/acme/Calc.java": FIX[
        "calc/src/main/java/com/acme/Calc.java"]})
    mirror = tmp_path / "mirrors" / "acme+calc" / "repo"
    mirror.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(git_dir.parent), str(mirror)], check=True)
    inst = make_instance(sha, "java", "2024-05-01T00:00:00Z", patch=patch, test_patch=test_patch)
    cfg = MintConfig(workdir=tmp_path / "work", run_id=f"test-java-targeted-{SESSION}", image_repository=ENV_REPOSITORY,
                     verify={"full_before_rerun": False})  # before#2 targeted too: -Dtest on both sides
    res = mint_instance(inst, mirror, cfg)
    try:
        assert res.outcome == "verified", (res.reason, (tmp_path / "work").as_posix())
        assert res.FAIL_TO_PASS == ["com.acme.CalcTest#testAdd"]
        assert res.PASS_TO_PASS == sorted(["com.acme.CalcTest#testNeg"] + [f"com.acme.CalcTest#testKeeps{n}" for n in range(4)])
        targeted = [r for r in res.cost.runs if r.kind == "targeted"]
        assert [r.label for r in targeted] == ["before#2", "after#2"] and all(r.tests == 1 for r in targeted), targeted
        assert [r.tests for r in res.cost.runs if r.label == "after#3"] == [6]
        assert "CalcTest#testAdd" not in res.test_command  # the row's command is the full run's
    finally:
        if res.image:
            docker_client.images.remove(res.image, force=True)


def test_the_first_before_run_is_the_scope_probe(tmp_path, docker_client, monkeypatch):
    """Java's first before run is its selection probe (`scope_probe`): setup runs no probe; the
    touched module's whole offline run fits the bound in before#1, which prints its scope; every
    later run and the row's test command run the module in full (`scoped_plan`) -- a test class
    of another package in the module, which the touched classes would not select, is
    PASS_TO_PASS, as when the setup probed."""
    import json

    monkeypatch.setattr(polyglot, "ECOSYSTEM_MODULES", ("java",))
    from agents.ecosystems import java as J

    calc_test = "calc/src/test/java/com/acme/CalcTest.java"
    other = "calc/src/test/java/com/acme/other/OtherTest.java"
    base = {**BASE, other: "package com.acme.other;\nimport static org.junit.Assert.assertEquals;\nimport org.junit.Test;\n"
                           "import com.acme.Calc;\npublic class OtherTest {\n"
                           "    @Test public void testWorks() { assertEquals(-1, Calc.neg(1)); }\n}\n"}
    # the fix changes a body line only (a changed declaration the test_patch uses would select
    # the touched classes alone: `fix_api_in_tests`)
    calc = "calc/src/main/java/com/acme/Calc.java"
    base[calc] = ("package com.acme;\npublic class Calc {\n    public static int add(int a, int b) {\n"
                  "        return a - b;\n    }\n    public static int neg(int a) { return -a; }\n}\n")
    tests = {calc_test: TESTS[calc_test]}
    git_dir, sha = make_repo(tmp_path, base)
    test_patch, patch = make_patches(git_dir, tests, {calc: base[calc].replace("a - b", "a + b")})
    assert J.fix_api_in_tests(patch, test_patch) == []
    mirror = tmp_path / "mirrors" / "acme+calc" / "repo"
    mirror.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(git_dir.parent), str(mirror)], check=True)
    inst = make_instance(sha, "java", "2024-05-01T00:00:00Z", patch=patch, test_patch=test_patch)
    cfg = MintConfig(workdir=tmp_path / "work", run_id=f"test-java-scope-{SESSION}", image_repository=ENV_REPOSITORY)
    res = mint_instance(inst, mirror, cfg)
    try:
        assert res.outcome == "verified", (res.reason, (tmp_path / "work").as_posix())
        assert res.FAIL_TO_PASS == ["com.acme.CalcTest#testAdd"]
        assert res.PASS_TO_PASS == ["com.acme.CalcTest#testNeg", "com.acme.other.OtherTest#testWorks"]
        steps = [json.loads(x) for x in Path(res.trajectory_path).read_text().splitlines()]
        scope = [s for s in steps if s["rule"] == "scope"]
        assert len(scope) == 1 and "before#1 chose the scope 'modules'" in scope[0]["note"], \
            "; ".join(f"{s['rule']}: {(s.get('note') or '')[:60]} {(s.get('command') or '')[:90]}" for s in steps if s["agent"] == "verification")
        assert not any("timeout -k" in (s.get("command") or "") for s in steps if s["agent"] != "verification")
        runs = {s["rule"]: s["command"] for s in steps if s["agent"] == "verification" and "#" in s["rule"]}
        assert J.SCOPE_LINE in runs["before#1"] and all(J.SCOPE_LINE not in c for k, c in runs.items() if k != "before#1")
        assert J.SCOPE_LINE not in res.test_command and "timeout -k" not in res.test_command
        assert "mvn -o " in res.test_command and "-Dtest=" not in res.test_command and "-pl calc -am" in res.test_command
    finally:
        if res.image:
            docker_client.images.remove(res.image, force=True)
