"""A tiny C project with CMake and CTest tests, written by the test, minted end to end in Docker
with the C/C++ ecosystem: Debian gcc/cmake image, configure + full build at setup, then before /
after runs that rebuild only the target owning the touched test source (File API selection),
run its CTest tests with JUnit output (cmake 3.25) and grade them.
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
