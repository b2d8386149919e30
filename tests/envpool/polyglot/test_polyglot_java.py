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
