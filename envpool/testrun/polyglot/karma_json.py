"""JavaScript in a browser: karma's results as swemint's karma reporter writes them.

The reporter (`agents/ecosystems/recipes/karma-swemint.conf.js`, loaded by swemint's wrapper
config) records karma's ``onSpecComplete`` results and ``onRunComplete`` summary in one JSON
object: ``{"swemint_karma": 1, "results": [{"suite": [str], "description": str, "success": bool,
"skipped": bool, "pending": bool}], "errors": [str], "summary": {"success": int, "failed": int,
"error": bool, "disconnected": bool}}``.

Test ids: the suite titles and the test's description joined by `` > `` (``render() > should set
progress value to 0``), the form karma-mocha-reporter nests and SWE-bench Multilingual's preact
gold ids use. The spec file is not part of the id (karma's results do not carry it).

| result                         | TestStatus |
|--------------------------------|------------|
| `success`                      | PASSED     |
| `skipped` or `pending`         | SKIPPED    |
| neither                        | FAILED     |
| a browser error (a spec failing to load, a bundle that does not compile) with no result: every known id | ERROR |

A browser error is listed in `collection_errors` (``karma: <message>``). Anomaly: the summary's
``success + failed`` differs from the non-skipped results parsed. Sources: karma's reporter API
(``onSpecComplete(browser, result)``, ``onRunComplete(browsers, results)``, karma docs "Developing
plugins"), `lib/reporters/base.js`.
"""

from __future__ import annotations

from collections.abc import Iterable

from envpool.testrun.outcome import TestStatus
from envpool.testrun.polyglot.common import DEFAULT_ROOT, Result, count_mismatch, find_json, items, report_parser

SEP = " > "


def karma_id(suite: Iterable[str], description: str) -> str:
    """The test id of a karma result (module doc)."""
    return SEP.join([*(str(s) for s in suite if str(s)), str(description)])


@report_parser()
def parse_karma_json(text: str, root: str | None = DEFAULT_ROOT,
                     known_tests: Iterable[str] | None = None) -> Result:
    """Parse swemint's karma reporter JSON (module doc) -- the report file, or output holding it."""
    res = Result(source="json")
    data = find_json(text, ("swemint_karma", "results"))
    if data is None:
        if "swemint karma:" not in text:
            res.unit_failed("karma: no report (the run died before it finished)")
        return res
    counted = 0
    for r in items(data, "results"):
        if not isinstance(r, dict):
            continue
        suite = r.get("suite") if isinstance(r.get("suite"), list) else []
        tid = karma_id(suite, r.get("description") or "")
        if r.get("skipped") or r.get("pending"):
            res.add(tid, TestStatus.SKIPPED)
            continue
        counted += 1
        res.add(tid, TestStatus.PASSED if r.get("success") else TestStatus.FAILED)
    for err in items(data, "errors")[:5]:
        res.unit_failed(f"karma: {str(err).splitlines()[0][:300] if str(err) else 'browser error'}")
    if items(data, "errors") and not res.statuses:
        res.fail_known(known_tests, TestStatus.ERROR)
    summary = data.get("summary") if isinstance(data.get("summary"), dict) else {}
    if isinstance(summary.get("success"), int) and isinstance(summary.get("failed"), int):
        count_mismatch(res, "karma summary", summary["success"] + summary["failed"], counted)
    return res


PARSERS = {"karma_json": parse_karma_json}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
