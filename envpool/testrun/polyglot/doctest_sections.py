"""The ``<swemint-doctest>`` sections ``recipes/cmake_tests.py`` adds after a ctest run, and how
they replace the CTest ids of doctest binaries (`doctest_xml` parses each section's report).
`split_sections` also reads the helper's ``<swemint-catch2>`` sections of the same shape
(`catch2_xml`).

The helper runs each selected CTest test whose executable is a doctest binary again with
doctest's XML reporter (``recipes/doctest_runs.py``), once more without the test cases that
crashed it (up to 3 more rounds), and writes one section per run: appended to the
``--output-junit`` file, or printed after ctest's console output. The ctest parsers
(`envpool.testrun.polyglot.cfamily`) read them only where a test's own output cannot be:
after the JUnit document's declaration, or after ctest's last summary line.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from envpool.testrun.outcome import TestStatus
from envpool.testrun.parsers import worse
from envpool.testrun.polyglot.common import Result
from envpool.testrun.polyglot.doctest_xml import read_doctest_xml


def section_pattern(tag: bytes) -> re.Pattern[bytes]:
    """The helper's ``<swemint-TAG ...>...</swemint-TAG>`` sections."""
    return re.compile(rb"<swemint-" + tag + rb"\b([^>]*)>(.*?)</swemint-" + tag + rb">\n?", re.S)


SECTION = section_pattern(b"doctest")
"""``<swemint-doctest ctest="NAME" round="N" final="true|false" exit="RC">`` + one doctest XML
document + ``</swemint-doctest>``: what `cmake_tests.py` writes after ctest for each run of a
doctest binary (appended to the ``--output-junit`` file, else printed after ctest's output).
The helper writes each report through ``ctest_reruns.inert`` (a ``<`` starting ``<swemint-``,
``</swemint-`` or ``<?xml`` escaped, the ``%`` of a ``N% tests passed`` line too), so nothing a
test prints into its report -- Boost.Test's JUnit log keeps messages and printed values raw in
CDATA -- can end a section, start one of any kind, or move the offset after which they count."""


@dataclass
class Section:
    """One run of the doctest binary of ctest test `ctest`: its `round` (the helper runs a
    binary again without the test cases that crashed it), whether it is the `final` round,
    the binary's `exit` code, and its document (None: no doctest XML)."""

    ctest: str
    round: int
    final: bool
    exit: int | None
    doc: Any
    """`DoctestDoc` (a Catch2 section: `catch2_xml.Catch2Doc`) or None."""


def _attrs(text: bytes) -> dict[str, str]:
    root = ET.fromstring(b"<s " + text.strip().rstrip(b"/") + b"/>") if text.strip() else None
    return dict(root.attrib) if root is not None else {}


def split_sections(raw: bytes | str, after: int = 0, pattern: re.Pattern[bytes] = SECTION,
                   read: Callable[[bytes], Any] = read_doctest_xml) -> tuple[bytes | str, list[Section]]:
    """(`raw` without its doctest sections, the sections that start at or after offset
    `after`; sections before it stay in the text, which the ctest parsers ignore). Malformed
    section headers are skipped. `pattern` / `read`: another kind of section and its report
    reader (Catch2's)."""
    data = raw.encode("utf-8", errors="replace") if isinstance(raw, str) else raw
    if isinstance(raw, str):
        after = len(raw[:after].encode("utf-8", errors="replace"))
    out, sections, pos = [], [], 0
    for m in pattern.finditer(data, after):
        try:
            a = _attrs(m.group(1))
            sec = Section(ctest=a.get("ctest", ""), round=int(a.get("round", "1")), final=a.get("final") == "true",
                          exit=int(a["exit"]) if a.get("exit", "").lstrip("-").isdigit() else None,
                          doc=read(m.group(2)))
        except (ET.ParseError, ValueError):
            continue
        out.append(data[pos:m.start()])
        pos = m.end()
        sections.append(sec)
    out.append(data[pos:])
    head = b"".join(out)
    return (head.decode("utf-8", errors="replace") if isinstance(raw, str) else head), sections


