"""S36 end to end in Docker: one Boost.Test binary built from two test files (CTest runs it whole,
``find_package(Boost COMPONENTS unit_test_framework)``: libboost-test-dev from Debian); the
test_patch adds a nested fixture case to one file. The row verifies with FAIL_TO_PASS / PASS_TO_PASS
in Boost.Test's id form (``suite/sub/case``), and the other file's cases never run."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.ecosystems import cfamily
from tests.agents.ecosystems.test_cfamily_boost import CALC, CMAKE, FIXED, TEST_CALC, TEST_CALC_NEW, TEST_OTHER, UTIL
from tests.agents.ecosystems.test_cfamily_gtest_suites_docker import WHEN

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_one_boost_binary_of_two_files_is_graded_case_by_case(mint_with):
    files = {"CMakeLists.txt": CMAKE, "calc.cc": CALC, "tests/test_calc.cc": TEST_CALC,
             "tests/test_other.cc": TEST_OTHER, "tests/util.cc": UTIL}
    res = mint_with(cfamily.ECOSYSTEM, files, "boost", language="cpp", created_at=WHEN,
                    tests={"tests/test_calc.cc": TEST_CALC_NEW}, fix={"calc.cc": FIXED})
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["calc_suite/add/adds"]
    assert res.PASS_TO_PASS == ["calc_suite/zero"]  # other/same never ran
    log = Path(res.log_path).read_text()
    assert "only the units of tests/test_calc.cc: calc_suite/zero:calc_suite/add/adds" in log, log[-3000:]
    assert "--logger=JUNIT,all," in log
    assert "other/same" not in log
