"""S33 end to end in Docker: one GoogleTest binary built from two test files (CTest runs it whole);
the test_patch touches one of them. The row verifies, FAIL_TO_PASS is that file's new test, and
the other file's tests never run (they are in no list, and the run log shows the suites' filter)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.ecosystems import cfamily

pytestmark = [pytest.mark.docker, pytest.mark.slow]

WHEN = "2025-10-01 10:00:00"  # trixie's gcc 14
CMAKE = ("cmake_minimum_required(VERSION 3.16)\nproject(p CXX)\nenable_testing()\nfind_package(GTest REQUIRED)\n"
         "add_library(calc calc.cc)\nadd_executable(calc_test tests/test_calc.cc tests/test_other.cc)\n"
         "target_link_libraries(calc_test calc GTest::gtest_main)\nadd_test(NAME calc_test COMMAND calc_test)\n")
CALC = "int calc(int a, int b) { return a - b; }\n"
HEAD = "#include <gtest/gtest.h>\nint calc(int a, int b);\n"
TEST_CALC = HEAD + "TEST(Calc, Zero) { EXPECT_EQ(calc(0, 0), 0); }\n"
TEST_OTHER = HEAD + "TEST(Other, Same) { EXPECT_EQ(calc(3, 0), 3); }\nTEST(Other, More) { EXPECT_EQ(calc(5, 0), 5); }\n"


def test_one_gtest_binary_of_two_files_runs_only_the_touched_files_suites(mint_with):
    files = {"CMakeLists.txt": CMAKE, "calc.cc": CALC, "tests/test_calc.cc": TEST_CALC,
             "tests/test_other.cc": TEST_OTHER}
    res = mint_with(cfamily.ECOSYSTEM, files, "suites", language="cpp", created_at=WHEN,
                    tests={"tests/test_calc.cc": TEST_CALC + "TEST(CalcAdd, Adds) { EXPECT_EQ(calc(2, 3), 5); }\n"},
                    fix={"calc.cc": CALC.replace("a - b", "a + b")})
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["CalcAdd.Adds"]
    assert res.PASS_TO_PASS == ["Calc.Zero"]  # Other.* never ran
    log = Path(res.log_path).read_text()
    assert "only the suites of tests/test_calc.cc: Calc.*:CalcAdd.*" in log
    assert "$ GTEST_FILTER='Calc.*:CalcAdd.*' ctest" in log
    assert "Other.Same" not in log and "Other.More" not in log
