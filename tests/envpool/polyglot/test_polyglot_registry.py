"""The one parser registry (`envpool.testrun.registry`) and what every runner's parser promises:
pure, never raising, no "no tests ran" that looks like a pass, non-UTF-8 and ANSI colours handled."""

from __future__ import annotations

import random
import re

import pytest

from envpool.testrun import parsers as pytest_parsers
from envpool.testrun.parsers import parse_pytest_log
from envpool.testrun.polyglot.common import ReportParser
from envpool.testrun.registry import PARSERS, anomalies, get_parser, parser_modules
from envpool.testrun.status import TestRunReport, TestStatus

GOLDEN_FOR = {
    "jest_json": "jest.json", "vitest_json": "vitest.json", "jest_log": "jest_verbose.log",
    "mocha_json": "mocha.json", "mocha_spec": "mocha_spec_marks.log", "karma_json": "karma.json", "ava_tap": "ava.tap",
    "ava_console": "ava_console.log", "node_tap": "node_tap_20.log",
    "go_test_json": "go_test.json", "go_test_v": "go_test_v.log", "cargo_test": "cargo_test.log",
    "nextest_junit": "nextest_junit.xml", "java_junit": "surefire_reports.xml",
    "gradle_log": "gradle_console.log", "maven_log": "maven_test.log", "ant_junit": "ant_junit_plain.log",
    "phpunit_junit": "phpunit_junit.xml", "rspec_json": "rspec.json",
    "minitest_log": "minitest_v.log", "ctest_junit": "ctest_junit.xml", "ctest_log": "ctest.log",
    "gtest_log": "gtest.log", "doctest_xml": "doctest.xml", "catch2_xml": "catch2.xml", "boost_junit": "boost_junit.xml",
    "automake_log": "automake_check.log", "meson_testlog": "meson_testlog.json",
    "script_status_log": "script_status.log", "tcl_helper_log": "tcl_helper.log", "unittest_log": "unittest_verbose.log",
    "sympy_test_log": "sympy_bin_test.log", "busted_json": "busted.json", "unit_report_log": "unit_report.log",
}

POLYGLOT_PARSERS = {n: p for n, p in PARSERS.items() if n not in pytest_parsers.PARSERS}
"""The runners' parsers of the registry (pytest's have their own golden tests: test_parsers.py)."""


def test_every_registered_parser_has_a_golden_output():
    assert set(GOLDEN_FOR) == set(POLYGLOT_PARSERS)
    assert all(isinstance(p, ReportParser) for p in POLYGLOT_PARSERS.values())
    assert not set(POLYGLOT_PARSERS) & set(pytest_parsers.PARSERS)


def test_the_registry_is_the_union_of_the_parser_modules_declarations():
    declared = [n for m in parser_modules() for n in getattr(m, "PARSERS", {})]
    assert sorted(declared) == sorted(PARSERS)  # each name declared once
    assert set(pytest_parsers.PARSERS) <= set(PARSERS)


@pytest.mark.parametrize("name", sorted(GOLDEN_FOR))
def test_registered_parser_parses_its_golden_output(golden, name):
    rep = get_parser(name)(golden(GOLDEN_FOR[name]))
    assert isinstance(rep, TestRunReport) and rep.statuses
    assert rep.source in ("json", "junit", "log")


def test_get_parser_resolves_pytest_parsers_in_the_same_registry():
    assert get_parser("pytest_log") is parse_pytest_log
    assert anomalies("pytest_log", "") == []
    with pytest.raises(KeyError, match="go_test_json.*pytest_log|pytest_log.*go_test_json"):
        get_parser("nope")


def test_anomalies_by_name(golden):
    assert anomalies("cargo_test", golden("cargo_test.log")) == []
    assert anomalies("cargo_test", golden("cargo_test_nocapture.log"))


JUNK = [b"", b"\x00\xff\xfe\x80 not a report \x1b[31m", b"{", b"<?xml version='1.0'?><a",
        "PASS: \n--- PASS: \ntest  ... ok\n".encode(), b'{"testResults": 3, "examples": null}']


@pytest.mark.parametrize("name", sorted(POLYGLOT_PARSERS))
@pytest.mark.parametrize("junk", JUNK)
def test_junk_never_raises_and_never_reads_as_tests_ran(name, junk):
    rep = POLYGLOT_PARSERS[name](junk)
    assert not rep.tests_ran
    assert all(s is not TestStatus.PASSED for s in rep.statuses.values())


def _colour(text: str) -> str:
    """Wrap status words and marks in ANSI colours, as the runners do on a terminal."""
    return re.sub(r"(✓|✔|✘|◌|√|✕|○|PASS|FAIL|ok|FAILED|\bRUN\b)", "\x1b[32m\\1\x1b[39m", text)


@pytest.mark.parametrize("name", ["jest_log", "mocha_spec", "ava_console", "go_test_v", "cargo_test",
                                  "ctest_log", "gtest_log", "gradle_log", "automake_log", "ant_junit"])
def test_ansi_colours_do_not_change_the_result(golden, name):
    plain = golden(GOLDEN_FOR[name])
    coloured = _colour(plain.decode("utf-8")).encode()
    assert coloured != plain
    parser = POLYGLOT_PARSERS[name]
    assert parser(coloured) == parser(plain)


def test_non_utf8_bytes_are_replaced_not_fatal(golden):
    raw = golden("cargo_test.log").replace(b"printing", b"print\xff\xfeing")
    assert POLYGLOT_PARSERS["cargo_test"](raw).statuses["tests::adds"] is TestStatus.PASSED


@pytest.mark.parametrize("name", sorted(GOLDEN_FOR))
def test_cut_and_corrupted_golden_outputs_never_raise(golden, name):
    raw, rnd = golden(GOLDEN_FOR[name]), random.Random(name)
    parser = POLYGLOT_PARSERS[name]
    for _ in range(30):
        b = bytearray(raw[: rnd.randrange(1, len(raw) + 1)])
        for _ in range(3):
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        parser(bytes(b))
        parser.check(bytes(b))


@pytest.mark.parametrize("name", sorted(POLYGLOT_PARSERS))
def test_common_options_are_accepted_by_every_parser_and_typos_are_not(golden, name):
    parser = POLYGLOT_PARSERS[name]
    raw = golden(GOLDEN_FOR[name])
    assert parser(raw, known_tests=[], root="/testbed") == parser(raw)
    with pytest.raises(TypeError):
        parser(raw, known_test=[])
