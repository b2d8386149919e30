"""A before run that stopped midway (Redis' Tcl helper: a test raised, `[exception]`, the unit's
remaining tests never ran): tests cut off by the abort are not FAIL_TO_PASS; the test the
test_patch adds is (redis/redis-9733, where gold lists only the new test)."""

from __future__ import annotations

from agents.verification import aborted_before_scope, judge
from envpool.testrun.polyglot.driver_logs import parse_tcl_helper_log

TEST_PATCH = """diff --git a/tests/unit/introspection-2.tcl b/tests/unit/introspection-2.tcl
--- a/tests/unit/introspection-2.tcl
+++ b/tests/unit/introspection-2.tcl
@@ -89,5 +89,9 @@ start_server {tags {"introspection"}} {
         assert_equal {key} [r command getkeys xgroup create key groupname $]
     }

+    test {COMMAND GETKEYS EVAL without keys} {
+        assert_equal {} [r command getkeys eval "return 1" 0]
+    }
+
     test "COMMAND LIST FILTERBY ACLCAT" {
         set reply [r command list filterby aclcat hyperloglog]
"""

BEFORE = """[ok]: COMMAND GETKEYS XGROUP (1 ms)
[exception]: Executing test client: ERR Invalid arguments specified for command.
"""
AFTER = """[ok]: COMMAND GETKEYS XGROUP (1 ms)
[ok]: COMMAND GETKEYS EVAL without keys (0 ms)
[ok]: COMMAND LIST FILTERBY ACLCAT (2 ms)
[ok]: COMMAND LIST FILTERBY PATTERN (1 ms)
"""


def test_tests_cut_off_by_an_aborted_before_run_are_in_neither_list():
    before, after = [parse_tcl_helper_log(BEFORE)] * 2, [parse_tcl_helper_log(AFTER)] * 3
    assert all(r.collection_errors for r in before)  # the parser reports the abort
    scope = aborted_before_scope(TEST_PATCH, before, after)
    assert scope == {"COMMAND GETKEYS EVAL without keys"}
    outcome, _, g = judge(before, after, absent_scope=scope)
    assert outcome == "verified"
    assert g.FAIL_TO_PASS == ["COMMAND GETKEYS EVAL without keys"]
    assert g.PASS_TO_PASS == ["COMMAND GETKEYS XGROUP"]
    # without the scope (the old rule) the two cut-off tests were FAIL_TO_PASS as well
    assert len(judge(before, after)[2].FAIL_TO_PASS) == 3


def test_a_complete_before_run_keeps_the_absent_test_rule():
    whole = "[ok]: COMMAND GETKEYS XGROUP (1 ms)\n[ok]: COMMAND LIST FILTERBY ACLCAT (2 ms)\n"
    assert aborted_before_scope(TEST_PATCH, [parse_tcl_helper_log(whole)], [parse_tcl_helper_log(AFTER)]) is None
    assert aborted_before_scope(TEST_PATCH, [], [parse_tcl_helper_log(AFTER)]) is None
    assert aborted_before_scope("not a diff", [parse_tcl_helper_log(BEFORE)], [parse_tcl_helper_log(AFTER)]) is None


def test_a_test_file_that_failed_to_load_before_keeps_its_tests_fail_to_pass():
    """vitest: the new test imports what the fix adds, so its file fails to load before; its
    tests are absent before because of their own file, and stay FAIL_TO_PASS."""
    from envpool.testrun.status import TestRunReport, TestStatus

    tid = "packages/a/__tests__/x.spec.ts > suite > uses the new export"
    before = [TestRunReport(statuses={"packages/a/__tests__/y.spec.ts > old": TestStatus.PASSED},
                            collection_errors=["packages/a/__tests__/x.spec.ts"], tests_ran=True)]
    after = [TestRunReport(statuses={tid: TestStatus.PASSED, "packages/a/__tests__/y.spec.ts > old": TestStatus.PASSED},
                           tests_ran=True)]
    patch = ("diff --git a/packages/a/__tests__/x.spec.ts b/packages/a/__tests__/x.spec.ts\n"
             "--- a/packages/a/__tests__/x.spec.ts\n+++ b/packages/a/__tests__/x.spec.ts\n"
             "@@ -1,1 +1,2 @@\n import { a } from '../src'\n+import { b } from '../src'\n")
    scope = aborted_before_scope(patch, before, after)
    _, _, g = judge(before, after, absent_scope=scope)
    assert g.FAIL_TO_PASS == [tid]


