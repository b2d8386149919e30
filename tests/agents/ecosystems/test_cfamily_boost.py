"""S36 (issue 25): C++ tests written with Boost.Test, one CTest test per binary. The in-container
helper (`recipes/cmake_tests.py` with `recipes/boost_suites.py` and `recipes/boost_runs.py`) runs
each Boost.Test binary again with Boost.Test's JUnit logger (ids ``suite/sub/case``), narrows a
binary built from many test files to the units the touched files declare (S33's analogue), and a
Boost.Test owner that fails to build reports those units as not built (S34's). Pure tests on
sources the tests write, then the helper with the host's cmake, ctest, g++ and libboost-test-dev
on a small git repository (skipped without)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agents.ecosystems import cfamily
from agents.ecosystems.cfamily.c_builds import _BOOST_TEST_SOURCE, analyze, boost_packages
from envpool.testrun.polyglot.cfamily import parse_ctest_junit, parse_ctest_log
from envpool.testrun.status import TestStatus
from tests.agents.ecosystems.conftest import make_tree
from tests.agents.ecosystems.test_cfamily_gtest_suites import _module
from tests.agents.ecosystems.test_cfamily_unowned import apply, helper, need, project, touched

bs = _module("boost_suites")
br = _module("boost_runs")
P, F = TestStatus.PASSED, TestStatus.FAILED

NESTED = """#include <boost/test/unit_test.hpp>
#include <boost/test/data/test_case.hpp>
int calc(int a, int b);
struct F { int base = 2; };
BOOST_AUTO_TEST_CASE(top) { BOOST_TEST(calc(0, 0) == 0); }
// BOOST_AUTO_TEST_CASE(commented_out) {}
/* BOOST_AUTO_TEST_SUITE(gone) */
BOOST_AUTO_TEST_SUITE(outer, * boost::unit_test::label("x"))
BOOST_AUTO_TEST_CASE(plain) {}
BOOST_FIXTURE_TEST_SUITE(inner, F)
BOOST_FIXTURE_TEST_CASE(with_fixture, F) {}
BOOST_AUTO_TEST_CASE(in_fixture_suite) {}
BOOST_AUTO_TEST_SUITE_END()
BOOST_DATA_TEST_CASE(sizes, boost::unit_test::data::make({1, 2}), v) {}
BOOST_DATA_TEST_CASE_F(F, sizes_f, boost::unit_test::data::make({1}), v) {}
BOOST_AUTO_TEST_CASE_TEMPLATE(typed, T, types) {}
BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_CASE(after_a_stray_end) {}
"""


# --- detection and declared ids -------------------------------------------------------------------

def test_definitions_follow_nested_and_fixture_suites_and_skip_comments():
    assert bs.definitions(NESTED) == (
        ("case", "top"), ("case", "outer/plain"), ("case", "outer/inner/with_fixture"),
        ("case", "outer/inner/in_fixture_suite"), ("data", "outer/sizes"), ("data", "outer/sizes_f"),
        ("template", "outer/typed"), ("case", "after_a_stray_end"))


def test_selection_and_declared_ids_of_a_file():
    assert bs.selection(NESTED) == ["top", "outer/plain", "outer/inner/with_fixture", "outer/inner/in_fixture_suite",
                                    "outer/sizes", "outer/sizes_f", "outer/typed*", "after_a_stray_end"]
    # a data case's collector covers its cases outer/sizes/_0 ...; a template case's types are not read
    assert bs.declared(NESTED) == ["top", "outer/plain", "outer/inner/with_fixture", "outer/inner/in_fixture_suite",
                                   "outer/sizes", "outer/sizes_f", "after_a_stray_end"]
    assert bs.selection("int helper(int a) { return a; }\n") == [] and bs.declared("") == []


def test_boost_sources_are_told_from_others():
    assert _BOOST_TEST_SOURCE.search("#include <boost/test/included/unit_test.hpp>\n")
    assert _BOOST_TEST_SOURCE.search("#include \"boost/test/unit_test.hpp\"\n")
    assert _BOOST_TEST_SOURCE.search("BOOST_AUTO_TEST_CASE(x) {}\n")
    assert not _BOOST_TEST_SOURCE.search("#include <boost/optional.hpp>\nTEST(A, b) {}\n")


def test_the_filter_groups_paths_by_parent_and_selects_as_boost_test_does():
    flt = bs.filter_value(["outer/plain", "outer/typed*", "top", "outer/inner/with_fixture", "outer/plain"])
    assert flt == "outer/plain,typed*:top:outer/inner/with_fixture"
    assert bs.selects(flt, "outer/plain") and bs.selects(flt, "outer/typed<int>") and bs.selects(flt, "top")
    assert bs.selects("outer/sizes", "outer/sizes/_1")  # a suite selects what is below it
    assert not bs.selects(flt, "outer/inner/in_fixture_suite") and not bs.selects(flt, "other/plain")
    assert not bs.selects("!outer:@label", "outer/plain")  # a disabler or a label selects nothing here


def test_the_listing_is_a_tree_of_case_paths():
    listing = ("top*\nouter*\n    plain*\n    inner*\n        with_fixture*\n    disabled \n    sizes*\n"
               "        _0*\n        _1*\n    typed<int>*\n")
    assert bs.parse_listing(listing) == ["top", "outer/plain", "outer/inner/with_fixture", "outer/disabled",
                                         "outer/sizes/_0", "outer/sizes/_1", "outer/typed<int>"]
    assert bs.parse_listing("        too deep\n") == []


def test_the_junit_command_keeps_the_modules_arguments_and_replaces_the_logging():
    cmd = ["/b/t", "--log_level=all", "-l", "message", "--logger=HRF,all", "--run_test=own", "--color_output=no",
           "--", "--mine", "-t", "x"]
    assert br.junit_command(cmd, "/tmp/r.xml") == [
        "/b/t", "--color_output=no", "--run_test=own", "--logger=JUNIT,all,/tmp/r.xml", "--", "--mine", "-t", "x"]
    assert br.junit_command(["/b/t", "-t", "own"], "/r.xml", "a/b,c", ["a/dies"]) == [
        "/b/t", "--run_test=a/b,c", "--run_test=!a/dies", "--logger=JUNIT,all,/r.xml"]
    assert bs.own_filter(["/b/t", "--run_test=x"]) and bs.own_filter(["/b/t", "-t", "x"])
    assert not bs.own_filter(["/b/t", "--log_level=all"])


def test_crashed_cases_are_those_a_signal_stopped():
    xml = (b'<testsuite><testcase classname="a.b" name="ok"/><testcase classname="a.b" name="dies">'
           b'<error message="unexpected exception" type="system fatal error">x</error></testcase>'
           b'<testcase name="throws"><error type="uncaught exception"/></testcase></testsuite>')
    assert br.crashed_cases(xml) == ["a/b/dies"] and br.crashed_cases(b"<testsuite") == []


def test_setup_installs_boost_test_and_the_components_cmake_asks_for(tmp_path):
    assert boost_packages("find_package(Boost 1.70 REQUIRED COMPONENTS unit_test_framework filesystem ${X} "
                          "python311 nosuchlib)\n") == ["libboost-test-dev", "libboost-filesystem-dev",
                                                        "libboost-python-dev"]
    assert boost_packages("find_package(Boost REQUIRED system)\nlink(Boost::unit_test_framework)\n") == [
        "libboost-system-dev", "libboost-test-dev"]
    tree = make_tree(tmp_path / "r", {"CMakeLists.txt": "project(p)\nenable_testing()\nfind_package(Boost)\n",
                                      "t/test_a.cpp": "#include <boost/test/included/unit_test.hpp>\n"})
    b = analyze(tree, ["t/test_a.cpp"])
    assert b.boost_test and b.packages == ["libboost-dev", "libboost-test-dev"]
    assert not analyze(tree, []).boost_test  # the header-only include is read from the touched files


def test_added_tests_name_the_boost_cases_the_test_patch_adds():
    patch = ("diff --git a/t/test_a.cpp b/t/test_a.cpp\n--- a/t/test_a.cpp\n+++ b/t/test_a.cpp\n@@ -1,2 +1,4 @@\n"
             " BOOST_AUTO_TEST_SUITE(s)\n+BOOST_FIXTURE_TEST_CASE(adds, F) {}\n+BOOST_DATA_TEST_CASE(sizes, d, v) {}\n"
             " BOOST_AUTO_TEST_SUITE_END()\n")
    assert cfamily.ECOSYSTEM.added_tests(patch) == ["adds", "sizes"]


def test_the_helper_files_are_installed_beside_each_other():
    from agents.ecosystems.cfamily.c_setup import HELPER_FILES, install_helpers

    assert {"boost_suites.py", "boost_runs.py"} <= set(HELPER_FILES)
    assert "boost_runs.py" in install_helpers()


# --- the helper on a real project (host cmake, ctest, g++, libboost-test-dev) ---------------------

CMAKE = ("cmake_minimum_required(VERSION 3.16)\nproject(p CXX)\nenable_testing()\n"
         "find_package(Boost REQUIRED COMPONENTS unit_test_framework)\nadd_library(calc calc.cc)\n"
         "add_executable(calc_test tests/test_calc.cc tests/test_other.cc tests/util.cc)\n"
         "target_compile_definitions(calc_test PRIVATE BOOST_TEST_DYN_LINK)\n"
         "target_link_libraries(calc_test calc Boost::unit_test_framework)\nadd_test(NAME calc_test COMMAND calc_test)\n")
CALC = "int calc(int a, int b) { return a - b; }\n"
FIXED = CALC.replace("a - b", "a + b")
HEAD = "#include <boost/test/unit_test.hpp>\nint calc(int a, int b);\n"
TEST_CALC = HEAD + ("BOOST_AUTO_TEST_SUITE(calc_suite)\nBOOST_AUTO_TEST_CASE(zero) { BOOST_TEST(calc(0, 0) == 0); }\n"
                    "BOOST_AUTO_TEST_SUITE_END()\n")
TEST_CALC_NEW = HEAD + ("struct Two { int base = 2; };\nBOOST_AUTO_TEST_SUITE(calc_suite)\n"
                        "BOOST_AUTO_TEST_CASE(zero) { BOOST_TEST(calc(0, 0) == 0); }\nBOOST_AUTO_TEST_SUITE(add)\n"
                        "BOOST_FIXTURE_TEST_CASE(adds, Two) { BOOST_TEST(calc(base, 3) == 5); }\n"
                        "BOOST_AUTO_TEST_SUITE_END()\nBOOST_AUTO_TEST_SUITE_END()\n")
TEST_OTHER = ("#define BOOST_TEST_MODULE calc\n" + HEAD + "BOOST_AUTO_TEST_SUITE(other)\n"
              "BOOST_AUTO_TEST_CASE(same) { BOOST_TEST(calc(3, 0) == 3); }\nBOOST_AUTO_TEST_SUITE_END()\n")
UTIL = "int twice(int a) { return 2 * a; }\n"
FILES = {"CMakeLists.txt": CMAKE, "calc.cc": CALC, "tests/test_calc.cc": TEST_CALC, "tests/test_other.cc": TEST_OTHER,
         "tests/util.cc": UTIL}


def _side(tmp_path: Path, patched: dict[str, str], fix: dict[str, str] | None = None, *args: str):
    """The plan's setup (``--build-only``) at the base commit, the test_patch (and `fix`) applied,
    the test run with ``--junit``: (the run's stdout, the parsed report, the touched files)."""
    need("cmake", "ctest", "c++", "git")
    src, build, patch = project(tmp_path, FILES, patched)
    files = touched(patch)
    setup = helper(src, build, "--build-only", files=files)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    apply(src, patch)
    for name, text in (fix or {}).items():
        (src / name).write_text(text)
    run = helper(src, build, "--junit", "ctest.xml", *args, files=files)
    raw = (build / "ctest.xml").read_bytes()
    assert parse_ctest_junit.check(raw) == [], raw[-2000:]  # no anomaly
    return run.stdout, parse_ctest_junit(raw), files


def test_a_boost_binary_of_two_files_runs_only_the_touched_files_units_case_by_case(tmp_path):
    """One Boost.Test binary of two test files, one CTest test: the test_patch adds a nested
    fixture case to test_calc.cc. Only calc_suite's cases run (BOOST_TEST_RUN_FILTERS for ctest,
    --run_test for the JUnit run), graded per case; other/same never runs."""
    out, rep, files = _side(tmp_path, {"tests/test_calc.cc": TEST_CALC_NEW})
    assert files == ["tests/test_calc.cc"]
    assert "Boost.Test binary calc_test (2 other source(s)): only the units of tests/test_calc.cc: " \
           "calc_suite/zero:calc_suite/add/adds" in out, out
    assert "calc_test: the Boost.Test filter calc_suite/zero:calc_suite/add/adds selects 2 of its 3 test cases" in out
    assert "$ BOOST_TEST_RUN_FILTERS=calc_suite/zero:calc_suite/add/adds ctest" in out
    assert "'--run_test=calc_suite/zero:calc_suite/add/adds'" in out or \
        "--run_test=calc_suite/zero:calc_suite/add/adds" in out
    assert rep.statuses == {"calc_suite/zero": P, "calc_suite/add/adds": F}  # the bug; the CTest id is covered
    assert rep.collection_errors == []


def test_after_the_fix_the_new_case_passes(tmp_path):
    _, rep, _ = _side(tmp_path, {"tests/test_calc.cc": TEST_CALC_NEW}, {"calc.cc": FIXED})
    assert rep.statuses == {"calc_suite/zero": P, "calc_suite/add/adds": P}


def test_a_targeted_rerun_runs_the_boost_ids_it_names(tmp_path):
    """`CFamily.targeted_plan` passes the ids as ``--only``: they are no CTest test, so the CTest
    selection stays and the Boost.Test units among them replace the touched files' units."""
    plan_ids = ["calc_suite/add/adds"]
    out, rep, _ = _side(tmp_path, {"tests/test_calc.cc": TEST_CALC_NEW}, None, "--only", json.dumps(plan_ids))
    assert "targeted: the Boost.Test units calc_suite/add/adds" in out, out
    assert rep.statuses == {"calc_suite/add/adds": F}


def test_a_touched_file_with_no_boost_unit_runs_the_whole_binary(tmp_path):
    out, rep, files = _side(tmp_path, {"tests/test_calc.cc": TEST_CALC_NEW, "tests/util.cc": UTIL + "int one() { return 1; }\n"})
    assert files == ["tests/test_calc.cc", "tests/util.cc"]
    assert "Boost.Test binary calc_test: tests/util.cc declares no Boost.Test unit this helper reads: the whole " \
           "binaries run" in out, out
    assert "BOOST_TEST_RUN_FILTERS" not in out
    assert rep.statuses == {"calc_suite/zero": P, "calc_suite/add/adds": F, "other/same": P}


def test_a_boost_owner_that_fails_to_build_reports_the_units_its_touched_file_declares(tmp_path):
    """S34's analogue: the test_patch's case calls a function only the fix adds."""
    new = TEST_CALC.replace("BOOST_AUTO_TEST_SUITE(", "int triple(int a);\nBOOST_AUTO_TEST_SUITE(").replace(
        "BOOST_AUTO_TEST_SUITE_END()", "BOOST_AUTO_TEST_CASE(triples) { BOOST_TEST(triple(2) == 6); }\n"
                                       "BOOST_AUTO_TEST_SUITE_END()")
    out, rep, _ = _side(tmp_path, {"tests/test_calc.cc": new})
    assert "target calc_test failed to build: its 3 test(s) are reported as not built" in out, out
    assert rep.collection_errors == ["calc_suite/zero", "calc_suite/triples", "calc_test"]
    after = _side(tmp_path / "after", {"tests/test_calc.cc": new}, {"calc.cc": FIXED + "int triple(int a) { return 3 * a; }\n"})
    assert after[1].statuses == {"calc_suite/zero": P, "calc_suite/triples": P}


def test_a_crash_runs_the_binary_again_without_the_case_and_the_console_reads_the_sections(tmp_path):
    """A signal inside a case aborts Boost.Test's run; the helper runs the binary again with
    ``--run_test=!<case>``, and the rounds combine: the crashed case fails, the later cases keep
    their results. The console route (``--verbose``) reads the sections after ctest's summary."""
    crash = TEST_CALC_NEW.replace("BOOST_AUTO_TEST_CASE(zero) {", "BOOST_AUTO_TEST_CASE(dies) { int* p = nullptr; "
                                  "BOOST_TEST(*p == 0); }\nBOOST_AUTO_TEST_CASE(zero) {")
    need("cmake", "ctest", "c++", "git")
    src, build, patch = project(tmp_path, FILES, {"tests/test_calc.cc": crash})
    files = touched(patch)
    assert helper(src, build, "--build-only", files=files).returncode == 0
    apply(src, patch)
    run = subprocess.run([sys.executable, str(cfamily.RECIPES / "cmake_tests.py"), str(build), "--verbose", "--",
                          *files], cwd=src, capture_output=True, text=True, timeout=900)
    assert "boost test case(s) crashed calc_test, hiding the rest of it: calc_suite/dies" in run.stdout, run.stdout
    rep = parse_ctest_log(run.stdout)
    assert rep.statuses == {"calc_suite/dies": TestStatus.ERROR, "calc_suite/zero": P, "calc_suite/add/adds": F}


def test_the_three_framework_probes_share_one_way_of_asking(tmp_path):
    """doctest's, Catch2's and Boost.Test's probes ask the binary through `ctest_reruns.answer`:
    scripts that carry each framework's marker and answer as it does; one that fails is none."""
    dt, c2 = _module("doctest_runs"), _module("catch2_runs")

    def exe(name: str, marker: str, answer: str) -> str:
        path = tmp_path / name
        path.write_text(f"#!/bin/sh\n# {marker}\nprintf '%s\\n' '{answer}'\n")
        path.chmod(0o755)
        return str(path)

    env = {"PATH": "/usr/bin:/bin"}
    assert br.boost_version(exe("b", "_ZN5boost9unit_test", "Boost.Test module in executable 'b'\n"
                                "Compiled from Boost version 1.83.0 with dynamic linking"), str(tmp_path), env) == (1, 83)
    assert br.boost_version(exe("nb", "no marker", "Boost version 1.83.0 Boost.Test"), str(tmp_path), env) is None
    assert dt.doctest_version(exe("d", "doctest version is", '[doctest] doctest version is "2.4.11"'),
                              str(tmp_path), env) == (2, 4)
    assert c2.catch2_version(exe("c", "A Catch2 test executable", "description:  A Catch2 test executable\n"
                                 "version: 3.7.1"), str(tmp_path), env) == (3, 7)
    failing = tmp_path / "f"
    failing.write_text("#!/bin/sh\n# _ZN5boost9unit_test\nexit 3\n")
    failing.chmod(0o755)
    assert br.boost_version(str(failing), str(tmp_path), env) is None
