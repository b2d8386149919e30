"""Go: `go test -json` events and `go test -v` console output; `-run` patterns for one test.

Test ids: ``<package import path>::<test name as Go prints it>``, e.g.
``github.com/gin-gonic/gin::TestContextBindHeader`` and
``example.com/poly/calc::TestParallel/case_(a.b)_one``. Go rewrites spaces in subtest names to
``_`` (and adds ``#01`` to duplicates); ids keep Go's rewritten form, which is what ``-run``
matches. SWE-bench Multilingual's gold ids omit the package (`gold.gold_match` handles that).

Status mapping:

| Go (JSON `Action` / console)             | TestStatus |
|------------------------------------------|------------|
| `pass` / `--- PASS:`                     | PASSED     |
| `fail` / `--- FAIL:`                     | FAILED     |
| `skip` / `--- SKIP:`                     | SKIPPED    |
| `run` with no end, package ended (timeout, panic) | FAILED |
| package `[build failed]` / `[setup failed]`: known ids of the package | FAILED |

A package that fails to build is listed in `collection_errors` as ``<pkg> [build failed]``
(a label that matches no test id, so it never hides tests of sub-packages in grading).

Trust: `go test -json` (since Go 1.20 the test binary frames its own lines for test2json,
golang/go CL 443596, so a test printing ``--- PASS: X`` cannot forge a result; the golden output
shows it) is the source to use; the ``-v`` console is a fallback a test can forge. Sources:
`go help testflag`, `go doc test2json`, `testing/match.go` (`splitRegexp`, `rewrite`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from envpool.testrun.polyglot.common import Result, report_parser
from envpool.testrun.outcome import TestStatus

_ACTIONS = {"pass": TestStatus.PASSED, "fail": TestStatus.FAILED, "skip": TestStatus.SKIPPED}
_BUILD_FAILED = re.compile(r"^FAIL\s+(\S+)\s+\[(?:build|setup) failed\]", re.M)


def go_test_id(package: str, test: str) -> str:
    """``<package>::<test>`` (the form all Go parsers here produce)."""
    return f"{package}::{test}" if package else test


def split_go_id(test_id: str) -> tuple[str, str]:
    """(package, test name) of an id; package is "" for a bare gold-style id like ``TestX/sub``."""
    pkg, sep, test = test_id.partition("::")
    return (pkg, test) if sep else ("", test_id)


def quote_meta(s: str) -> str:
    """Go's `regexp.QuoteMeta`: backslash-escape ``\\.+*?()|[]{}^$`` (nothing else)."""
    return re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", s)


def go_run_regex(test_id: str) -> str:
    """A ``go test -run`` pattern that selects exactly this (sub)test.

    ``pkg::TestX/case_(a.b)_one`` -> ``^TestX$/^case_\\(a\\.b\\)_one$``: Go splits the pattern at
    unescaped ``/`` outside brackets and matches each level unanchored against that level of the
    (rewritten) name, so each level is anchored and QuoteMeta'd. A name containing ``/`` is
    several levels for Go too, so splitting the id at every ``/`` matches it. Run it in the
    package's directory (`split_go_id` gives the package). Go also runs every test whose name
    is a level-prefix of the pattern: the parents (it must enter them), and for a subtest named
    ``a/b`` a sibling named ``a`` (Go cannot tell the two apart); no other test runs.
    """
    _, name = split_go_id(test_id)
    return "/".join(f"^{quote_meta(part)}$" for part in name.split("/"))


def _belongs(pkg: str):
    return lambda test_id: split_go_id(test_id)[0] == pkg


