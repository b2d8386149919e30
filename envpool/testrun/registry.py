"""The one registry of test-report parsers: the name a dataset row stores (`parser`) -> the pure
parser that reads its runner's report (SWE-bench v5 resolves its log parsers the same way,
`swebench/harness/log_parsers/__init__.py`).

A parser module declares its parsers in a module-level `PARSERS` dict; this registry collects
the dicts of `envpool.testrun.parsers` (pytest) and of every module of `envpool.testrun.polyglot`
(found by listing the package, so adding a parser module is the registration). A name declared
twice is an error at import. `get_parser(name)` resolves a name, `anomalies(name, raw)` gives a
report's anomalies.

Every polyglot parser is pure: ``parser(raw: bytes | str, **options) -> TestRunReport`` with ids in the
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

pytest's parsers (`envpool.testrun.parsers`: `pytest_channel`, `pytest_plugin`, `pytest_junit`,
`pytest_log`) are plain functions whose cross-checks live in `pytest_runner.cross_check`.

| name           | runner output                                          | module  | uses        |
|----------------|--------------------------------------------------------|---------|-------------|
| jest_json      | ``jest --json [--outputFile f]``                       | jest    | root, known |
| vitest_json    | ``vitest run --reporter=json [--outputFile f]``        | jest    | root, known |
| jest_log       | ``jest --verbose`` console                             | jest    | known       |
| mocha_json     | ``mocha --reporter json [--reporter-option output=f]`` | mocha   | root, known |
| mocha_spec     | ``mocha`` (spec reporter) console                      | mocha   | root, known |
| ava_tap        | ``ava --tap`` console (or its console rerun, see tap)  | tap     | known       |
| ava_console    | AVA's default (verbose) reporter console               | ava_console | known |
| karma_json     | swemint's karma reporter (browser tests)               | karma_json | known    |
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
| boost_junit    | Boost.Test ``--logger=JUNIT,all,f`` (also inside the ctest ones) | boost_junit |        |
| automake_log   | ``make check`` with automake's harness (jq)            | cfamily |             |
| meson_testlog  | ``meson test``'s ``meson-logs/testlog.json`` (S35)      | meson   |             |
| script_status_log | a driver's ``pass/FAIL/skip  script`` lines           | driver_logs |         |
| tcl_helper_log | ``runtest`` (Tcl ``tests/test_helper.tcl``) console     | driver_logs |         |
| unittest_log   | ``unittest -v`` / Django ``runtests.py -v 2`` console    | driver_logs |         |
| unit_report_log | swemint's units runner: per file (cram/prove/automake) else exit status | units_log | |
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import Any

from envpool.testrun import parsers as pytest_parsers
from envpool.testrun import polyglot
from envpool.testrun.parsers import Parser
from envpool.testrun.polyglot.common import ReportParser


def parser_modules() -> list[ModuleType]:
    """The modules whose `PARSERS` the registry holds: pytest's, then every module of
    `envpool.testrun.polyglot` by name (modules without `PARSERS` declare none)."""
    names = sorted(m.name for m in pkgutil.iter_modules(polyglot.__path__))
    return [pytest_parsers, *(importlib.import_module(f"{polyglot.__name__}.{n}") for n in names)]


def _collect() -> dict[str, Parser]:
    out: dict[str, Parser] = {}
    where: dict[str, str] = {}
    for module in parser_modules():
        for name, parser in getattr(module, "PARSERS", {}).items():
            if name in out:
                raise ImportError(f"test-report parser {name!r} is declared by both {where[name]} and {module.__name__}")
            out[name], where[name] = parser, module.__name__
    return out


PARSERS: dict[str, Parser] = _collect()
"""Every parser by the name stored in a dataset row."""


def get_parser(name: str) -> Parser:
    """The parser registered under `name`; raises KeyError naming every known parser."""
    try:
        return PARSERS[name]
    except KeyError:
        raise KeyError(f"unknown test-log parser {name!r}; known: {', '.join(sorted(PARSERS))}") from None


def anomalies(name: str, raw: bytes | str, **options: Any) -> list[str]:
    """Why the report of parser `name` on `raw` must not be trusted ([] for pytest parsers,
    whose cross-checks live in `pytest_runner.cross_check`)."""
    parser = get_parser(name)
    return parser.check(raw, **options) if isinstance(parser, ReportParser) else []


__all__ = ["PARSERS", "anomalies", "get_parser", "parser_modules"]
