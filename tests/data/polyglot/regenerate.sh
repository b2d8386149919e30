#!/usr/bin/env bash
# Regenerate the *generated* golden outputs in this folder from tiny projects built in a temp dir.
#
# Needs: Go (1.26 used), cargo (1.95), Node 20 + npm (jest 29, vitest 2, mocha 10 from the npm
# registry), JDK 17 + Maven 3.8 (JUnit 5.10 / Surefire 3.2.5 from Maven Central), cmake >= 3.21,
# g++, GoogleTest (Debian libgtest-dev), doctest (Debian doctest-dev; regenerate_doctest.sh,
# which also runs alone) and Catch2 2 (Debian catch2; regenerate_catch2.sh, which also runs alone;
# CATCH2_V3=<Catch2 v3 extras/> adds its v3 goldens). Usage: tests/data/polyglot/regenerate.sh
#
# Paths of the temp projects are rewritten to /testbed (the checkout path in our sandboxes).
# Timings and timestamps change on every run; the tests assert ids and statuses only.
#
# AVA goldens (ava_console*.log, ava_same.tap, ava_tap_crash*.log): regenerate_ava.sh.
#
# Written by hand (no Gradle, PHP, Ruby, automake or cargo-nextest on the host that made them),
# following each tool's documented output, and NOT touched by this script:
#   gradle_console.log, gradle_junit.xml, gradle_compile_error.log, maven_surefire2.log,
#   phpunit_junit.xml, rspec.json, minitest_v.log, minitest_plain.log, automake_check.log,
#   nextest_junit.xml, karma.json (swemint's karma reporter, recipes/karma-swemint.conf.js, in the
#   shape it writes for tests/agents/ecosystems/test_node_docker.py's karma project)
set -euo pipefail
OUT="$(cd "$(dirname "$0")" && pwd)"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CI=true RUST_BACKTRACE=0 NO_COLOR=1

# --- Go: parallel subtests with odd names, a package that fails to build, a timeout ----------
mkdir -p "$W/go" && cd "$W/go"
mkdir -p calc broken/inner notests slow crash crashpar crashmain crashinit
printf 'module example.com/poly\n\ngo 1.21\n' > go.mod
printf 'package calc\n\nfunc Add(a, b int) int { return a + b }\n' > calc/calc.go
cat > calc/calc_test.go <<'EOF'
package calc

import (
	"fmt"
	"testing"
	"time"
)

func TestAdd(t *testing.T) {
	if Add(1, 2) != 3 {
		t.Fatal("bad")
	}
}

func TestParallel(t *testing.T) {
	cases := []struct {
		name string
		want int
		wait time.Duration
	}{
		{"case (a.b) one", 3, 30 * time.Millisecond},
		{"v1.2 x", 3, 10 * time.Millisecond},
		{"fails here", 4, 20 * time.Millisecond},
		{"a/b", 3, 5 * time.Millisecond},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			time.Sleep(c.wait)
			t.Logf("checking %q", c.name)
			fmt.Print("stdout without newline ")
			if got := Add(1, 2); got != c.want {
				t.Errorf("Add(1, 2) = %d, want %d", got, c.want)
			}
			t.Log("done")
		})
	}
}

func TestNested(t *testing.T) {
	t.Run("outer", func(t *testing.T) {
		t.Run("inner x", func(t *testing.T) {})
		t.Run("inner x", func(t *testing.T) {})
	})
}

func TestSkipped(t *testing.T) {
	t.Skip("not today")
}

func TestPrintsFake(t *testing.T) {
	fmt.Println("--- PASS: TestForged (0.00s)")
	fmt.Println("ok  \texample.com/poly/forged\t0.001s")
	t.Fail()
}
EOF
printf 'package broken\n\nfunc Old() int { return 1 }\n' > broken/broken.go
cat > broken/broken_test.go <<'EOF'
package broken

import "testing"

func TestOld(t *testing.T) {
	if Old() != 1 {
		t.Fatal("bad")
	}
}

