"""Status lines: our parsers' verdicts printed in a form SWE-bench's own log parser reads.

SWE-bench harness v5 grades a run by `PARSER_REGISTRY[row.log_parser](log)`. None of its
parsers reads our reports (plugin JSON lines, `go test -json`, Surefire XML, ...) and its pytest
parser cuts ids at the first space. So the eval script of every row we export runs the row's
test command, prints the runner's report, then runs *this* module inside the image on that
report, which prints one line per test:

    swemint-status/1 begin parser=<name>
    --- PASS: <test id> (0s)          PASSED, XPASS
    --- FAIL: <test id> (0s)          FAILED, ERROR, XFAIL, absent but expected, collection errors
    --- SKIP: <test id> (0s)          SKIPPED
    swemint-status/1 end tests=<n>

That is the `--- PASS: name (duration)` form of `go test -v`, which swebench's
`parse_log_gotest` (regex ``^--- (PASS|FAIL|SKIP): (.+) \\((.+)\\)$`` on the stripped line,
swebench 5.0.2 `harness/log_parsers/go.py`) reads back exactly for every id without a newline or
surrounding whitespace: its greedy name group ends at the last `` (``, which is ours. Rows say
`log_parser: parse_log_gotest`, `eval_type: pass_and_fail`, and `status_format:
swemint-status/1`. Every id the row grades (`--known`) gets a line, FAIL when the report lacks
it, and the block comes after the runner's output, so a test that prints a forged `--- PASS:`
line for a graded id is overridden by ours. A report our parser does not trust (counts that
disagree, a cut stream) prints `>>>>> Tests Errored`, which makes the harness refuse to grade the
run, as `swemint eval` does. Status mapping as `envpool.grading`: only PASSED/XPASS pass (an
XFAIL is a FAIL line, where swebench would count it as passed).

This module and everything it imports are stdlib only (XML through `xml.etree`):
`build_zipapp()` packs them into one file that runs on the image's `python3` (>= 3.9), put in
every environment image at `TOOL_PATH`. `python -m envpool.testrun.statuslines --help` runs it
on the host.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from envpool.testrun.outcome import TestStatus

FORMAT = "swemint-status/1"
"""Name and version of the line format; a row's `status_format`."""
LOG_PARSER = "parse_log_gotest"
"""The swebench parser (`PARSER_REGISTRY` name) that reads the lines."""
TOOL_PATH = "/opt/swemint/bin/swemint-status.pyz"
"""Where the zipapp lives in every environment image."""
TESTS_ERRORED = ">>>>> Tests Errored"
"""swebench's marker of a run that must not be graded (`harness/constants` TESTS_ERROR)."""

_WORD = {TestStatus.PASSED: "PASS", TestStatus.XPASS: "PASS", TestStatus.SKIPPED: "SKIP",
         TestStatus.FAILED: "FAIL", TestStatus.ERROR: "FAIL", TestStatus.XFAIL: "FAIL"}


def status_line(test_id: str, status: TestStatus | None) -> str | None:
    """One `--- WORD: id (0s)` line (None: absent -> FAIL). Returns None for an id the format
    cannot carry (a newline in it, or whitespace at either end)."""
    if not test_id or "\n" in test_id or "\r" in test_id or test_id != test_id.strip():
        return None
    return f"--- {_WORD.get(status, 'FAIL') if status is not None else 'FAIL'}: {test_id} (0s)"


def render(statuses: dict[str, TestStatus], collection_errors: Iterable[str] = (),
           known: Iterable[str] = (), parser: str = "") -> str:
    """The status block for one run: every parsed test, every collection error (as FAIL), then
    every `known` id the report lacks (FAIL), sorted within each group."""
    lines = [f"{FORMAT} begin parser={parser}"]
    seen = set()
    for tid in sorted(statuses):
        line = status_line(tid, statuses[tid])
        if line:
            lines.append(line)
            seen.add(tid)
    for label in sorted(set(collection_errors) - set(statuses)):
        line = status_line(label, TestStatus.ERROR)
        if line:
            lines.append(line)
            seen.add(label)
    for tid in sorted(set(known) - seen):
        line = status_line(tid, None)
        if line:
            lines.append(line)
    lines.append(f"{FORMAT} end tests={len(lines) - 1}")
    return "\n".join(lines) + "\n"


def read_status_lines(log: str) -> dict[str, str]:
    """Test id -> "PASS" / "FAIL" / "SKIP" from the status lines in `log` (later lines win, as
    in swebench's parser). The inverse of `render`, for tests and `swemint eval`."""
    import re

    out: dict[str, str] = {}
    for line in log.split("\n"):
        m = re.match(r"^--- (PASS|FAIL|SKIP): (.+) \((.+)\)$", line.strip())
        if m:
            out[m.group(2)] = m.group(1)
    return out


