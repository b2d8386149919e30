"""Issue 26 in Docker, on small repositories the tests write: compile-once snapshots with real
cgroup CPU accounting (Go), and a hanging test that ends as that test's failure within its
per-test limit, not a killed run, in each runner (Go's ``-timeout``, CTest's ``--timeout``, cargo's
test binaries under swemint's watchdog, mocha's and Jest's own timeouts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agents.minter as minter
from agents.mint_config import MintConfig
from agents.ecosystems import cfamily, golang, node, rust
from tests.agents.ecosystems.conftest import force_ecosystem, make_instance, make_patches, make_repo
from tests.dockerrun import run_output
from tests.session import ENV_REPOSITORY, SESSION

pytestmark = [pytest.mark.docker, pytest.mark.slow]

GO_MOD = "module example.com/calc\n\ngo 1.19\n"
CALC_BUG = "package calc\n\n// Add returns a+b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n"
CALC_FIX = CALC_BUG.replace("a - b", "a + b")
CALC_TEST = "package calc\n\nimport \"testing\"\n\nfunc TestZero(t *testing.T) {\n\tif Add(0, 0) != 0 {\n" \
            "\t\tt.Fatal(\"zero\")\n\t}\n}\n"
NEW_TEST = CALC_TEST + "\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(Add(2, 3))\n\t}\n}\n"
HANG_TEST = "package calc\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\n" \
            "func TestZHang(t *testing.T) {\n\ttime.Sleep(time.Hour)\n}\n"


ONE_RUN_EACH = {"before_runs": 1, "after_runs": 1}
TARGETED_BEFORE = {"full_before_rerun": False}
"""The targeted-rerun tests: before#2 targeted too (the default runs it in full), so each runner's
selection is exercised on both sides."""
"""`mint.verify` of the hanging-test cases: one run a side (each full run waits out the hang's
limit; what they check -- the hang fails at its limit, the run is graded -- holds per run)."""


@pytest.fixture
def mint(tmp_path, monkeypatch, docker_client):
    """mint(ecosystem, files, tests, fix, name, **config) -> InstanceResult; images removed after."""
    made: list[str] = []

    def run(eco, files, tests, fix, name, language, created_at="2023-03-01 10:00:00", **config):
        force_ecosystem(monkeypatch, eco)
        git_dir, sha = make_repo(tmp_path / name, files)
        test_patch, patch = make_patches(git_dir, tests, fix)
        inst = make_instance(sha, language, created_at, instance_id=f"acme__cost-{name}",
                             repo="acme/cost", patch=patch, test_patch=test_patch)
        cfg = MintConfig(workdir=tmp_path / "w", run_id=f"cost-{name}-{SESSION}", image_repository=ENV_REPOSITORY,
                         **config)
        res = minter.mint_instance(inst, git_dir, cfg)
        if res.image:
            made.append(res.image)
        return res

    yield run
    for image in made:
        docker_client.images.remove(image, force=True)


def _steps(res) -> list[dict]:
    return [json.loads(x) for x in Path(res.trajectory_path).read_text().splitlines()]


def test_go_compile_once_snapshots_and_cgroup_accounting(mint, docker_client):
    files = {"go.mod": GO_MOD, "calc.go": CALC_BUG, "calc_test.go": CALC_TEST}
    res = mint(golang.ECOSYSTEM, files, {"calc_test.go": NEW_TEST}, {"calc.go": CALC_FIX}, "snap", "Go")
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["example.com/calc::TestAdd"] and res.PASS_TO_PASS == ["example.com/calc::TestZero"]
    runs = {r.label: r for r in res.cost.runs}
    assert runs["before:build"].kind == "build" and runs["after:build"].kind == "build"
    # each side built once, with go test -exec /bin/true (no test ran in the snapshot)
    builds = [s for s in _steps(res) if s["rule"].endswith(":build")]
    assert [s["rule"] for s in builds] == ["before:build", "after:build"]
    assert all("go test -exec /bin/true" in s["command"] for s in builds)
    # real cgroup counters: every container reported CPU-seconds
    assert all(r.cpu_s is not None and r.cpu_s > 0 for r in res.cost.runs), res.cost.runs
    assert res.cost.phase_cpu_s["setup"] > 0 and res.cost.floor_cpu_s and res.cost.cpu_s >= res.cost.floor_cpu_s
    # the snapshot images are gone once verified
    left = docker_client.images.list(filters={"label": [f"swemint.run=cost-snap-{SESSION}", "swemint.snapshot"]})
    assert left == []


def test_a_hanging_go_test_fails_within_its_limit(mint):
    """TestZHang sleeps an hour: with a 3 s per-test limit the package's test binary panics after
    12 s naming it; it is FAILED on both sides (in no list), the run is graded, nothing timed out."""
    files = {"go.mod": GO_MOD, "calc.go": CALC_BUG, "calc_test.go": CALC_TEST}
    res = mint(golang.ECOSYSTEM, files, {"calc_test.go": NEW_TEST, "hang_test.go": HANG_TEST},
               {"calc.go": CALC_FIX}, "gohang", "Go", timeouts={"per_test": 3, "test_run": 300}, verify=ONE_RUN_EACH)
    assert res.outcome == "verified", res.reason
    assert "example.com/calc::TestAdd" in res.FAIL_TO_PASS
    assert all("TestZHang" not in t for t in res.FAIL_TO_PASS + res.PASS_TO_PASS)
    assert not any("timed out" in a for a in res.anomalies), res.anomalies
    runs = [r for r in res.cost.runs if r.kind != "build"]
    assert runs and all(r.wall_s < 120 for r in runs), runs  # 12 s binary limit, far below the run limit


CMAKE_TOP = """cmake_minimum_required(VERSION 3.10)
project(calc C)
add_library(calc src/calc.c)
target_include_directories(calc PUBLIC src)
enable_testing()
add_subdirectory(test)
"""
CMAKE_TEST = """add_executable(test_calc test_calc.c)
target_link_libraries(test_calc calc)
add_test(NAME calc_add COMMAND test_calc add)
add_test(NAME calc_hang COMMAND test_calc hang)
add_test(NAME calc_zero COMMAND test_calc zero)
"""
C_TEST = """#include <string.h>
#include <unistd.h>
#include "calc.h"
int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "zero") == 0) return calc_add(0, 0) != 0;
  if (argc > 1 && strcmp(argv[1], "add") == 0) return calc_add(1, 0) != 1;
  if (argc > 1 && strcmp(argv[1], "hang") == 0) { for (;;) sleep(1); }
  return 2;
}
"""


def test_a_hanging_ctest_test_is_its_timeout(mint):
    files = {"CMakeLists.txt": CMAKE_TOP, "src/calc.h": "int calc_add(int a, int b);\n",
             "src/calc.c": '#include "calc.h"\nint calc_add(int a, int b) { return a - b; }\n',
             "test/CMakeLists.txt": CMAKE_TEST, "test/test_calc.c": C_TEST}
    new = C_TEST.replace("calc_add(1, 0) != 1", "calc_add(2, 3) != 5")
    res = mint(cfamily.ECOSYSTEM, files, {"test/test_calc.c": new},
               {"src/calc.c": '#include "calc.h"\nint calc_add(int a, int b) { return a + b; }\n'}, "chang", "c",
               timeouts={"per_test": 3, "test_run": 300}, verify=ONE_RUN_EACH)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["calc_add"] and res.PASS_TO_PASS == ["calc_zero"]
    assert not any("timed out" in a for a in res.anomalies), res.anomalies
    runs = [r for r in res.cost.runs if r.kind != "build"]
    assert runs and all(r.wall_s < 120 for r in runs), runs


CARGO_TOML = '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2018"\n'
CARGO_LOCK = ('# This file is automatically @generated by Cargo.\nversion = 3\n\n[[package]]\nname = "calc"\n'
              'version = "0.1.0"\n')
RUST_TESTS = ("#[test]\nfn zero() {\n    assert_eq!(calc::add(0, 0), 0);\n}\n\n#[test]\nfn hangs() {\n"
              "    loop {\n        std::thread::sleep(std::time::Duration::from_secs(1));\n    }\n}\n")


@pytest.mark.parametrize("created_at, rust_version", [("2023-03-01 10:00:00", "rust 1.78"),
                                                      ("2020-06-01 10:00:00", "rust 1.48")])
def test_a_hanging_cargo_test_is_failed_by_the_watchdog(mint, created_at, rust_version):
    """`hangs` sleeps for ever in the integration test binary: 3 s after the binary's last
    result the watchdog ends it and prints `hangs` FAILED with the binary's totals; the run is
    graded (the new test FAIL_TO_PASS, `zero` PASS_TO_PASS), nothing timed out -- with a new
    cargo and with Debian's oldest (1.46, whose one rerun hint comes after the doc tests)."""
    lock = CARGO_LOCK if rust_version == "rust 1.78" else CARGO_LOCK.replace("version = 3\n\n", "")  # v2: old cargo
    files = {"Cargo.toml": CARGO_TOML, "Cargo.lock": lock, "src/lib.rs": "pub fn add(a: i64, b: i64) -> i64 {\n    a - b\n}\n",
             "tests/basic.rs": RUST_TESTS}
    new = RUST_TESTS + "\n#[test]\nfn adds_two_numbers() {\n    assert_eq!(calc::add(2, 3), 5);\n}\n"
    res = mint(rust.ECOSYSTEM, files, {"tests/basic.rs": new},
               {"src/lib.rs": "pub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n"}, f"rhang{rust_version[-2:]}", "Rust",
               created_at=created_at, timeouts={"per_test": 3, "test_run": 300}, verify=ONE_RUN_EACH)
    assert res.outcome == "verified", res.reason
    assert res.interpreter == rust_version
    assert res.FAIL_TO_PASS == ["adds_two_numbers"] and res.PASS_TO_PASS == ["zero"]
    assert not any("timed out" in a for a in res.anomalies), res.anomalies
    assert "cargo_watchdog.py ${SWEMINT_TEST_TIMEOUT:-120}" in res.test_command
    runs = [r for r in res.cost.runs if r.kind != "build"]
    assert runs and all(r.wall_s < 120 for r in runs), runs
    assert "test hangs ... FAILED" in Path(res.log_path).read_text(errors="replace")


