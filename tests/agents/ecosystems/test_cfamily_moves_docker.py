"""Issue 25's C/C++ classes minted end to end in Docker on small projects the tests write: tests
behind a project option (round 2: the option CMake's own output names), a googletest test the
test_patch adds (registered by gtest_discover_tests when its binary links), and a make suite
with no per-test report (round 2: its make targets graded by exit status)."""

from __future__ import annotations

import pytest

from agents.ecosystems import cfamily
from tests.agents.ecosystems.test_cfamily_moves import GTEST_CMAKE, OLD, OPTION_CMAKE

pytestmark = [pytest.mark.docker, pytest.mark.slow]

WHEN = "2025-10-01 10:00:00"  # trixie's gcc 14
CALC_BUG = "int calc(int a, int b) { return a - b; }\n"
CALC_FIXED = "int calc(int a, int b) { return a + b; }\n"
CALC_TEST = "int calc(int a, int b);\nint main(void) { return calc(1, 0) != 1; }\n"
CALC_TEST_NEW = "int calc(int a, int b);\nint main(void) { return calc(2, 3) != 5; }\n"


def test_tests_behind_a_project_option_verify_in_round_2_with_the_option_configure_names(mint_with):
    files = {"CMakeLists.txt": OPTION_CMAKE, "calc.c": CALC_BUG, "calc_test.c": CALC_TEST}
    res = mint_with(cfamily.ECOSYSTEM, files, "opt", language="c", created_at=WHEN,
                    tests={"calc_test.c": CALC_TEST_NEW}, fix={"calc.c": CALC_FIXED})
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["calc_test"]
    assert res.rounds[0].outcome == "tests_not_run" and res.rounds[0].feedback == "replan: move test_option"
    assert res.round == 2 and res.rounds[1].move == "test_option"
    assert "turn CALC_DEVELOPER_MODE ON for the tests" in res.rounds[1].evidence
    assert "-DCALC_DEVELOPER_MODE=ON" in res.setup_script


def test_a_googletest_test_the_test_patch_adds_is_fail_to_pass(mint_with):
    """gtest_discover_tests: the test the test_patch adds exists in CTest's list only after its
    binary links; selected from the list read before the build it never ran (no_fail_to_pass)."""
    calc = "int calc(int a, int b) { return a - b; }\n"
    test = "#include <gtest/gtest.h>\nint calc(int a, int b);\n" + OLD.split("\n", 1)[1]
    cmake = GTEST_CMAKE.replace("add_executable(calc_test calc_test.cc)", "add_library(calc calc.cc)\n"
                                "add_executable(calc_test calc_test.cc)\ntarget_link_libraries(calc_test calc)")
    files = {"CMakeLists.txt": cmake, "calc.cc": calc, "calc_test.cc": test,
             "other_test.cc": OLD.replace("Calc", "Other")}
    res = mint_with(cfamily.ECOSYSTEM, files, "gtest", language="cpp", created_at=WHEN,
                    tests={"calc_test.cc": test + "TEST(Calc, Adds) { EXPECT_EQ(calc(2, 3), 5); }\n"},
                    fix={"calc.cc": calc.replace("a - b", "a + b")})
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["Calc.Adds"] and res.PASS_TO_PASS == ["Calc.Old"]
    assert res.round == 1


ROOT_MAKEFILE = """all:
\t$(MAKE) -C tests all
check:
\t$(MAKE) -C tests test
"""
TESTS_MAKEFILE = """all: calc_test other_test
calc_test: calc_test.c ../calc.c
\t$(CC) -o $@ $^
other_test: other_test.c ../calc.c
\t$(CC) -o $@ $^
test: test-calc test-other
test-calc: calc_test
\t./calc_test && echo calc fine
test-other: other_test
\t./other_test
"""


def test_a_make_suite_with_no_per_test_report_verifies_by_its_targets_exit_status(mint_with):
    files = {"Makefile": ROOT_MAKEFILE, "tests/Makefile": TESTS_MAKEFILE, "calc.c": CALC_BUG,
             "tests/calc_test.c": CALC_TEST, "tests/other_test.c": "int calc(int, int);\nint main(void) "
                                                                 "{ return calc(0, 0) != 0; }\n"}
    res = mint_with(cfamily.ECOSYSTEM, files, "units", language="c", created_at=WHEN,
                    tests={"tests/calc_test.c": CALC_TEST_NEW}, fix={"calc.c": CALC_FIXED})
    assert res.outcome == "verified", res.reason
    assert res.rounds[0].outcome == "tests_not_run" and res.rounds[1].move == "status_units"
    assert res.FAIL_TO_PASS == ["tests/test-calc"] and res.PASS_TO_PASS == ["tests/test-other"]
    assert res.parser == "unit_report_log"


