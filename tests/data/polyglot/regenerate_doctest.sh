#!/usr/bin/env bash
# Regenerate the doctest golden outputs in this folder (also run by regenerate.sh):
#   doctest.xml             doctest's XML reporter on test cases written for every status rule of
#                           envpool/testrun/polyglot/doctest_xml.py (nested and repeated subcases,
#                           exceptions, WARN, FAIL_CHECK, skip / may_fail / should_fail, timeout)
#   doctest_crash.xml       a binary that aborts inside a subcase (doctest closes the report, but
#                           the test cases after the crash are missing)
#   ctest_junit_doctest.xml recipes/cmake_tests.py --junit on a CMake project with two doctest
#                           binaries (one source, two C++ standards, nlohmann/json's layout), a
#                           crashing doctest binary (rerun without the crashed test case) and a
#                           plain test: ctest's JUnit file with the helper's <swemint-doctest>
#                           sections appended
#   ctest_doctest.log       the same helper with --verbose (ctest -V, the plans' console route):
#                           ctest's console, then the sections
# Needs: cmake >= 3.21, g++, doctest (Debian doctest-dev, 2.4.9 used), python3.
# Paths are rewritten to /testbed (source) and /opt/build (build folder); timings change on
# every run, the tests assert ids and statuses only.
set -euo pipefail
source "$(dirname "$0")/ctest_goldens.sh"  # OUT, HELPER, W; in $W/src; helper_runs, golden
printf '#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN\n#include <doctest/doctest.h>\n' > main.cpp
cat > edge.cpp <<'EOF'
#include <doctest/doctest.h>
#include <stdexcept>
#include <unistd.h>
static int zero = 0;
TEST_CASE("plain pass") { CHECK(1 == 1); }
TEST_CASE("plain fail") { CHECK(1 == 2); }
TEST_CASE("nested") {
  SUBCASE("outer") {
    CHECK(1 == 1);
    SUBCASE("inner ok") { CHECK(true); }
    SUBCASE("inner bad") { INFO("context"); CHECK(1 == 2); }
  }
  SUBCASE("fatal") { FAIL("stop here"); }
}
TEST_CASE("repeated names") {
  SUBCASE("partial") { SUBCASE("to_json") { CHECK(true); } SUBCASE("from_json") { CHECK(true); } }
  SUBCASE("total") { SUBCASE("to_json") { CHECK(true); } SUBCASE("from_json") { CHECK(zero == 1); } }
}
TEST_CASE("throws in subcase") {
  SUBCASE("ok") { CHECK(true); }
  SUBCASE("boom") { throw std::runtime_error("bad <thing> & more"); }
}
TEST_CASE("throws in body") { SUBCASE("runs before the throw") { CHECK(true); } throw 42; }
TEST_CASE("preamble fails") {
  CHECK(zero == 1);
  SUBCASE("x") { CHECK(true); }
  SUBCASE("y") { CHECK(true); }
}
TEST_CASE("warn only") { WARN(1 == 2); MESSAGE("hello"); SUBCASE("w") { WARN_EQ(1, 2); } }
TEST_CASE("fail check") { SUBCASE("fc") { FAIL_CHECK("custom failure"); } SUBCASE("ok") { } }
TEST_CASE("require stops") { SUBCASE("r") { REQUIRE(1 == 2); CHECK(1 == 1); } }
TEST_CASE("check nothrow") { CHECK_THROWS_AS(throw 1, int); CHECK_NOTHROW(throw std::logic_error("x")); }
TEST_CASE("skipped" * doctest::skip()) { CHECK(1 == 2); }
TEST_CASE("may fail" * doctest::may_fail()) { CHECK(1 == 2); }
TEST_CASE("should fail" * doctest::should_fail()) { SUBCASE("sf") { CHECK(1 == 2); } }
TEST_CASE("expected failures" * doctest::expected_failures(1)) { CHECK(1 == 2); }
TEST_CASE("timeout" * doctest::timeout(0.01)) { usleep(200000); CHECK(true); }
TEST_SUITE("udt") { TEST_CASE("in suite") { SUBCASE("a > b") { CHECK(1 == 1); } } }
EOF
cat > crash.cpp <<'EOF'
#include <doctest/doctest.h>
#include <cstdlib>
TEST_CASE("first") { CHECK(1 == 1); }
TEST_CASE("crash, with a comma") { SUBCASE("fine") { CHECK(true); } SUBCASE("dies") { std::abort(); } }
TEST_CASE("after") { CHECK(1 == 1); }
EOF
cat > unit-udt.cpp <<'EOF'
#include <doctest/doctest.h>
static int fixed = 0;  // 0: the bug; the "after" side of a task would set it
TEST_CASE("basic usage" * doctest::test_suite("udt")) {
  SUBCASE("conversion to json via free-functions") { CHECK(fixed == 1); }
  SUBCASE("conversion from json via free-functions") {
    SUBCASE("via explicit calls to get") { CHECK(true); }
    SUBCASE("via explicit calls to get_to") { CHECK(true); }
  }
}
TEST_CASE("adl_serializer specialization") {
  SUBCASE("partial specialization") { SUBCASE("to_json") { CHECK(true); } SUBCASE("from_json") { CHECK(true); } }
  SUBCASE("total specialization") { SUBCASE("to_json") { CHECK(true); } SUBCASE("from_json") { CHECK(true); } }
}
TEST_CASE("Issue #924") { CHECK(true); }
EOF
printf 'int main() { return 0; }\n' > plain.cpp
cat > CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.21)
project(poly CXX)
enable_testing()
find_path(DOCTEST_INCLUDE doctest/doctest.h REQUIRED)
include_directories(${DOCTEST_INCLUDE})
add_library(test_main OBJECT main.cpp)
foreach(std 11 14)
  add_executable(test-udt_cpp${std} unit-udt.cpp $<TARGET_OBJECTS:test_main>)
  set_target_properties(test-udt_cpp${std} PROPERTIES CXX_STANDARD ${std})
  add_test(NAME test-udt_cpp${std} COMMAND test-udt_cpp${std} --no-skip WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
endforeach()
add_executable(test-crash crash.cpp $<TARGET_OBJECTS:test_main>)
add_test(NAME test-crash COMMAND test-crash)
add_executable(plain plain.cpp)
add_test(NAME plain COMMAND plain)
EOF
g++ -c main.cpp -o main.o
g++ edge.cpp main.o -o edge && g++ crash.cpp main.o -o crash
./edge --reporters=xml --out="$W/edge.xml" || true
./crash --reporters=xml --out="$W/crash.xml" 2>/dev/null || true
helper_runs unit-udt.cpp crash.cpp plain.cpp
golden doctest "$W/edge.xml" doctest.xml
golden doctest "$W/crash.xml" doctest_crash.xml
golden doctest "$W/ctest.xml" ctest_junit_doctest.xml
golden doctest "$W/ctest.log" ctest_doctest.log
echo "regenerated the doctest goldens into $OUT"
