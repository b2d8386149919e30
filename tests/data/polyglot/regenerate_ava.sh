#!/usr/bin/env bash
# Regenerate the AVA golden outputs in this folder (ava_*.log, ava_same.tap) from a tiny project
# written here in a temp dir, with ava 6.4.1 from the npm registry and Node 20. The crash logs are
# the output of the node test command itself (agents.ecosystems.node.ava.ava_command): AVA's TAP
# reporter dies on the timeout, the same files run again with the default reporter.
# Usage: tests/data/polyglot/regenerate_ava.sh  (from the checkout; uses .venv/bin/python)
# Temp paths are rewritten to /testbed; durations change from run to run.
set -euo pipefail
OUT="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$OUT/../../.." && pwd)"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
export CI=true NO_COLOR=1
mkdir -p "$W/ava/test" && cd "$W/ava"
printf '{"name":"a","private":true,"type":"module"}\n' > package.json
npm install --no-audit --no-fund ava@6.4.1 > /dev/null 2>&1
cat > test/basic.js <<'EOF'
import test from 'ava';

test('adds', t => {
	t.is(1 + 1, 2);
});

test('fails', t => {
	t.is(1 + 1, 3);
});

test.skip('skipped one', t => {
	t.pass();
});

test.todo('later');

test('title with › arrow and [brackets]', t => {
	t.pass();
});
EOF
cat > test/other.js <<'EOF'
import test from 'ava';

test('other file', t => {
	t.pass();
});
EOF
cat > test/more.js <<'EOF'
import test from 'ava';

test.before('setup', t => {
	t.log('before ran');
});

test('fails with a message', t => {
	t.fail('boom: it broke');
});

test('fails over lines', t => {
	throw new Error('first line\nsecond line');
});

test('logs', t => {
	t.log('a log line');
	t.pass();
});

test.failing('known bug', t => {
	t.fail();
});

test('slow one', async t => {
	await new Promise(resolve => setTimeout(resolve, 300));
	t.pass();
});

test.serial('serial one', t => {
	t.pass();
});
EOF
cat > test/hook.js <<'EOF'
import test from 'ava';

test.beforeEach('prepare', t => {
	throw new Error('hook broke');
});

test('never runs', t => {
	t.pass();
});
EOF
cat > test/hang.js <<'EOF'
import test from 'ava';

test('quick', t => {
	t.pass();
});

test('fails before the hang', t => {
	t.is('a', 'b');
});

test('hangs forever', async t => {
	await new Promise(() => {});
	t.pass();
});

test('waits too', async t => {
	await new Promise(resolve => setTimeout(resolve, 60000));
	t.pass();
});
EOF
R="s#$W/ava#/testbed#g"
AVA=node_modules/.bin/ava
"$AVA" --verbose test/basic.js test/other.js test/more.js test/hook.js 2>&1 | sed "$R" > "$OUT/ava_console.log" || true
"$AVA" --tap test/basic.js test/other.js test/more.js test/hook.js 2>&1 | sed "$R" > "$OUT/ava_same.tap" || true
"$AVA" --verbose test/basic.js 2>&1 | sed "$R" > "$OUT/ava_console_one.log" || true
cmd() { (cd "$REPO" && .venv/bin/python -c 'import sys; from agents.ecosystems.node.ava import ava_command
print(ava_command(sys.argv[1], sys.argv[2], sys.argv[3]))' "$AVA" "$1" "$W/tap.log"); }
bash -c "$(cmd '--timeout=2s test/hang.js test/other.js test/basic.js')" 2>&1 | sed "$R" > "$OUT/ava_tap_crash.log" || true
bash -c "$(cmd '--timeout=2s test/hang.js')" 2>&1 | sed "$R" > "$OUT/ava_tap_crash_one.log" || true
