"""Java parsers: Surefire XML and Maven console from a real Maven 3.8 / Surefire 3.2.5 / JUnit 5.10
run (JDK 17); Gradle XML and console and Surefire 2.x console written by hand after those tools'
formats (no Gradle on the host).
"""

from __future__ import annotations

from envpool.testrun.polyglot.java import (gradle_id, java_id, parse_gradle_log, parse_java_junit,
                                           parse_maven_log)
from envpool.testrun.status import TestStatus

P, F, E, S = TestStatus.PASSED, TestStatus.FAILED, TestStatus.ERROR, TestStatus.SKIPPED
C = "com.example.CalcTest#"


def test_surefire_xml_gives_class_hash_method_ids(golden):
    rep = parse_java_junit(golden("surefire_reports.xml"))
    assert rep.statuses == {
        C + "testAdd": P, C + "testFails": F, C + "testParam(int)[1]": P,
        C + "testParam(int)[2]": F, C + "testErrors": E, C + "testWithDisplayName": P,
        C + "testSkipped": S, "com.example.CalcTest$Inner#testInner": P,
        "com.example.OtherTest#testOk": P}
    assert rep.tests_ran and rep.source == "junit"


def test_surefire_nested_class_run_filed_under_another_suite_keeps_its_classname(golden):
    # Surefire 3 writes CalcTest's methods into TEST-com.example.CalcTest$Inner.xml
    rep = parse_java_junit(golden("surefire_reports.xml"))
    assert C + "testAdd" in rep.statuses
    assert "com.example.CalcTest$Inner#testAdd" not in rep.statuses


def test_gradle_xml_drops_junit5_parentheses(golden):
    rep = parse_java_junit(golden("gradle_junit.xml"))
    assert rep.statuses == {C + "testAdd": P, C + "testFails": F, C + "testSkipped": S,
                            C + "testParam(int)[1]": P, C + "testParam(int)[2]": F,
                            C + "a nice display name": P, "com.example.CalcTest$Inner#testInner": P}


def test_gradle_console_status_glued_to_next_output_and_on_its_own_line(golden):
    raw = golden("gradle_console.log")
    rep = parse_gradle_log(raw)
    assert rep.statuses == {
        C + "testAdd": P,                       # "testAdd() PASSEDPicked up JAVA_TOOL_OPTIONS"
        C + "testFails": F, C + "testSkipped": S,
        C + "testParam(int) > [1] 1": P, C + "testParam(int) > [2] 2": F,
        C + "Inner > testInner": P,             # STANDARD_OUT header is not a result
        "com.example.OtherTest#testOk": P,      # name, then "    PASSED" on the next line
        "com.example.OtherTest#testLongName": P}
    assert parse_gradle_log.check(raw) == [] and rep.tests_ran


def test_gradle_console_indented_fake_event_in_test_output_is_not_a_result(golden):
    assert C + "testForged" not in parse_gradle_log(golden("gradle_console.log")).statuses


def test_gradle_totals_mismatch_is_an_anomaly(golden):
    text = golden("gradle_console.log").decode().replace("8 tests completed", "9 tests completed")
    assert parse_gradle_log.check(text) == ["gradle tests completed: the runner reports 9, 8 parsed"]


def test_gradle_compile_failure_fails_known_tests(golden):
    rep = parse_gradle_log(golden("gradle_compile_error.log"), known_tests=[C + "testAdd"])
    assert rep.statuses == {C + "testAdd": F}
    assert rep.collection_errors == [":compileTestJava [build failed]"] and not rep.tests_ran


def test_maven_console_fallback_gives_class_and_failed_method_ids(golden):
    raw = golden("maven_test.log")
    rep = parse_maven_log(raw)
    # Surefire prints CalcTest's counts "in com.example.CalcTest$Inner" (its @Nested quirk)
    assert rep.statuses == {"com.example.CalcTest$Inner": E, C + "testFails": F,
                            C + "testParam(int)[2]": F, C + "testErrors": E,
                            "com.example.OtherTest": P}
    assert parse_maven_log.check(raw) == []


def test_maven_console_fake_totals_line_from_a_test_is_ignored(golden):
    # the test prints "Tests run: 99, Failures: 0": not a class line, not a totals line
    assert "99" not in " ".join(parse_maven_log.check(golden("maven_test.log")))


def test_maven_surefire2_console(golden):
    rep = parse_maven_log(golden("maven_surefire2.log"))
    w, d = "com.google.gson.stream.JsonWriterTest", "com.google.gson.DefaultDateTypeAdapterTest"
    assert rep.statuses == {w: F, w + "#testNonFiniteDoublesWhenLenient": F, d: E,
                            d + "#testNullValue": E, "com.google.gson.JsonPrimitiveTest": P,
                            "com.google.gson.internal.bind.util.ISO8601UtilsTest": S}


