"""Lua: busted's JSON report (``busted --output=json``).

Test ids: ``<spec file>::<full name>``, the full name as busted prints it (the ``describe``
blocks' names and the ``it``'s, joined by spaces: ``inspect numbers works``), prefixed by the file
that defines it (busted names a test by its name alone; the file keeps ids of two spec files
apart). ``busted --filter`` takes the full name as a Lua pattern.

Status mapping (the report's four lists):

| busted JSON  | TestStatus |
|--------------|------------|
| `successes`  | PASSED     |
| `failures`   | FAILED     |
| `errors`     | ERROR      |
| `pendings`   | SKIPPED    |

An error outside any test (a spec file that does not load) is a collection error of its file.
The report is the last JSON object of the output (busted prints it at the suite's end, after
anything the tests print). Source: busted 2.x ``busted/outputHandlers/json.lua`` and
``base.lua`` (getFullName).
"""

from __future__ import annotations

from envpool.testrun.outcome import TestStatus
from envpool.testrun.polyglot.common import Result, find_json, report_parser

_LISTS = (("successes", TestStatus.PASSED), ("failures", TestStatus.FAILED), ("errors", TestStatus.ERROR),
          ("pendings", TestStatus.SKIPPED))


def _file(entry: dict) -> str:
    trace = entry.get("trace") or (entry.get("element") or {}).get("trace") or {}
    src = str(trace.get("source") or trace.get("short_src") or "")
    src = src[1:] if src.startswith("@") else src
    return src[2:] if src.startswith("./") else src


@report_parser()
def parse_busted_json(text: str) -> Result:
    """Parse busted's JSON report (``{"successes": [...], "failures": [...], "errors": [...],
    "pendings": [...], "duration": s}``; each entry's ``name`` is the test's full name, its
    ``trace.source`` the spec file). An entry whose element is not a test (``descriptor`` other
    than ``it``/``pending``: a file or a ``describe`` that failed to run) is a collection error.
    No report: no statuses (the run is not graded)."""
    res = Result(source="json")
    report = find_json(text, ("successes", "failures", "errors", "pendings"))
    if report is None:
        return res
    for key, status in _LISTS:
        for entry in report.get(key) or []:
            if not isinstance(entry, dict):
                continue
            element = entry.get("element") or {}
            name = str(entry.get("name") or element.get("name") or "")
            path = _file(entry)
            if element.get("descriptor", "it") not in ("it", "pending"):
                res.unit_failed(path or name)
                continue
            res.add(f"{path}::{name}" if path else name, status)
    return res


PARSERS = {"busted_json": parse_busted_json}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
