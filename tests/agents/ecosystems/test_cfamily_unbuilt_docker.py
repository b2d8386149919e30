"""S34 end to end in Docker: one GoogleTest binary built from two test files (CTest runs it whole);
the test_patch's test calls a function the fix adds, so before the fix the binary does not build.
The row verifies with FAIL_TO_PASS = that test (a unit that failed to build before, as a Go package
``[build failed]``), and the other file's tests never run."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.ecosystems import cfamily
from tests.agents.ecosystems.test_cfamily_gtest_suites_docker import CALC, CMAKE, HEAD, TEST_CALC, TEST_OTHER, WHEN

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_a_test_using_the_fixs_new_function_is_fail_to_pass(mint_with):
    files = {"CMakeLists.txt": CMAKE, "calc.cc": CALC, "tests/test_calc.cc": TEST_CALC,
             "tests/test_other.cc": TEST_OTHER}
    res = mint_with(cfamily.ECOSYSTEM, files, "unbuilt", language="cpp", created_at=WHEN,
                    tests={"tests/test_calc.cc": HEAD + "int triple(int a);\n"
                                                        "TEST(Calc, Triples) { EXPECT_EQ(triple(2), 6); }\n"},
                    fix={"calc.cc": CALC + "int triple(int a) { return 3 * a; }\n"})
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["Calc.Triples"]
    assert res.PASS_TO_PASS == []
    log = Path(res.log_path).read_text()
    assert "target calc_test failed to build: its 2 test(s) are reported as not built" in log, log[-3000:]
    assert "Other.Same" not in log and "Other.More" not in log
