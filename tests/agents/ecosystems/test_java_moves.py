"""Issue 25's Java classes without Docker, on small trees the tests write: the build that owns
the touched path (the nearest ancestor build file, not the first pom.xml found), and an honest
"Gradle wrapper distribution unreachable" when that build is Gradle's."""

from __future__ import annotations

import pytest

from agents.ecosystems import java as J
from agents.ecosystems.owners import JVM_BUILD_FILES, owner_build
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig
from tests.agents.ecosystems.conftest import make_tree
from tests.agents.ecosystems.test_java import PARENT, fake_image, instance, pom  # noqa: F401 (a fixture)


def test_the_owner_is_the_nearest_ancestor_build_file():
    files = ["settings.gradle", "core/build.gradle", "examples/demo/pom.xml", "tools/pom.xml", "tools/build.gradle",
             "build.xml"]
    assert owner_build(files, "core/src/test/java/a/ATest.java", JVM_BUILD_FILES) == ("gradle", "core")
    assert owner_build(files, "examples/demo/src/test/java/BTest.java", JVM_BUILD_FILES) == ("maven", "examples/demo")
    assert owner_build(files, "tools/src/test/java/CTest.java", JVM_BUILD_FILES) == ("maven", "tools")  # maven first
    assert owner_build(files, "lib/src/test/java/DTest.java", JVM_BUILD_FILES) == ("gradle", "")
    assert owner_build(["a/pom.xml"], "b/src/T.java", JVM_BUILD_FILES) is None


def test_a_gradle_multi_project_is_refused_honestly_not_planned_on_an_example_folders_pom(tmp_path, fake_image):
    """The wrong project: the touched module has no pom.xml; an unrelated example's pom.xml was
    planned and ran no test. Its owner is the Gradle build, whose wrapper cannot download here."""
    test = "core/src/test/java/com/acme/CalcTest.java"
    tree = make_tree(tmp_path, {
        "settings.gradle": "include 'core'\n", "build.gradle": "", "core/build.gradle": "apply plugin: 'java'\n",
        "gradle/wrapper/gradle-wrapper.properties": "distributionUrl=https\\://example.invalid/gradle-7.6.1-bin.zip\n",
        "examples/maven-demo/pom.xml": pom(artifact="demo"), test: "",
    })
    with pytest.raises(EnvBuildError, match=r"Gradle wrapper distribution unreachable") as e:
        J.ECOSYSTEM.plan(tree, instance(test), [test], ImageConfig(route="debootstrap"))
    assert f"{test} is owned by the Gradle build in core/" in e.value.message
    assert fake_image == []


def test_a_maven_module_below_a_gradle_root_is_planned_on_its_own_pom(tmp_path, fake_image):
    test = "tools/src/test/java/com/acme/ToolTest.java"
    tree = make_tree(tmp_path, {"build.gradle": "", "settings.gradle": "", "tools/pom.xml": pom(artifact="tools"),
                                test: ""})
    plan = J.ECOSYSTEM.plan(tree, instance(test), [test], ImageConfig(route="debootstrap"))
    assert "cd tools && " in plan.test_command and "-Dtest=ToolTest" in plan.test_command


# --- released substitutes before "network-bound" (issue 25 item 3) -----------------------------

from agents.ecosystems.java import maven_ci as M  # noqa: E402

ROOT = """<project><modelVersion>4.0.0</modelVersion><groupId>com.acme</groupId><artifactId>root</artifactId>
<version>1.0</version><packaging>pom</packaging><modules><module>core</module></modules>
<dependencyManagement><dependencies>
<dependency><groupId>org.lib</groupId><artifactId>managed</artifactId><version>0.9-SNAPSHOT</version></dependency>
</dependencies></dependencyManagement></project>"""
CORE = """<project><modelVersion>4.0.0</modelVersion>
<parent><groupId>org.acme</groupId><artifactId>acme-parent</artifactId><version>2.3-SNAPSHOT</version><relativePath/></parent>
<groupId>com.acme</groupId><artifactId>core</artifactId>
<properties><lib.version>3.1-SNAPSHOT</lib.version></properties><dependencies>
<dependency><groupId>org.lib</groupId><artifactId>lib</artifactId><version>${lib.version}</version></dependency>
<dependency><groupId>com.acme</groupId><artifactId>root</artifactId><version>1.1-SNAPSHOT</version></dependency>
<dependency><groupId>org.lib</groupId><artifactId>natives</artifactId><version>1-SNAPSHOT</version><classifier>x</classifier></dependency>
<dependency><groupId>org.lib</groupId><artifactId>plain</artifactId><version>1.0</version></dependency>
</dependencies></project>"""