MOCHA_TEST = ("const assert = require('assert');\nconst calc = require('../lib/calc');\n\n"
              "describe('calc', function () {\n  it('adds', function () {\n    assert.strictEqual(calc.add(2, 3), 5);\n"
              "  });\n  it('hangs', function () {\n    return new Promise(function () {});\n  });\n});\n")


def test_a_hanging_mocha_test_fails_at_the_js_limit(mint):
    """`hangs` returns a promise that never settles; the project sets no timeout, so mocha's is
    the JS share of the per-test limit (8 s -> 2000 ms): the test fails at it, the run is graded
    (`multiplies` FAIL_TO_PASS, `adds` PASS_TO_PASS) and nothing timed out."""
    files = {"package.json": json.dumps({"name": "calc", "version": "1.0.0", "private": True,
                                         "scripts": {"test": "mocha 'test/**/*.test.js'"},
                                         "devDependencies": {"mocha": "10.2.0"}}) + "\n",
             ".nvmrc": "18\n", "lib/calc.js": "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a + b;\n",
             "test/calc.test.js": MOCHA_TEST}
    new = MOCHA_TEST.replace("  it('hangs'", "  it('multiplies', function () {\n    assert.strictEqual(calc.mul(2, 3), 6);\n"
                                            "  });\n  it('hangs'")
    res = mint(node.ECOSYSTEM, files, {"test/calc.test.js": new},
               {"lib/calc.js": "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a * b;\n"}, "mhang",
               "javascript", timeouts={"per_test": 8, "test_run": 300}, verify=ONE_RUN_EACH)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["calc multiplies"] and res.PASS_TO_PASS == ["calc adds"]
    assert not any("timed out" in a for a in res.anomalies), res.anomalies
    assert "--timeout $((${SWEMINT_TEST_TIMEOUT:-120}*250))" in res.test_command
    assert "Timeout of 2000ms exceeded" in Path(res.log_path).read_text(errors="replace")


