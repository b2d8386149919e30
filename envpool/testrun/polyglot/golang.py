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
| `run` with no end, package ended (panic, exit, signal) | FAILED |
| `run` with no end, binary's `-timeout` fired, listed running >= per-test limit | FAILED |
| `run` with no end, binary's `-timeout` fired, listed running < limit or not listed | (not reported) |
| `pause` with no `cont`, package stopped early | (not reported) |
| package `[build failed]` / `[setup failed]`: known ids of the package | FAILED |

A package that fails to build is listed in `collection_errors` as ``<pkg> [build failed]``
(a label that matches no test id, so it never hides tests of sub-packages in grading).

A package whose test binary ended abnormally -- a test panicked (``panic:``, a nil dereference, a
``fatal error:`` such as a concurrent map write), called ``os.Exit``, was killed (``signal:``),
or the binary's own ``-timeout`` fired (``panic: test timed out``) -- fails as a package with
the test that was running FAILED, and its remaining tests are never reported. The binary's
final summary line (a bare ``PASS`` / ``FAIL``, printed by ``testing.M.Run`` when every test
ended) is then missing: a package that ends ``fail`` without it (and did not fail to build) is a
unit that *stopped early*, listed as ``<pkg> [stopped early: <cause>]`` (cause: ``test timed out``,
``panic``, ``fatal error``, ``signal: <name>``, ``exit status <n>``, else ``no final PASS/FAIL
line``; `envpool.grading.STOPPED_EARLY`). The run is still graded, but grading does not read
the absence of that package's unreported tests as a result (`envpool.grading.observed`), and
adaptive verification does not decide on such a run at once (`agents.adaptive.cut_short`).
The known ids of a stopped package are *not* filled in (they did not fail: they did not run),
nor is a test that had paused (``t.Parallel``: top-level parallel tests wait for every sequential
one, parallel subtests for their parent's body) and never continued when the binary died -- it
never ran, and reporting it FAILED made a new test that panics before the fix turn the package's
parallel tests into FAIL_TO_PASS. A package whose binary died before any test (an ``init``
panic, a ``TestMain`` that exits before ``m.Run``) stopped early too: it ends ``fail`` with no
test and no final line. The final line counts only after the package's last test event: a
``PASS`` printed before ``m.Run`` (``TestMain``, ``init``: test2json has no framing yet then)
or by a test (``-v``) does not make a binary that died later look complete, and in ``-v`` it is
a bare line at column 0 (a ``t.Log`` continuation line is indented).

The binary's ``-timeout`` is a limit for the whole binary (swemint passes four times the per-test
limit, `envpool.testrun.limits`): on a loaded host a large package can run out of it while a
test that had run a few seconds is in progress. Go then prints ``panic: test timed out after
<d>`` and ``running tests:`` with one line per test still running, ``<name> (<duration>)``
(`testing.runningList`, rounded to the second). Such a test counts as FAILED only when its listed
running time is at least the per-test limit (option ``per_test_timeout``, seconds; the run's
``SWEMINT_TEST_TIMEOUT``, passed by `envpool.evaluation.run_report`; `DEFAULT_PER_TEST` = 120 s,
the default of `envpool.testrun.limits`, when not given): that is a hang, the classic deadlock
FAIL_TO_PASS. A parent listed with subtests counts so only when one of them had too (a table
test whose current subtest is young was making progress). Go before 1.21 printed no list (swemint installs 1.15 and 1.19 for old go.mod
lines): then ``-json`` measures the same time from the events' ``Time`` (the test's last
``run``/``cont`` to the ``panic: test timed out`` output); ``-v`` has no times. A test that had
run less, or whose time is unknown, is
not reported: the package ran out of time, there is no verdict on it (prometheus-15142: a test
running 3 s when before#1's package clock ran out became a wrong FAIL_TO_PASS). The package is
still ``<pkg> [stopped early: test timed out]``.

Trust: `go test -json` (since Go 1.20 the test binary frames its own lines for test2json,
golang/go CL 443596, so a test printing ``--- PASS: X`` cannot forge a result; the golden output
shows it) is the source to use; the ``-v`` console is a fallback a test can forge. Sources:
`go help testflag`, `go doc test2json`, `testing/match.go` (`splitRegexp`, `rewrite`).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from collections.abc import Iterable

from envpool.testrun.polyglot.common import Result, report_parser
from envpool.testrun.outcome import TestStatus

_ACTIONS = {"pass": TestStatus.PASSED, "fail": TestStatus.FAILED, "skip": TestStatus.SKIPPED}
_BUILD_FAILED = re.compile(r"^FAIL\s+(\S+)\s+\[(?:build|setup) failed\]", re.M)
_CAUSES = ((re.compile(r"^panic: test timed out\b"), "test timed out"), (re.compile(r"^panic: "), "panic"),
           (re.compile(r"^fatal error: "), "fatal error"), (re.compile(r"^signal: (\w+)"), "signal: {}"),
           (re.compile(r"^exit status (\d+)"), "exit status {}"))
TIMED_OUT = "test timed out"
_RUNNING_HEAD = re.compile(r"^\s*running tests:\s*$")
_RUNNING = re.compile(r"^\s+(\S+) \(([0-9.hmsuµμn]+)\)\s*$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s|us|µs|μs|ns)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9}
DEFAULT_PER_TEST = 120
"""Seconds: the per-test limit when the parser is not told the run's (``per_test_timeout``);
equal to `envpool.testrun.limits.DEFAULT_PER_TEST` (this module stays stdlib only)."""
NO_SUMMARY = "no final PASS/FAIL line"
"""The cause of a stopped package whose output names none of `_CAUSES`."""


def stopped_label(pkg: str, cause: str | None) -> str:
    """The collection-error label of a package whose test binary stopped early (module doc)."""
    return f"{pkg} [stopped early: {cause or NO_SUMMARY}]"


def go_duration(text: str) -> float | None:
    """Seconds of a Go `time.Duration` string (``3s``, ``2m10s``, ``1h0m5.5s``, ``750ms``), else None."""
    pos, total = 0, 0.0
    for m in _DURATION_PART.finditer(text):
        if m.start() != pos:
            return None
        total += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        pos = m.end()
    return total if pos == len(text) and pos else None


class _Running:
    """The ``running tests:`` block after ``panic: test timed out`` (module doc): test -> seconds."""

    def __init__(self) -> None:
        self.timed_out, self.in_block = False, False
        self.listed: dict[str, float] = {}

    def feed(self, line: str) -> None:
        line = line.rstrip("\n")
        if not self.timed_out:
            self.timed_out = line.startswith("panic: test timed out")
            return
        if _RUNNING_HEAD.match(line):
            self.in_block = True
        elif self.in_block:
            m = _RUNNING.match(line)
            secs = go_duration(m.group(2)) if m else None
            if m is None or secs is None:
                self.in_block = False
            else:
                self.listed[m.group(1)] = secs

    def hung(self, test: str, limit: float) -> bool:
        """Whether `test`, running when the binary's -timeout fired, had run the per-test limit --
        and, when subtests of it are listed, one of them had too (a parent whose running subtest
        started less than the limit ago was making progress: the package ran out of time)."""
        if self.listed.get(test, -1.0) < limit:
            return False
        kids = [secs for name, secs in self.listed.items() if name.startswith(test + "/")]
        return not kids or max(kids) >= limit


def event_time(value) -> float | None:
    """Seconds since the epoch of a `go test -json` event's ``Time`` (RFC 3339, nanoseconds:
    Python >= 3.11's `datetime.fromisoformat` reads ``Z`` and keeps microseconds), else None."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


def _limit(per_test_timeout: float | None) -> float:
    return float(per_test_timeout) if per_test_timeout is not None else float(DEFAULT_PER_TEST)


def _cause(line: str) -> str | None:
    """Why a test binary ended, from one line of its output (`_CAUSES`), else None."""
    for pattern, label in _CAUSES:
        m = pattern.match(line)
        if m:
            return label.format(*m.groups())
    return None


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
def parse_go_test_json(text: str, known_tests: Iterable[str] | None = None,
                       per_test_timeout: float | None = None) -> Result:
    """Parse `go test -json` output (one JSON event per line; other lines are skipped).

    Shape: ``{"Action": "run"|"pass"|"fail"|"skip"|"output"|"start"|..., "Package": str,
    "Test": str?, "FailedBuild": str?}``; events without ``Test`` are package-level. Go >= 1.24
    also writes ``build-output``/``build-fail`` events and ``FailedBuild``; older Go only an
    ``output`` event ``FAIL\\t<pkg> [build failed]``: both mark the package as failed to build.
    A package that ends ``fail`` with no summary line (a bare ``PASS``/``FAIL`` package-level
    output after its last test event) and did not fail to build stopped early:
    ``<pkg> [stopped early: <cause>]``; its tests paused and not continued are not reported
    (module doc). When the binary's ``-timeout`` fired, a test still running is FAILED only if
    the ``running tests:`` block lists it at ``per_test_timeout`` seconds or more (module doc).
    Anomaly: the stream ends while a package that started has no final action (run killed).
    """
    limit = _limit(per_test_timeout)
    running: dict[str, _Running] = {}    # package -> its `running tests:` block
    res = Result(source="json")
    started: dict[str, list[str]] = {}   # package -> tests with `run` and no end yet
    open_pkgs: list[str] = []
    failed_builds: list[str] = []
    paused: dict[str, set[str]] = {}     # package -> tests paused (t.Parallel) and not continued
    summary: set[str] = set()            # packages whose binary printed its final PASS/FAIL
    causes: dict[str, str] = {}          # package -> the first cause its output names
    begun: dict[tuple[str, str], float] = {}  # (package, test) -> Time of its last run/cont event
    fired: dict[str, float] = {}         # package -> Time of its `panic: test timed out` output
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
        out = ev.get("Output") if action == "output" else None
        if isinstance(out, str) and pkg not in causes and (c := _cause(out)):
            causes[pkg] = c
        if isinstance(out, str):
            running.setdefault(pkg, _Running()).feed(out)
            if pkg not in fired and out.startswith("panic: test timed out") and (at := event_time(ev.get("Time"))):
                fired[pkg] = at
        if isinstance(test, str) and test:
            summary.discard(pkg)  # a final line before a test event was no final line (TestMain, init)
            if action in ("run", "cont") and (at := event_time(ev.get("Time"))):
                begun[(pkg, test)] = at
            if action == "run":
                started.setdefault(pkg, []).append(test)
            elif action == "pause":
                paused.setdefault(pkg, set()).add(test)
            elif action == "cont":
                paused.get(pkg, set()).discard(test)
            elif action in _ACTIONS:
                res.add(go_test_id(pkg, test), _ACTIONS[action])
                if test in started.get(pkg, []):
                    started[pkg].remove(test)
            continue
        if isinstance(out, str):
            m = _BUILD_FAILED.match(out)
            if m and m.group(1) == pkg:
                failed_builds.append(pkg)
            if out.strip() in ("PASS", "FAIL"):
                summary.add(pkg)
        if action in _ACTIONS:  # package end
            if pkg in open_pkgs:
                open_pkgs.remove(pkg)
            if ev.get("FailedBuild"):
                failed_builds.append(pkg)
            stopped = action == "fail" and pkg not in summary and pkg not in failed_builds
            waiting = paused.pop(pkg, set())
            block = running.pop(pkg, _Running())
            timed_out = stopped and causes.get(pkg) == TIMED_OUT
            for t in started.pop(pkg, []):  # still running when the binary died
                if stopped and t in waiting:  # a paused test never ran: not reported
                    continue
                if timed_out and not (block.hung(t, limit) if block.listed else  # Go < 1.21: no list
                                      fired.get(pkg, 0.0) - begun.get((pkg, t), float("inf")) >= limit):
                    continue  # the package ran out of time: no verdict
                res.add(go_test_id(pkg, t), TestStatus.FAILED)
            if stopped:
                res.unit_failed(stopped_label(pkg, causes.get(pkg)))
    for pkg in dict.fromkeys(failed_builds):
        res.unit_failed(f"{pkg} [build failed]")
        res.fail_known(known_tests, TestStatus.FAILED, _belongs(pkg))
    for pkg in open_pkgs:
        res.anomalies.append(f"go test -json: package {pkg} started but never finished "
                             "(output cut short)")
    return res


_RUN = re.compile(r"^=== RUN\s+(\S+)\s*$")
_PAUSE = re.compile(r"^=== (PAUSE|CONT)\s+(\S+)\s*$")
_RESULT = re.compile(r"--- (PASS|FAIL|SKIP): (\S+) \((?:\d+(?:\.\d+)?s|unknown)\)")
_PKG = re.compile(r"^(?:(ok|FAIL)\s+(\S+)\s+(\d+(?:\.\d+)?s|\(cached\)|\[(?:build|setup) failed\])"
                  r"(?:\s.*)?|(\?)\s+(\S+)\s+\[no test files\])$")
_WORDS = {"PASS": TestStatus.PASSED, "FAIL": TestStatus.FAILED, "SKIP": TestStatus.SKIPPED}


@report_parser()
def parse_go_test_v(text: str, known_tests: Iterable[str] | None = None,
                    per_test_timeout: float | None = None) -> Result:
    """Parse `go test -v ./...` console output (the fallback when `-json` is not available).

    Results are ``--- PASS|FAIL|SKIP: <name> (<secs>s)`` lines, found anywhere in a line (a test
    that prints without a trailing newline glues its output in front), indented for subtests,
    and printed late and interleaved with log output for parallel subtests. A result counts only
    for a name that had ``=== RUN <name>``; ``-v`` prints that for every test. Tests are given
    their package by the next package line (``ok  <pkg> 0.01s``, ``FAIL <pkg> 0.04s``,
    ``FAIL <pkg> [build failed]``, ``?   <pkg> [no test files]``): go prints each package's
    output as one block. A test with ``=== RUN`` and no result before its package's ``FAIL`` line
    is FAILED (timeout, panic). A ``FAIL`` package line (not ``[build failed]``) with no bare
    ``PASS`` / ``FAIL`` summary line at column 0 after the package's last ``=== RUN|PAUSE|CONT``
    or result line: the package stopped early (``<pkg> [stopped early: <cause>]``; a test paused
    with no ``=== CONT`` is then not reported, module doc). When the binary's ``-timeout`` fired,
    a test still running is FAILED only if ``running tests:`` lists it at ``per_test_timeout``
    seconds or more (module doc). Anomaly: an ``ok`` package line while a test
    of it is still running (a test printing a fake package line).
    """
    res = Result(source="log")
    runs: list[str] = []
    done: dict[str, TestStatus] = {}
    seen_pkgs: set[str] = set()
    paused: set[str] = set()
    summary, cause = False, None
    limit, block = _limit(per_test_timeout), _Running()
    for line in text.splitlines():
        block.feed(line)
        if line.rstrip() in ("PASS", "FAIL"):  # the binary's final line: at column 0
            summary = True
            continue
        cause = cause or _cause(line)
        m = _RUN.match(line)
        if m:
            runs.append(m.group(1))
            summary = False
            continue
        m = _PAUSE.match(line)
        if m:
            (paused.add if m.group(1) == "PAUSE" else paused.discard)(m.group(2))
            summary = False
            continue
        found = False
        for m in _RESULT.finditer(line):
            if m.group(2) in runs:
                done[m.group(2)] = _WORDS[m.group(1)]
                found = True
        if found:
            summary = False
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
        stopped = word == "FAIL" and not summary and not rest.startswith("[")
        timed_out = stopped and cause == TIMED_OUT
        for t in runs:
            if t in done:
                res.add(go_test_id(pkg, t), done[t])
            elif stopped and t in paused:  # a paused test never ran: not reported
                continue
            elif timed_out and not block.hung(t, limit):  # the package ran out of time: no verdict
                continue
            else:
                res.add(go_test_id(pkg, t), TestStatus.FAILED)
        if stopped:
            res.unit_failed(stopped_label(pkg, cause))
        runs, done, paused, summary, cause, block = [], {}, set(), False, None, _Running()
        if rest.startswith("["):
            res.unit_failed(f"{pkg} [build failed]")
            res.fail_known(known_tests, TestStatus.FAILED, _belongs(pkg))
    if runs:
        res.anomalies.append(f"go test -v: {len(runs)} test(s) after the last package line "
                             "(output cut short)")
    return res


PARSERS = {"go_test_json": parse_go_test_json, "go_test_v": parse_go_test_v}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