@dataclass
class DoctestRuns:
    """What the sections of one test run give: `statuses` by doctest id, `covered` (ctest
    tests whose own id the doctest ids replace), `anomalies`; for Catch2 sections also
    `reported` (ctest tests with a report, covered or not) and `collection_errors` (units that
    stopped early, `catch2_xml.catch2_runs`)."""

    statuses: dict[str, TestStatus] = field(default_factory=dict)
    covered: set[str] = field(default_factory=set)
    anomalies: list[str] = field(default_factory=list)
    reported: set[str] = field(default_factory=set)
    collection_errors: list[str] = field(default_factory=list)

    def merge(self, other: DoctestRuns) -> None:
        """Add what `other` (another kind's sections of the same run) gives to this."""
        self.statuses.update(other.statuses)
        self.covered |= other.covered
        self.reported |= other.reported
        self.anomalies += other.anomalies
        self.collection_errors += other.collection_errors

    def add_to(self, res: Result) -> None:
        """Add the ids, anomalies and collection errors to `res`."""
        for i, st in self.statuses.items():
            res.add(i, st)
        res.anomalies += self.anomalies
        for label in self.collection_errors:
            res.unit_failed(label)


def by_ctest(sections: list[Section]) -> dict[str, list[Section]]:
    """The `sections` that have a document, by ctest test (tests in order of first appearance,
    each test's sections in their order)."""
    out: dict[str, list[Section]] = {}
    for s in sections:
        if s.doc is not None:
            out.setdefault(s.ctest, []).append(s)
    return out


def doctest_runs(sections: list[Section], label: str = "doctest") -> DoctestRuns:
    """Combine `sections` (any order; doctest's, or another kind whose binary runs again without
    the test cases that crashed it: Boost.Test's, `label` naming it in the anomalies). Per ctest
    test: its final round gives every id; an earlier round the test cases that crashed in it
    (later rounds exclude them, and the skipped entry doctest lists for an excluded test case is
    dropped) and every id that failed or errored in it, whatever a later round says (the code
    under test can read an earlier round's report, whose path lies beside the next one's, and
    crash a test case on purpose to be asked again: a case failing in round 1 and passing in
    round 2 is FAILED). A ctest
    test is `covered` when its final round has a document and its exit code agrees with it (a
    nonzero exit with no failing id keeps the ctest-level FAILED beside the doctest ids).
    Anomalies: a final document's (`DoctestDoc.anomalies`)."""
    out = DoctestRuns()
    for name, secs in by_ctest(sections).items():
        secs.sort(key=lambda s: (s.final, s.round))
        final = secs[-1]
        earlier: set[str] = set()
        for s in secs[:-1]:
            for case in s.doc.crashed:
                earlier.add(case)
                for i, st in s.doc.cases.get(case, {}).items():
                    out.statuses[i] = worse(out.statuses.get(i), st)
            for ids in s.doc.cases.values():  # a failure stands: the next round is no second chance
                for i, st in ids.items():
                    if st in (TestStatus.FAILED, TestStatus.ERROR):
                        out.statuses[i] = worse(out.statuses.get(i), st)
        for case, ids in final.doc.cases.items():
            if case in earlier and all(st is TestStatus.SKIPPED for st in ids.values()):
                continue  # excluded by the helper after it crashed: the earlier round's result stands
            for i, st in ids.items():
                out.statuses[i] = worse(out.statuses.get(i), st)
        out.anomalies += final.doc.anomalies(f"{label} {name}")
        failing = any(st in (TestStatus.FAILED, TestStatus.ERROR) for st in final.doc.statuses.values())
        if final.final and not (final.exit not in (0, None) and not failing):
            out.covered.add(name)
    return out