def test_maven_per_class_runs_not_adding_up_is_an_anomaly(golden):
    text = golden("maven_surefire2.log").decode().replace("Tests run: 11,", "Tests run: 12,")
    assert parse_maven_log.check(text) == ["maven Tests run: the runner reports 12, 11 parsed"]


def test_maven_compilation_error_fails_known_tests_and_is_not_tests_ran(golden):
    rep = parse_maven_log(golden("maven_compile_error.log"),
                          known_tests=["com.example.OtherTest#testOk"])
    assert rep.statuses == {"com.example.OtherTest#testOk": F}
    assert rep.collection_errors == ["test sources [build failed]"] and not rep.tests_ran


def test_id_helpers():
    assert java_id("a.B", "m()") == "a.B#m" and java_id("a.B", "m(int)[1]") == "a.B#m(int)[1]"
    assert gradle_id("a.B > m()") == "a.B#m"


def test_empty_or_broken_input_is_not_a_pass():
    for parser in (parse_java_junit, parse_gradle_log, parse_maven_log):
        rep = parser(b"<?xml version='1.0'?><testsuite\xff")
        assert rep.statuses == {} and not rep.tests_ran


GSON_AFTER = b"""<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="com.google.gson.functional.FieldNamingTest" tests="2">
  <testcase name="testUpperCaseWithUnderscores" classname="com.google.gson.functional.FieldNamingTest"/>
  <testcase name="testLowerCase" classname="com.google.gson.functional.FieldNamingTest"/>
</testsuite>
"""

GSON_PATCH = """diff --git a/gson/src/test/java/com/google/gson/functional/FieldNamingTest.java b/gson/src/test/java/com/google/gson/functional/FieldNamingTest.java
--- a/gson/src/test/java/com/google/gson/functional/FieldNamingTest.java
+++ b/gson/src/test/java/com/google/gson/functional/FieldNamingTest.java
@@ -55,2 +55,6 @@ public final class FieldNamingTest {
   }
+  public void testUpperCaseWithUnderscores() {
+    Gson gson = getGsonWithNamingPolicy(UPPER_CASE_WITH_UNDERSCORES);
+  }
+
   public void testLowerCase() {
"""


def test_a_maven_compile_failure_marker_is_a_unit_that_failed_to_build():
    """google/gson-2024: the test_patch's tests use the fix's enum constant, so testCompile fails
    before and Surefire writes no XML; the route appends `BUILD_FAILED_MARK` and the run is a
    build failure (graded), not an empty report (refused as `tests_not_run`)."""
    from envpool.testrun.polyglot.java import BUILD_FAILED_MARK

    raw = (BUILD_FAILED_MARK + "\n").encode()
    known = ["com.google.gson.functional.FieldNamingTest#testLowerCase"]
    rep = parse_java_junit(raw, known_tests=known)
    assert rep.collection_errors == ["test sources [build failed]"]
    assert rep.statuses == {known[0]: TestStatus.FAILED} and not rep.tests_ran
    # XML of another module and the marker: both kept; the XML parses as before
    both = parse_java_junit(GSON_AFTER + (BUILD_FAILED_MARK + "\n").encode())
    assert len(both.statuses) == 2 and both.collection_errors == ["test sources [build failed]"]
    assert parse_java_junit(GSON_AFTER).collection_errors == []


def test_tests_of_a_class_that_did_not_compile_before_are_fail_to_pass_when_the_patch_names_them():
    """gson-2024's shape: gold lists only the test methods the test_patch adds (3), the other
    methods of the classes that did not compile before are in neither list."""
    from agents.verification import aborted_before_scope, judge
    from envpool.testrun.polyglot.java import BUILD_FAILED_MARK

    before = [parse_java_junit((BUILD_FAILED_MARK + "\n").encode())] * 2
    after = [parse_java_junit(GSON_AFTER)] * 2
    scope = aborted_before_scope(GSON_PATCH, before, after)
    outcome, _, g = judge(before, after, absent_scope=scope)
    assert outcome == "verified"
    assert g.FAIL_TO_PASS == ["com.google.gson.functional.FieldNamingTest#testUpperCaseWithUnderscores"]
    assert g.PASS_TO_PASS == []


def test_the_maven_compile_failure_pattern_is_one_regex_for_grep_and_python():
    """The Maven route greps the console with `MAVEN_COMPILE_FAILED` (POSIX ERE); the console
    parser matches the same pattern in Python."""
    import re
    import subprocess

    from envpool.testrun.polyglot.java import MAVEN_COMPILE_FAILED

    hit = "[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin:3.8.1:testCompile (x) on project gson\n"
    for text, want in ((hit, 0), ("[ERROR] COMPILATION ERROR : \n", 0), ("[INFO] BUILD SUCCESS\n", 1)):
        assert subprocess.run(["grep", "-qE", MAVEN_COMPILE_FAILED], input=text, text=True).returncode == want
        assert bool(re.match(MAVEN_COMPILE_FAILED, text)) == (want == 0)