JEST_TEST = ("const calc = require('../src/calc');\n\ndescribe('calc', () => {\n"
             "  test('adds', () => expect(calc.add(2, 3)).toBe(5));\n"
             "  test('hangs', () => new Promise(() => {}));\n});\n")


def test_a_hanging_jest_test_fails_at_the_js_limit(mint):
    """The same with Jest 29: ``--testTimeout`` at 2000 ms (Jest's own default is 5000 ms)."""
    files = {"package.json": json.dumps({"name": "calc", "version": "1.0.0", "private": True,
                                         "scripts": {"test": "jest"}, "devDependencies": {"jest": "29.7.0"}}) + "\n",
             ".nvmrc": "18\n", "src/calc.js": "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a + b;\n",
             "tests/calc.test.js": JEST_TEST}
    new = JEST_TEST.replace("  test('hangs'", "  test('multiplies', () => expect(calc.mul(2, 3)).toBe(6));\n"
                                              "  test('hangs'")
    res = mint(node.ECOSYSTEM, files, {"tests/calc.test.js": new},
               {"src/calc.js": "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a * b;\n"}, "jhang",
               "javascript", timeouts={"per_test": 8, "test_run": 300}, verify=ONE_RUN_EACH)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["tests/calc.test.js > calc > multiplies"]
    assert res.PASS_TO_PASS == ["tests/calc.test.js > calc > adds"]
    assert not any("timed out" in a for a in res.anomalies), res.anomalies
    assert "--testTimeout=$((${SWEMINT_TEST_TIMEOUT:-120}*250))" in res.test_command
    assert "Exceeded timeout of 2000 ms" in Path(res.log_path).read_text(errors="replace")


