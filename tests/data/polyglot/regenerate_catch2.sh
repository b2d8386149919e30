#!/usr/bin/env bash
# Regenerate the Catch2 golden outputs in this folder (also run by regenerate.sh):
#   catch2.xml              Catch2 2.13's XML reporter on test cases written for every status rule
#                           of envpool/testrun/polyglot/catch2_xml.py (nested and repeated
#                           sections, exceptions, FAIL, WARN, [!mayfail] / [!shouldfail], a
#                           hidden test case, a name with ::, / and XML characters)
#   catch2_crash.xml        a binary that aborts inside a section (Catch2 reports the signal,
#                           closes the report; the test case after the crash never runs)
#   catch2_v3.xml, catch2_v3_crash.xml
#                           the same with Catch2 v3 (and v3's SKIP()), when CATCH2_V3 names a
#                           folder with Catch2 v3's catch_amalgamated.hpp/.cpp (a checkout's
#                           extras/; 3.7.1 used); Debian bookworm has Catch2 2.13 only
#   ctest_junit_catch2.xml  recipes/cmake_tests.py --junit on a CMake project with Debian's Catch2:
#                           one Catch2 binary of many test cases built twice (spdlog's
#                           spdlog-utests / spdlog-utests-ho), a crashing Catch2 binary, a binary
#                           registered per test case by catch_discover_tests, and a plain test:
#                           ctest's JUnit file with the helper's <swemint-catch2> sections appended
#   ctest_catch2.log        the same helper with --verbose (ctest -V, the plans' console route):
#                           ctest's console, then the sections
# Needs: cmake >= 3.21, g++, Catch2 2 (Debian catch2, 2.13.10 used), python3.
# Paths are rewritten to /testbed (source) and /opt/build (build folder); timings and v3's
# rng-seed change on every run, the tests assert ids and statuses only.
set -euo pipefail
source "$(dirname "$0")/ctest_goldens.sh"  # OUT, HELPER, W; in $W/src; helper_runs, golden
cat > edge.cpp <<'EOF'
#ifdef CATCH2_V3
#include "catch_amalgamated.hpp"
#else
#include <catch2/catch.hpp>
#endif
#include <cstdio>
#include <stdexcept>
static int zero = 0;
TEST_CASE("plain pass", "[fast]") { CHECK(1 == 1); }
TEST_CASE("plain fail") { CHECK(1 == 2); }
TEST_CASE("sections") {
  int v = 1;
  SECTION("outer") {
    CHECK(v == 1);
    SECTION("inner ok") { CHECK(true); }
    SECTION("inner bad") { INFO("context"); CHECK(v == 2); }
  }
  SECTION("fatal") { FAIL("stop here"); }
}
TEST_CASE("repeated names") {
  SECTION("partial") { SECTION("to_json") { CHECK(true); } SECTION("from_json") { CHECK(true); } }
  SECTION("total") { SECTION("to_json") { CHECK(true); } SECTION("from_json") { CHECK(zero == 1); } }
}
TEST_CASE("throws in section") {
  SECTION("ok") { CHECK(true); }
  SECTION("boom") { throw std::runtime_error("bad <thing> & more"); }
}
TEST_CASE("throws in body") { SECTION("runs before the throw") { CHECK(true); } throw 42; }
TEST_CASE("preamble fails") { CHECK(zero == 1); SECTION("x") { CHECK(true); } SECTION("y") { CHECK(true); } }
TEST_CASE("require stops") { SECTION("r") { REQUIRE(1 == 2); CHECK(1 == 1); } }
TEST_CASE("check nothrow") { CHECK_THROWS_AS(throw 1, int); CHECK_NOTHROW(throw std::logic_error("x")); }
TEST_CASE("may fail", "[!mayfail]") { CHECK(1 == 2); }
TEST_CASE("should fail", "[!shouldfail]") { SECTION("sf") { CHECK(1 == 2); } }
TEST_CASE("should fail but passes", "[!shouldfail]") { CHECK(true); }
TEST_CASE("warn only") { WARN("hello"); SECTION("w") { CHECK(true); } }
TEST_CASE("hidden", "[.]") { CHECK(1 == 2); }
TEST_CASE("std::string / names, with <chars> & \"quotes\"") { CHECK(true); }
TEST_CASE("prints") { std::puts("out <x>"); CHECK(true); }
#ifdef CATCH2_V3
TEST_CASE("skipped case") { SKIP("not here"); }
TEST_CASE("skipped section") { SECTION("runs") { CHECK(true); } SECTION("skips") { SKIP("nope"); } }
#endif
EOF
cat > crash.cpp <<'EOF'
#ifdef CATCH2_V3
#include "catch_amalgamated.hpp"
#else
#include <catch2/catch.hpp>
#endif
#include <cstdlib>
TEST_CASE("first") { CHECK(1 == 1); }
TEST_CASE("dies") { SECTION("fine") { CHECK(true); } SECTION("aborts") { std::abort(); } }
TEST_CASE("after") { CHECK(1 == 1); }
EOF
cat > utests.cpp <<'EOF'
#include <catch2/catch.hpp>
static int fixed = 0;  // 0: the bug; the "after" side of a task would set it
TEST_CASE("pattern formatter", "[pattern_formatter]") {
  SECTION("short level") { CHECK(true); }
  SECTION("full level") { CHECK(fixed == 1); }
}
TEST_CASE("to_file_1", "[file]") { CHECK(true); }
TEST_CASE("fmt::join / ranges", "[fmt]") { CHECK(true); }
TEST_CASE("level names", "[level]") { CHECK(fixed == 1); }
EOF
cat > discovered.cpp <<'EOF'
#include <catch2/catch.hpp>
TEST_CASE("one discovered") { CHECK(true); }
TEST_CASE("two discovered") { CHECK(true); }
EOF
printf 'int main() { return 0; }\n' > plain.cpp
cat > CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.21)
project(poly CXX)
enable_testing()
find_package(Catch2 2 REQUIRED)
include(Catch)
foreach(t spdlog-utests spdlog-utests-ho)
  add_executable(${t} utests.cpp)
  target_link_libraries(${t} PRIVATE Catch2::Catch2WithMain)