def test_every_out_of_tree_snapshot_of_the_reactor_is_found(tmp_path):
    tree = make_tree(tmp_path, {"pom.xml": ROOT, "core/pom.xml": CORE})
    got = M.snapshot_sources(tree, {"": ROOT, "core": CORE})
    assert got == [("org.lib", "managed", "0.9-SNAPSHOT", "jar", "dependency of pom.xml"),
                   ("org.acme", "acme-parent", "2.3-SNAPSHOT", "pom", "parent of core/pom.xml"),
                   ("org.lib", "lib", "3.1-SNAPSHOT", "jar", "dependency of core/pom.xml")]


def test_the_plan_installs_each_release_first_and_records_what_it_tried(tmp_path, fake_image, monkeypatch):
    releases = {("org.acme", "acme-parent"): ("2.1", "2.2", "2.4"), ("org.lib", "lib"): ("3.0", "3.2")}
    monkeypatch.setattr(M, "released_versions", lambda g, a, base=M.CENTRAL: releases.get((g, a), ()))
    test = "core/src/test/java/com/acme/CoreTest.java"
    tree = make_tree(tmp_path, {"pom.xml": ROOT, "core/pom.xml": CORE, test: ""})
    plan = J.ECOSYSTEM.plan(tree, instance(test), [test], ImageConfig(route="debootstrap"))
    assert plan.state["substitutes_tried"] == [
        "org.lib:managed:0.9-SNAPSHOT (dependency of pom.xml): no release on Maven Central",
        "org.acme:acme-parent:2.3-SNAPSHOT (parent of core/pom.xml) -> Maven Central 2.2",
        "org.lib:lib:3.1-SNAPSHOT (dependency of core/pom.xml) -> Maven Central 3.0"]
    assert any(s.startswith("org.acme:acme-parent:2.3-SNAPSHOT (parent of core/pom.xml;") and
               s.endswith("-> Maven Central's release 2.2, installed as 2.3-SNAPSHOT") for s in plan.substitutions)
    steps = plan.setup_commands
    assert "-Dartifact=org.acme:acme-parent:2.2:pom" in steps[1] and "-Dartifact=org.lib:lib:3.0:jar" in steps[2]
    assert "-Dfile=stand-in.jar -DpomFile=stand-in.pom -Dpackaging=jar" in steps[2]
    assert all("|| echo 'swemint: the stand-in" in s for s in steps[1:3])
    assert "stand-in" not in steps[3] and "mvn " in steps[3]  # then the project's own Maven steps


def test_an_env_failed_row_that_needs_the_network_names_the_substitutes_it_tried(tmp_path, monkeypatch):
    from agents.mint_config import MintConfig
    from agents.minter import mint_instance
    from envpool.fake import FakeSandboxFactory
    from tests.agents.ecosystems.conftest import force_ecosystem
    from tests.agents.test_loop import Toy, instance_on

    class Snap(Toy):
        def plan(self, tree, instance, touched, images, request=None):
            p = super().plan(tree, instance, touched, images, request)
            return p.model_copy(update={"state": {"substitutes_tried": ["g:a:1-SNAPSHOT (parent of pom.xml): no "
                                                                        "release on Maven Central"]}})

    force_ecosystem(monkeypatch, Snap(versions=("1.19",)))
    f = FakeSandboxFactory(run_id="t")
    f.on(r"fetch-deps", (1, "java.net.UnknownHostException: snapshots.acme.example\n"))
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, MintConfig(workdir=tmp_path / "w", run_id="t", memory={"enabled": False}),
                        factory=f)
    assert res.outcome == "env_failed" and res.unreachable.startswith("snapshots.acme.example")
    assert res.substitutes_tried == ["g:a:1-SNAPSHOT (parent of pom.xml): no release on Maven Central"]
    assert res.reason.endswith("; substitutes tried: g:a:1-SNAPSHOT (parent of pom.xml): no release on Maven Central")


def test_the_per_test_limits_reach_maven_as_shell_expansions(tmp_path, fake_image):
    """Surefire's and Jupiter's limits are ``${SWEMINT_TEST_TIMEOUT:-120}`` expansions in the
    commands as run, never doubled braces (bash: "bad substitution", every Maven step failed)."""
    test = "src/test/java/com/acme/CalcTest.java"
    tree = make_tree(tmp_path, {"pom.xml": pom(), test: ""})
    plan = J.ECOSYSTEM.plan(tree, instance(test), [test], ImageConfig(route="debootstrap"))
    for cmd in [*plan.setup_commands[1:], plan.test_command]:
        assert "{{" not in cmd and "}}" not in cmd.replace("{} +", "")
    assert "-Djunit.jupiter.execution.timeout.default=${SWEMINT_TEST_TIMEOUT:-120}s" in plan.test_command


# --- a module new in the patch (issue 25, A-after: the owner of the touched tests is added) ------

