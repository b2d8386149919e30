"""PHP, Ruby and C/C++ parsers. CTest, GoogleTest and CTest JUnit outputs are real (CMake 3.25,
GoogleTest from Debian); PHPUnit JUnit, RSpec JSON, minitest and automake ``make check`` logs are
written by hand after those tools' formats (no PHP, Ruby or automake on the host).
"""

from __future__ import annotations

import pytest

from envpool.testrun.polyglot.cfamily import (parse_automake_log, parse_ctest_junit, parse_ctest_log,
                                              parse_gtest_log, script_results)
from envpool.testrun.polyglot.php import parse_phpunit_junit, dox_class, dox_id, dox_method
from envpool.testrun.polyglot.ruby import parse_minitest_log, parse_rspec_json
from envpool.testrun.status import TestStatus

P, F, E, S, XF = (TestStatus.PASSED, TestStatus.FAILED, TestStatus.ERROR, TestStatus.SKIPPED,
                  TestStatus.XFAIL)


# -- PHP ---------------------------------------------------------------------------------------

def test_phpunit_junit_ids_with_namespaces_and_data_sets(golden):
    rep = parse_phpunit_junit(golden("phpunit_junit.xml"))
    r, t = "Tests\\Carbon\\RoundTest::", "Tests\\CarbonInterval\\TotalTest::"
    assert rep.statuses == {
        r + "testFloorYear": F, r + "testRoundWithDefaultUnit": P,
        t + "testReturnsTotalValue with data set #0": P,
        t + "testReturnsTotalValue with data set #1": P,
        t + "testAlterationAfterDiff": E, t + "testAbsoluteDiff": S,
        "Tests\\CarbonPeriod\\CreateTest::testCreateFromIso8601String": P}  # no class attr
    assert rep.tests_ran


@pytest.mark.parametrize("method, title", [
    ("testFloorYear", "Floor year"), ("testIs", "Is"), ("testPsrClock", "Psr clock"),
    ("testCreateFromIso8601String", "Create from iso 8601 string"),
    ("testReturnsTotalValue with data set #0", "Returns total value with data set #0"),
    ("test_set_unit_no_overflow", "Set unit no overflow"), ("testV2Api", "V 2 api"),
])
def test_testdox_method_titles(method, title):
    assert dox_method(method) == title


def test_testdox_class_and_id():
    assert dox_class("Tests\\CarbonInterval\\TotalTest") == "Total"
    assert dox_class("Tests\\Factory\\FactoryTest") == "Factory"
    assert dox_class("Tests\\Foo\\TestHttpClientTest") == "Http Client"
    assert dox_id("Tests\\Carbon\\RoundTest::testFloorYear") == "Round > Floor year"
    assert dox_id("routing::tests::test_wildcard") is None      # a Rust path, not PHPUnit
    assert dox_id("com.example.CalcTest#testAdd") is None


# -- Ruby --------------------------------------------------------------------------------------

def test_rspec_json_ids_and_file_that_fails_to_load(golden):
    rep = parse_rspec_json(golden("rspec.json"), known_tests=["spec/broken_spec.rb > Broken works"])
    assert rep.statuses == {
        "spec/calc_spec.rb > Calc#add adds two numbers": P,
        "spec/calc_spec.rb > Calc#add handles nil": F,
        "spec/calc_spec.rb > Calc#sub is not written yet": S,
        "spec/zip_spec.rb > Zip action when running archives a directory with shell escaped path": P,
        "spec/broken_spec.rb > Broken works": E}
    assert rep.collection_errors == ["spec/broken_spec.rb"]
    assert rep.tests_ran and parse_rspec_json.check(golden("rspec.json")) == []


def test_rspec_fake_report_printed_before_the_real_one_is_ignored(golden):
    assert len(parse_rspec_json(golden("rspec.json")).statuses) == 4


def test_minitest_verbose(golden):
    rep = parse_minitest_log(golden("minitest_v.log"))
    i = "TestFakerInternet#"
    assert rep.statuses == {
        i + "test_password": P, i + "test_password_could_achieve_max_length": P,
        i + "test_email_with_abbreviations": F, i + "test_email_against_name_generator": E,
        i + "test_slow_thing": S, i + "test_user_name": P,
        "TestFilters#test_: filters where_exp filter should filter objects across multiple conditions": P}
    assert parse_minitest_log.check(golden("minitest_v.log")) == [] and rep.tests_ran


