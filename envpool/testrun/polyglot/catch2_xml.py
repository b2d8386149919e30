"""Catch2 (catchorg/Catch2, v2 and v3) XML reports: ids per test case and section, and how the
``<swemint-catch2>`` sections recipes/cmake_tests.py adds after ctest replace the CTest id of a
Catch2 binary (`catch2_runs`).

Source: ``<binary> --reporter xml --out FILE`` (Catch2's `XmlReporter`). Shape (golden files in
tests/data/polyglot/catch2*.xml, from Catch2 2.13.10 and 3.7.1)::

    <Catch name=..><Group name=..>                     (v3: <Catch2TestRun name=.. catch2-version=..>)
      <TestCase name="case" tags="[a][!mayfail]" filename=.. line=..>
        <Section name="outer"><Section name="inner">
          <Expression success="false" type="CHECK">...</Expression>   (failed assertions only)
          <Exception>..</Exception> <FatalErrorCondition>..</FatalErrorCondition> <Failure>..</Failure>
          <Skip>..</Skip>                                              (v3)
          <OverallResults successes=.. failures=.. expectedFailures=.. [skipped="true|false"]/>
        </Section>..</Section>
        <OverallResult success="true|false" [skips="N"]/>
      </TestCase>..
      <OverallResultsCases successes=.. failures=.. expectedFailures=.. [skips=..]/>
    </Group></Catch>

Catch2 runs a test case once per leaf section, so one ``Section`` name appears once per run
that entered it.

Test ids: doctest's convention (`doctest_xml`: SWE-bench Multilingual's), behind the CTest
test's name and ``::`` where a ctest run gives them (``spdlog-utests::pattern formatter``, as a
TAP stream's tests are ``uv_test::udp_mmsg``; `catch2_runs`):
- every section, at any depth: ``<test case> > <section name>`` (the parent section is an id
  of its own; two sections of one test case with one name are one id);
- a test case without sections: its name.

Status of an id (the worse over all its runs):
- a test case without sections: PASSED when Catch2's ``OverallResult`` says success (SKIPPED
  when it also counts a skip, v3's ``SKIP()``), else FAILED -- Catch2's verdict, which accounts
  for ``[!mayfail]`` / ``[!shouldfail]``;
- a section: FAILED when its ``OverallResults`` counts failures (nested sections included;
  ``[!mayfail]`` / ``[!shouldfail]`` failures are expectedFailures), else SKIPPED when v3 marks
  it ``skipped="true"``, else PASSED;
- a failure directly in the test case, outside every section (code around the sections runs in
  every run) fails all its ids, unless the test case may fail; a test case Catch2 failed with
  no failing section (a ``[!shouldfail]`` test case that passed) fails all its ids;
- a test case cut off (the document ends inside it: the binary was killed) has no ids.

Stopped early (`Catch2Doc.stopped_early`): the binary died inside a test case (Catch2 reports
the signal as ``<FatalErrorCondition>``, closes the document and never runs the rest), the
document is cut short, or it lists fewer test cases than ``OverallResultsCases`` counts. A
standalone report that stopped early is not trusted (anomalies); in a ctest run the test cases
before the stop keep their ids and the CTest result stands for the rest (`catch2_runs`).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from envpool.testrun.outcome import TestStatus
from envpool.testrun.parsers import worse
from envpool.testrun.polyglot.common import Result, report_parser
from envpool.testrun.polyglot.doctest_sections import DoctestRuns, Section, by_ctest, section_pattern, split_sections
from envpool.testrun.polyglot.doctest_xml import CaseDoc, parse_documents

SEP = " > "
"""Between a test case and a section (doctest's)."""
CTEST_SEP = "::"
"""Between a CTest test's name and its Catch2 ids (`cfamily.TAP_SEP`)."""
SECTION = section_pattern(b"catch2")
ROOTS = ("Catch", "Catch2TestRun")
"""Catch2 v2's and v3's document elements."""
FAILURES = ("Exception", "FatalErrorCondition", "Failure")
OK_TO_FAIL = ("[!mayfail]", "[!shouldfail]")


@dataclass
class Catch2Doc(CaseDoc):
    """One parsed Catch2 XML document (`CaseDoc`): `crashed` holds the test cases with a
    ``FatalErrorCondition``, `cut` the test case the document ends inside (None when none),
    `listed` counts complete ``TestCase`` elements, `declared` is the sum of the last
    ``OverallResultsCases``."""

    cut: str | None = None

    def stop_reasons(self) -> list[str]:
        """Why the binary did not run all its test cases (module doc); [] when it did."""
        out = []
        if self.crashed:
            out.append(f"the binary died in test case {self.crashed[-1]!r}: the test cases after it did not run")
        if not self.complete:
            out.append("the XML report is cut short (the binary was killed)"
                       + (f" inside test case {self.cut!r}" if self.cut is not None else ""))
        elif self.declared is not None and self.declared != self.listed:
            out.append(f"Catch2 counts {self.declared} test cases, {self.listed} listed")
        return out

    @property
    def stopped_early(self) -> bool:
        return bool(self.stop_reasons())

    def anomalies(self, label: str = "catch2") -> list[str]:
        """Why this document must not be trusted as a whole run, each naming `label`."""
        return [f"{label}: {r}" for r in self.stop_reasons()]


def _fails(elem) -> bool:
    """Whether `elem` is a failure element (a failed assertion, an exception, a crash, FAIL)."""
    if elem.tag == "Expression":
        return elem.get("success") == "false" or any(c.tag in FAILURES for c in elem)
    return elem.tag in FAILURES


def _section_status(sec) -> TestStatus:
    res = sec.find("OverallResults")
    if res is None:  # Catch2 always writes it; without it, the section's failure elements decide
        return TestStatus.FAILED if any(_fails(e) for e in sec.iter() if e is not sec) else TestStatus.PASSED
    try:
        if int(res.get("failures") or 0) > 0:
            return TestStatus.FAILED
    except ValueError:
        return TestStatus.FAILED
    return TestStatus.SKIPPED if res.get("skipped") == "true" else TestStatus.PASSED


def _sections(case, name: str) -> dict[str, TestStatus]:
    """{``name > section``: status} for every Section below the test case `case`, in document
    order (iterative: no recursion limit)."""
    out: dict[str, TestStatus] = {}
    stack = list(reversed(case))
    while stack:
        e = stack.pop()
        if e.tag == "Section":
            sid = name + SEP + (e.get("name") or "").strip()
            out[sid] = worse(out.get(sid), _section_status(e))
            stack.extend(reversed(e))
    return out


def case_statuses(case) -> dict[str, TestStatus]:
    """{id: status} of one complete ``TestCase`` element (module doc)."""
    name = (case.get("name") or "").strip()
    overall = case.find("OverallResult")
    verdict = overall is not None and overall.get("success") == "true"
    skips = (overall.get("skips") or "0") if overall is not None else "0"
    subs = _sections(case, name)
    if not subs:
        if not verdict:
            return {name: TestStatus.FAILED}
        return {name: TestStatus.SKIPPED if skips not in ("", "0") else TestStatus.PASSED}
    may_fail = any(t in (case.get("tags") or "") for t in OK_TO_FAIL)
    if not may_fail and any(_fails(child) for child in case):
        return {i: TestStatus.FAILED for i in subs}
    if not verdict and not any(st is TestStatus.FAILED for st in subs.values()):
        return {i: TestStatus.FAILED for i in subs}
    return subs


def _events(parser: ET.XMLPullParser, doc: Catch2Doc) -> Iterator[tuple[str, Any]]:
    """The parser's events up to the first error (the pull parser queues it: then `doc` is not
    complete)."""
    try:
        yield from parser.read_events()
    except (ET.ParseError, ValueError, LookupError):
        doc.complete = False


def read_catch2_xml(raw: bytes) -> Catch2Doc | None:
    """Parse one Catch2 XML document (bytes); None when it is not one (no ``<Catch>`` /
    ``<Catch2TestRun>`` root). A pull parse: a cut-off document keeps the test cases that
    ended before the cut."""
    m = re.search(rb"<Catch(?:2TestRun)?[\s>/]", raw)
    if m is None:
        return None
    decl = raw.rfind(b"<?xml", 0, m.start())
    parser = ET.XMLPullParser(events=("start", "end"))
    doc, root, current, totals = Catch2Doc(), None, None, None
    try:
        parser.feed(raw[decl if decl >= 0 else m.start():])
        parser.close()
        doc.complete = True
    except (ET.ParseError, ValueError, LookupError):  # cut short, or bytes expat refuses
        pass
    for event, elem in _events(parser, doc):
        if root is None:
            if elem.tag not in ROOTS:
                return None
            root = elem
            continue
        if elem.tag == "TestCase":
            if event == "start":
                current = (elem.get("name") or "").strip()
                continue
            doc.listed += 1
            ids = doc.cases.setdefault(current or "", {})
            for i, st in case_statuses(elem).items():
                ids[i] = worse(ids.get(i), st)
            if any(e.tag == "FatalErrorCondition" for e in elem.iter()) and current not in doc.crashed:
                doc.crashed.append(current or "")
            current = None
            elem.clear()
        elif event == "end" and elem.tag == "OverallResultsCases" and current is None:
            totals = elem
    if not doc.complete:
        doc.cut = current
    if totals is not None:
        try:
            doc.declared = sum(int(totals.get(k) or 0) for k in ("successes", "failures", "expectedFailures", "skips"))
        except ValueError:
            doc.declared = None
    return doc


@report_parser(raw=True)
def parse_catch2_xml(raw: bytes) -> Result:
    """Parse Catch2 XML reports (one or several documents one after another; ids without a
    CTest name; module doc). A document that stopped early is an anomaly."""
    return parse_documents(raw, read_catch2_xml)


def split_catch2_sections(raw: bytes | str, after: int = 0) -> tuple[bytes | str, list[Section]]:
    """`doctest_sections.split_sections` for the helper's ``<swemint-catch2>`` sections."""
    return split_sections(raw, after, SECTION, read_catch2_xml)


def catch2_runs(sections: list[Section]) -> DoctestRuns:
    """What the Catch2 sections of one test run give. Each ctest test's ids are
    ``<ctest test>::<id>`` (the worse where a test has several sections). A ctest test is
    `covered` (its CTest id is dropped) when its report did not stop early and its exit code
    agrees with it (a nonzero exit with no failing id keeps the ctest-level FAILED beside the
    Catch2 ids). One that stopped early keeps its CTest result, and is a unit that stopped
    (``<ctest test> [Catch2 run stopped early]``, a collection error naming no id: grading
    counts a test absent before only where the test_patch names it,
    `agents.verification.aborted_before_scope`). `reported`: every ctest test with a report."""
    out = DoctestRuns()
    for name, secs in by_ctest(sections).items():
        out.reported.add(name)
        stopped, failing = False, False
        for s in secs:
            for i, st in s.doc.statuses.items():
                key = name + CTEST_SEP + i
                out.statuses[key] = worse(out.statuses.get(key), st)
                failing = failing or st in (TestStatus.FAILED, TestStatus.ERROR)
            stopped = stopped or s.doc.stopped_early or s.exit is None or s.exit < 0  # killed, or a signal
        if stopped:
            out.collection_errors.append(f"{name} [Catch2 run stopped early]")
        elif not any(s.exit not in (0, None) for s in secs) or failing:
            out.covered.add(name)
    return out


PARSERS = {"catch2_xml": parse_catch2_xml}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
