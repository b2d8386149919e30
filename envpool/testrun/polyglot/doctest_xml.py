"""doctest (doctest/doctest, 2.3+) XML reports: ids per test case and subcase (`doctest_sections`
reads the helper's runs of them after ctest). `CaseDoc` and `parse_documents` serve Catch2's
reports too (`catch2_xml`).

Source: ``<binary> --reporters=xml --out=FILE`` (doctest's `XmlReporter`). Shape, as doctest
2.4 writes it (golden files in tests/data/polyglot/doctest*.xml)::

    <doctest binary=... version="2.4.9"><TestSuite [name=...]>
      <TestCase name="basic usage" [skipped="true"] [may_fail="true"] [should_fail="true"]>
        <SubCase name="conversion from json"><SubCase name="via get">
          <Expression success="false" type="CHECK">...</Expression>     (failed assertions only)
        </SubCase></SubCase>
        <Exception crash="false|true">...</Exception>
        <OverallResultsAsserts test_case_success="true|false" [expected_failures="N"]/>
      </TestCase></TestSuite>
      <OverallResultsTestCases successes=.. failures=.. skipped=../></doctest>

doctest runs a test case once per leaf subcase, so one ``SubCase`` name appears once per run
that entered it.

Test ids, in SWE-bench Multilingual's form (its doctest harness, nlohmann/json's gold lists):
- every subcase, at any depth: ``<test case> > <subcase name>`` (``basic usage > via get``; the
  parent subcase ``basic usage > conversion from json`` is an id of its own; two subcases of
  one test case with one name are one id);
- a test case without subcases: its name (``Issue #924``).

Status of an id (the worse over all its runs, and over all binaries that have it):
- FAILED when a failure occurs inside one of its ``SubCase`` elements (nested ones included):
  an ``Expression`` with ``success="false"`` (``WARN*`` types excepted), a ``Message`` of type
  ``ERROR`` (FAIL_CHECK) or ``FATAL ERROR`` (FAIL), an ``Exception`` (a crash included);
- a failure directly in the test case, outside every subcase (code around the subcases runs in
  every run), fails all ids of the test case; an exception thrown in a subcase is reported in
  that subcase and once more at the test case level, which is not counted twice;
- may_fail / should_fail / expected_failures test cases: every id takes doctest's verdict
  (``test_case_success``), which accounts for the decorator; a test case doctest failed with no
  failure element (``doctest::timeout``) fails all its ids;
- ``skipped="true"`` (``doctest::skip``, or filtered out by the command's options): SKIPPED;
- a test case cut off (no ``OverallResultsAsserts``: the document ends inside it) fails all
  its ids.

Anomalies (a report not to be trusted): the document is cut short, or it lists fewer test
cases than ``OverallResultsTestCases`` counts (the binary crashed: doctest closes the document
but never lists the test cases after the crash).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field

from envpool.testrun.outcome import TestStatus
from envpool.testrun.parsers import worse
from envpool.testrun.polyglot.common import Result, report_parser

SEP = " > "
FAILING_MESSAGES = ("ERROR", "FATAL ERROR")


@dataclass
class CaseDoc:
    """One parsed XML report of test cases (doctest's `DoctestDoc`, Catch2's
    `catch2_xml.Catch2Doc`): `cases` (test case name -> {id: status}), `crashed` (test cases
    whose run crashed, as each kind says), `listed` (``TestCase`` elements), `declared` (the
    test cases the report's totals count, None when absent), `complete` (the document ended)."""

    cases: dict[str, dict[str, TestStatus]] = field(default_factory=dict)
    crashed: list[str] = field(default_factory=list)
    listed: int = 0
    declared: int | None = None
    complete: bool = False

    @property
    def statuses(self) -> dict[str, TestStatus]:
        """Every id of the document -> its status (the worse where two test cases share one)."""
        out: dict[str, TestStatus] = {}
        for ids in self.cases.values():
            for i, st in ids.items():
                out[i] = worse(out.get(i), st)
        return out

    def anomalies(self) -> list[str]:
        """Why this document must not be trusted (each kind's own rules and label)."""
        raise NotImplementedError


@dataclass
class DoctestDoc(CaseDoc):
    """One parsed doctest XML document (`CaseDoc`): `crashed` holds the test case names whose
    run crashed or was cut off, `listed` counts ``TestCase`` elements, `declared` is the sum of
    ``OverallResultsTestCases``."""

    def anomalies(self, label: str = "doctest") -> list[str]:
        """Why this document must not be trusted (module doc), each naming `label`."""
        out = []
        if not self.complete:
            out.append(f"{label}: the XML report is cut short (the binary was killed)")
        elif self.declared is not None and self.declared != self.listed:
            out.append(f"{label}: doctest counts {self.declared} test cases, {self.listed} listed "
                       "(the binary died before the rest ran)")
        return out


def _fails(elem) -> bool:
    """Whether `elem` itself is a failure element (module doc)."""
    if elem.tag == "Expression":
        return elem.get("success") == "false" and not (elem.get("type") or "").startswith("WARN")
    if elem.tag == "Message":
        return elem.get("type") in FAILING_MESSAGES
    return elem.tag == "Exception"


def _has_failure(elem) -> bool:
    """Whether a failure element lies inside `elem` (an Exception inside an Expression is that
    assertion's detail, counted through the Expression). Iterative: no recursion limit."""
    stack = list(elem)
    while stack:
        e = stack.pop()
        if _fails(e):
            return True
        if e.tag != "Expression":
            stack.extend(e)
    return False


def _subcases(case, name: str) -> dict[str, bool]:
    """{``name > subcase``: it holds a failure} for every SubCase below the test case `case`,
    in document order (iterative)."""
    out: dict[str, bool] = {}
    stack = list(reversed(case))
    while stack:
        e = stack.pop()
        if e.tag == "SubCase":
            sid = name + SEP + (e.get("name") or "")
            out[sid] = out.get(sid, False) or _has_failure(e)
            stack.extend(reversed(e))
    return out


def _direct_failure(case) -> bool:
    """A failure directly in the test case `case`, outside its subcases; the test-case-level
    repeat of an exception a subcase already reports does not count."""
    prev = None
    for child in case:
        if child.tag == "Exception":
            if not (prev is not None and prev.tag == "SubCase" and any(True for _ in prev.iter("Exception"))):
                return True
        elif child.tag != "SubCase" and _fails(child):
            return True
        prev = child
    return False


def case_statuses(case) -> tuple[dict[str, TestStatus], bool]:
    """({id: status}, crashed) of one ``TestCase`` element (module doc)."""
    name = case.get("name") or ""
    if case.get("skipped") == "true":
        return {name: TestStatus.SKIPPED}, False
    subs = _subcases(case, name)
    ids = list(subs) or [name]
    crashed = any(e.get("crash") == "true" for e in case.iter("Exception"))
    overall = case.find("OverallResultsAsserts")
    if overall is None:  # cut off inside this test case
        return {i: TestStatus.FAILED for i in ids}, True
    verdict = overall.get("test_case_success") == "true"
    if case.get("may_fail") == "true" or case.get("should_fail") == "true" or overall.get("expected_failures"):
        return {i: TestStatus.PASSED if verdict else TestStatus.FAILED for i in ids}, crashed
    if _direct_failure(case):
        return {i: TestStatus.FAILED for i in ids}, crashed
    if subs:
        got = {i: TestStatus.FAILED if bad else TestStatus.PASSED for i, bad in subs.items()}
    else:
        got = {name: TestStatus.FAILED if _has_failure(case) else TestStatus.PASSED}
    if not verdict and all(s is TestStatus.PASSED for s in got.values()):
        got = {i: TestStatus.FAILED for i in got}
    return got, crashed


def _root(raw: bytes):
    """(root element or None, the document ended): a pull parse, so a cut-off document keeps
    the elements read before the cut."""
    parser = ET.XMLPullParser(events=("start",))
    root, complete = None, False
    try:
        parser.feed(raw)
        for _, elem in parser.read_events():
            root = elem
            break
        parser.close()
        complete = True
    except (ET.ParseError, ValueError, LookupError):  # cut short, or bytes expat refuses
        pass
    if root is None:
        for _, elem in parser.read_events():
            root = elem
            break
    return root, complete


def read_doctest_xml(raw: bytes) -> DoctestDoc | None:
    """Parse one doctest XML document (bytes); None when it is not one (no ``<doctest>`` root)."""
    start = raw.find(b"<doctest")
    if start < 0:
        return None
    decl = raw.rfind(b"<?xml", 0, start)
    root, complete = _root(raw[decl if decl >= 0 else start:])
    if root is None or root.tag != "doctest":
        return None
    doc = DoctestDoc(complete=complete)
    for case in root.iter("TestCase"):
        doc.listed += 1
        got, crashed = case_statuses(case)
        ids = doc.cases.setdefault(case.get("name") or "", {})
        for i, st in got.items():
            ids[i] = worse(ids.get(i), st)
        if crashed:
            doc.crashed.append(case.get("name") or "")
    totals = root.find("OverallResultsTestCases")
    if totals is not None:
        try:
            doc.declared = sum(int(totals.get(k) or 0) for k in ("successes", "failures", "skipped"))
        except ValueError:
            doc.declared = None
    return doc


def parse_documents(raw: bytes, read: Callable[[bytes], CaseDoc | None]) -> Result:
    """The ids and anomalies of the XML reports in `raw` (one or several documents one after
    another, split before each ``<?xml`` declaration), each part read by `read` (None: not one
    of its documents, skipped)."""
    res = Result(source="junit")
    for part in re.split(rb"(?=<\?xml[\s?])", raw):
        doc = read(part)
        if doc is None:
            continue
        for i, st in doc.statuses.items():
            res.add(i, st)
        res.anomalies += doc.anomalies()
    return res


@report_parser(raw=True)
def parse_doctest_xml(raw: bytes) -> Result:
    """Parse doctest XML reports (one or several documents one after another; module doc)."""
    return parse_documents(raw, read_doctest_xml)


PARSERS = {"doctest_xml": parse_doctest_xml}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
