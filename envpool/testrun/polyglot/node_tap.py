"""Node's built-in test runner (``node --test --test-reporter=tap``), one run per test file, each
run preceded by the line ``swemint: node --test <file>`` (`MARKER`; the node ecosystem's test
command, `agents.ecosystems.node.builtin_runner`, prints it).

Node's TAP names no file, so ids are ``<file> > <suite> > ... > <test>`` (the file as the
marker names it, repository relative; the names of the ``# Subtest:`` lines around the result).
Only leaves are results: a suite (``describe``) or a test with subtests (``t.test``) is the sum
of its children; one with no child result (its hook failed first) is a result itself.

| TAP (at any indentation, 4 spaces a level)  | meaning                                        |
|---------------------------------------------|------------------------------------------------|
| ``# Subtest: name``                         | a test or suite starts (name of its level)     |
| ``ok N - name``                             | PASSED                                         |
| ``not ok N - name``                         | FAILED (also ``cancelledByParent``, a timeout)  |
| ``ok N - name # SKIP [why]``                | SKIPPED                                        |
| ``(not )ok N - name # TODO``                | not a result (``test.todo``)                   |
| top-level ``(not )ok N - <file>``           | the file's process as one test, id ``<file>``: a file with no ``node:test`` tests (a script of asserts) is graded by its exit status; a failing one also failed to load or died: a unit error (its other `known_tests`: ERROR) |
| ``  ---`` ... ``  ...``                     | the result's YAML diagnostics (``type: 'suite'``) |
| top-level ``1..N``, ``# tests N``           | the plan; N tests, suites not counted, todos and file errors counted (cross-checked) |

Anomalies: a file's run without a TAP plan (cut short, or ``node`` refused its options), a
``# tests`` count other than the results parsed, output before the first marker that holds TAP.
Source: Node's ``lib/internal/test_runner/reporter/tap.js``; output recorded from Node 18.20 and
20.20 (tests/data/polyglot/node_tap_18.log, node_tap_20.log; regenerate_node_tap.sh).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from envpool.testrun.outcome import TestStatus
from envpool.testrun.polyglot.common import DEFAULT_ROOT, Result, count_mismatch, relpath, report_parser

MARKER = "swemint: node --test "
"""The line printed before each file's run, followed by the repository-relative file path."""
SEP = " > "

_SUBTEST = re.compile(r"^( *)# Subtest: (.*)$")
_RESULT = re.compile(r"^( *)(not )?ok \d+(?: - (.*))?$")
_DIRECTIVE = re.compile(r"^(.*?)\s+# (SKIP|TODO)\b.*$", re.I)
_PLAN = re.compile(r"^1\.\.(\d+)\s*$")
_TESTS = re.compile(r"^# tests (\d+)\s*$")


def _unescape(name: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), name)


def _names_file(name: str, file: str, root: str | None) -> bool:
    """Whether a top-level result's name is the test file itself: Node reports a file that
    failed to load, whose process died, or that holds no ``node:test`` test, as one test named
    by its path (absolute in 18/20, as given in 22)."""
    rel = relpath(name, root)
    return rel == file or name.endswith("/" + file) or ("/" in rel and file.endswith("/" + rel))


@dataclass
class _Frame:
    indent: int
    name: str
    children: int = 0


def _parse_file(res: Result, file: str, lines: list[str], known: list[str], root: str | None) -> None:
    """One file's run (the lines after its marker) into `res`."""
    stack: list[_Frame] = []
    counted, total, planned = 0, None, False
    yaml_indent: int | None = None  # inside a result's YAML block: its `---` line's indentation
    last: tuple[int, str, TestStatus | None, bool] | None = None  # indent, id, status, leaf of the last result
    suites: set[int] = set()  # indices into `order` of the results whose diagnostics say 'suite'
    order: list[tuple[int, str, TestStatus | None, bool]] = []
    for line in lines:
        if yaml_indent is not None:
            if line.strip() == "..." and len(line) - len(line.lstrip(" ")) == yaml_indent:
                yaml_indent = None
            elif last is not None and line.strip() == "type: 'suite'" and \
                    len(line) - len(line.lstrip(" ")) == yaml_indent:
                suites.add(len(order) - 1)
            continue
        if last is not None and line.strip() == "---" and len(line) - len(line.lstrip(" ")) == last[0] + 2:
            yaml_indent = last[0] + 2
            continue
        if m := _SUBTEST.match(line):
            stack.append(_Frame(len(m.group(1)), _unescape(m.group(2).strip())))
            continue
        if m := _RESULT.match(line):
            indent, failed, text = len(m.group(1)), bool(m.group(2)), m.group(3) or ""
            while stack and stack[-1].indent > indent:
                stack.pop()
            frame = stack.pop() if stack and stack[-1].indent == indent else None
            d = _DIRECTIVE.match(text)
            name = _unescape((d.group(1) if d else text).strip()) or (frame.name if frame else "")
            status: TestStatus | None
            if d and d.group(2).upper() == "TODO":
                status = None
            elif d:
                status = TestStatus.SKIPPED
            else:
                status = TestStatus.FAILED if failed else TestStatus.PASSED
            leaf = frame is None or frame.children == 0
            if stack:
                stack[-1].children += 1
            path = [f.name for f in stack] + [frame.name if frame else name]
            last = (indent, SEP.join([file, *path]), status, leaf)
            order.append(last)
            continue
        if not line.startswith(" "):
            if _PLAN.match(line):
                planned = True
            elif t := _TESTS.match(line):
                total = int(t.group(1))
    for i, (indent, test_id, status, leaf) in enumerate(order):
        name = test_id[len(file) + len(SEP):]
        if i not in suites:
            counted += 1
        if indent == 0 and status is not None and _names_file(name, file, root):
            res.add(file, status)  # the file as one test: a script with no node:test tests, graded by exit
            if status == TestStatus.FAILED:
                res.unit_failed(file)
        elif status is not None and leaf:
            res.add(test_id, status)
    if file in res.collection_errors:
        res.fail_known(known, TestStatus.ERROR, lambda t: t.startswith(file + SEP))
    if not planned:
        res.anomalies.append(f"node --test {file}: no TAP plan (1..N): the run was cut short or node refused it")
    count_mismatch(res, f"node --test {file} tests", total, counted)


@report_parser()
def parse_node_tap(text: str, known_tests: Iterable[str] | None = None, root: str | None = DEFAULT_ROOT) -> Result:
    """Parse the node ecosystem's ``node --test`` command output (module docstring); `known_tests`
    of a file that failed to load get ERROR."""
    res = Result(source="log")
    known = list(known_tests or [])
    file: str | None = None
    chunk: list[str] = []
    for line in text.splitlines() + [MARKER]:
        if line.startswith(MARKER):
            if file is not None:
                _parse_file(res, file, chunk, known, root)
            elif any(_RESULT.match(x) or _PLAN.match(x) for x in chunk):
                res.anomalies.append("node --test: TAP before the first file's marker")
            file, chunk = line[len(MARKER):].strip() or None, []
            continue
        chunk.append(line)
    return res


PARSERS = {"node_tap": parse_node_tap}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