PROVE_MAKEFILE = """all: calc
calc: calc.c
\t$(CC) -o $@ $^
test: calc
\tprove t/*.t
"""
CALC_CLI = ("#include <stdio.h>\n#include <stdlib.h>\nint calc(int a, int b) { return a - b; }\n"
            "int main(int c, char **v) { printf(\"%d\\n\", calc(atoi(v[1]), atoi(v[2]))); return 0; }\n")


def _tap(args: str, want: str) -> str:
    return f'my $o = `./calc {args}`; print "1..1\\n", ($o eq "{want}\\n" ? "ok" : "not ok"), " 1 - calc {args}\\n";\n'


def test_a_target_whose_tool_reports_each_file_verifies_per_file_despite_an_unrelated_failure(mint_with):
    """S13: `make test` runs prove over t/*.t; t/broken.t fails on both sides (unrelated to the
    fix), so the target fails on both sides. Graded per file (prove's line for each), the
    touched t/calc.t is FAIL_TO_PASS and t/other.t PASS_TO_PASS."""
    files = {"Makefile": PROVE_MAKEFILE, "calc.c": CALC_CLI, "t/calc.t": _tap("1 0", "1"),
             "t/other.t": _tap("0 0", "0"), "t/broken.t": 'print "1..1\\nnot ok 1 - unrelated\\n";\n'}
    res = mint_with(cfamily.ECOSYSTEM, files, "prove", language="c", created_at=WHEN,
                    tests={"t/calc.t": _tap("2 3", "5")}, fix={"calc.c": CALC_CLI.replace("a - b", "a + b")})
    assert res.outcome == "verified", res.reason
    assert res.rounds[-1].move == "status_units" and "target test" in res.rounds[-1].evidence
    assert res.FAIL_TO_PASS == ["t/calc.t"] and res.PASS_TO_PASS == ["t/other.t"]
    assert res.parser == "unit_report_log"


GPU_CMAKE = """cmake_minimum_required(VERSION 3.16)
project(p C)
option(CALC_ENABLE_GPU "Build the GPU kernels" ON)
if (CALC_ENABLE_GPU)
  message(FATAL_ERROR "Failed to find nvcc. Compiler requires the CUDA toolkit.")
endif ()
find_program(XXD xxd REQUIRED)
enable_testing()
add_library(calc calc.c)
add_executable(calc_test calc_test.c)
target_link_libraries(calc_test calc)
add_test(NAME calc_test COMMAND calc_test)
"""
GPU_WORKFLOW = """jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - run: sudo apt-get install -y xxd
      - uses: ./.github/actions/build_cmake
"""
GPU_ACTION = """runs:
  using: composite
  steps:
    - run: cmake -B build -DCALC_ENABLE_GPU=OFF . && cmake --build build
      shell: bash
"""


def test_a_build_that_needs_what_the_ci_provides_verifies_with_its_packages_and_options(mint_with):
    """Half A's classes S1/S2: the default configure fails (a GPU option on by default, a program
    only the CI installs); the CI's composite action passes -DCALC_ENABLE_GPU=OFF and its workflow
    installs the program's package; round 2 builds with both."""
    files = {"CMakeLists.txt": GPU_CMAKE, "calc.c": CALC_BUG, "calc_test.c": CALC_TEST,
             ".github/workflows/ci.yml": GPU_WORKFLOW, ".github/actions/build_cmake/action.yml": GPU_ACTION}
    res = mint_with(cfamily.ECOSYSTEM, files, "gpu", language="c", created_at=WHEN,
                    tests={"calc_test.c": CALC_TEST_NEW}, fix={"calc.c": CALC_FIXED})
    assert res.outcome == "verified", res.reason
    assert res.rounds[0].outcome == "replan" and res.rounds[0].feedback == "replan: move ci_setup"
    assert res.rounds[1].move == "ci_setup" and "-DCALC_ENABLE_GPU=OFF" in res.rounds[1].evidence
    assert "-DCALC_ENABLE_GPU=OFF" in res.setup_script and "xxd" in res.setup_script
    assert res.FAIL_TO_PASS == ["calc_test"]
