"""Released substitutes before "network-bound" (issue 25 item 3), end to end in Docker with Maven
Central as the registry this host reaches: a project whose parent POM and test dependency are
SNAPSHOTs that only an unreachable snapshot repository serves. Each gets the nearest release on
Central installed in its place, the row records both substitutions, and it verifies."""

from __future__ import annotations

import pytest

from agents.ecosystems import java as J

pytestmark = [pytest.mark.docker, pytest.mark.slow]

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<parent><groupId>org.sonatype.oss</groupId><artifactId>oss-parent</artifactId><version>7-SNAPSHOT</version>
<relativePath/></parent>
<groupId>com.acme</groupId><artifactId>calc</artifactId><version>1.0</version>
<properties><maven.compiler.source>1.8</maven.compiler.source><maven.compiler.target>1.8</maven.compiler.target>
<project.build.sourceEncoding>UTF-8</project.build.sourceEncoding><junit.version>4.13.2-SNAPSHOT</junit.version></properties>
<repositories><repository><id>acme-snapshots</id><url>https://snapshots.acme.invalid/maven</url>
<snapshots><enabled>true</enabled></snapshots></repository></repositories>
<dependencies><dependency><groupId>junit</groupId><artifactId>junit</artifactId><version>${junit.version}</version>
<scope>test</scope></dependency></dependencies></project>"""
CALC = "package com.acme;\npublic class Calc {\n    public static int add(int a, int b) { return a - b; }\n}\n"
TEST = ("package com.acme;\nimport static org.junit.Assert.assertEquals;\nimport org.junit.Test;\n"
        "public class CalcTest {\n    @Test public void zero() { assertEquals(0, Calc.add(0, 0)); }\n")


def test_snapshot_parent_and_dependency_stand_ins_from_maven_central_verify(mint_with):
    files = {".sdkmanrc": "java=17.0.9-tem\n", "pom.xml": POM, "src/main/java/com/acme/Calc.java": CALC,
             "src/test/java/com/acme/CalcTest.java": TEST + "}\n"}
    res = mint_with(J.ECOSYSTEM, files, "snap", language="java", created_at="2024-01-10 10:00:00",
                    tests={"src/test/java/com/acme/CalcTest.java":
                           TEST + "    @Test public void adds() { assertEquals(5, Calc.add(2, 3)); }\n}\n"},
                    fix={"src/main/java/com/acme/Calc.java": CALC.replace("a - b", "a + b")})
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["com.acme.CalcTest#adds"] and res.PASS_TO_PASS == ["com.acme.CalcTest#zero"]
    assert res.substitutes_tried == [
        "org.sonatype.oss:oss-parent:7-SNAPSHOT (parent of pom.xml) -> Maven Central 7",
        "junit:junit:4.13.2-SNAPSHOT (dependency of pom.xml) -> Maven Central 4.13.2"]
    assert sum("installed as" in s for s in res.substitutions) == 2


PARENT_REF = "<parent><groupId>com.acme</groupId><artifactId>parent</artifactId><version>1.0</version></parent>"


def _root_pom(modules: list[str]) -> str:
    mods = "".join(f"<module>{m}</module>" for m in modules)
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            "<groupId>com.acme</groupId><artifactId>parent</artifactId><version>1.0</version>"
            f"<packaging>pom</packaging><modules>{mods}</modules>"
            "<properties><maven.compiler.source>1.8</maven.compiler.source><maven.compiler.target>1.8"
            "</maven.compiler.target><project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>"
            "<dependencies><dependency><groupId>junit</groupId><artifactId>junit</artifactId><version>4.13.2"
            "</version><scope>test</scope></dependency></dependencies></project>")


def _module_pom(name: str, deps: str = "") -> str:
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            f"{PARENT_REF}<artifactId>{name}</artifactId><dependencies>{deps}</dependencies></project>")


CORE = "package com.acme;\npublic class Core {\n    public static int one() { return 1; }\n}\n"
CORE_TEST = ("package com.acme;\nimport static org.junit.Assert.assertEquals;\nimport org.junit.Test;\n"
             "public class CoreTest {\n    @Test public void one() { assertEquals(1, Core.one()); }\n}\n")
EXTRA = "package com.acme;\npublic class Extra {\n    public static int twice(int a) { return 2 * a * Core.one(); }\n}\n"
EXTRA_TEST = ("package com.acme;\nimport static org.junit.Assert.assertEquals;\nimport org.junit.Test;\n"
              "public class ExtraTest {\n    @Test public void twice() { assertEquals(4, Extra.twice(2)); }\n"
              "    @Test public void zero() { assertEquals(0, Extra.twice(0)); }\n}\n")


def test_a_module_the_patch_creates_verifies_with_its_tests_as_fail_to_pass(mint_with):
    """A-after (java-design-patterns-3564's class): the patch adds module `extra` (its pom.xml,
    the aggregator's <module>), the test_patch its test. At base the nearest pom is the
    aggregator's; the plan selects the new module (-pl extra -am), fetches its dependencies in a
    scratch copy with the patches' pom.xml sections, and every test of it passing after is
    FAIL_TO_PASS (absent before: the module does not exist). The base module's test is not run."""
    files = {".sdkmanrc": "java=17.0.9-tem\n", "pom.xml": _root_pom(["core"]), "core/pom.xml": _module_pom("core"),
             "core/src/main/java/com/acme/Core.java": CORE, "core/src/test/java/com/acme/CoreTest.java": CORE_TEST}
    core_dep = ("<dependency><groupId>com.acme</groupId><artifactId>core</artifactId><version>1.0</version>"
                "</dependency>")
    res = mint_with(J.ECOSYSTEM, files, "newmod", language="java", created_at="2024-01-10 10:00:00",
                    tests={"extra/src/test/java/com/acme/ExtraTest.java": EXTRA_TEST},
                    fix={"pom.xml": _root_pom(["core", "extra"]), "extra/pom.xml": _module_pom("extra", core_dep),
                         "extra/src/main/java/com/acme/Extra.java": EXTRA})
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["com.acme.ExtraTest#twice", "com.acme.ExtraTest#zero"] and res.PASS_TO_PASS == []
    assert "-pl extra -am" in res.test_command
    assert "Extra.java" not in res.setup_script and "ExtraTest" not in res.setup_script
