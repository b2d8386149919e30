"""Maven rules from outside the pom: CI profiles / properties for test runs, and the released
stand-in for a -SNAPSHOT parent no repository serves."""

from __future__ import annotations

import pytest

from agents.ecosystems import java as J
from agents.ecosystems.java import maven_ci as M
from agents.models import Instance
from envpool.images import ImageConfig
from tests.agents.ecosystems.conftest import make_tree

WORKFLOW = """jobs:
  lint:
    steps:
      - run: ./mvnw -B checkstyle:check -Pstrict
  test:
    strategy: {matrix: {prof: [AlsoSlowTests, Other]}}
    steps:
      - run: ./mvnw -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -B --errors clean test --activate-profiles ${{ matrix.prof }} -Dtest=Nope
  native:
    steps:
      - run: mvn test -Pnative-image-test --projects graal-native-image-test --also-make
      - run: mvn install -DskipTests -PskipMe
"""
POM = """<project><modelVersion>4.0.0</modelVersion><groupId>a</groupId><artifactId>p</artifactId><version>1</version>
<modules><module>core</module></modules>
<profiles><profile><id>AlsoSlowTests</id></profile><profile><id>native-image-test</id></profile>
<profile><id>strict</id></profile><profile><id>skipMe</id></profile></profiles></project>"""


def test_ci_test_runs_give_their_defined_profiles_and_properties(tmp_path):
    tree = make_tree(tmp_path, {".github/workflows/ci.yml": WORKFLOW, "pom.xml": POM})
    ids = {"AlsoSlowTests", "native-image-test", "strict", "skipMe"}
    profiles, props, notes = M.ci_maven_options(tree, ids, ["core"], ["test"])
    # checkstyle:check runs no tests, -DskipTests skips them, --projects names another module,
    # -Dtest is denied
    assert profiles == ["AlsoSlowTests"]
    assert props == {"org.slf4j.simpleLogger.defaultLogLevel": "warn"}
    assert any("AlsoSlowTests" in n and "ci.yml" in n for n in notes)
    profiles, _, _ = M.ci_maven_options(tree, ids, ["graal-native-image-test"], ["test"])
    assert profiles == ["AlsoSlowTests", "native-image-test"]
    assert M.ci_maven_options(tree, set(), ["core"], ["test"])[0] == []  # only profiles the poms define


def test_the_maven_plan_applies_the_ci_profile_to_every_run(tmp_path, image_store, monkeypatch):
    test = "src/test/java/a/CalcTest.java"
    tree = make_tree(tmp_path, {".github/workflows/ci.yml": WORKFLOW, "pom.xml": POM.replace(
        "<modules><module>core</module></modules>", ""), test: ""})
    inst = Instance(instance_id="a__p-1", repo="a/p", base_commit="0" * 40, patch="x", test_patch="", language="java")
    plan = J.ECOSYSTEM.plan(tree, inst, [test], ImageConfig(route="debootstrap"))
    assert "-PAlsoSlowTests" in plan.test_command and "-PAlsoSlowTests" in plan.setup_commands[1]
    assert "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn" in plan.test_command
    assert "-Dtest=Nope" not in plan.test_command and "snapshot_parent" not in plan.state


SNAP = """<project><modelVersion>4.0.0</modelVersion>
<parent><groupId>org.acme</groupId><artifactId>acme-parent</artifactId><version>2.3-SNAPSHOT</version>
<relativePath/></parent><artifactId>p</artifactId></project>"""


def test_a_snapshot_parent_outside_the_tree_is_found_and_an_in_tree_one_is_not(tmp_path):
    tree = make_tree(tmp_path, {"pom.xml": SNAP})
    assert M.snapshot_parent(SNAP, tree) == ("org.acme", "acme-parent", "2.3-SNAPSHOT")
    in_tree = SNAP.replace("<relativePath/>", "<relativePath>parent/pom.xml</relativePath>")
    tree2 = make_tree(tmp_path / "b", {"pom.xml": in_tree,
                                       "parent/pom.xml": "<project><artifactId>acme-parent</artifactId></project>"})
    assert M.snapshot_parent(in_tree, tree2) is None
    assert M.snapshot_parent(SNAP.replace("2.3-SNAPSHOT", "2.3"), tree) is None
    assert M.snapshot_parent(SNAP.replace("org.acme", "org.acme;rm -rf"), tree) is None  # never reaches a shell


@pytest.mark.parametrize("snapshot, releases, expected", [
    ("2.3-SNAPSHOT", ["2.1", "2.2", "2.10", "3.0"], "2.2"),
    ("2.3-SNAPSHOT", ["2.3", "2.4"], "2.3"),
    ("1.0-SNAPSHOT", ["1.2", "1.1"], "1.1"),
    ("1.0-SNAPSHOT", [], None),
])
def test_the_nearest_release_is_the_newest_not_newer_else_the_oldest_newer(snapshot, releases, expected):
    assert M.nearest_release(snapshot, releases) == expected


def test_the_stand_in_is_installed_when_the_parent_does_not_resolve(tmp_path, image_store, monkeypatch):
    monkeypatch.setattr(M, "released_versions", lambda g, a, base=M.CENTRAL: ("2.1", "2.2", "2.4"))
    test = "src/test/java/a/CalcTest.java"
    tree = make_tree(tmp_path, {"pom.xml": SNAP, test: ""})
    inst = Instance(instance_id="a__p-1", repo="a/p", base_commit="0" * 40, patch="x", test_patch="", language="java")
    plan = J.ECOSYSTEM.plan(tree, inst, [test], ImageConfig(route="debootstrap"))
    assert plan.state["snapshot_parent"]["release"] == "2.2"
    assert any("2.3-SNAPSHOT" in n and "2.2" in n for n in plan.notes)
    out = "[ERROR] Non-resolvable parent POM for a:p:1: Could not find artifact org.acme:acme-parent:pom:2.3-SNAPSHOT"
    fix = J.ECOSYSTEM.repair(plan, plan.setup_commands[1], out, set())
    assert len(fix) == 1 and "-Dartifact=org.acme:acme-parent:2.2:pom" in fix[0]
    assert "install:install-file" in fix[0] and "<version>2.3-SNAPSHOT</version>" in fix[0]
    assert J.ECOSYSTEM.repair(plan, plan.setup_commands[1], out, {"\n".join(fix)}) is None


def test_released_versions_come_from_the_metadata_and_never_carry_shell_text(tmp_path):
    import http.server
    import threading
    from functools import partial

    meta = tmp_path / "org" / "acme" / "acme-parent" / "maven-metadata.xml"
    meta.parent.mkdir(parents=True)
    meta.write_text("<metadata><versioning><versions><version>2.1</version><version>2.2-SNAPSHOT</version>"
                    "<version>2.2</version><version>$(touch x)</version></versions></versioning></metadata>")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(http.server.SimpleHTTPRequestHandler,
                                                                       directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        assert M.released_versions("org.acme", "acme-parent", base) == ("2.1", "2.2")
        assert M.released_versions("org.acme", "missing", base) == ()
    finally:
        server.shutdown()
