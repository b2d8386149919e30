"""C/C++ classes of issue 25 on small CMake projects the tests write, with the host's cmake,
ctest and GoogleTest (the in-container helper `recipes/cmake_tests.py` run directly): tests
behind a project option, and googletest tests registered at build time. The Docker twins are in
test_cfamily_moves_docker.py."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from agents.ecosystems import cfamily
from tests.agents.ecosystems.test_cfamily import _configured, images  # noqa: F401 (a fixture)

HELPER = str(cfamily.RECIPES / "cmake_tests.py")


def need(*tools: str) -> None:
    if not all(shutil.which(t) for t in tools):
        pytest.skip(f"{', '.join(tools)} needed on the host")


GTEST_CMAKE = """cmake_minimum_required(VERSION 3.16)
project(p CXX)
enable_testing()
find_package(GTest REQUIRED)
include(GoogleTest)
add_executable(calc_test calc_test.cc)
target_link_libraries(calc_test GTest::gtest_main)
gtest_discover_tests(calc_test)
add_executable(other_test other_test.cc)
target_link_libraries(other_test GTest::gtest_main)
gtest_discover_tests(other_test)
"""
OLD = "#include <gtest/gtest.h>\nTEST(Calc, Old) { EXPECT_EQ(1, 1); }\n"


def test_a_googletest_test_the_test_patch_adds_is_selected_after_the_build_registers_it(tmp_path):
    """Tests discovered at build time: gtest_discover_tests registers each test when the binary
    links, so the list CTest gives before the build lacks a test the test_patch adds; the
    helper reads the list again after the build and the new test runs."""
    need("cmake", "ctest", "c++")
    try:
        src, build = _configured(tmp_path, {"CMakeLists.txt": GTEST_CMAKE, "calc_test.cc": OLD,
                                            "other_test.cc": OLD.replace("Calc", "Other")})
    except subprocess.CalledProcessError:
        pytest.skip("GoogleTest (libgtest-dev) is needed on the host")
    subprocess.run([sys.executable, HELPER, str(build), "--build-only", "--", "nothing-owns-this"], cwd=src,
                   check=True, capture_output=True, timeout=600)  # setup: every test target built
    (src / "calc_test.cc").write_text(OLD + "TEST(Calc, Added) { EXPECT_EQ(2, 2); }\n")  # the test_patch
    r = subprocess.run([sys.executable, HELPER, str(build), "--verbose", "--", "calc_test.cc"], cwd=src,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[       OK ] Calc.Added" in r.stdout and "[       OK ] Calc.Old" in r.stdout
    assert "Other.Old" not in r.stdout  # only the touched target's tests


OPTION_CMAKE = """cmake_minimum_required(VERSION 3.16)
project(p C)
option(CALC_DEVELOPER_MODE "Developer mode: warnings and the unit tests" OFF)
option(CALC_SHARED "Build a shared library" OFF)
add_library(calc calc.c)
if (CALC_DEVELOPER_MODE)
  enable_testing()
  add_executable(calc_test calc_test.c)
  target_link_libraries(calc_test calc)
  add_test(NAME calc_test COMMAND calc_test)
else ()
  message(STATUS "Building only the library; turn CALC_DEVELOPER_MODE ON for the tests")