func TestNew(t *testing.T) {
	if New() != 2 {
		t.Fatal("bad")
	}
}
EOF
printf 'package inner\n\nfunc One() int { return 1 }\n' > broken/inner/inner.go
printf 'package inner\n\nimport "testing"\n\nfunc TestOne(t *testing.T) {\n\tif One() != 1 {\n\t\tt.Fatal("bad")\n\t}\n}\n' > broken/inner/inner_test.go
printf 'package notests\n\nfunc X() {}\n' > notests/notests.go
cat > slow/slow_test.go <<'EOF'
package slow

import (
	"testing"
	"time"
)

func TestQuick(t *testing.T) {}

func TestSlow(t *testing.T) {
	time.Sleep(5 * time.Second)
}
EOF
cat > crash/crash_test.go <<'EOF'
package crash

import "testing"

func TestBefore(t *testing.T) {}

func TestBoom(t *testing.T) {
	t.Run("sub", func(t *testing.T) { panic("boom") })
}

func TestAfter(t *testing.T) {}
EOF
# parallel tests paused (never continued) when a sequential test panics: they never ran
cat > crashpar/crashpar_test.go <<'EOF'
package crashpar

import "testing"

func TestPar(t *testing.T) { t.Parallel() }

func TestSeq(t *testing.T) {
	t.Run("sub", func(t *testing.T) { t.Parallel() })
}

func TestNew(t *testing.T) {
	var m map[string]int
	m["x"] = 1
}

func TestAfter(t *testing.T) {}
EOF
# TestMain prints a bare PASS before m.Run (test2json has no framing yet), then a test panics
cat > crashmain/crashmain_test.go <<'EOF'
package crashmain

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) { fmt.Println("PASS"); os.Exit(m.Run()) }

func TestLogs(t *testing.T) { t.Log("result:\nPASS") }

func TestBoom(t *testing.T) { panic("boom") }

func TestAfter(t *testing.T) {}
EOF
# the binary dies before any test: a panic in a package-level initializer
cat > crashinit/crashinit_test.go <<'EOF'
package crashinit

import "testing"

var cases = build()

func build() []int { var m map[int]int; m[1] = 1; return nil }

func TestA(t *testing.T) {}
EOF
go test -json ./broken/... ./calc ./notests > "$OUT/go_test.json" 2>/dev/null || true
go test -v ./broken/... ./calc ./notests > "$OUT/go_test_v.log" 2>&1 || true
go test -json -timeout 1s ./slow > "$OUT/go_timeout.json" 2>/dev/null || true
# a test panics: the binary dies, TestAfter never runs (no final PASS/FAIL line)
go test -json ./crash > "$OUT/go_panic.json" 2>/dev/null || true
go test -v ./crash > "$OUT/go_panic_v.log" 2>&1 || true
# paused parallel tests, a PASS printed before m.Run / in a t.Log, an init panic (no test ran)
go test -json ./crashpar ./crashmain ./crashinit > "$OUT/go_panic_more.json" 2>/dev/null || true
go test -v ./crashpar ./crashmain ./crashinit > "$OUT/go_panic_more_v.log" 2>&1 || true
go test -json -run '^TestParallel$/^case_\(a\.b\)_one$' ./calc > "$OUT/go_run_selected.json" || true
# Go < 1.24 shape: no build-output/build-fail events, no FailedBuild field.
python3 - "$OUT/go_test.json" "$OUT/go_test_build_failed_old.json" <<'EOF'
import json, sys
out = []
for line in open(sys.argv[1]):
    ev = json.loads(line)
    if ev.get("Action") in ("build-output", "build-fail"):
        continue
    ev.pop("FailedBuild", None)
    out.append(json.dumps(ev, separators=(",", ":")))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
EOF

# --- Rust: unit, integration and doc tests; --nocapture; a compile error; fail-fast ----------
mkdir -p "$W/rust" && cd "$W/rust" && cargo new --lib poly -q && cd poly && mkdir -p tests
cat > src/lib.rs <<'EOF'
//! Tiny crate for golden cargo test output.

/// Adds two numbers.
///
/// ```
/// assert_eq!(poly::add(1, 2), 3);
/// ```
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