VITEST_TEST = ("import { describe, expect, test } from 'vitest';\nimport { add, mul } from '../src/calc.js';\n\n"
               "describe('calc', () => {\n  test('adds', () => expect(add(2, 3)).toBe(5));\n"
               "  test('hangs', () => new Promise(() => {}));\n});\n")


def test_a_hanging_vitest_test_fails_at_the_js_limit(mint, tmp_path, docker_client):
    """The same with Vitest 1: ``--testTimeout`` at 2000 ms (Vitest's own default is 5000 ms);
    its JSON report (which the run log does not show) read from a run in the minted image."""
    files = {"package.json": json.dumps({"name": "calc", "version": "1.0.0", "private": True, "type": "module",
                                         "scripts": {"test": "vitest"}, "devDependencies": {"vitest": "1.6.0"}}) + "\n",
             ".nvmrc": "18\n", "src/calc.js": "export const add = (a, b) => a + b;\nexport const mul = (a, b) => a + b;\n",
             "tests/calc.test.js": VITEST_TEST}
    new = VITEST_TEST.replace("  test('hangs'", "  test('multiplies', () => expect(mul(2, 3)).toBe(6));\n  test('hangs'")
    res = mint(node.ECOSYSTEM, files, {"tests/calc.test.js": new},
               {"src/calc.js": "export const add = (a, b) => a + b;\nexport const mul = (a, b) => a * b;\n"}, "vhang",
               "javascript", timeouts={"per_test": 8, "test_run": 300}, verify=ONE_RUN_EACH)
    assert res.outcome == "verified", res.reason
    # (Vitest 1's JSON report gives the file's own suite an empty ancestor title: ids as parsed today)
    assert len(res.FAIL_TO_PASS) == 1 and res.FAIL_TO_PASS[0].endswith(" > calc > multiplies")
    assert len(res.PASS_TO_PASS) == 1 and res.PASS_TO_PASS[0].endswith(" > calc > adds")
    assert not any("timed out" in a for a in res.anomalies), res.anomalies
    assert "--testTimeout=$((${SWEMINT_TEST_TIMEOUT:-120}*250))" in res.test_command
    plan = json.loads(next((tmp_path / "w").rglob("plan.json")).read_text())
    out = run_output(docker_client, res.image, ["bash", "-c", f"cd /testbed && {plan['test_command']}; "
                                                "cat /tmp/swemint-node/report.json"],
                     environment={**plan["env"], "SWEMINT_TEST_TIMEOUT": "8"}, network_mode="none",
                     labels={"swemint.run": f"cost-vhang-{SESSION}"})
    assert "Test timed out in 2000ms" in out, out[-2000:]