endforeach()
add_test(NAME spdlog-utests COMMAND spdlog-utests)
add_test(NAME spdlog-utests-ho COMMAND spdlog-utests-ho --order decl -r console WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
add_executable(crash-utests crash.cpp)
target_link_libraries(crash-utests PRIVATE Catch2::Catch2WithMain)
add_test(NAME crash-utests COMMAND crash-utests)
add_executable(discovered discovered.cpp)
target_link_libraries(discovered PRIVATE Catch2::Catch2WithMain)
catch_discover_tests(discovered)
add_executable(plain plain.cpp)
add_test(NAME plain COMMAND plain)
EOF
nice -n 19 g++ edge.cpp -o edge -lCatch2WithMain
nice -n 19 g++ crash.cpp -o crash -lCatch2WithMain
./edge --reporter xml --out "$W/edge.xml" > /dev/null || true
./crash --reporter xml --out "$W/crash.xml" 2>/dev/null || true
if [ -n "${CATCH2_V3:-}" ]; then
  cp "$CATCH2_V3/catch_amalgamated.hpp" "$CATCH2_V3/catch_amalgamated.cpp" .
  nice -n 19 g++ -std=c++17 -c catch_amalgamated.cpp -o catch3.o
  nice -n 19 g++ -std=c++17 -DCATCH2_V3 edge.cpp catch3.o -o edge3
  nice -n 19 g++ -std=c++17 -DCATCH2_V3 crash.cpp catch3.o -o crash3
  ./edge3 --reporter xml --out "$W/edge3.xml" > /dev/null || true
  ./crash3 --reporter xml --out "$W/crash3.xml" 2>/dev/null || true
  rm -f catch_amalgamated.hpp catch_amalgamated.cpp catch3.o edge3 crash3
fi
rm -f edge crash
helper_runs utests.cpp crash.cpp discovered.cpp plain.cpp
golden catch2 "$W/edge.xml" catch2.xml
golden catch2 "$W/crash.xml" catch2_crash.xml
if [ -n "${CATCH2_V3:-}" ]; then
  golden catch2 "$W/edge3.xml" catch2_v3.xml
  golden catch2 "$W/crash3.xml" catch2_v3_crash.xml
fi
golden catch2 "$W/ctest.xml" ctest_junit_catch2.xml
golden catch2 "$W/ctest.log" ctest_catch2.log
echo "regenerated the Catch2 goldens into $OUT"
