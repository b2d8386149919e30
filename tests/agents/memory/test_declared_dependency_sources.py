"""Review rv86: a seed whose context names a dependency is held back before planning for a project
that names it nowhere (`Retriever.retrieve`, `project_names`). The project's names are what
`agents.analysis.declared_dependencies` reads; a Gradle build (most Java projects) or a Maven
`<plugin>` declares nothing there, so the Java seeds about lombok, mockito and jacoco were never
retrieved before planning for the very projects that use them."""

from __future__ import annotations

from agents.analysis import analyze, declared_dependencies
from agents.memory.api import ExperienceMemory, MemoryConfig
from agents.memory.repo_context import RepoContext
from agents.models import Instance
from tests.agents.ecosystems.conftest import make_tree

GRADLE = """plugins {
    id 'java'
    id 'jacoco'
}
dependencies {
    compileOnly 'org.projectlombok:lombok:1.18.12'
    annotationProcessor("org.projectlombok:lombok:1.18.12")
    testImplementation group: 'org.mockito', name: 'mockito-core', version: '3.3.3'
    testImplementation "junit:junit:4.13"
}
"""
POM = """<project><build><plugins><plugin>
  <groupId>org.jacoco</groupId>
  <artifactId>jacoco-maven-plugin</artifactId>
  <version>0.8.2</version>
</plugin></plugins></build>
<dependencies><dependency>
  <groupId>org.projectlombok</groupId>
  <artifactId>lombok</artifactId>
</dependency></dependencies></project>
"""


def _ctx(tmp_path, files: dict[str, str]) -> RepoContext:
    tree = make_tree(tmp_path, {**files, "src/test/java/a/ATest.java": "class ATest {}"})
    p = analyze(tree, Instance(instance_id="a__b-1", repo="a/b", base_commit=tree.commit, patch="p", test_patch="t",
                               language="java"))
    return RepoContext(ecosystem="java", toolchain="17", era=2020, repo="a/b", build_systems=p.build_systems,
                       declared={d: "" for d in p.dependencies}, files=p.manifests, frameworks=p.runners,
                       commands=["./gradlew test" if "gradle" in p.build_systems else "mvn -B test"])


def test_gradle_and_maven_plugin_dependencies_are_declared(tmp_path):
    assert {"lombok", "mockito-core", "junit"} <= set(declared_dependencies(make_tree(tmp_path / "g", {
        "build.gradle": GRADLE})))
    assert {"lombok", "jacoco-maven-plugin"} <= set(declared_dependencies(make_tree(tmp_path / "m", {"pom.xml": POM})))


def test_the_java_seeds_about_a_dependency_are_retrieved_for_the_projects_that_use_it(tmp_path):
    mem = ExperienceMemory.open(MemoryConfig(path=None))
    gradle = [h.experience.id for h in mem.retrieve(_ctx(tmp_path / "g", {"build.gradle": GRADLE}), k=40)]
    assert "java-lombok-jdk16" in gradle and "java-bytebuddy-unsupported-jdk" in gradle, gradle
    maven = [h.experience.id for h in mem.retrieve(_ctx(tmp_path / "m", {"pom.xml": POM}), k=40)]
    assert "java-jacoco-instrumenting" in maven, maven