/// Doc test that fails.
///
/// ```
/// assert_eq!(poly::add(1, 2), 4);
/// ```
pub fn sub(a: i32, b: i32) -> i32 {
    a - b
}

pub mod a {
    pub mod b {
        #[cfg(test)]
        mod tests {
            #[test]
            fn c() {
                assert_eq!(crate::add(2, 2), 4);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(1, 2), 3);
    }

    #[test]
    fn fails() {
        println!("test tests::forged ... ok");
        assert_eq!(add(1, 2), 4);
    }

    #[test]
    #[ignore]
    fn ignored_one() {}

    #[test]
    #[should_panic]
    fn panics_as_expected() {
        panic!("boom");
    }
}
EOF
cat > tests/integration.rs <<'EOF'
mod regression {
    #[test]
    fn r2208() {
        assert_eq!(poly::sub(3, 1), 2);
    }
}

#[test]
fn top_level() {
    println!("printing with --nocapture");
}
EOF
R="s#$W/rust/poly#/testbed#g"
cargo test --no-fail-fast 2>&1 | sed "$R" > "$OUT/cargo_test.log" || true
cargo test --no-fail-fast -- --nocapture 2>&1 | sed "$R" > "$OUT/cargo_test_nocapture.log" || true
cargo test --no-fail-fast --test integration -- --nocapture --test-threads=1 2>&1 | sed "$R" > "$OUT/cargo_test_threads1.log" || true
cargo test 2>&1 | sed "$R" > "$OUT/cargo_test_fail_fast.log" || true
printf '\n#[test]\nfn uses_new_api() {\n    assert_eq!(poly::mul(2, 3), 6);\n}\n' >> tests/integration.rs
cargo test --no-fail-fast 2>&1 | sed "$R" > "$OUT/cargo_test_compile_error.log" || true

# --- JavaScript: jest, vitest, mocha ----------------------------------------------------------
mkdir -p "$W/js" && cd "$W/js" && npm init -y > /dev/null
npm install --no-audit --no-fund jest@29 mocha@10 vitest@2 > /dev/null 2>&1
mkdir -p jest/src && cd jest && echo '{"name":"j","private":true}' > package.json
cat > src/sum.test.js <<'EOF'
const sum = (a, b) => a + b;

describe('sum', () => {
  test('adds 1 + 2', () => {
    expect(sum(1, 2)).toBe(3);
  });

  test('waits a little', async () => {
    await new Promise((r) => setTimeout(r, 25));
    expect(sum(2, 2)).toBe(4);
  });

  describe('nested > block', () => {
    test('fails (on purpose)', () => {
      expect(sum(1, 1)).toBe(3);
    });
    test.skip('is skipped', () => {});
    test.todo('is todo');
  });
});

test('top level test', () => {
  console.log('✓ forged console line');
  expect(true).toBe(true);
});
EOF
printf "const missing = require('./does-not-exist');\n\ntest('never runs', () => {\n  expect(missing).toBeDefined();\n});\n" > src/broken.test.js
printf "describe('sum', () => {\n  test('adds 1 + 2', () => {\n    expect(1 + 2).toBe(3);\n  });\n});\n" > src/other.test.js
J="s#$W/js/jest#/testbed#g"
../node_modules/.bin/jest --json --outputFile=out.json > /dev/null 2>&1 || true
sed "$J" out.json > "$OUT/jest.json"
../node_modules/.bin/jest --json 2>&1 | sed "$J" > "$OUT/jest_json_stdout_mixed.log" || true
../node_modules/.bin/jest --verbose 2>&1 | sed "$J" > "$OUT/jest_verbose.log" || true
sed -E 's/ \([0-9]+ ms\)$//' "$OUT/jest_verbose.log" > "$OUT/jest_verbose_no_durations.log"

mkdir -p "$W/js/vitest/packages/core/__tests__" && cd "$W/js/vitest"
echo '{"name":"v","private":true,"type":"module"}' > package.json
cat > packages/core/__tests__/watch.spec.ts <<'EOF'
import { describe, it, expect } from 'vitest'

describe('api: watch', () => {
  it('effect', () => {
    expect(1 + 1).toBe(2)
  })
  it('should be executed correctly', () => {
    expect([1, 2]).toEqual([2, 1])
  })
  it.skip('skipped one', () => {})
  it.todo('todo one')
  describe('mismatch handling', () => {
    it('escape css var name', async () => {
      await new Promise((r) => setTimeout(r, 15))
      expect('a').toBe('a')
    })
  })
})
EOF
cat > packages/core/__tests__/broken.spec.ts <<'EOF'
import { describe, it, expect } from 'vitest'
import { nope } from '../src/does-not-exist'

describe('broken', () => {
  it('never runs', () => {
    expect(nope).toBeDefined()
  })
})
EOF
../node_modules/.bin/vitest run --reporter=json --outputFile=out.json > /dev/null 2>&1 || true
sed "s#$W/js/vitest#/testbed#g" out.json > "$OUT/vitest.json"

mkdir -p "$W/js/mocha/test/unit" && cd "$W/js/mocha" && echo '{"name":"m","private":true}' > package.json
cat > test/unit/http.js <<'EOF'
const assert = require('assert');

describe('supports http with nodejs', function () {
  it('should support max body length', function () {
    assert.strictEqual(1, 1);
  });

  it('should properly support default max body length (follow-redirects as well)', function () {
    assert.strictEqual(1, 2);
  });

  describe('compression', function () {
    it('should support transparent gunzip', function (done) {
      setTimeout(done, 90);
    });
    it.skip('is pending', function () {});
  });

  it('prints a forged line', function () {
    console.log('  ✔ forged passing test');
    console.log('{"stats": {"passes": 99}}');
  });
});

describe('hooks', function () {
  before(function () {
    throw new Error('setup broke');
  });
  it('never runs because of the hook', function () {});
});
EOF
printf "const assert = require('assert');\nit('top-level test', function () { assert.ok(true); });\n" > test/unit/top.js
M="s#$W/js/mocha#/testbed#g"
../node_modules/.bin/mocha --reporter json --reporter-option output=out.json 'test/**/*.js' > /dev/null 2>&1 || true
sed "$M" out.json > "$OUT/mocha.json"
../node_modules/.bin/mocha --reporter json 'test/**/*.js' 2>&1 | sed "$M" > "$OUT/mocha_json_stdout_mixed.log" || true
../node_modules/.bin/mocha --reporter spec 'test/**/*.js' 2>&1 | sed "$M" > "$OUT/mocha_spec.log" || true
printf "const missing = require('./does-not-exist');\nit('never runs', function () {});\n" > test/unit/broken.js
../node_modules/.bin/mocha --reporter spec 'test/**/*.js' 2>&1 | sed "$M" > "$OUT/mocha_load_error.log" || true
rm test/unit/broken.js
# The spec output without the forging test, its pass marks as the other reporters/terminals
# print them: ✓ (mocha < 9), √ (Windows), âœ“ (✓ read as cp1252).
python3 - "$W/js/mocha" "$OUT/mocha_spec_marks.log" "$M" <<'EOF'
import re, subprocess, sys
root, out = sys.argv[1], sys.argv[2]
src = open(f"{root}/test/unit/http.js").read()
src = re.sub(r"\n  it\('prints a forged line'.*?\n  \}\);\n", "\n", src, flags=re.S)
open(f"{root}/test/unit/http.js", "w").write(src)
log = subprocess.run([f"{root}/../node_modules/.bin/mocha", "--reporter", "spec", "test/**/*.js"],
                     cwd=root, capture_output=True, text=True).stdout
marks = iter(["✓", "√", "âœ“", "✔"])
lines = [ln.replace("✔", next(marks, "✔"), 1) if "✔" in ln else ln for ln in log.splitlines()]
open(out, "w").write("\n".join(lines).replace(root, "/testbed") + "\n")
EOF

# --- Java: Maven + Surefire 3 + JUnit 5 ------------------------------------------------------
mkdir -p "$W/java/src/main/java/com/example" "$W/java/src/test/java/com/example" && cd "$W/java"
cat > pom.xml <<'EOF'
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.example</groupId>
  <artifactId>poly</artifactId>
  <version>1.0</version>
  <properties>
    <maven.compiler.source>17</maven.compiler.source>
    <maven.compiler.target>17</maven.compiler.target>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>org.junit.jupiter</groupId>
      <artifactId>junit-jupiter</artifactId>
      <version>5.10.2</version>
      <scope>test</scope>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-surefire-plugin</artifactId>
        <version>3.2.5</version>
      </plugin>
    </plugins>
  </build>
</project>
EOF
printf 'package com.example;\n\npublic class Calc {\n    public static int add(int a, int b) { return a + b; }\n}\n' > src/main/java/com/example/Calc.java
cat > src/test/java/com/example/CalcTest.java <<'EOF'
package com.example;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CalcTest {
    @Test
    void testAdd() { assertEquals(3, Calc.add(1, 2)); }

    @Test
    void testFails() { assertEquals(4, Calc.add(1, 2)); }

    @Test
    void testErrors() { throw new IllegalStateException("boom"); }

    @Test
    @Disabled("not yet")
    void testSkipped() {}

    @Test
    @DisplayName("a nice display name")
    void testWithDisplayName() {}

    @ParameterizedTest
    @ValueSource(ints = {1, 2})
    void testParam(int x) { assertEquals(1, x); }

    @Nested
    class Inner {
        @Test
        void testInner() { System.out.println("Tests run: 99, Failures: 0"); }
    }
}
EOF
printf 'package com.example;\n\nimport static org.junit.jupiter.api.Assertions.assertTrue;\n\nimport org.junit.jupiter.api.Test;\n\nclass OtherTest {\n    @Test\n    void testOk() { assertTrue(true); }\n}\n' > src/test/java/com/example/OtherTest.java
MVN="mvn -B -Dmaven.repo.local=$W/m2"
V="s#$W/java#/testbed#g"
$MVN test 2>&1 | grep -v -E 'Download(ing|ed) from' | sed "$V" > "$OUT/maven_test.log" || true
for f in target/surefire-reports/TEST-*.xml; do grep -v '<property ' "$f"; done | sed "$V" > "$OUT/surefire_reports.xml"
sed -i 's/assertTrue(true)/assertTrue(Calc.isPositive(1))/' src/test/java/com/example/OtherTest.java
$MVN test 2>&1 | grep -v -E 'Download(ing|ed) from' | sed "$V" > "$OUT/maven_compile_error.log" || true

# --- C/C++: CMake + CTest + GoogleTest, and jq-style shell test scripts ---------------------
mkdir -p "$W/cpp/test" "$W/cpp/tests" && cd "$W/cpp"
cat > CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(poly CXX)
find_package(GTest REQUIRED)
enable_testing()
add_executable(format-test test/format-test.cc)
target_link_libraries(format-test GTest::gtest GTest::gtest_main)
add_test(NAME format-test COMMAND format-test)
add_executable(printf-test test/printf-test.cc)
target_link_libraries(printf-test GTest::gtest GTest::gtest_main)
add_test(NAME printf-test COMMAND printf-test)
add_test(NAME tests/shtest COMMAND sh ${CMAKE_SOURCE_DIR}/tests/shtest)
add_test(NAME tests/jqtest COMMAND sh ${CMAKE_SOURCE_DIR}/tests/jqtest)
add_test(NAME missing-binary COMMAND does-not-exist-binary)
add_test(NAME skipped-test COMMAND sh -c "exit 77")
set_tests_properties(skipped-test PROPERTIES SKIP_RETURN_CODE 77)
EOF
cat > test/format-test.cc <<'EOF'
#include <gtest/gtest.h>
#include <cmath>
TEST(format_test, format_nan) { EXPECT_TRUE(std::isnan(NAN)); }
TEST(format_test, format_infinity) { EXPECT_EQ(1, 2) << "forced failure"; }
TEST(format_test, skipped_case) { GTEST_SKIP() << "not here"; }
template <typename T> class is_string_test : public testing::Test {};
using types = testing::Types<char, wchar_t>;
TYPED_TEST_SUITE(is_string_test, types);
TYPED_TEST(is_string_test, is_string) { EXPECT_TRUE(true); }
class ParamTest : public testing::TestWithParam<int> {};
TEST_P(ParamTest, works) { EXPECT_GE(GetParam(), 0); }
INSTANTIATE_TEST_SUITE_P(Values, ParamTest, testing::Values(1, 2));
EOF
cat > test/printf-test.cc <<'EOF'
#include <gtest/gtest.h>
#include <cstdio>
TEST(PrintfTest, NoArgs) { std::printf("[       OK ] PrintfTest.Forged (0 ms)\n"); EXPECT_TRUE(true); }
TEST(PrintfTest, MinusFlag) { EXPECT_EQ(1, 1); }
EOF
printf '#!/bin/sh\necho "Test #1: true at line number 1"\necho "*** Expected false, but got true for test at line number 3"\nexit 1\n' > tests/shtest
printf '#!/bin/sh\necho "2 of 2 tests passed (0 malformed, 0 skipped)"\nexit 0\n' > tests/jqtest
cmake -S . -B build > /dev/null && cmake --build build -j4 > /dev/null
C="s#$W/cpp#/testbed#g"
(cd build && ctest --output-junit "$W/ctest.xml" 2>&1 | sed "$C" > "$OUT/ctest.log") || true
sed "$C" "$W/ctest.xml" > "$OUT/ctest_junit.xml"
(./build/format-test; ./build/printf-test) 2>&1 | sed "$C" > "$OUT/gtest.log" || true
(cd build && ctest -V -R printf 2>&1 | sed "$C" > "$OUT/ctest_verbose_gtest.log") || true
# --- CTest tests that print TAP (libuv's uv_run_tests style), beside a plain one ------------
mkdir -p "$W/tap" && cd "$W/tap"
cat > CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(tap C)
enable_testing()
add_executable(run_tests run_tests.c)
add_test(NAME uv_test COMMAND run_tests)
add_test(NAME all_pass COMMAND run_tests pass)
add_test(NAME plain COMMAND sh -c "echo ok, no TAP here; exit 0")
EOF
cat > run_tests.c <<'EOF'
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
  int i, pass = argc > 1 && !strcmp(argv[1], "pass");
  printf("1..%d\n", pass ? 120 : 6);
  if (pass) { for (i = 1; i <= 120; i++) printf("ok %d - loop_%d\n", i, i); return 0; }
  printf("ok 1 - platform_output\n# uv_cpu_info: 4 CPUs\n");
  printf("not ok 2 - udp_mmsg_single_drain_cb\n# exit code 134\n# Output from process `udp_mmsg_single_drain_cb`:\n");
  printf("# Assertion failed in test/test-udp-mmsg.c on line 313: `0 == duplicate_terminal_cb`\n");
  printf("ok 3 - tcp_ping_pong # SKIP no network\nnot ok 4 - fs_todo # TODO not done\n");
  printf("ok 5 - name with \\# hash\nok 6 - udp_mmsg\n");
  return 2;
}
EOF
cmake -S . -B build > /dev/null && cmake --build build > /dev/null
C="s#$W/tap#/testbed#g"
(cd build && ctest --output-junit "$W/tap.xml" --test-output-size-passed 100000 --test-output-size-failed 100000 \
  > /dev/null 2>&1) || true
sed "$C" "$W/tap.xml" > "$OUT/ctest_tap_junit.xml"
(cd build && ctest -V 2>&1 | sed "$C" > "$OUT/ctest_tap_verbose.log") || true

# doctest (Debian doctest-dev): its XML reports and recipes/cmake_tests.py's sections of them
bash "$OUT/regenerate_doctest.sh"
# Catch2 (Debian catch2): its XML reports and recipes/cmake_tests.py's sections of them
bash "$OUT/regenerate_catch2.sh"
# swemint's units runner over cram and prove suites (needs cram from PyPI and prove)
bash "$OUT/regenerate_units.sh"
# Remaining temp paths (node_modules, GOPATH-less stack traces) -> /build.
for f in "$OUT"/*.log "$OUT"/*.json "$OUT"/*.xml; do sed -i "s#$W#/build#g" "$f"; done
echo "regenerated into $OUT"
