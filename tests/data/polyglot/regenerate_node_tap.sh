#!/usr/bin/env bash
# Regenerate node_tap_18.log and node_tap_20.log: the node ecosystem's `node --test` command
# (agents.ecosystems.node.builtin_runner.node_test_command) run over a tiny project written here
# -- a CommonJS root package (tests/) and an ES-module package (pkg/) -- in swemint's Node 18 and
# 20 toolchain images (no network). Files: a suite with a failing, a skipped and a todo test; a
# test with subtests; a top-level failure; a file that fails to load; a second file reusing a
# test name. Usage: tests/data/polyglot/regenerate_node_tap.sh (from the checkout; Docker).
set -euo pipefail
OUT="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$OUT/../../.." && pwd)"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/tests" "$W/pkg/test"
printf '{"name":"r","private":true,"scripts":{"test":"node --test tests/ && npm test --prefix pkg"}}\n' > "$W/package.json"
printf '{"name":"p","private":true,"type":"module","scripts":{"test":"node --test ./test/*.test.js"}}\n' > "$W/pkg/package.json"
cat > "$W/tests/a.test.js" <<'JS'
const test = require('node:test');
const assert = require('node:assert');
test('adds', () => { assert.strictEqual(1 + 1, 2); });
test.describe('group', () => {
  test.it('inner ok', () => {});
  test.it('inner bad', () => { assert.strictEqual(1, 2); });
  test.it.skip('skipped', () => {});
  test.it.todo('later');
  test.describe('deeper # hash', () => { test.it('leaf', () => {}); });
});
test('sub parent', async (t) => { await t.test('child one', () => {}); });
test('top fails', () => { throw new Error('boom'); });
JS
printf "const test = require('node:test');\ntest('adds', () => {});\n" > "$W/tests/b.test.js"
printf "require('./missing-module');\nconst test = require('node:test');\ntest('never', () => {});\n" > "$W/tests/c.test.js"
printf "import test from 'node:test';\nimport assert from 'node:assert';\ntest('esm', () => assert.ok(true));\n" > "$W/pkg/test/m.test.js"
CMD=$(cd "$REPO" && .venv/bin/python -c '
from agents.ecosystems.node.builtin_runner import node_test_command
print(node_test_command([("tests/a.test.js", ""), ("tests/b.test.js", ""), ("tests/c.test.js", ""),
                         ("pkg/test/m.test.js", "pkg")], {"": [], "pkg": []}, []))')
for major in 18 20; do
  img=$(docker images --format '{{.Repository}}:{{.Tag}}' | grep -m1 "^swemint/node:$major\.")
  docker run --rm --network none -v "$W:/testbed" -w /testbed "$img" \
    bash -c "export PATH=/opt/node/bin:\$PATH; $CMD" > "$OUT/node_tap_$major.log" 2>&1 || true
  # durations and source positions in Node's own frames change from run to run
  sed -i -E 's/(duration_ms:? )[0-9.]+/\10/; s/(node:[a-z_/]+):[0-9]+(:[0-9]+)?/\1/g; s/^(#   hostname=).*/\1/' \
    "$OUT/node_tap_$major.log"
done
