"""A targeted rerun of FAIL_TO_PASS tests in nested test classes on a real Maven project (Docker,
Maven Central): the plan `JavaEcosystem.plan` makes, its setup's truststore and online warm-up,
then `JavaEcosystem.targeted_plan`'s command offline, in one container.

The module: `NodeTest` (JUnit 5) with two @Nested classes, `EnclosedTest` (JUnit 4,
``@RunWith(Enclosed.class)``, run by the vintage engine) with a static nested class, and
`OtherTest`, which has a method of the target's name. Surefire 2.22.2 is pinned: the version on
which ``-Dtest=NodeTest`` leaves the @Nested classes out (SUREFIRE-1633). The targets are one
method of each nested class; the report must hold both targets under the ids the full runs give
them and no other test of the module.
"""

from __future__ import annotations

import pytest

from agents.ecosystems import java as J
from envpool.docker_sandbox import CA_ENV_VARS, CA_PATH_IN_CONTAINER, host_ca_bundle
from envpool.grading import observed
from envpool.images import ImageConfig
from envpool.netguard import BuildNetworkConfig, ensure_build_network
from envpool.testrun.registry import get_parser
from envpool.testrun.status import TestRunReport, TestStatus
from tests.agents.ecosystems.conftest import make_instance, make_tree

pytestmark = [pytest.mark.docker, pytest.mark.slow]

JUPITER = "5.3.2"  # the JUnit Platform Surefire 2.22.2 was built against
DEP = "<dependency><groupId>{}</groupId><artifactId>{}</artifactId><version>{}</version><scope>test</scope></dependency>"
POM = ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
       "<groupId>com.acme</groupId><artifactId>nodes</artifactId><version>1.0</version>"
       "<properties><maven.compiler.source>1.8</maven.compiler.source>"
       "<maven.compiler.target>1.8</maven.compiler.target>"
       "<project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>"
       f"<dependencies>{DEP.format('org.junit.jupiter', 'junit-jupiter-engine', JUPITER)}"
       f"{DEP.format('org.junit.vintage', 'junit-vintage-engine', JUPITER)}"
       f"{DEP.format('junit', 'junit', '4.12')}</dependencies>"
       "<build><plugins><plugin><groupId>org.apache.maven.plugins</groupId>"
       "<artifactId>maven-surefire-plugin</artifactId><version>2.22.2</version></plugin></plugins></build></project>")
TEST_DIR = "src/test/java/com/acme/"
FILES = {
    ".sdkmanrc": "java=17.0.9-tem\n",
    "pom.xml": POM,
    TEST_DIR + "NodeTest.java":
        "package com.acme;\nimport org.junit.jupiter.api.Nested;\nimport org.junit.jupiter.api.Test;\n"
        "class NodeTest {\n    @Test void outerA() {}\n"
        "    @Nested class PostOrderIteratorTest {\n"
        "        @Test void rootHasNoChild() {}\n        @Test void other() {}\n    }\n"
        "    @Nested class OtherNested {\n        @Test void sib() {}\n    }\n}\n",
    TEST_DIR + "EnclosedTest.java":
        "package com.acme;\nimport org.junit.Test;\nimport org.junit.experimental.runners.Enclosed;\n"
        "import org.junit.runner.RunWith;\n@RunWith(Enclosed.class)\npublic class EnclosedTest {\n"
        "    public static class InnerTest {\n        @Test public void m() {}\n        @Test public void n() {}\n"
        "    }\n}\n",
    TEST_DIR + "OtherTest.java":
        "package com.acme;\nimport org.junit.jupiter.api.Test;\n"
        "class OtherTest {\n    @Test void rootHasNoChild() {}\n    @Test void o() {}\n}\n",
}
TARGETS = ["com.acme.EnclosedTest$InnerTest#m", "com.acme.NodeTest$PostOrderIteratorTest#rootHasNoChild"]
MARK = "swemint-test: the report follows"


def test_a_targeted_rerun_runs_the_fail_to_pass_tests_of_nested_classes_and_no_other(tmp_path, docker_client):
    touched = TEST_DIR + "NodeTest.java"
    tree = make_tree(tmp_path, FILES, when="2024-05-01T00:00:00Z")
    inst = make_instance(tree, "java", "2024-05-01T00:00:00Z", test_patch=f"diff --git a/{touched} b/{touched}\n")
    plan = J.ECOSYSTEM.plan(tree, inst, [touched], ImageConfig())
    assert plan.state["targeted"]["method_lists"] is True  # the pom pins 2.22.2
    targeted = J.ECOSYSTEM.targeted_plan(plan, TARGETS)
    assert "-Dtest='EnclosedTest*#m,NodeTest*#rootHasNoChild' " in targeted.test_command
    # setup but its offline proof (truststore, online warm-up), then the targeted run offline
    setup, proof = plan.setup_commands[:-1], plan.setup_commands[-1]
    assert proof.startswith("mvn -o ") and "mvn -o " in targeted.test_command
    script = " && ".join(setup) + f" && ( {targeted.test_command} ); echo '{MARK}'; cat {J.REPORT}"
    ca = host_ca_bundle()
    out = docker_client.containers.run(
        plan.image, ["bash", "-c", script], working_dir="/testbed", remove=True,
        network=ensure_build_network(docker_client, BuildNetworkConfig()),
        environment={**plan.env, **({k: CA_PATH_IN_CONTAINER for k in CA_ENV_VARS} if ca else {})},
        volumes={str(tree.git_dir.parent): {"bind": "/testbed", "mode": "rw"},
                 **({str(ca): {"bind": CA_PATH_IN_CONTAINER, "mode": "ro"}} if ca else {})}).decode()
    assert MARK in out, out[-3000:]
    report = get_parser("java_junit")(out.split(MARK, 1)[1])
    # the nested methods under the full runs' ids (EnclosedTest's twice: through Enclosed and as
    # a class of its own, one id), no other test of the module's seven
    assert sorted(report.statuses) == TARGETS, (report.statuses, out[-3000:])
    assert set(report.statuses.values()) == {TestStatus.PASSED}, report.statuses
    run = TestRunReport(statuses=report.statuses, collection_errors=report.collection_errors, selected=TARGETS)
    assert all(observed(run, t) for t in TARGETS)