def _read(path: str | None) -> bytes:
    if not path:
        return b""
    try:
        return Path(path).read_bytes()
    except OSError:
        return b""


def pytest_parts(report: bytes, junit: bytes, log: bytes, test_files: Sequence[str] = ()):
    """(statuses, collection errors, source) from our plugin's report, else pytest's JUnit XML,
    else the `-rA` log: the first that shows a test or a collection error wins (the order of
    `envpool.testrun.pytest_runner`)."""
    from envpool.testrun import parsers

    candidates = []
    if report:
        candidates.append((parsers.plugin_parts(report), "plugin"))
    if junit:
        candidates.append((parsers.junit_parts(junit, known_files=list(test_files) or None), "junit"))
    candidates.append((parsers.log_parts(log), "log"))
    for (statuses, errors, _code), source in candidates:
        if statuses or errors:
            return statuses, errors, source
    return {}, [], "none"


def poly_parts(parser: str, raw: bytes, options: dict | None = None, known: Sequence[str] = ()):
    """(statuses, collection errors, anomalies) of polyglot parser `parser` on `raw`."""
    from envpool.testrun.polyglot import POLYGLOT_PARSERS

    opts = dict(options or {})
    if known:
        opts["known_tests"] = list(known)
    res = POLYGLOT_PARSERS[parser].run(raw, **opts)
    return res.statuses, res.collection_errors, list(res.anomalies)


def main(argv: Sequence[str] | None = None) -> int:
    """`swemint-status.pyz KIND ...`: print the status block of one run; exit 0, or 3 (and
    `>>>>> Tests Errored`) when the report must not be graded."""
    ap = argparse.ArgumentParser(prog="swemint-status", description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=["pytest", "poly"])
    ap.add_argument("--parser", default="pytest_plugin", help="parser name (poly: a POLYGLOT_PARSERS key)")
    ap.add_argument("--options", default="{}", help="parser options as a JSON object")
    ap.add_argument("--input", help="poly: the runner's report file")
    ap.add_argument("--report", help="pytest: the plugin's JSON lines")
    ap.add_argument("--junit", help="pytest: the JUnit XML")
    ap.add_argument("--log", help="pytest: the console log")
    ap.add_argument("--test-files", default="", help="pytest: test files, comma-separated")
    ap.add_argument("--known-file", help="ids graded by the row, one per line")
    a = ap.parse_args(argv)
    known = [k for k in _read(a.known_file).decode("utf-8", "replace").split("\n") if k.strip()]
    if a.kind == "pytest":
        statuses, errors, source = pytest_parts(_read(a.report), _read(a.junit), _read(a.log),
                                                [f for f in a.test_files.split(",") if f])
        problems = [] if statuses or errors else ["no test result in the plugin report, JUnit XML or log"]
        name = f"pytest_{source}"
    else:
        statuses, errors, problems = poly_parts(a.parser, _read(a.input), json.loads(a.options), known)
        name = a.parser
        if not statuses and not errors and not problems:
            problems = ["the report shows no test"]
    if problems:
        sys.stdout.write(f"{FORMAT} untrusted parser={name}: {'; '.join(problems)[:2000]}\n{TESTS_ERRORED}\n")
        return 3
    sys.stdout.write(render(statuses, errors, known, name))
    return 0


def _package_files() -> dict[str, bytes]:
    """Archive name -> source of every module the tool imports (envpool's parsers)."""
    root = Path(__file__).resolve().parents[2]  # the folder holding envpool/
    names = ["envpool/__init__.py", "envpool/testrun/__init__.py", "envpool/testrun/outcome.py",
             "envpool/testrun/parsers.py", "envpool/testrun/statuslines.py"]
    names += sorted(str(p.relative_to(root)) for p in (root / "envpool/testrun/polyglot").glob("*.py"))
    return {n: (root / n).read_bytes() for n in names}


def build_zipapp() -> bytes:
    """The tool as one zipapp (bytes): `python3 swemint-status.pyz ...` runs `main`. Its
    content is deterministic (fixed timestamps), so images built from it hash the same."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        entries = {"__main__.py": b"import sys\nfrom envpool.testrun.statuslines import main\n"
                                  b"sys.exit(main())\n", **_package_files()}
        for name in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, entries[name])
    return b"#!/usr/bin/env python3\n" + buf.getvalue()


if __name__ == "__main__":
    sys.exit(main())