def test_go_images_carry_the_compiled_standard_library_and_python3(docker_client):
    """A cold Go instance compiles no standard-library package (Go >= 1.20 ships none compiled:
    the image's build cache holds them), and the grading tools' python3 is in the image."""
    from envpool.toolchains.golang_image import GO_ENV, ensure_image

    image = ensure_image("1.21").image
    script = ("set -e; mkdir -p /tmp/m && cd /tmp/m && printf 'module example.com/m\\n\\ngo 1.21\\n' > go.mod && "
              "printf 'package m\\n\\nimport (\\n\\t\"fmt\"\\n\\t\"net/http\"\\n\\t\"testing\"\\n)\\n\\n"
              "func TestX(t *testing.T) { fmt.Sprint(http.StatusOK) }\\n' > m_test.go && "
              "go test -x -count=1 . 2>&1 | grep -E -c -- ' -p (fmt|net/http|testing) ' || true; "
              "python3 -c 'import json, zipfile; print(\"py ok\")'")
    out = docker_client.containers.run(image, ["bash", "-c", script], environment=GO_ENV, network_mode="none",
                                       remove=True).decode()
    lines = out.strip().splitlines()
    assert lines[-1] == "py ok" and lines[-2] == "0", out[-2000:]


PLAIN_RUST = "".join(f"#[test]\nfn keeps_{n}() {{\n    assert_eq!(calc::add({n}, 0), {n});\n}}\n\n" for n in range(4))
PLAIN_JEST = ("const calc = require('../src/calc');\n\ndescribe('calc (all)', () => {\n"
              + "".join(f"  test('keeps {n}', () => expect(calc.add({n}, 0)).toBe({n}));\n" for n in range(4)) + "});\n")


def _targeted_runs(res) -> list:
    return [r for r in res.cost.runs if r.kind == "targeted"]


def test_cargo_reruns_are_targeted_at_the_candidate_by_exact_name(mint):
    """Adaptive verification on cargo (`RustEcosystem.targeted_plan`): the one candidate
    (`adds_two_numbers`, 1 of 5 tests) is rerun alone by libtest's ``--exact`` filter -- before#2
    and after#2 report only it -- and after#3 runs in full; the grade is the full one's."""
    files = {"Cargo.toml": CARGO_TOML, "Cargo.lock": CARGO_LOCK,
             "src/lib.rs": "pub fn add(a: i64, b: i64) -> i64 {\n    a - b\n}\n", "tests/basic.rs": PLAIN_RUST}
    new = PLAIN_RUST + "#[test]\nfn adds_two_numbers() {\n    assert_eq!(calc::add(2, 3), 5);\n}\n"
    res = mint(rust.ECOSYSTEM, files, {"tests/basic.rs": new},
               {"src/lib.rs": "pub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n"}, "rtarget", "Rust",
               verify=TARGETED_BEFORE)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["adds_two_numbers"] and res.PASS_TO_PASS == [f"keeps_{n}" for n in range(4)]
    targeted = _targeted_runs(res)
    assert [r.label for r in targeted] == ["before#2", "after#2"] and all(r.tests == 1 for r in targeted), targeted
    assert [r.tests for r in res.cost.runs if r.label == "after#3"] == [5]
    steps = {s["rule"]: s for s in _steps(res)}
    assert "--exact adds_two_numbers" in steps["after#2"]["command"] and "--exact" not in res.test_command