endif ()
"""


def test_with_no_test_defined_the_helper_names_the_options_that_may_gate_them(tmp_path):
    """Tests behind a project option: CMake's own output says which option, the cache says it is
    off; the helper prints both for the loop's `test_option` move."""
    need("cmake", "ctest", "cc")
    src, build = _configured(tmp_path, {"CMakeLists.txt": OPTION_CMAKE, "calc.c": "int calc(void) { return 1; }\n",
                                        "calc_test.c": "int main(void) { return 0; }\n"})
    r = subprocess.run([sys.executable, HELPER, str(build), "--verbose", "--", "calc_test.c"], cwd=src,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 2
    assert "no CTest tests are defined" in r.stdout
    assert ("swemint-cmake-tests: configure says: -- Building only the library; turn CALC_DEVELOPER_MODE ON for "
            "the tests") in r.stdout
    assert "swemint-cmake-tests: option CALC_DEVELOPER_MODE=OFF (Developer mode: warnings and the unit tests)" \
        in r.stdout
    assert "CALC_SHARED" not in r.stdout  # neither named by configure nor about tests


# --- the C/C++ ecosystem's moves (agents.moves), from a run's output and the tree ---------------

from agents.ecosystems.base import Plan  # noqa: E402
from agents.ecosystems.move_types import MoveContext  # noqa: E402
from tests.agents.ecosystems.conftest import make_tree  # noqa: E402


def ctx(tree, plan, why="no test ran: x", output="", touched=()):
    return MoveContext(tree=tree, instance=None, plan=plan, touched=list(touched), why=why, output=output)


def cmake_plan(flags: str = "") -> Plan:
    return Plan(ecosystem="cfamily", toolchain="gcc 12", image="i", build="cmake",
                setup_commands=[f"cmake -S /testbed -B /opt/build -DCMAKE_BUILD_TYPE=None -DBUILD_TESTING=ON {flags}"],
                test_command=f"python3 {cfamily.HELPER} /opt/build --verbose --jobs 2 -- calc_test.c", parser="ctest_log")


HELPER_SAID = ("swemint-cmake-tests: no CTest tests are defined\n"
               "swemint-cmake-tests: configure says: -- Building only the library; turn CALC_DEVELOPER_MODE ON "
               "for the tests\n"
               "swemint-cmake-tests: option CALC_DEVELOPER_MODE=OFF (Developer mode)\n"
               "swemint-cmake-tests: option CALC_BUILD_CHECKS=OFF (Build the checks)\n"
               "swemint-cmake-tests: option CALC_FUZZ=OFF (Build the fuzz tests)\n")


def test_cmake_option_moves_come_from_the_configure_output_then_from_the_option_names(tmp_path):
    tree = make_tree(tmp_path, {"CMakeLists.txt": OPTION_CMAKE})
    moves = cfamily.ECOSYSTEM.next_moves(ctx(tree, cmake_plan(), output=HELPER_SAID))
    assert [m.kind for m in moves] == ["test_option", "test_option"]
    assert moves[0].request.options == {"cmake_flags": ["-DCALC_DEVELOPER_MODE=ON"]}
    assert "turn CALC_DEVELOPER_MODE ON for the tests" in moves[0].evidence
    assert moves[1].request.options == {"cmake_flags": ["-DCALC_BUILD_CHECKS=ON"]}  # CALC_FUZZ: never
    # an option already on is not offered again
    assert [m.request.options for m in cfamily.ECOSYSTEM.next_moves(
        ctx(tree, cmake_plan("-DCALC_DEVELOPER_MODE=ON -DCALC_BUILD_CHECKS=ON"), output=HELPER_SAID))] == []


def test_the_ci_cmake_call_is_evidence_for_an_option(tmp_path):
    ci = "jobs:\n  t:\n    steps:\n      - run: cmake -B build -DCALC_TESTING_ON=ON -DX=OFF && cmake --build build\n"
    tree = make_tree(tmp_path, {"CMakeLists.txt": OPTION_CMAKE, ".github/workflows/ci.yml": ci})
    out = "swemint-cmake-tests: no CTest tests are defined\nswemint-cmake-tests: option CALC_TESTING_ON=OFF (x)\n"
    moves = cfamily.ECOSYSTEM.next_moves(ctx(tree, cmake_plan(), output=out))
    assert moves[0].request.options == {"cmake_flags": ["-DCALC_TESTING_ON=ON"]}
    assert moves[0].evidence == "CI .github/workflows/ci.yml configures -DCALC_TESTING_ON=ON"


def test_the_plan_takes_the_option_a_move_asks_for_and_refuses_anything_else(tmp_path, images):
    from agents.ecosystems.base import PlanRequest
    from envpool.images import ImageConfig
    from tests.agents.ecosystems.conftest import make_instance

    tree = make_tree(tmp_path, {"CMakeLists.txt": OPTION_CMAKE, "calc.c": "", "calc_test.c": ""})
    inst = make_instance(tree, "c")
    plan = cfamily.ECOSYSTEM.plan(tree, inst, ["calc_test.c"], ImageConfig(),
                                  PlanRequest(options={"cmake_flags": ["-DCALC_DEVELOPER_MODE=ON", "-DX=ON; rm -rf /"]}))
    configure = next(c for c in plan.setup_commands if c.startswith("mkdir -p /opt/build"))
    assert "-DCALC_DEVELOPER_MODE=ON" in configure and "rm -rf" not in configure


def test_a_googletest_test_added_and_never_run_gets_the_rediscover_move(tmp_path):
    patch = ("diff --git a/t.cc b/t.cc\n--- a/t.cc\n+++ b/t.cc\n@@ -1 +1,3 @@\n TEST(Calc, Old) {}\n"
             "+TEST_F(CalcFixture, Added) {}\n+TEST_CASE(\"adds two\") {}\n")
    assert cfamily.ECOSYSTEM.added_tests(patch) == ["CalcFixture.Added", "adds two"]
    edited = ("diff --git a/t.cc b/t.cc\n--- a/t.cc\n+++ b/t.cc\n@@ -1 +1 @@\n-TEST(Calc, Old) { x(); }\n"
              "+TEST(Calc, Old) { y(); }\n")
    assert cfamily.ECOSYSTEM.added_tests(edited) == []
    tree = make_tree(tmp_path, {"CMakeLists.txt": GTEST_CMAKE})
    moves = cfamily.ECOSYSTEM.next_moves(ctx(tree, cmake_plan(), why="tests the test_patch adds never ran: A.b"))
    assert [m.kind for m in moves] == ["rediscover", "whole_suite"]  # S32: the whole suite after it
    assert f"{cfamily.HELPER} /opt/build --rediscover --verbose" in moves[0].test.test_command


def test_autotools_switches_that_say_test_are_a_move(tmp_path):
    ac = "AC_INIT([calc],[1])\nAC_ARG_ENABLE([unit-tests], [x])\nAC_ARG_ENABLE([docs], [x])\nAC_ARG_WITH([check], [x])\n"
    tree = make_tree(tmp_path, {"configure.ac": ac})
    plan = Plan(ecosystem="cfamily", toolchain="gcc 12", image="i", build="autotools", parser="automake_log",
                setup_commands=["autoreconf -fi", "./configure"], test_command="make -j2 -k check")
    moves = cfamily.ECOSYSTEM.next_moves(ctx(tree, plan))
    assert moves[0].kind == "test_option"
    assert moves[0].request.options == {"configure_flags": ["--enable-unit-tests", "--with-check"]}


def test_a_make_suite_with_no_per_test_report_gets_the_status_units_move(tmp_path):
    from tests.agents.ecosystems.test_units import TESTS_MAKEFILE

    tree = make_tree(tmp_path, {"Makefile": "check:\n\t$(MAKE) -C tests test\n", "tests/Makefile": TESTS_MAKEFILE})
    plan = Plan(ecosystem="cfamily", toolchain="gcc 12", image="i", build="make", parser="automake_log",
                setup_commands=["make -j2"], test_command="make -k check")
    moves = cfamily.ECOSYSTEM.next_moves(ctx(tree, plan, touched=["tests/datagen.c"]))
    assert [m.kind for m in moves] == ["status_units"]
    assert moves[0].test.parser == "unit_report_log" and moves[0].test.name == "units"
    assert "swemint_unit tests/test-datagen make -C tests test-datagen" in moves[0].test.test_command
    assert "PASS_TO_PASS candidates: tests/test-fullbench, tests/test-zip" in moves[0].evidence
    assert cfamily.ECOSYSTEM.next_moves(ctx(tree, plan, why="every touched test passes before", touched=["x"])) == []
