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
