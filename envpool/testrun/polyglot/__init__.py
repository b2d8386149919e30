"""Test-report parsers for ecosystems other than Python, by name, beside the pytest registry.

`envpool.testrun.parsers.PARSERS` is a literal dict whose module the parsers here import from
(`strip_ansi`, `worse`), so it has no clean extension point; this package keeps its own
`POLYGLOT_PARSERS`, and `get_any_parser(name)` looks here first and then falls back to
`envpool.testrun.parsers.get_parser`.

Every parser is pure: ``parser(raw: bytes | str, **options) -> TestRunReport`` with ids in the
runner's own full form (each module's docstring gives the form, its status table and sources),
and ``parser.check(raw, **options) -> list[str]``: its anomalies. Options, accepted by every
parser and used where the table says: ``known_tests`` (ids to mark FAILED/ERROR when the runner
shows their unit failed to build/load), ``root`` (checkout path stripped from absolute file
paths, default ``/testbed``); any other option is a TypeError.

Contract for the integrator:
- a run whose anomalies are non-empty is not trustworthy on *either* side: its report already
  has ``tests_ran=False``, but `grading.grade` reads statuses regardless, so such a run must end
  as ``tests_not_run`` (or be rerun), never be graded;
- units that failed to build/load are listed in `collection_errors` as labels (``<pkg> [build
  failed]``, a test file path, a hook title) that match no test id, so `grading.in_failed_collector`
  never hides other tests; their tests are absent (= not passing) or, with ``known_tests``, FAILED
  or ERROR. Pass the other side's ids as ``known_tests`` to make that explicit.

| name           | runner output                                          | module  | uses        |
|----------------|--------------------------------------------------------|---------|-------------|
| jest_json      | ``jest --json [--outputFile f]``                       | jest    | root, known |
| vitest_json    | ``vitest run --reporter=json [--outputFile f]``        | jest    | root, known |
| jest_log       | ``jest --verbose`` console                             | jest    | known       |
| mocha_json     | ``mocha --reporter json [--reporter-option output=f]`` | mocha   | root, known |
| mocha_spec     | ``mocha`` (spec reporter) console                      | mocha   | root, known |
| ava_tap        | ``ava --tap`` console (or its console rerun, see tap)  | tap     | known       |
| ava_console    | AVA's default (verbose) reporter console               | ava_console | known |
| karma_json     | swemint's karma reporter (browser tests)               | karma   | known       |
| go_test_json   | ``go test -json ./...``                                | golang  | known       |
| go_test_v      | ``go test -v ./...`` console (forgeable fallback)      | golang  | known       |
| cargo_test     | ``cargo test --no-fail-fast`` console                  | rust    | known       |
| nextest_junit  | cargo-nextest JUnit XML                                | rust    |             |
| java_junit     | Surefire / Gradle ``TEST-*.xml`` (concatenable)        | java    |             |
| gradle_log     | Gradle console with test events logged                 | java    | known       |
| maven_log      | ``mvn test`` console (per-class fallback)              | java    | known       |
| ant_junit      | Ant ``<junit>`` ``TEST-*.xml``, else its plain console  | java    |             |
| phpunit_junit  | ``phpunit --log-junit f``                              | php     |             |
| rspec_json     | ``rspec --format json [--out f]``                      | ruby    | root, known |
| minitest_log   | minitest console with ``-v``                           | ruby    | known       |
| ctest_junit    | ``ctest --output-junit f`` (TAP outputs: their tests)  | cfamily | known       |
| ctest_log      | ``ctest [-V]`` console (TAP in ``-V`` outputs)         | cfamily | known       |
| gtest_log      | GoogleTest console (direct or ``ctest -V``)            | cfamily |             |
| doctest_xml    | doctest ``--reporters=xml`` (also inside the three above) | doctest_xml |          |
| catch2_xml     | Catch2 v2/v3 ``--reporter xml`` (also inside the ctest ones) | catch2_xml |          |
| automake_log   | ``make check`` with automake's harness (jq)            | cfamily |             |
| script_status_log | a driver's ``pass/FAIL/skip  script`` lines           | drivers |             |
| tcl_helper_log | ``runtest`` (Tcl ``tests/test_helper.tcl``) console     | drivers |             |
| unittest_log   | ``unittest -v`` / Django ``runtests.py -v 2`` console    | drivers |             |

`gold.gold_match` / `gold.exact_form_agreement` score our ids against SWE-bench Multilingual's.
"""

from __future__ import annotations

from typing import Any

from envpool.testrun.parsers import Parser, get_parser
from envpool.testrun.polyglot import (ava_console, catch2_xml, cfamily, doctest_xml, drivers, golang, java, jest,
                                      karma, mocha, php, ruby, rust, tap)
from envpool.testrun.polyglot.common import ReportParser
from envpool.testrun.polyglot.gold import exact_form_agreement, gold_match

POLYGLOT_PARSERS: dict[str, ReportParser] = {
    "jest_json": jest.parse_jest_json,
    "vitest_json": jest.parse_vitest_json,
    "jest_log": jest.parse_jest_log,
    "mocha_json": mocha.parse_mocha_json,
    "mocha_spec": mocha.parse_mocha_spec,
    "ava_tap": tap.parse_ava_tap,
    "ava_console": ava_console.parse_ava_console,
    "karma_json": karma.parse_karma_json,
    "go_test_json": golang.parse_go_test_json,
    "go_test_v": golang.parse_go_test_v,
    "cargo_test": rust.parse_cargo_test,
    "nextest_junit": rust.parse_nextest_junit,
    "java_junit": java.parse_java_junit,
    "gradle_log": java.parse_gradle_log,
    "maven_log": java.parse_maven_log,
    "ant_junit": java.parse_ant_junit,
    "phpunit_junit": php.parse_phpunit_junit,
    "rspec_json": ruby.parse_rspec_json,
    "minitest_log": ruby.parse_minitest_log,
    "ctest_junit": cfamily.parse_ctest_junit,
    "ctest_log": cfamily.parse_ctest_log,
    "gtest_log": cfamily.parse_gtest_log,
    "doctest_xml": doctest_xml.parse_doctest_xml,
    "catch2_xml": catch2_xml.parse_catch2_xml,
    "automake_log": cfamily.parse_automake_log,
    "script_status_log": drivers.parse_script_status_log,
    "tcl_helper_log": drivers.parse_tcl_helper_log,
    "unittest_log": drivers.parse_unittest_log,
    "sympy_test_log": drivers.parse_sympy_test_log,
}
"""Polyglot parser registry: the name stored in a dataset row -> the parser."""


def get_any_parser(name: str) -> Parser:
    """The parser registered under `name` here or in the pytest registry; raises KeyError
    naming every known parser."""
    if name in POLYGLOT_PARSERS:
        return POLYGLOT_PARSERS[name]
    try:
        return get_parser(name)
    except KeyError:
        from envpool.testrun.parsers import PARSERS
        known = sorted([*PARSERS, *POLYGLOT_PARSERS])
        raise KeyError(f"unknown test-log parser {name!r}; known: {', '.join(known)}") from None


def anomalies(name: str, raw: bytes | str, **options: Any) -> list[str]:
    """Why the report of parser `name` on `raw` must not be trusted ([] for pytest parsers,
    whose cross-checks live in `pytest_runner.cross_check`)."""
    parser = get_any_parser(name)
    return parser.check(raw, **options) if isinstance(parser, ReportParser) else []


__all__ = ["POLYGLOT_PARSERS", "anomalies", "exact_form_agreement", "get_any_parser",
           "gold_match"]
