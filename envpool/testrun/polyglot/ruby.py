"""Ruby: RSpec's JSON formatter and minitest's verbose console output.

Test ids:
- RSpec: ``<spec file> > <full description>``, e.g. ``spec/calc_spec.rb > Calc#add adds two
  numbers`` (the file without ``./``; the full description is the example group titles and the
  example's, joined by spaces, as RSpec prints them). RSpec's ``./spec/x_spec.rb[1:2]`` ids
  shift when a test patch inserts examples, so they are not used.
- minitest: ``<TestClass>#<test method>``, e.g. ``TestFakerInternet#test_password`` (what
  ``ruby -Itest ... -v`` prints; ``--name`` accepts the method).

Status mapping:

| RSpec `status`   | minitest `-v` result char | TestStatus |
|------------------|---------------------------|------------|
| `passed`         | `.`                       | PASSED     |
| `failed`         | `F`                       | FAILED     |
| --               | `E`                       | ERROR      |
| `pending`        | `S`                       | SKIPPED    |
| spec file that fails to load: known ids of the file | ERROR             |

Anomalies: RSpec's ``summary.example_count`` or minitest's ``N runs`` differs from the results
parsed (a minitest log without ``-v`` lists only failures). Sources: RSpec's
`Formatters::JsonFormatter`, minitest's `ProgressReporter`/`SummaryReporter` (``-v``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from envpool.testrun.polyglot.common import (DEFAULT_ROOT, Result, count_mismatch, find_json,
                                             items, relpath, report_parser)
from envpool.testrun.outcome import TestStatus

_RSPEC = {"passed": TestStatus.PASSED, "failed": TestStatus.FAILED, "pending": TestStatus.SKIPPED}
_LOAD = re.compile(r"An error occurred while loading (\S+?)\.?\s*$", re.M)


def rspec_id(file_path: str, full_description: str, root: str | None = DEFAULT_ROOT) -> str:
    """``spec/x_spec.rb > Group example``."""
    return f"{relpath(file_path, root)} > {full_description}"


@report_parser()
def parse_rspec_json(text: str, root: str | None = DEFAULT_ROOT,
                     known_tests: Iterable[str] | None = None) -> Result:
    """Parse ``rspec --format json`` output (the ``--out`` file, or stdout mixed with output).

    Shape: ``{"examples": [{"full_description": str, "status": "passed"|"failed"|"pending",
    "file_path": "./spec/x_spec.rb", ...}], "summary": {"example_count": int,
    "errors_outside_of_examples_count": int}, "messages": [str]}``. A message ``An error occurred
    while loading ./spec/x_spec.rb`` lists that file in `collection_errors`.
    """
    res = Result(source="json")
    data = find_json(text, ("examples", "summary"))
    if data is None:
        return res
    examples = [e for e in items(data, "examples") if isinstance(e, dict)]
    for ex in examples:
        st = _RSPEC.get(str(ex.get("status")))
        if st is not None:
            res.add(rspec_id(str(ex.get("file_path") or ""), str(ex.get("full_description") or ""),
                             root), st)
    for msg in items(data, "messages"):
        for m in _LOAD.finditer(str(msg)):
            file = relpath(m.group(1), root)
            res.unit_failed(file)
            res.fail_known(known_tests, TestStatus.ERROR, lambda t, f=file: t.startswith(f + " > "))
    summary = data.get("summary") if isinstance(data.get("summary"), dict) else {}
    count = summary.get("example_count")
    count_mismatch(res, "rspec example_count", count if isinstance(count, int) else None,
                   len(examples))
    return res


_VERBOSE = re.compile(r"^(?P<id>[A-Z][\w:]*#.+?) = \d+(?:\.\d+)? s = (?P<c>[.FES])\s*$")
_FAILURE_HEAD = re.compile(r"^\s*\d+\) (Failure|Error|Skipped):\s*$")
_FAILURE_ID = re.compile(r"^(?P<id>[A-Z][\w:]*#.+?)(?: \[.*\])?:\s*$")
_RUNS = re.compile(r"^(\d+) runs, \d+ assertions, (\d+) failures, (\d+) errors, (\d+) skips")
_CHARS = {".": TestStatus.PASSED, "F": TestStatus.FAILED, "E": TestStatus.ERROR,
          "S": TestStatus.SKIPPED}
_RUBY_LOAD = re.compile(r"\((LoadError|SyntaxError)\)")


@report_parser()
def parse_minitest_log(text: str, known_tests: Iterable[str] | None = None) -> Result:
    """Parse minitest's console output run with ``-v`` (``TestX#test_y = 0.00 s = .``).

    The ``1) Failure:`` / ``2) Error:`` blocks after the run name the same tests again (with
    the worse status kept). ``N runs, A assertions, F failures, E errors, S skips`` lines (one per
    test process; summed) are cross-checked against the verbose lines. A ``LoadError`` /
    ``SyntaxError`` with no run summary gives every known id ERROR.
    """
    res = Result(source="log")
    verbose = 0
    runs: int | None = None
    head = None
    for line in text.splitlines():
        m = _VERBOSE.match(line)
        if m:
            res.add(m.group("id"), _CHARS[m.group("c")])
            verbose += 1
            continue
        m = _FAILURE_HEAD.match(line)
        if m:
            head = m.group(1)
            continue
        if head is not None:
            fm = _FAILURE_ID.match(line.strip())
            if fm and head != "Skipped":
                res.add(fm.group("id"), TestStatus.FAILED if head == "Failure" else TestStatus.ERROR)
            head = None
            continue
        m = _RUNS.match(line.strip())
        if m:
            runs = (runs or 0) + int(m.group(1))
    if runs is None and _RUBY_LOAD.search(text):
        res.unit_failed("ruby: load error before any test ran")
        res.fail_known(known_tests, TestStatus.ERROR)
    count_mismatch(res, "minitest runs", runs, verbose)
    return res


PARSERS = {"rspec_json": parse_rspec_json, "minitest_log": parse_minitest_log}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
