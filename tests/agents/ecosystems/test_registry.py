"""`agents.ecosystems.pick_ecosystem`: every registered ecosystem claims its own manifest; Python
projects (by the `language` hint, or by setup.py / pyproject.toml without one) stay on the
Python path."""

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
    assert len(ecosystems()) == len(ECOSYSTEM_MODULES) >= 7


@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_manifest_claims_its_ecosystem_without_a_hint(tmp_path, name):
    assert pick_ecosystem(make_tree(tmp_path, MANIFESTS[name]), None).name == name


def test_python_projects_stay_on_the_python_path(tmp_path):
    tree = make_tree(tmp_path, {"setup.py": "from setuptools import setup\nsetup()\n", **MANIFESTS["node"]})
    assert pick_ecosystem(tree, None) is None
    assert pick_ecosystem(tree, "python") is None
    assert pick_ecosystem(tree, "javascript").name == "node"
