"""JavaScript: mocha's JSON reporter and its spec (default) console reporter.

Test ids: mocha's ``fullTitle()`` -- the titles of the enclosing suites and the test joined by
single spaces, e.g. ``supports http with nodejs should support max body length``. It is what
mocha's ``--grep`` matches, what its TAP reporter prints, and SWE-bench Multilingual's axios gold
form. The file is not part of the id (the spec reporter does not print it).

Status mapping:

| JSON array | spec mark                                  | TestStatus |
|------------|--------------------------------------------|------------|
| `passes`   | `✓` `✔` `√`, and their mojibake `âœ“` `âœ”` | PASSED     |
| `failures` | `N) title`                                 | FAILED     |
| `pending`  | `- title`                                  | SKIPPED    |
| failed hook ``"before all" hook for "t"`` (also `before each`, `after each`): the named test | ERROR |

A failed hook is also listed in `collection_errors` (its full title). A run that dies while
loading test files (``Exception during run``, no report) gives `tests_ran=False`, the requiring
file in `collection_errors`, and ERROR for every id in `known_tests`. Anomaly (spec): the
``N passing / N failing / N pending`` summary differs from the lines parsed (a test printing a
fake ``✔ title`` line). Sources: mocha docs (reporters: spec, json; ``--reporter-option
output=``), mocha's `lib/reporters/base.js` (symbols), `lib/runnable.js` (``fullTitle``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from envpool.testrun.polyglot.common import (DEFAULT_ROOT, Result, count_mismatch, find_json,
                                             items, relpath, report_parser)
from envpool.testrun.outcome import TestStatus

PASS_MARKS = ("✓", "✔", "√", "âœ“", "âœ”", "â\x9c\x93", "â\x9c\x94")
"""Pass marks: mocha's ✓ (old) / ✔ (new), Windows' √, and ✓/✔ read as cp1252 or latin-1."""

_HOOK = re.compile(r'^(?P<suite>.*?) ?"(?:before|after) (?:all|each)" hook(?:: [^"]*?)?'
                   r'(?: (?:for|in) "(?P<test>.*)")?$')
_LOAD_ERROR = re.compile(r"^\s*Exception during run: (.*)$", re.M)
_REQUIRE_STACK = re.compile(r"^Require stack:\n- (\S+)", re.M)


def full_title(*titles: str) -> str:
    """mocha's fullTitle: non-empty titles joined by one space."""
    return " ".join(t for t in titles if t)


def _hook_failure(res: Result, title: str) -> bool:
    """Record a failed hook's test as ERROR; False when `title` is not a hook."""
    m = _HOOK.match(title)
    if not m:
        return False
    res.unit_failed(title)
    if m.group("test") is not None and "hook for" in title:
        res.add(full_title(m.group("suite"), m.group("test")), TestStatus.ERROR)
    return True


def _load_failure(res: Result, text: str, root: str | None, known: Iterable[str] | None) -> None:
    m = _LOAD_ERROR.search(text)
    if m:
        stack = _REQUIRE_STACK.search(text)
        res.unit_failed(relpath(stack.group(1), root) if stack else f"mocha: {m.group(1).strip()}")
        res.fail_known(known, TestStatus.ERROR)


@report_parser()
def parse_mocha_json(text: str, root: str | None = DEFAULT_ROOT,
                     known_tests: Iterable[str] | None = None) -> Result:
    """Parse mocha ``--reporter json`` output (the ``output=`` file, or stdout mixed with what
    tests print: the last JSON object with ``stats`` and ``tests`` wins).

    Shape: ``{"stats": {...}, "tests": [...], "passes": [{"fullTitle": str, "file": str}],
    "pending": [...], "failures": [{"fullTitle": str, "title": str, "err": {...}}]}``; failed
    hooks are in ``failures`` only.
    """
    res = Result(source="json")
    data = find_json(text, ("stats", "tests"))
    if data is None:
        _load_failure(res, text, root, known_tests)
        return res
    for key, st in (("passes", TestStatus.PASSED), ("pending", TestStatus.SKIPPED),
                    ("failures", TestStatus.FAILED)):
        for t in items(data, key):
            if not isinstance(t, dict):
                continue
            title = str(t.get("fullTitle") or "")
            if st is TestStatus.FAILED and _hook_failure(res, title):
                continue
            res.add(title, st)
    return res


_SUMMARY = re.compile(r"^\s+(\d+) (passing|failing|pending)\b")
_FAIL_LINE = re.compile(r"^\d+\) (.*)$")
_DURATION = re.compile(r" \(\d+ms\)$")


def _mark(body: str) -> tuple[TestStatus | None, str]:
    for m in PASS_MARKS:
        if body.startswith(m + " "):
            return TestStatus.PASSED, _DURATION.sub("", body[len(m) + 1:])
    if body.startswith("- "):
        return TestStatus.SKIPPED, body[2:]
    fm = _FAIL_LINE.match(body)
    if fm:
        return TestStatus.FAILED, fm.group(1)
    return None, body


@report_parser()
def parse_mocha_spec(text: str, root: str | None = DEFAULT_ROOT,
                     known_tests: Iterable[str] | None = None) -> Result:
    """Parse mocha's spec reporter output (the default console output).

    Suites and tests are indented two spaces per level; a test belongs to the suites above it
    with less indentation. Reading stops at the ``N passing (12ms)`` summary (failure details
    follow it); lines at column 0 are never results (the reporter indents everything).
    """
    res = Result(source="log")
    stack: list[tuple[int, str]] = []
    counts = {"passing": 0, "failing": 0, "pending": 0}
    expected: dict[str, int] = {}
    lines = text.splitlines()
    for line in lines:
        m = _SUMMARY.match(line)
        if m and (m.group(2) == "passing" or expected):
            expected[m.group(2)] = int(m.group(1))
            continue
        if expected or not line.strip() or not line.startswith(" "):
            continue
        indent = len(line) - len(line.lstrip(" "))
        st, title = _mark(line.strip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if st is None:
            stack.append((indent, title))
            continue
        if st is TestStatus.FAILED:
            counts["failing"] += 1
            hook = full_title(*(t for _, t in stack), title)
            if _hook_failure(res, hook):
                continue
        else:
            counts["passing" if st is TestStatus.PASSED else "pending"] += 1
        res.add(full_title(*(t for _, t in stack), title), st)
    if not expected:
        _load_failure(res, text, root, known_tests)
        if res.ran:
            res.anomalies.append("mocha spec: no `N passing` summary (run cut short)")
        return res
    for key in counts:
        count_mismatch(res, f"mocha `{key}`", expected.get(key, 0), counts[key])
    return res


PARSERS = {"mocha_json": parse_mocha_json, "mocha_spec": parse_mocha_spec}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
