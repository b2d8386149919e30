"""CTest tests that print a TAP stream (libuv-5133: `uv_test` runs all 513 tests of
`uv_run_tests`), through the in-container helper with real cmake/ctest on this host: the
helper keeps passing tests' whole output in ctest's JUnit report, and the parsers report the
TAP tests inside it."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys

import pytest

from agents.ecosystems import cfamily
from envpool.testrun.outcome import TestStatus
from envpool.testrun.polyglot.cfamily import parse_ctest_junit, parse_ctest_log

pytestmark = pytest.mark.skipif(not (shutil.which("cmake") and shutil.which("ctest") and shutil.which("cc")),
                                reason="cmake, ctest and a C compiler are needed on the host")

HELPER = cfamily.RECIPES / "cmake_tests.py"
N = 150  # ok lines of the passing runner: ~2.5 KiB, more than the 1 KiB ctest keeps by default
RUNNER = r"""#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
  int i;
  if (argc > 1 && !strcmp(argv[1], "all")) {
    printf("1..%d\n", @N@);
    for (i = 1; i <= @N@; i++) printf("ok %d - case_number_%d\n", i, i);
    return 0;
  }
  printf("1..4\nok 1 - udp_mmsg\nnot ok 2 - udp_mmsg_single_drain_cb\n# exit code 134\n"
         "# Output from process `udp_mmsg_single_drain_cb`:\n# Assertion failed\n"
         "ok 3 - tcp_connect # SKIP no network\nok 4 - fs_stat\n");
  return 1;
}
"""


def _helper():
    spec = importlib.util.spec_from_file_location("cmake_tests", HELPER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _project(tmp_path):
    """A CMake project like libuv's: one runner target, two CTest tests running it (one with
    a failing TAP test, one all passing with more than 1 KiB of output), one plain test."""
    src, build = tmp_path / "src", tmp_path / "build"
    (src / "test").mkdir(parents=True)
    (src / "test" / "runner.c").write_text(RUNNER.replace("@N@", str(N)))
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(p C)\nenable_testing()\n"
        "add_executable(uv_run_tests test/runner.c)\n"
        "add_test(NAME uv_test COMMAND uv_run_tests WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})\n"
        "add_test(NAME uv_test_all COMMAND uv_run_tests all)\n"
        'add_test(NAME plain COMMAND sh -c "echo ok, nothing to see")\n')
    (build / ".cmake/api/v1/query").mkdir(parents=True)
    (build / ".cmake/api/v1/query/codemodel-v2").touch()
    subprocess.run(["cmake", "-S", str(src), "-B", str(build)], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)  # as the setup does
    return src, build


def _expected():
    P = TestStatus.PASSED
    return {"uv_test::udp_mmsg": P, "uv_test::udp_mmsg_single_drain_cb": TestStatus.FAILED,
            "uv_test::tcp_connect": TestStatus.SKIPPED, "uv_test::fs_stat": P,
            **{f"uv_test_all::case_number_{i}": P for i in range(1, N + 1)}}


def test_libuv_5133_tap_tests_inside_ctest_tests_are_the_results(tmp_path):
    """JUnit route: every TAP test of both CTest tests, the passing one's whole stream too."""
    src, build = _project(tmp_path)
    junit = tmp_path / "j.xml"
    r = subprocess.run([sys.executable, str(HELPER), str(build), "--junit", str(junit), "--", "test/runner.c"],
                       cwd=src, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0, r.stdout + r.stderr  # ctest: uv_test failed
    raw = junit.read_bytes()
    assert parse_ctest_junit.check(raw) == [], r.stdout
    assert parse_ctest_junit(raw).statuses == _expected()  # `plain` runs no picked target


def test_ctest_verbose_route_reports_the_same_tap_tests(tmp_path):
    """Console route (cmake < 3.21): the helper's -V shows passing tests' output too."""
    src, build = _project(tmp_path)
    r = subprocess.run([sys.executable, str(HELPER), str(build), "--verbose", "--", "test/runner.c"],
                       cwd=src, capture_output=True, text=True, timeout=300)
    assert parse_ctest_log.check(r.stdout) == [], r.stdout
    assert parse_ctest_log(r.stdout).statuses == _expected()


def test_ctest_older_than_3_24_keeps_whole_outputs_through_ctestcustom(tmp_path, monkeypatch):
    """ctest 3.21-3.23 (a PyPI cmake wheel) has no --test-output-size-*: the limits go into
    BUILD_DIR/CTestCustom.cmake, once, after what the project wrote there; ctest reads them."""
    src, build = _project(tmp_path)
    helper = _helper()
    monkeypatch.setattr(helper, "ctest_version", lambda: (3, 21))
    (build / "CTestCustom.cmake").write_text("set(CTEST_CUSTOM_MAXIMUM_NUMBER_OF_ERRORS 7)\n")
    assert helper.full_output(str(build)) == [] and helper.full_output(str(build)) == []
    custom = (build / "CTestCustom.cmake").read_text()
    assert custom.startswith("set(CTEST_CUSTOM_MAXIMUM_NUMBER_OF_ERRORS 7)")
    assert custom.count("CTEST_CUSTOM_MAXIMUM_PASSED_TEST_OUTPUT_SIZE") == 1
    junit = tmp_path / "j.xml"
    subprocess.run(["ctest", "--output-junit", str(junit)], cwd=build, capture_output=True, timeout=300)
    assert parse_ctest_junit.check(junit.read_bytes()) == []
    assert len(parse_ctest_junit(junit.read_bytes()).statuses) == len(_expected()) + 1  # + `plain`
    monkeypatch.setattr(helper, "ctest_version", lambda: (3, 25))
    assert helper.full_output(str(build))[0] == "--test-output-size-passed"
