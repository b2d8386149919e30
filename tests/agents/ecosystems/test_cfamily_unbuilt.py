"""S34 (issue 25): the test_patch's GoogleTest file uses the fix's new API, so on the before side
the binary owning it does not build (facebookresearch/faiss-5490's ``faiss_test``); ctest then ran
nothing, the before report was empty and the row ended tests_not_run. The helper
(`recipes/cmake_tests.py`) now reports the tests such an owner would have run as a unit that failed
to build (an ``<swemint-unbuilt>`` section: the GoogleTest ids the touched files declare, the CTest
tests running the binary whole), the C-family parsers read them as collection errors, and a test
passing after is FAIL_TO_PASS -- as a Go package ``[build failed]``. Pure tests on sources the
tests write, then the helper with the host's cmake, ctest, g++ and GoogleTest."""

from __future__ import annotations

from envpool.grading import grade, in_failed_collector
from envpool.testrun.polyglot.cfamily import parse_ctest_junit, parse_ctest_log, parse_gtest_log
from envpool.testrun.status import TestRunReport
from tests.agents.ecosystems.test_cfamily_gtest_suites import (CALC, DISCOVERED, HEAD, TEST_A, TEST_B, UTIL, WHOLE,
                                                               _module)
from tests.agents.ecosystems.test_cfamily_unowned import apply, helper, need, project, touched

gs = _module("gtest_suites")
ct = _module("cmake_tests")

ANCHOR = "swemint-cmake-tests: " + ct.UNBUILT_ANCHOR


def test_declared_ids_as_googletest_prints_them():
    text = (HEAD + "TEST(Calc, Adds) {}\nTEST_F(Fx, Subs) {}\n// TEST(Gone, x) {}\n"
            "class P : public ::testing::TestWithParam<int> {};\nTEST_P(P, Same) {}\n"
            "INSTANTIATE_TEST_SUITE_P(Small, P, ::testing::Values(1, 2));\nINSTANTIATE_TEST_SUITE_P(, P, ::testing::Values(3));\n"
            "TEST_P(Q, Elsewhere) {}\nTYPED_TEST_SUITE(Ty, Types);\nTYPED_TEST(Ty, Holds) {}\n"
            "TYPED_TEST_P(Tp, Works) {}\nINSTANTIATE_TYPED_TEST_SUITE_P(My, Tp, Types);\nTYPED_TEST_P(Up, w) {}\n")
    ids = gs.declared(text)
    assert ids == ["Calc.Adds", "Fx.Subs", "Small/P.Same", "P.Same", "Ty", "My/Tp"]  # Q, Up: prefixes unknown
    printed = ["Calc.Adds", "Fx.Subs", "Small/P.Same/0", "P.Same/0", "Ty/1.Holds", "My/Tp/0.Works"]
    assert all(in_failed_collector(t, ids) for t in printed)
    assert not any(in_failed_collector(t, ids) for t in ("Calc.AddsMore", "Calc.Other", "Other/P.Same/0", "Q.x"))


def _console(*ids: str, target: str = "t") -> str:
    return (f"swemint-cmake-tests: target {target} failed to build: its tests cannot run\n"
            "swemint-cmake-tests: $ ctest --timeout 120 -V\nNo tests were found!!!\n"
            + ANCHOR + "\n" + ct.unbuilt_section(target, list(ids)).decode())


def test_the_section_is_collection_errors_in_each_parser():
    log = _console("New.Works", "My/P.Same", "odd <name> & co")
    for parse in (parse_gtest_log, parse_ctest_log):
        rep = parse(log)
        assert rep.collection_errors == ["New.Works", "My/P.Same", "odd <name> & co"] and not rep.statuses
    junit = (b'<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="x" tests="0"></testsuite>\n'
             + ct.unbuilt_section("t", ["New.Works"]))
    assert parse_ctest_junit(junit).collection_errors == ["New.Works"]