def test_minitest_without_verbose_lists_only_failures_and_is_not_trusted(golden):
    # regression: passes would be absent, so every passing test would look new after a fix
    raw = golden("minitest_plain.log")
    assert parse_minitest_log.check(raw) == ["minitest runs: the runner reports 7, 0 parsed"]
    assert not parse_minitest_log(raw).tests_ran


def test_minitest_load_error_errors_known_tests():
    log = "test/test_x.rb:3:in `require': cannot load such file -- x (LoadError)\n"
    rep = parse_minitest_log(log, known_tests=["TestX#test_a"])
    assert rep.statuses == {"TestX#test_a": E} and not rep.tests_ran


# -- C / C++ -----------------------------------------------------------------------------------

CTEST = {"format-test": F, "printf-test": P, "tests/shtest": F, "tests/jqtest": P,
         "missing-binary": F, "skipped-test": S}


def test_ctest_junit(golden):
    rep = parse_ctest_junit(golden("ctest_junit.xml"))
    assert rep.statuses == CTEST and rep.tests_ran  # missing executable = its build failed


def test_ctest_console(golden):
    raw = golden("ctest.log")
    assert parse_ctest_log(raw).statuses == CTEST and parse_ctest_log.check(raw) == []


def test_ctest_console_statuses_and_count_check():
    log = ("  1/3 Test  #1: a .........................***Timeout  10.01 sec\n"
           "  2/3 Test  #2: b.c ....................***Exception: SegFault  0.01 sec\n"
           "  3/3 Test  #3: d ........................   Not Run (Disabled)   0.00 sec\n"
           "67% tests passed, 2 tests failed out of 4\n")
    assert parse_ctest_log(log).statuses == {"a": F, "b.c": F, "d": S}
    assert parse_ctest_log.check(log) == ["ctest total: the runner reports 4, 3 parsed"]


GTEST = {"format_test.format_nan": P, "format_test.format_infinity": F,
         "format_test.skipped_case": S, "is_string_test/0.is_string": P,
         "is_string_test/1.is_string": P, "Values/ParamTest.works/0": P,
         "Values/ParamTest.works/1": P, "PrintfTest.NoArgs": P, "PrintfTest.MinusFlag": P}


def test_gtest_console_gives_fmt_style_suite_dot_case_ids(golden):
    raw = golden("gtest.log")
    assert parse_gtest_log(raw).statuses == GTEST and parse_gtest_log.check(raw) == []


def test_gtest_fake_ok_line_printed_by_a_test_is_not_a_result(golden):
    for name in ("gtest.log", "ctest_verbose_gtest.log"):
        assert "PrintfTest.Forged" not in parse_gtest_log(golden(name)).statuses


def test_gtest_under_ctest_verbose(golden):
    rep = parse_gtest_log(golden("ctest_verbose_gtest.log"))
    assert rep.statuses == {"PrintfTest.NoArgs": P, "PrintfTest.MinusFlag": P}


def test_gtest_crash_mid_test_fails_it():
    log = "[ RUN      ] A.b\n[       OK ] A.b (0 ms)\n[ RUN      ] A.crash\nSegmentation fault\n"
    assert parse_gtest_log(log).statuses == {"A.b": P, "A.crash": F}


def test_automake_scripts_are_one_test_each(golden):
    rep = parse_automake_log(golden("automake_check.log"))
    assert rep.statuses == {
        "test_utf8": P, "test_syntax": P, "test_options": P, "tests/optionaltest": P,
        "tests/mantest": P, "tests/jqtest": F, "tests/onigtest": P, "tests/shtest": F,
        "tests/utf8test": S, "tests/knownbug": XF, "tests/base64test": E}
    assert parse_automake_log.check(golden("automake_check.log")) == []


def test_automake_xpass_fails_like_make_check_does():
    log = "XPASS: tests/fixed\n# TOTAL: 1\n"
    assert parse_automake_log(log).statuses == {"tests/fixed": F}


def test_script_results():
    rep = script_results({"tests/shtest": 0, "tests/jqtest": 1, "tests/skip": 77,
                          "tests/killed": None}).report()
    assert rep.statuses == {"tests/shtest": P, "tests/jqtest": F, "tests/skip": S, "tests/killed": F}


def test_empty_inputs_are_not_a_pass():
    for parser in (parse_phpunit_junit, parse_rspec_json, parse_minitest_log, parse_ctest_junit,
                   parse_ctest_log, parse_gtest_log, parse_automake_log):
        rep = parser(b"")
        assert rep.statuses == {} and not rep.tests_ran
