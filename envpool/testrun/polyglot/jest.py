"""JavaScript/TypeScript: jest ``--json``, vitest's JSON reporter, and jest's verbose console.

Test ids (one form for all three): ``<file relative to the checkout> > <describe> > ... > <test>``,
e.g. ``packages/runtime-core/__tests__/apiWatch.spec.ts > api: watch > effect`` -- the form
SWE-bench Multilingual's vuejs/core gold ids use (vitest's own verbose form). The plain
``describe > test`` form is a suffix of it, so `gold.gold_match` matches gold ids written that way.
A title that itself contains `` > `` makes the split ambiguous; the id is still unique per test.

Status mapping (jest and vitest `assertionResults[].status`; console marks):

| JSON status                      | console mark          | TestStatus |
|----------------------------------|-----------------------|------------|
| `passed`                         | `✓` / `√`             | PASSED     |
| `failed`                         | `✕` / `×`             | FAILED     |
| `pending`, `skipped`, `disabled` | `○ [skipped] title`   | SKIPPED    |
| `todo`                           | `✎ todo title`        | SKIPPED    |
| test file failed to load (`Test suite failed to run`, `Failed to load url`): known ids of the file | ERROR |

A file that fails to load is listed in `collection_errors` by its relative path; its tests get no
status (absent counts as not passing) unless `known_tests` names them. Anomaly: the runner's
total (``numTotalTests``; the console's ``Tests: ... N total``) differs from the tests parsed --
e.g. a console log without ``--verbose`` lists only failures. Sources: jest docs (CLI
``--json``, ``--verbose``), jest's `VerboseReporter`/`getResultHeader`, vitest docs (reporters:
json).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from envpool.testrun.polyglot.common import (DEFAULT_ROOT, Result, count_mismatch, find_json,
                                             items, relpath, report_parser)
from envpool.testrun.outcome import TestStatus

SEP = " > "
_JSON_STATUS = {"passed": TestStatus.PASSED, "failed": TestStatus.FAILED,
                "pending": TestStatus.SKIPPED, "skipped": TestStatus.SKIPPED,
                "disabled": TestStatus.SKIPPED, "todo": TestStatus.SKIPPED}


def jest_id(file: str, ancestors: Iterable[str], title: str) -> str:
    """``file > describe > ... > title``."""
    return SEP.join([file, *ancestors, title])


def _in_file(file: str):
    return lambda test_id: test_id.startswith(file + SEP)


@report_parser()
def parse_jest_json(text: str, root: str | None = DEFAULT_ROOT,
                    known_tests: Iterable[str] | None = None) -> Result:
    """Parse jest ``--json`` (or vitest ``--reporter=json``) output: the JSON file, or stdout
    with the JSON object on a line of its own among other output.

    Shape: ``{"numTotalTests": int, "testResults": [{"name": "/abs/file", "status":
    "passed"|"failed", "message": str, "assertionResults": [{"ancestorTitles": [str],
    "title": str, "status": str}]}]}``. A file with status ``failed``, no assertion results and
    a message is a file that failed to load.
    """
    res = Result(source="json")
    data = find_json(text, ("testResults",))
    if data is None:
        return res
    parsed = 0
    for tr in items(data, "testResults"):
        if not isinstance(tr, dict):
            continue
        file = relpath(str(tr.get("name") or ""), root)
        results = [a for a in items(tr, "assertionResults") if isinstance(a, dict)]
        for a in results:
            parsed += 1
            st = _JSON_STATUS.get(str(a.get("status")))
            if st is not None:
                titles = [str(t) for t in items(a, "ancestorTitles")]
                res.add(jest_id(file, titles, str(a.get("title") or "")), st)
        message = str(tr.get("message") or tr.get("failureMessage") or tr.get("testExecError") or "")
        if tr.get("status") == "failed" and not results and message:
            res.unit_failed(file)
            res.fail_known(known_tests, TestStatus.ERROR, _in_file(file))
    total = data.get("numTotalTests")
    count_mismatch(res, "jest/vitest numTotalTests", total if isinstance(total, int) else None,
                   parsed)
    return res


parse_vitest_json = parse_jest_json
"""vitest's JSON reporter writes jest's shape (statuses `passed`/`failed`/`skipped`/`todo`)."""

_HEADER = re.compile(r"^(PASS|FAIL)\s+(.+?)(?:\s+\(\d+(?:\.\d+)?\s?m?s\))?\s*$")
_MARKS = {"✓": TestStatus.PASSED, "√": TestStatus.PASSED, "✕": TestStatus.FAILED,
          "×": TestStatus.FAILED, "○": TestStatus.SKIPPED, "✎": TestStatus.SKIPPED}
_TREE = re.compile(r"^(?P<indent> +)(?:(?P<mark>[✓√✕×○✎]) )?(?P<title>.*?)\s*$")
_DURATION = re.compile(r" \(\d+(?:\.\d+)? ?m?s\)$")
_TOTALS = re.compile(r"^Tests:\s+(.*\d+ total)\s*$")


def strip_duration(title: str) -> str:
    """``adds 1 + 2 (12 ms)`` -> ``adds 1 + 2``: a line with and without a duration is one test."""
    return _DURATION.sub("", title)


@report_parser()
def parse_jest_log(text: str, known_tests: Iterable[str] | None = None) -> Result:
    """Parse jest's console output with ``--verbose`` (what jest prints to stderr).

    After each ``PASS|FAIL <file> [(1.2 s)]`` header comes the tree of describe blocks and tests,
    two spaces per level, up to the first blank line; test lines carry a mark and maybe a
    duration. Output printed by tests (``console.log`` blocks) and failure details are outside
    those trees and are not read. ``FAIL <file>`` followed by ``● Test suite failed to run`` is a
    file that failed to load. The ``Tests: ... N total`` summary is cross-checked.
    """
    res = Result(source="log")
    file: str | None = None
    stack: list[tuple[int, str]] = []
    parsed, total = 0, None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if m:
            file, stack = m.group(2).split()[-1], []
            nxt = next((n.strip() for n in lines[i + 1:i + 4] if n.strip()), "")
            if m.group(1) == "FAIL" and nxt.startswith("● Test suite failed to run"):
                res.unit_failed(file)
                res.fail_known(known_tests, TestStatus.ERROR, _in_file(file))
                file = None
            continue
        m = _TOTALS.match(line)
        if m:
            found = re.search(r"(\d+) total", m.group(1))
            total = (total or 0) + int(found.group(1)) if found else total
            continue
        if file is None:
            continue
        if not line.strip():
            file = None
            continue
        m = _TREE.match(line)
        if not m:
            file = None
            continue
        indent, title = len(m.group("indent")), m.group("title")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        mark = m.group("mark")
        if mark is None:
            stack.append((indent, title))
            continue
        title = strip_duration(title)
        if mark == "○" and title.startswith("skipped "):
            title = title[len("skipped "):]
        elif mark == "✎" and title.startswith("todo "):
            title = title[len("todo "):]
        res.add(jest_id(file, [t for _, t in stack], title), _MARKS[mark])
        parsed += 1
    count_mismatch(res, "jest `Tests:` total", total, parsed)
    return res


PARSERS = {"jest_json": parse_jest_json, "vitest_json": parse_vitest_json, "jest_log": parse_jest_log}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