def test_jest_reruns_are_targeted_at_the_candidate_by_full_name(mint):
    """The same with Jest 29 (`NodeEcosystem.targeted_plan`): ``-t`` selects the candidate by
    its full name, the file's other tests are skipped in the targeted reruns, the lists are the
    full runs' (a test not targeted is not graded from a targeted run)."""
    files = {"package.json": json.dumps({"name": "calc", "version": "1.0.0", "private": True,
                                         "scripts": {"test": "jest"}, "devDependencies": {"jest": "29.7.0"}}) + "\n",
             ".nvmrc": "18\n", "src/calc.js": "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a + b;\n",
             "tests/calc.test.js": PLAIN_JEST}
    new = PLAIN_JEST.replace("});\n", "  test('multiplies (2.3)', () => expect(calc.mul(2, 3)).toBe(6));\n});\n")
    res = mint(node.ECOSYSTEM, files, {"tests/calc.test.js": new},
               {"src/calc.js": "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a * b;\n"}, "jtarget",
               "javascript", verify=TARGETED_BEFORE)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["tests/calc.test.js > calc (all) > multiplies (2.3)"]
    assert res.PASS_TO_PASS == [f"tests/calc.test.js > calc (all) > keeps {n}" for n in range(4)]
    assert not res.flaky_tests
    assert [r.label for r in _targeted_runs(res)] == ["before#2", "after#2"]
    steps = {s["rule"]: s for s in _steps(res)}
    assert r"-t '(?:calc \(all\) multiplies \(2\.3\))$'" in steps["after#2"]["command"]


MOCHA_PLAIN = ("const assert = require('assert');\nconst calc = require('../lib/calc');\n\ndescribe('calc (all)', function () {\n"
               + "".join(f"  it('keeps {n}', function () {{ assert.strictEqual(calc.add({n}, 0), {n}); }});\n"
                         for n in range(4))
               + "  it('multiplies (2.3) zeros', function () { assert.strictEqual(calc.mul(0, 0), 0); });\n});\n")


def test_mocha_reruns_are_targeted_at_the_candidate_by_its_full_title(mint):
    """Adaptive verification on mocha 10 (`NodeEcosystem.targeted_plan`): ``--grep`` of the
    candidate's full title, escaped and anchored, runs it alone in before#2 and after#2 (a test
    whose title starts with the candidate's is not run: the end is anchored), after#3 is full, the
    lists are the full runs'."""
    files = {"package.json": json.dumps({"name": "calc", "version": "1.0.0", "private": True,
                                         "scripts": {"test": "mocha 'test/**/*.test.js'"},
                                         "devDependencies": {"mocha": "10.2.0"}}) + "\n",
             ".nvmrc": "18\n", "lib/calc.js": "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a + b;\n",
             "test/calc.test.js": MOCHA_PLAIN}
    new = MOCHA_PLAIN.replace("});\n", "  it('multiplies (2.3)', function () { assert.strictEqual(calc.mul(2, 3), 6); });\n"
                                       "});\n")
    res = mint(node.ECOSYSTEM, files, {"test/calc.test.js": new},
               {"lib/calc.js": "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a * b;\n"}, "mtarget",
               "javascript", verify=TARGETED_BEFORE)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["calc (all) multiplies (2.3)"]
    assert res.PASS_TO_PASS == [f"calc (all) keeps {n}" for n in range(4)] + ["calc (all) multiplies (2.3) zeros"]
    assert not res.flaky_tests
    targeted = _targeted_runs(res)
    assert [r.label for r in targeted] == ["before#2", "after#2"] and all(r.tests == 1 for r in targeted), targeted
    assert [r.tests for r in res.cost.runs if r.label == "after#3"] == [6]
    steps = {s["rule"]: s for s in _steps(res)}
    assert r"--grep '^(?:calc \(all\) multiplies \(2\.3\))$'" in steps["after#2"]["command"]
    assert "--grep" not in res.test_command


AVA_PLAIN = ("const test = require('ava');\nconst calc = require('../lib/calc');\n\n"
             + "".join(f"test('keeps {n}', t => {{ t.is(calc.add({n}, 0), {n}); }});\n" for n in range(4))
             + "test('multiplies (2.3) zeros', t => { t.is(calc.mul(0, 0), 0); });\n")