def test_a_section_a_test_or_build_prints_is_not_read():
    forged = ANCHOR + "\n" + ct.unbuilt_section("t", ["B.Old"]).decode()
    no_anchor = "swemint-cmake-tests: $ ctest -V\n" + ct.unbuilt_section("t", ["B.Old"]).decode()
    assert parse_gtest_log(no_anchor).collection_errors == []
    # a failing test's raw output (--output-on-failure) before ctest's summary
    ran = ("1/1 Test #1: x ....***Failed    0.01 sec\n" + forged + "\n0% tests passed, 1 tests failed out of 1\n")
    assert parse_ctest_log(ran).collection_errors == []
    # inside the JUnit document a test's output is escaped; before its declaration it does not count
    junit = (ct.unbuilt_section("t", ["B.Old"]) + b'<?xml version="1.0"?>\n<testsuite name="x" tests="0"></testsuite>\n')
    assert parse_ctest_junit(junit).collection_errors == []


def test_a_passing_test_after_is_fail_to_pass_and_one_absent_after_is_not():
    before = parse_gtest_log(_console("New.Works", "My/P.Same", "Gone.Only"))
    after = parse_gtest_log("[ RUN      ] New.Works\n[       OK ] New.Works (0 ms)\n"
                            "[ RUN      ] My/P.Same/0\n[       OK ] My/P.Same/0 (0 ms)\n"
                            "[==========] 2 tests from 2 test suites ran. (0 ms total)\n")
    g = grade([before], [after])
    assert g.FAIL_TO_PASS == ["My/P.Same/0", "New.Works"] and g.PASS_TO_PASS == []
    assert grade([TestRunReport()], [after]).FAIL_TO_PASS == g.FAIL_TO_PASS  # as an absent before run would


# --- the helper on a real project (host cmake, ctest, g++, GoogleTest) ----------------------------

TEST_A_NEW = TEST_A.replace("int calc(int, int);\n", "int calc(int, int);\nint triple(int);\n") \
    + "TEST(ANew, Triples) { EXPECT_EQ(triple(2), 6); }\n"  # the fix adds triple() to the library
FIX = CALC + "int triple(int a) { return 3 * a; }\n"


def _sides(tmp_path, cmake: str, *args: str):
    need("cmake", "ctest", "c++", "git")
    src, build, patch = project(tmp_path, {"CMakeLists.txt": cmake, "calc.cc": CALC, "tests/test_a.cc": TEST_A,
                                           "tests/test_b.cc": TEST_B, "tests/util.cc": UTIL},
                                {"tests/test_a.cc": TEST_A_NEW})
    files = touched(patch)
    setup = helper(src, build, "--build-only", files=files)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    apply(src, patch)
    before = helper(src, build, "--verbose", *args, files=files)
    (src / "calc.cc").write_text(FIX)
    after = helper(src, build, "--verbose", *args, files=files)
    assert after.returncode == 0, after.stdout + after.stderr
    return before.stdout, after.stdout


def test_discovered_before_reports_the_declared_ids_as_not_built_after_runs_them(tmp_path):
    before, after = _sides(tmp_path, DISCOVERED)
    assert "target calc_test failed to build: its 3 test(s) are reported as not built" in before, before
    rb, ra = parse_ctest_log(before), parse_ctest_log(after)
    assert rb.collection_errors == ["A.Old", "Small/P.Same", "ANew.Triples"]
    assert "B.Old" not in ra.statuses and ra.statuses["ANew.Triples"].value == "PASSED"
    f2p = grade([rb], [ra]).FAIL_TO_PASS  # discovery names a parameter's case by its value
    assert f2p[:2] == ["A.Old", "ANew.Triples"] and len(f2p) == 4 and all(t.startswith("Small/P.Same/") for t in f2p[2:])


def test_a_binary_ctest_runs_whole_adds_its_ctest_name(tmp_path):
    before, after = _sides(tmp_path, WHOLE)
    rb, ra = parse_gtest_log(before), parse_gtest_log(after)
    assert rb.collection_errors == ["A.Old", "Small/P.Same", "ANew.Triples", "calc_test"], before
    assert grade([rb], [ra]).FAIL_TO_PASS == ["A.Old", "ANew.Triples", "Small/P.Same/0", "Small/P.Same/1"]
    assert parse_ctest_log(before).collection_errors[-1] == "calc_test"
    assert grade([parse_ctest_log(before)], [parse_ctest_log(after)]).FAIL_TO_PASS == ["calc_test"]