CATCH2_PATCH = """diff --git a/tests/test_flush.cpp b/tests/test_flush.cpp
--- a/tests/test_flush.cpp
+++ b/tests/test_flush.cpp
@@ -1,1 +1,4 @@
 #include "includes.h"
+TEST_CASE("flush drops when the queue overflows", "[async]") {
+    REQUIRE(spdlog::overflow_flush());
+}
"""


def test_cases_of_a_ctest_binary_that_did_not_build_before_are_fail_to_pass_only_when_the_patch_names_them():
    """spdlog: the test_patch's new case uses the fix's API, so `spdlog-utests` does not build
    before (one failed ctest id); after, the binary gives its Catch2 cases. Only the new case is
    FAIL_TO_PASS, not the hundreds of old cases that were merely absent before."""
    from envpool.testrun.status import TestRunReport, TestStatus as S

    before = [TestRunReport(statuses={"spdlog-utests": S.FAILED, "other-unit": S.PASSED}, tests_ran=True)]
    after = [TestRunReport(statuses={"spdlog-utests::flush drops when the queue overflows": S.PASSED,
                                     "spdlog-utests::pattern formatter > full level": S.PASSED,
                                     "spdlog-utests::daily logger": S.PASSED, "other-unit": S.PASSED},
                           tests_ran=True)]
    scope = aborted_before_scope(CATCH2_PATCH, before, after)
    assert scope == {"flush drops when the queue overflows"}
    outcome, _, g = judge(before, after, absent_scope=scope)
    assert outcome == "verified" and g.FAIL_TO_PASS == ["spdlog-utests::flush drops when the queue overflows"]
    assert g.PASS_TO_PASS == ["other-unit"]
    # a binary that ran on both sides: no stopped unit, the plain rule
    ran = [TestRunReport(statuses={"spdlog-utests::daily logger": S.FAILED}, tests_ran=True)]
    assert aborted_before_scope(CATCH2_PATCH, ran, after) is None


CHALK_BEFORE = """TAP version 13
not ok 1 - file:///testbed/test/chalk.js:1
  ---
    name: SyntaxError
    message: The requested module '../source/index.js' does not provide an export named 'Chalk'
  ...
not ok 2 - test/chalk.js exited with a non-zero exit code: 1
not ok 3 - No tests found in test/_fixture.js, make sure to import "ava" at the top of your test file
ok 4 - visible › works

1..1
# tests 1
# pass 1
# fail 3
"""

CHALK_AFTER = """TAP version 13
ok 1 - chalk › don't add any styling when called as the base function
ok 2 - chalk › support multiple arguments in base function
ok 3 - visible › works

1..3
# tests 3
# pass 3
# fail 0
"""

CHALK_PATCH = """diff --git a/test/chalk.js b/test/chalk.js
--- a/test/chalk.js
+++ b/test/chalk.js
@@ -1,3 +1,3 @@
 import process from 'node:process';
 import test from 'ava';
-import chalk, {chalkStderr} from '../source/index.js';
+import chalk, {Chalk, chalkStderr} from '../source/index.js';
"""


def test_tests_of_an_ava_file_that_failed_to_load_before_are_fail_to_pass():
    """chalk-432 (ava 6): test/chalk.js imports what the fix adds, so it fails to load before and
    AVA knows it by path only; after, its tests are titled ``chalk › …`` (AVA's prefix: the path
    without the runs' common base and extension). A stray "No tests found" makes the before run
    look aborted, and the abort scope kept only tests the patch names: 1 FAIL_TO_PASS of gold's 48.
    The file's AVA prefix now covers its tests, so all of them are FAIL_TO_PASS."""
    from envpool.testrun.registry import PARSERS

    p = PARSERS["ava_tap"]
    before, after = [p.run(CHALK_BEFORE).report()], [p.run(CHALK_AFTER).report()]
    assert "test/chalk.js" in before[0].collection_errors
    scope = aborted_before_scope(CHALK_PATCH, before, after)
    outcome, _, g = judge(before, after, absent_scope=scope)
    assert outcome == "verified"
    assert g.FAIL_TO_PASS == ["chalk › don't add any styling when called as the base function",
                              "chalk › support multiple arguments in base function"]
    assert g.PASS_TO_PASS == ["visible › works"]