def test_ava_reruns_are_targeted_at_the_candidate_by_match(mint):
    """The same with AVA 6 over two touched files (ids ``<file> › <title>``): ``--match`` of the
    candidate's title (every tail of its id) runs it alone in before#2 and after#2; after#3 full."""
    other = "const test = require('ava');\n\ntest('quick', t => { t.pass(); });\n"
    files = {"package.json": json.dumps({"name": "calc", "version": "1.0.0", "private": True,
                                         "scripts": {"test": "ava"}, "devDependencies": {"ava": "6.4.1"}}) + "\n",
             ".nvmrc": "20\n", "lib/calc.js": "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a + b;\n",
             "test/calc.js": AVA_PLAIN, "test/other.js": other}
    new = AVA_PLAIN + "test('multiplies (2.3)', t => { t.is(calc.mul(2, 3), 6); });\n"
    res = mint(node.ECOSYSTEM, files, {"test/calc.js": new, "test/other.js": other + "// touched\n"},
               {"lib/calc.js": "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a * b;\n"}, "atarget",
               "javascript", created_at="2025-06-01 10:00:00", verify=TARGETED_BEFORE)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["calc \u203a multiplies (2.3)"]
    assert res.PASS_TO_PASS == sorted([f"calc \u203a keeps {n}" for n in range(4)]
                                      + ["calc \u203a multiplies (2.3) zeros", "other \u203a quick"])
    assert not res.flaky_tests
    targeted = _targeted_runs(res)
    assert [r.label for r in targeted] == ["before#2", "after#2"] and all(r.tests == 1 for r in targeted), targeted
    assert [r.tests for r in res.cost.runs if r.label == "after#3"] == [7]
    steps = {s["rule"]: s for s in _steps(res)}
    assert "--match 'multiplies (2.3)'" in steps["after#2"]["command"] and "--match" not in res.test_command


CMAKE_PLAIN = """add_executable(test_calc test_calc.c)
target_link_libraries(test_calc calc)
add_test(NAME calc_zero COMMAND test_calc zero)
add_test(NAME calc_one COMMAND test_calc one)
add_test(NAME calc_two COMMAND test_calc two)
add_test(NAME calcXadd COMMAND test_calc zero)
"""
C_PLAIN = """#include <string.h>
#include "calc.h"
int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "zero") == 0) return calc_add(0, 0) != 0;
  if (argc > 1 && strcmp(argv[1], "one") == 0) return calc_add(1, 0) != 1;
  if (argc > 1 && strcmp(argv[1], "two") == 0) return calc_add(2, 0) != 2;
  if (argc > 1 && strcmp(argv[1], "add") == 0) return calc_add(2, 3) != 5;
  return 2;
}
"""


def test_ctest_reruns_are_targeted_at_the_candidate_by_anchored_name(mint):
    """The same with CTest (`CFamily.targeted_plan`, the helper's ``--only``): ``ctest -R`` of
    the candidate's name, escaped and anchored (``calc.add``; ``calcXadd``, which an unescaped
    ``.`` would match, does not run), in before#2 and after#2; after#3 runs every test."""
    files = {"CMakeLists.txt": CMAKE_TOP, "src/calc.h": "int calc_add(int a, int b);\n",
             "src/calc.c": '#include "calc.h"\nint calc_add(int a, int b) { return a - b; }\n',
             "test/CMakeLists.txt": CMAKE_PLAIN, "test/test_calc.c": C_PLAIN}
    res = mint(cfamily.ECOSYSTEM, files, {"test/CMakeLists.txt": CMAKE_PLAIN + "add_test(NAME calc.add COMMAND test_calc add)\n",
                                          "test/test_calc.c": C_PLAIN + "\n"},
               {"src/calc.c": '#include "calc.h"\nint calc_add(int a, int b) { return a + b; }\n'}, "ctarget", "c",
               verify=TARGETED_BEFORE)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["calc.add"]
    assert res.PASS_TO_PASS == ["calcXadd", "calc_one", "calc_two", "calc_zero"]
    assert not res.flaky_tests
    targeted = _targeted_runs(res)
    assert [r.label for r in targeted] == ["before#2", "after#2"] and all(r.tests == 1 for r in targeted), targeted
    assert [r.tests for r in res.cost.runs if r.label == "after#3"] == [5]
    log = Path(res.log_path).read_text(errors="replace")
    assert "targeted: the CTest tests calc.add" in log and r"-R ^(calc\.add)$" in log