def _new_module_tree(tmp_path):
    from agents.gitrepo import GitTree
    from tests.agents.ecosystems.conftest import make_patches, make_repo

    root = pom(modules=["core"], artifact="parent")
    git_dir, _ = make_repo(tmp_path, {"pom.xml": root, "core/pom.xml": pom(parent=PARENT, artifact="core"),
                                      "core/src/test/java/com/acme/CoreTest.java": ""},
                           when="2024-08-20T08:00:00+00:00")
    tree = GitTree(git_dir, "HEAD")
    test = "extra/src/test/java/com/acme/ExtraTest.java"
    test_patch, patch = make_patches(git_dir, {test: "class ExtraTest {}\n"},
                                     {"pom.xml": pom(modules=["core", "extra"], artifact="parent"),
                                      "extra/pom.xml": pom(parent=PARENT, artifact="extra"),
                                      "extra/src/main/java/com/acme/Extra.java": "class Extra {}\n"})
    return tree, test, test_patch, patch


def test_a_module_the_patch_creates_is_selected_and_prefetched_from_the_patches_poms(tmp_path, fake_image):
    from agents.ecosystems.java.maven_new_module import WARM_UP_CLASS, new_module_owners
    from tests.agents.ecosystems.conftest import make_instance

    tree, test, test_patch, patch = _new_module_tree(tmp_path)
    assert new_module_owners(tree, [test], patch, test_patch) == {test: "extra"}
    assert new_module_owners(tree, ["core/src/test/java/com/acme/CoreTest.java"], patch, test_patch) == {}
    inst = make_instance(tree, "java", patch=patch, test_patch=test_patch)
    plan = J.ECOSYSTEM.plan(tree, inst, [test], ImageConfig(route="debootstrap"))
    # not the whole reactor: the new module and its upstream modules, its touched classes
    assert "-pl extra -am " in plan.test_command and "-Dtest=ExtraTest" in plan.test_command
    assert plan.state["new_module"] == "extra" and "-pl extra -am" in plan.state["build_command"]
    assert "Could not find the selected project" in plan.test_command  # before the fix: a unit that failed to build
    prefetch = plan.setup_commands[-1]
    assert "cp -a /testbed /tmp/swemint-prefetch" in prefetch and f"-Dtest={WARM_UP_CLASS}" in prefetch
    assert prefetch.count("-pl extra -am") == 2 and " -o " in prefetch  # online, then proved offline
    # only the pom.xml sections travel in the setup script, never the patch's code or tests
    import base64
    import re
    carried = base64.b64decode(re.search(r"echo (\S+) \| base64 -d", prefetch).group(1)).decode()
    assert "extra/pom.xml" in carried and "a/pom.xml" in carried
    assert "Extra.java" not in carried and "ExtraTest" not in carried
    assert not any("-Dtest=ExtraTest" in c for c in plan.setup_commands)
    assert any("new in the patch" in n for n in plan.notes)


def test_an_eclipse_tycho_test_bundle_is_refused_as_network_bound_naming_its_p2_repositories(tmp_path, fake_image):
    """S21: a test helper in a Tycho `eclipse-test-plugin` bundle (tests in src/, not
    src/test/java): Tycho needs the p2 repositories of its target platform, not Maven Central.
    Before S21 the row said "touches no Java test source"."""
    helper = "test/org.acme.test.platform/src/org/acme/RequestResult.java"
    repo = ("<repositories><repository><id>eclipse</id><url>https://download.example.org/releases/2024-06</url>"
            "<layout>p2</layout></repository></repositories>")
    tree = make_tree(tmp_path, {
        "pom.xml": pom(body=repo, modules=["test/org.acme.test.platform"], artifact="root"),
        "test/org.acme.test.platform/pom.xml": pom(parent=PARENT, artifact="org.acme.test.platform").replace(
            "<version>1.0</version></project>", "<version>1.0</version><packaging>eclipse-test-plugin</packaging></project>"),
        "platform.target": '<target><locations><location><repository location="https://p2.example.org/deps"/>'
                           '</location></locations></target>',
        helper: "class RequestResult {}\n",
    })
    with pytest.raises(EnvBuildError, match="Eclipse Tycho build") as e:
        J.ECOSYSTEM.plan(tree, instance(helper), [helper], ImageConfig(route="debootstrap"))
    assert "eclipse-test-plugin bundle (owns " + helper in e.value.message
    assert "https://download.example.org/releases/2024-06, https://p2.example.org/deps" in e.value.message
    assert "network-bound" in e.value.message and fake_image == []
    # a plain Maven module is not concerned
    from agents.ecosystems.java.tycho import tycho_bundle
    plain = make_tree(tmp_path / "p", {"pom.xml": pom(), "src/test/java/CalcTest.java": ""})
    assert tycho_bundle(plain, ["src/test/java/CalcTest.java"]) is None
