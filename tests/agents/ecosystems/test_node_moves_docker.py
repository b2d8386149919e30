"""Issue 25's JavaScript classes minted end to end in Docker on small projects the tests write:
a test_patch that changes only a Jest snapshot (the test file the snapshot is named after runs),
and an ES-module project whose test script starts Jest through ``node --experimental-vm-modules``
(started the same way; bare `jest` cannot load its tests)."""

from __future__ import annotations

import json

import pytest

from tests.agents.ecosystems.test_node_docker import mint_node  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.docker, pytest.mark.slow]

WHEN = "2024-03-01T00:00:00Z"
SNAP_BASE = {
    "package.json": json.dumps({"name": "fmt", "version": "1.0.0", "private": True, "engines": {"node": ">=18"},
                                "scripts": {"test": "jest"}, "devDependencies": {"jest": "29.7.0"}}, indent=2) + "\n",
    "src/fmt.js": "module.exports = (n) => `n=${n}`; // bug: no unit\n",
    "src/__tests__/fmt.test.js": "const fmt = require('../fmt');\n\ntest('formats', () => {\n"
                                 "  expect(fmt(3)).toMatchSnapshot();\n});\ntest('keeps', () => expect(1).toBe(1));\n",
    "src/__tests__/__snapshots__/fmt.test.js.snap": "// Jest Snapshot v1, https://goo.gl/fbAQLP\n\n"
                                                    "exports[`formats 1`] = `\"n=3\"`;\n",
}


def test_a_test_patch_that_changes_only_a_snapshot_runs_the_test_file_it_is_named_after(mint_node):
    snap = SNAP_BASE["src/__tests__/__snapshots__/fmt.test.js.snap"].replace('"n=3"', '"n=3 items"')
    res = mint_node(SNAP_BASE, {"src/__tests__/__snapshots__/fmt.test.js.snap": snap},
                    {"src/fmt.js": "module.exports = (n) => `n=${n} items`;\n"}, "snap", WHEN)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["src/__tests__/fmt.test.js > formats"]
    assert res.PASS_TO_PASS == ["src/__tests__/fmt.test.js > keeps"]


ESM_SCRIPT = "node --experimental-vm-modules node_modules/jest/bin/jest.js"
ESM_BASE = {
    "package.json": json.dumps({"name": "esm", "version": "1.0.0", "private": True, "type": "module",
                                "engines": {"node": ">=18"}, "scripts": {"test": ESM_SCRIPT},
                                "devDependencies": {"jest": "29.7.0"}}, indent=2) + "\n",
    "src/sum.js": "export const sum = (a, b) => Math.abs(a) + b; // bug\n",
    "test/sum.test.js": "import { sum } from '../src/sum.js';\n\ntest('adds', () => expect(sum(2, 3)).toBe(5));\n",
}


def test_jest_on_es_modules_runs_through_the_projects_own_node_flags(mint_node):
    tests = {"test/sum.test.js": ESM_BASE["test/sum.test.js"] + "test('negatives', () => expect(sum(-2, 3)).toBe(1));\n"}
    res = mint_node(ESM_BASE, tests, {"src/sum.js": "export const sum = (a, b) => a + b;\n"}, "esm", WHEN)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["test/sum.test.js > negatives"] and res.PASS_TO_PASS == ["test/sum.test.js > adds"]
    assert ESM_SCRIPT in res.test_command
