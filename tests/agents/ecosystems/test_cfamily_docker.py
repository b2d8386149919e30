"""A tiny C project with CMake and CTest tests, written by the test, minted end to end in Docker
with the C/C++ ecosystem: Debian gcc/cmake image, configure + full build at setup, then before /
after runs that rebuild only the target owning the touched test source (File API selection),
run its CTest tests with JUnit output (cmake 3.25) and grade them; and one whose only CTest test
prints a TAP stream, graded by the TAP tests inside it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.ecosystems import cfamily

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TOP = """cmake_minimum_required(VERSION 3.10)
project(calc C)
option(CALC_TESTS "Build the tests." OFF)
add_library(calc src/calc.c)
target_include_directories(calc PUBLIC src)
if (CALC_TESTS)
  enable_testing()
  add_subdirectory(test)
endif ()
"""
TEST_CMAKE = """add_executable(test_calc test_calc.c)
target_link_libraries(test_calc calc)
add_test(NAME calc_add COMMAND test_calc add)
add_test(NAME calc_zero COMMAND test_calc zero)
"""
CALC_H = "int calc_add(int a, int b);\n"
CALC_BUG = '#include "calc.h"\nint calc_add(int a, int b) { return a - b; }\n'
TEST_C = """#include <string.h>
#include "calc.h"
int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "zero") == 0) return calc_add(0, 0) != 0;
  if (argc > 1 && strcmp(argv[1], "add") == 0) return calc_add(1, 0) != 1;
  return 2;
}
"""
PATCH = """diff --git a/src/calc.c b/src/calc.c
--- a/src/calc.c
+++ b/src/calc.c
@@ -1,2 +1,2 @@
 #include "calc.h"
-int calc_add(int a, int b) { return a - b; }
+int calc_add(int a, int b) { return a + b; }
"""
TEST_PATCH = """diff --git a/test/test_calc.c b/test/test_calc.c
--- a/test/test_calc.c
+++ b/test/test_calc.c
@@ -2,6 +2,6 @@
 #include "calc.h"
 int main(int argc, char **argv) {
   if (argc > 1 && strcmp(argv[1], "zero") == 0) return calc_add(0, 0) != 0;
-  if (argc > 1 && strcmp(argv[1], "add") == 0) return calc_add(1, 0) != 1;
+  if (argc > 1 && strcmp(argv[1], "add") == 0) return calc_add(2, 3) != 5;
   return 2;
 }
"""


def test_cmake_project_minted_end_to_end(mint_with):
    files = {"CMakeLists.txt": TOP, "src/calc.h": CALC_H, "src/calc.c": CALC_BUG,
             "test/CMakeLists.txt": TEST_CMAKE, "test/test_calc.c": TEST_C}
    res = mint_with(cfamily.ECOSYSTEM, files, "3", language="c", created_at="2024-01-10 10:00:00", patch=PATCH,
                    test_patch=TEST_PATCH)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["calc_add"]
    assert res.PASS_TO_PASS == ["calc_zero"]
    assert res.interpreter == "gcc 12, cmake 3.25" and res.parser == "ctest_junit"
    assert "-DCALC_TESTS=ON" in res.setup_script
    log = Path(res.log_path).read_text()
    assert "targets owning the touched files: test_calc" in log


TAP_CMAKE = """add_executable(run_tests test_calc.c)
target_link_libraries(run_tests calc)
add_test(NAME suite COMMAND run_tests)
"""
TAP_C = """#include <stdio.h>
#include "calc.h"
int main(void) {
  int add = calc_add(1, 0) == 1;
  printf("1..3\\nok 1 - zero\\n%s 2 - add\\n", add ? "ok" : "not ok");
  printf("not ok 3 - needs_network\\n# getaddrinfo: no network in the sandbox\\n");
  return 2 - add;
}
"""


def test_cmake_tap_runner_minted_end_to_end(mint_with):
    """libuv-5133's shape: the whole suite is one CTest test printing TAP, and one of its tests
    fails in the sandbox on both sides; the TAP tests are graded, not the CTest test."""
    files = {"CMakeLists.txt": TOP, "src/calc.h": CALC_H, "src/calc.c": CALC_BUG,
             "test/CMakeLists.txt": TAP_CMAKE, "test/test_calc.c": TAP_C}
    res = mint_with(cfamily.ECOSYSTEM, files, "4", language="c", created_at="2024-01-10 10:00:00",
                    tests={"test/test_calc.c": TAP_C.replace("calc_add(1, 0) == 1", "calc_add(2, 3) == 5")},
                    fix={"src/calc.c": CALC_BUG.replace("a - b", "a + b")})
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["suite::add"]
    assert res.PASS_TO_PASS == ["suite::zero"]  # suite::needs_network fails on both sides: in neither
    assert res.parser == "ctest_junit"
