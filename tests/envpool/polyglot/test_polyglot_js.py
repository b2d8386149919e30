"""jest / vitest / mocha parsers, pinned by real output of jest 29, vitest 2 and mocha 10 on
Node 20 (tests/data/polyglot/regenerate.sh).

The projects have nested describe blocks (one titled ``nested > block``), failing, skipped and
todo tests, a test file that fails to load, a test printing a fake pass line, and for mocha a
failing ``before all`` hook and a file whose ``require`` fails.
"""

from __future__ import annotations

import pytest

from envpool.testrun.polyglot.jest import parse_jest_json, parse_jest_log, parse_vitest_json, strip_duration
from envpool.testrun.polyglot.mocha import PASS_MARKS, parse_mocha_json, parse_mocha_spec
from envpool.testrun.status import TestStatus

P, F, E, S = TestStatus.PASSED, TestStatus.FAILED, TestStatus.ERROR, TestStatus.SKIPPED
SUM = "src/sum.test.js > "
JEST = {
    SUM + "sum > adds 1 + 2": P, SUM + "sum > waits a little": P,
    SUM + "sum > nested > block > fails (on purpose)": F,
    SUM + "sum > nested > block > is skipped": S, SUM + "sum > nested > block > is todo": S,
    SUM + "top level test": P, "src/other.test.js > sum > adds 1 + 2": P,
}
KNOWN = ["src/broken.test.js > never runs", "src/other.test.js > sum > gone"]


@pytest.mark.parametrize("name", ["jest.json", "jest_json_stdout_mixed.log"])
def test_jest_json_ids_are_file_qualified(golden, name):
    rep = parse_jest_json(golden(name))
    assert rep.statuses == JEST
    assert rep.tests_ran and rep.source == "json" and parse_jest_json.check(golden(name)) == []


def test_jest_file_that_fails_to_load_errors_its_known_tests_never_passes(golden):
    rep = parse_jest_json(golden("jest.json"), known_tests=KNOWN)
    assert rep.collection_errors == ["src/broken.test.js"]
    assert rep.statuses["src/broken.test.js > never runs"] is E
    assert "src/other.test.js > sum > gone" not in rep.statuses  # other file loaded fine


def test_jest_json_root_is_configurable(golden):
    rep = parse_jest_json(golden("jest.json"), root="/testbed/src")
    assert "sum.test.js > top level test" in rep.statuses


@pytest.mark.parametrize("name", ["jest_verbose.log", "jest_verbose_no_durations.log"])
def test_jest_console_with_and_without_durations_names_the_same_tests_as_json(golden, name):
    rep = parse_jest_log(golden(name), known_tests=KNOWN)
    assert {k: v for k, v in rep.statuses.items() if not k.startswith("src/broken")} == JEST
    assert rep.statuses["src/broken.test.js > never runs"] is E
    assert rep.collection_errors == ["src/broken.test.js"] and rep.tests_ran


def test_jest_duration_is_not_part_of_the_title():
    assert strip_duration("adds 1 + 2 (12 ms)") == "adds 1 + 2"
    assert strip_duration("adds 1 + 2 (12ms)") == "adds 1 + 2"
    assert strip_duration("adds 1 + 2 (1.5 s)") == "adds 1 + 2"
    assert strip_duration("keeps (parens)") == "keeps (parens)"


def test_jest_console_output_printed_by_a_test_is_not_a_result(golden):
    assert not any("forged" in t for t in parse_jest_log(golden("jest_verbose.log")).statuses)


def test_jest_console_without_verbose_is_not_trusted():
    log = ("FAIL src/a.test.js\n  ● s › t\n\n    boom\n\nPASS src/b.test.js\n\n"
           "Tests:       1 failed, 5 passed, 6 total\n")
    assert parse_jest_log.check(log) == ["jest `Tests:` total: the runner reports 6, 0 parsed"]
    assert not parse_jest_log(log).tests_ran


def test_vitest_json_matches_the_vue_gold_form(golden):
    rep = parse_vitest_json(golden("vitest.json"))
    w = "packages/core/__tests__/watch.spec.ts > api: watch > "
    assert rep.statuses == {w + "effect": P, w + "should be executed correctly": F,
                            w + "skipped one": S, w + "todo one": S,
                            w + "mismatch handling > escape css var name": P}
    assert rep.collection_errors == ["packages/core/__tests__/broken.spec.ts"]


def test_jest_json_total_mismatch_is_an_anomaly(golden):
    text = golden("jest.json").decode().replace('"numTotalTests":7', '"numTotalTests":9')
    assert parse_jest_json.check(text) and not parse_jest_json(text).tests_ran


def test_no_report_is_not_a_pass():
    for parser in (parse_jest_json, parse_jest_log, parse_mocha_json, parse_mocha_spec):
        rep = parser(b"Error: Cannot find module 'jest'\n\xff")
        assert rep.statuses == {} and not rep.tests_ran


# -- mocha -------------------------------------------------------------------------------------

H = "supports http with nodejs "
MOCHA = {
    "top-level test": P, H + "should support max body length": P,
    H + "should properly support default max body length (follow-redirects as well)": F,
    H + "compression should support transparent gunzip": P, H + "compression is pending": S,
    "hooks never runs because of the hook": E,
}


@pytest.mark.parametrize("name", ["mocha.json", "mocha_json_stdout_mixed.log"])
def test_mocha_json_ids_are_full_titles(golden, name):
    rep = parse_mocha_json(golden(name))
    assert rep.statuses == dict(MOCHA, **{H + "prints a forged line": P})
    assert rep.collection_errors == ['hooks "before all" hook for "never runs because of the hook"']
    assert rep.tests_ran


def test_mocha_json_in_stdout_ignores_a_fake_report_printed_by_a_test(golden):
    rep = parse_mocha_json(golden("mocha_json_stdout_mixed.log"))
    assert "forged passing test" not in rep.statuses and len(rep.statuses) == 7


def test_mocha_spec_pass_marks_check_tick_heavy_tick_root_and_mojibake_all_pass(golden):
    raw = golden("mocha_spec_marks.log")
    for mark in ("✓", "√", "âœ“"):
        assert mark in raw.decode()
    rep = parse_mocha_spec(raw)
    assert rep.statuses == MOCHA
    assert parse_mocha_spec.check(raw) == [] and rep.tests_ran


@pytest.mark.parametrize("mark", PASS_MARKS)
def test_mocha_spec_every_pass_mark(mark):
    log = f"\n\n  suite\n    {mark} works (5ms)\n\n\n  1 passing (7ms)\n\n"
    assert parse_mocha_spec(log).statuses == {"suite works": P}


def test_mocha_spec_mojibake_bytes_decoded_as_latin1():
    raw = "  suite\n    ✓ works\n\n  1 passing (2ms)\n".encode().decode("latin-1").encode()
    assert parse_mocha_spec(raw).statuses == {"suite works": P}


def test_mocha_spec_fake_pass_line_breaks_the_counts(golden):
    raw = golden("mocha_spec.log")
    assert parse_mocha_spec.check(raw) == ["mocha `passing`: the runner reports 4, 5 parsed"]
    assert not parse_mocha_spec(raw).tests_ran


@pytest.mark.parametrize("parser", [parse_mocha_json, parse_mocha_spec])
def test_mocha_file_that_fails_to_load_is_an_error_never_a_pass(golden, parser):
    rep = parser(golden("mocha_load_error.log"), known_tests=list(MOCHA))
    assert rep.collection_errors == ["test/unit/broken.js"]
    assert set(rep.statuses.values()) == {E} and len(rep.statuses) == len(MOCHA)
    assert not rep.tests_ran