@report_parser()
def parse_go_test_json(text: str, known_tests: Iterable[str] | None = None) -> Result:
    """Parse `go test -json` output (one JSON event per line; other lines are skipped).

    Shape: ``{"Action": "run"|"pass"|"fail"|"skip"|"output"|"start"|..., "Package": str,
    "Test": str?, "FailedBuild": str?}``; events without ``Test`` are package-level. Go >= 1.24
    also writes ``build-output``/``build-fail`` events and ``FailedBuild``; older Go only an
    ``output`` event ``FAIL\\t<pkg> [build failed]``: both mark the package as failed to build.
    Anomaly: the stream ends while a package that started has no final action (run killed).
    """
    res = Result(source="json")
    started: dict[str, list[str]] = {}   # package -> tests with `run` and no end yet
    open_pkgs: list[str] = []
    failed_builds: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if not isinstance(ev, dict):
            continue
        action, pkg, test = ev.get("Action"), ev.get("Package") or "", ev.get("Test")
        if not isinstance(pkg, str) or not isinstance(action, str):
            continue
        if action == "start" and pkg not in open_pkgs:
            open_pkgs.append(pkg)
        if isinstance(test, str) and test:
            if action == "run":
                started.setdefault(pkg, []).append(test)
            elif action in _ACTIONS:
                res.add(go_test_id(pkg, test), _ACTIONS[action])
                if test in started.get(pkg, []):
                    started[pkg].remove(test)
            continue
        if action == "output" and isinstance(ev.get("Output"), str):
            m = _BUILD_FAILED.match(ev["Output"])
            if m and m.group(1) == pkg:
                failed_builds.append(pkg)
        if action in _ACTIONS:  # package end
            if pkg in open_pkgs:
                open_pkgs.remove(pkg)
            if ev.get("FailedBuild"):
                failed_builds.append(pkg)
            for t in started.pop(pkg, []):  # still running when the binary died
                res.add(go_test_id(pkg, t), TestStatus.FAILED)
    for pkg in dict.fromkeys(failed_builds):
        res.unit_failed(f"{pkg} [build failed]")
        res.fail_known(known_tests, TestStatus.FAILED, _belongs(pkg))
    for pkg in open_pkgs:
        res.anomalies.append(f"go test -json: package {pkg} started but never finished "
                             "(output cut short)")
    return res


_RUN = re.compile(r"^=== RUN\s+(\S+)\s*$")
_RESULT = re.compile(r"--- (PASS|FAIL|SKIP): (\S+) \((?:\d+(?:\.\d+)?s|unknown)\)")
_PKG = re.compile(r"^(?:(ok|FAIL)\s+(\S+)\s+(\d+(?:\.\d+)?s|\(cached\)|\[(?:build|setup) failed\])"
                  r"(?:\s.*)?|(\?)\s+(\S+)\s+\[no test files\])$")
_WORDS = {"PASS": TestStatus.PASSED, "FAIL": TestStatus.FAILED, "SKIP": TestStatus.SKIPPED}


@report_parser()
def parse_go_test_v(text: str, known_tests: Iterable[str] | None = None) -> Result:
    """Parse `go test -v ./...` console output (the fallback when `-json` is not available).

    Results are ``--- PASS|FAIL|SKIP: <name> (<secs>s)`` lines, found anywhere in a line (a test
    that prints without a trailing newline glues its output in front), indented for subtests,
    and printed late and interleaved with log output for parallel subtests. A result counts only
    for a name that had ``=== RUN <name>``; ``-v`` prints that for every test. Tests are given
    their package by the next package line (``ok  <pkg> 0.01s``, ``FAIL <pkg> 0.04s``,
    ``FAIL <pkg> [build failed]``, ``?   <pkg> [no test files]``): go prints each package's
    output as one block. A test with ``=== RUN`` and no result before its package's ``FAIL`` line
    is FAILED (timeout, panic). Anomaly: an ``ok`` package line while a test of it is still
    running (a test printing a fake package line).
    """
    res = Result(source="log")
    runs: list[str] = []
    done: dict[str, TestStatus] = {}
    seen_pkgs: set[str] = set()
    for line in text.splitlines():
        m = _RUN.match(line)
        if m:
            runs.append(m.group(1))
            continue
        found = False
        for m in _RESULT.finditer(line):
            if m.group(2) in runs:
                done[m.group(2)] = _WORDS[m.group(1)]
                found = True
        if found:
            continue
        m = _PKG.match(line)
        if not m:
            continue
        word, pkg, rest = m.group(1) or "?", m.group(2) or m.group(5), m.group(3) or ""
        if pkg in seen_pkgs:
            res.anomalies.append(f"go test -v: package {pkg} reported twice (output may be forged)")
        seen_pkgs.add(pkg)
        running = [t for t in runs if t not in done]
        if word == "ok" and running:
            res.anomalies.append(f"go test -v: package line 'ok {pkg}' while {running[0]} was "
                                 "still running (output may be forged)")
        for t in runs:
            res.add(go_test_id(pkg, t), done.get(t, TestStatus.FAILED))
        runs, done = [], {}
        if rest.startswith("["):
            res.unit_failed(f"{pkg} [build failed]")
            res.fail_known(known_tests, TestStatus.FAILED, _belongs(pkg))
    if runs:
        res.anomalies.append(f"go test -v: {len(runs)} test(s) after the last package line "
                             "(output cut short)")
    return res


PARSERS = {"go_test_json": parse_go_test_json, "go_test_v": parse_go_test_v}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
