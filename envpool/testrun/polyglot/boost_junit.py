"""Boost.Test JUnit logs (``--logger=JUNIT,all,FILE``, Boost 1.63+): ids per test case in
Boost.Test's own form, and how the ``<swemint-boost>`` sections recipes/cmake_tests.py adds after
ctest replace the CTest id of a Boost.Test binary (class S36; ``recipes/boost_runs.py``).

Shape, as Boost 1.74 writes it (one document, the master suite as its root)::

    <testsuite tests=.. skipped=.. errors=.. failures=.. id="0" name="<master suite>" time=..>
      <testcase assertions="1" name="top_level" time=..>               (a case of the master suite)
      <testcase assertions="1" classname="outer.inner" name="case" time=..>
        <failure message="failure" type="assertion error">..</failure>   (a failed assertion)
        <error message="unexpected exception" type="uncaught exception">..</error>
        <error message="unexpected exception" type="system fatal error">..</error>   (a signal)
        <skipped/><system-out>Test case disabled because of the following chain of decision: ..
        <system-out>..</system-out><system-err>..</system-err>
      </testcase>..
    </testsuite>

Test ids: Boost.Test's unit path, ``--run_test``'s form: the ``classname`` (the parent suites
joined by ``.``) with ``/`` between them, then ``/`` and the case name (``outer/inner/case``; a
data case's ``outer/data/_0``; a template case's ``outer/tmpl<int>``); a case of the master suite
is its name.

Status: JUnit's (`common.junit_cases`: ``<error>`` ERROR, ``<failure>`` FAILED, ``<skipped>``
SKIPPED, none PASSED). A skipped case whose output says it was disabled (``Test case disabled
because ...``: a ``--run_test`` filter left it out, its ``disabled()`` decorator, or the run was
aborted before it) did not run and is no id. The log holds no verdict, so a case with
``expected_failures`` reads as FAILED when its expected failures occur (on both sides alike).

Crashed (`BoostDoc.crashed`): cases with a ``system fatal error`` -- Boost.Test aborts the rest
of the run; the helper runs the binary again without them (`doctest_sections.doctest_runs`
combines the rounds as doctest's). A final report with a crash is an anomaly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from envpool.testrun.outcome import TestStatus
from envpool.testrun.parsers import worse
from envpool.testrun.polyglot.common import Result, junit_cases, parse_xml, report_parser
from envpool.testrun.polyglot.doctest_sections import DoctestRuns, Section, doctest_runs, section_pattern, \
    split_sections
from envpool.testrun.polyglot.doctest_xml import CaseDoc, parse_documents

SECTION = section_pattern(b"boost")
FATAL = "system fatal error"
"""The JUnit ``<error type>`` of a case a signal stopped (``recipes/boost_runs.FATAL``)."""
DISABLED = "Test case disabled because"
"""How Boost.Test's JUnit log starts the output of a case that did not run."""


@dataclass
class BoostDoc(CaseDoc):
    """One parsed Boost.Test JUnit log (`CaseDoc`: `cases` maps each case's id to {id: status};
    `crashed` the cases a signal stopped; `listed` the ``testcase`` elements)."""

    def anomalies(self, label: str = "boost") -> list[str]:
        """Why this log must not be trusted as a whole run, each naming `label`."""
        return [f"{label}: the binary died in test case {c!r}: the test cases after it did not run"
                for c in self.crashed[-1:]]


def case_id(classname: str, name: str) -> str:
    """The id of a case (module doc): ``a.b`` + ``c`` -> ``a/b/c``; no classname: the name."""
    return (classname.replace(".", "/") + "/" if classname else "") + name


def read_boost_junit(raw: bytes) -> BoostDoc | None:
    """Parse one Boost.Test JUnit log (bytes); None when it is not one (no ``<testsuite>``
    document that parses)."""
    m = re.search(rb"<testsuite[\s>]", raw)
    if m is None or parse_xml(raw[m.start():]) is None:
        return None
    doc = BoostDoc(complete=True)
    for case in junit_cases(raw[m.start():]):
        doc.listed += 1
        if case.status is TestStatus.SKIPPED and case.output.lstrip().startswith(DISABLED):
            continue
        cid = case_id(case.classname, case.name)
        ids = doc.cases.setdefault(cid, {})
        ids[cid] = worse(ids.get(cid), case.status)
        if FATAL in case.kinds and cid not in doc.crashed:
            doc.crashed.append(cid)
    return doc


@report_parser(raw=True)
def parse_boost_junit(raw: bytes) -> Result:
    """Parse Boost.Test JUnit logs (one or several documents one after another; ids without a
    CTest name; module doc). A log with a crash is an anomaly."""
    return parse_documents(raw, read_boost_junit)


def split_boost_sections(raw: bytes | str, after: int = 0) -> tuple[bytes | str, list[Section]]:
    """`doctest_sections.split_sections` for the helper's ``<swemint-boost>`` sections."""
    return split_sections(raw, after, SECTION, read_boost_junit)


def boost_runs(sections: list[Section]) -> DoctestRuns:
    """What the Boost.Test sections of one test run give: the rounds of each binary combined as
    doctest's (`doctest_sections.doctest_runs`), ids as Boost.Test names its units."""
    return doctest_runs(sections, label="Boost.Test")


PARSERS = {"boost_junit": parse_boost_junit}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
