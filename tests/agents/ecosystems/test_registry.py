"""`agents.ecosystems.pick_ecosystem`: every registered ecosystem claims its own manifest; Python
projects (by the `language` hint, or by setup.py / pyproject.toml without one) are Python's; a
row's language is a constraint: another language's ecosystem never claims it."""

from __future__ import annotations


import pytest

from agents.ecosystems import ECOSYSTEM_MODULES, ecosystems, pick_ecosystem
from tests.agents.ecosystems.conftest import make_tree

MANIFESTS = {
    "node": {"package.json": '{"name": "x", "scripts": {"test": "mocha"}}', "test/a.js": ""},
    "go": {"go.mod": "module example.com/x\n\ngo 1.19\n", "a_test.go": "package x\n"},
    "rust": {"Cargo.toml": '[package]\nname = "x"\nversion = "0.1.0"\nedition = "2021"\n', "src/lib.rs": ""},
    "java": {"pom.xml": "<project><modelVersion>4.0.0</modelVersion><groupId>g</groupId>"
                        "<artifactId>a</artifactId><version>1</version></project>", "src/test/java/ATest.java": ""},
}


def test_every_registered_module_has_an_ecosystem():
    assert len(ecosystems()) == len(ECOSYSTEM_MODULES) >= 8
    assert "python" in {e.name for e in ecosystems()}


@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_manifest_claims_its_ecosystem_without_a_hint(tmp_path, name):
    assert pick_ecosystem(make_tree(tmp_path, MANIFESTS[name]), None).name == name


def test_python_projects_are_pythons(tmp_path):
    tree = make_tree(tmp_path, {"setup.py": "from setuptools import setup\nsetup()\n", **MANIFESTS["node"]})
    assert pick_ecosystem(tree, None).name == "python"
    assert pick_ecosystem(tree, "python").name == "python"
    assert pick_ecosystem(tree, "javascript").name == "node"


def test_a_row_language_is_never_claimed_by_python(tmp_path):
    """A `language: java` tree with only build.xml: no ecosystem builds it, and Python never
    claims it (the failure a new user saw: pytest run on an Ant project)."""
    tree = make_tree(tmp_path, {"build.xml": "<project/>", "src/A.java": "class A {}", "setup.py": ""})
    eco = pick_ecosystem(tree, "java")
    assert eco is None or eco.name == "java"
