"""The JS runners' per-test limit without Docker (`agents.ecosystems.node.runner_timeouts`): each runner's
timeout option follows the run's per-test limit, unless the project sets a timeout of its own or
its declared Jest predates the option; the option reaches the test command unquoted."""

from __future__ import annotations

import json
import subprocess

import pytest

from agents.ecosystems.node import analyze, build_plan
from agents.ecosystems.node.runner_timeouts import limit_option, own_timeout, takes_option
from tests.agents.ecosystems.test_node import FakeTree, choice, inst, pkg


@pytest.mark.parametrize("runner, files, where", [
    ("jest", {"jest.config.js": "module.exports = { testTimeout: 20000 };\n"}, "jest.config.js sets testTimeout"),
    ("jest", {"package.json": pkg(jest={"testTimeout": 9000})}, "package.json jest.testTimeout"),
    ("vitest", {"vite.config.ts": "export default { test: { testTimeout: 60_000 } }\n"},
     "vite.config.ts sets testTimeout"),
    ("mocha", {".mocharc.json": '{"no-timeouts": true}'}, ".mocharc.json sets timeout"),
    ("ava", {"package.json": pkg(ava={"timeout": "1m"})}, "package.json ava.timeout"),
])
def test_a_timeout_the_projects_configuration_sets_is_its_own(runner, files, where):
    tree = FakeTree({"package.json": pkg(), **files})
    pkgs = [json.loads(files.get("package.json", pkg()))]
    assert own_timeout(tree, pkgs, runner, "", []) == where
    assert own_timeout(FakeTree({"package.json": pkg()}), [{}], runner, "", []) is None


def test_a_script_option_or_a_named_config_file_is_the_projects_own():
    tree = FakeTree({"package.json": pkg(), "config/jest.unit.js": "module.exports = { testTimeout: 1 };"})
    assert own_timeout(tree, [{}], "jest", "", ["-c", "config/jest.unit.js"]) == "config/jest.unit.js sets testTimeout"
    assert own_timeout(tree, [{}], "jest", "", ["--testTimeout=10000"]) == "its script's --testTimeout=10000"
    assert own_timeout(tree, [{}], "ava", "", ["-T", "5s"]) == "its script's -T"
    assert own_timeout(tree, [{}], "jest", "", ["-c", "jest.other.js"]) is None


@pytest.mark.parametrize("deps, cra, ok", [
    ({"jest": "^29.7.0"}, None, True), ({"jest": "24.9.0"}, None, True), ({"jest": "^23.6.0"}, None, False),
    ({"jest": "~24.8.0"}, None, False), ({}, None, False), ({"jest": "latest"}, None, False),
    ({"react-scripts": "5.0.1"}, "react-scripts", True), ({"react-scripts": "^2.1.3"}, "react-scripts", False),
    ({"react-scripts": "4.0.3", "@craco/craco": "^6"}, "craco", True),
])
def test_jest_gets_the_option_only_from_the_release_that_has_it(deps, cra, ok):
    assert takes_option("jest", deps, cra) is ok
    assert takes_option("mocha", {}, None) and takes_option("vitest", {}, None)


def test_an_old_jest_keeps_its_default_and_says_why():
    tree = FakeTree({"package.json": pkg(scripts={"test": "jest"}, devDependencies={"jest": "^23.6.0"})})
    a = analyze(tree, inst(), ["test/a.test.js"])
    assert not a.per_test_limit and "--testTimeout" not in build_plan(a, choice()).test_command
    assert any("jest keeps its default per-test timeout" in n for n in a.notes)


def test_ava_gets_the_limit_in_both_of_its_runs():
    tree = FakeTree({"package.json": pkg(scripts={"test": "ava"}, devDependencies={"ava": "^6"})})
    cmd = build_plan(analyze(tree, inst(), ["test/a.js"]), choice()).test_command
    assert cmd.count(f"{limit_option('ava')} test/a.js") == 2  # the TAP run and the console rerun


def test_the_option_is_the_per_test_limit_in_milliseconds_a_quarter_of_it():
    """The shell expands the option from the run's SWEMINT_TEST_TIMEOUT (120 s when unset)."""
    def expand(env: dict[str, str]) -> str:
        return subprocess.run(["bash", "-c", f"echo {limit_option('jest')}"], env=env, capture_output=True,
                              text=True, check=True).stdout.strip()

    assert expand({"SWEMINT_TEST_TIMEOUT": "8"}) == "--testTimeout=2000"
    assert expand({}) == "--testTimeout=30000"
