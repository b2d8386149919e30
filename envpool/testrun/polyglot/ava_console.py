"""AVA's default (verbose) console reporter, the fallback when its TAP reporter dies.

AVA 6's TAP reporter throws in ``writeTimeout`` (``TypeError`` in ``lib/reporters/tap.js``) when
a test hangs until AVA's timeout, so the TAP stream ends without its ``1..N`` plan
(sindresorhus/ky-874). The node test command (`agents.ecosystems.node.ava`) then prints
`RERUN_MARKER` and runs AVA again with its default reporter; `ava_tap` parses the part after the
marker with this parser (also registered alone as ``ava_console``).

Test ids are the same as ``ava --tap`` prints for the same files (both reporters use AVA's
``prefix-title.js``): ``<file> › <title>`` for a run of several files, the bare title for one.

| console line (two-space indent)                      | TestStatus / meaning                  |
|------------------------------------------------------|---------------------------------------|
| ``✔ title`` (``(301ms)`` duration suffix dropped)    | PASSED                                |
| ``✔ [expected fail] title`` (``test.failing``)       | PASSED (TAP: ``ok``)                  |
| ``✘ [fail]: title message`` / ``[unexpected pass]``  | FAILED (a failed hook too, as in TAP) |
| ``- [skip] title``                                   | SKIPPED                               |
| ``- [todo] title``                                   | not a result (TAP: ``# TODO``)        |
| ``◌ title`` under ``N tests were pending in FILE``   | no result: cut by ``✘ Timed out ...`` (the run aborted; see below) |
| ``✘ FILE exited ...``, ``Uncaught exception in FILE``, ``Failed to exit when running FILE`` | a unit error |

Tests pending at AVA's timeout (the one that hung and those queued behind it) never finished, so
they have no result; each pending block adds the collection error ``ava: timed out with N
test(s) pending in FILE`` — an abort message, not a file that failed to load (it is no test id's
prefix) — so a before run cut off this way grades as one that stopped midway
(`agents.verification.aborted_before_scope`): a test absent before is FAIL_TO_PASS only when the
test_patch's changed lines name it, the others are in neither list, as for Redis' Tcl aborts.

A failure line runs the title and the error message together; the title is the one AVA repeats
as the heading of that failure after the ``─`` line (failures in the same order), else the
longest id of `known_tests` the line starts with. Anomalies: no ``─`` summary (the run was cut
short), ``Exiting due to SIGINT``, and summary counts (``N tests failed``, ``N hooks failed``,
``N tests passed``, ``N known failures``, ``N tests skipped``, ``N tests remained pending after a
timeout``) that differ from the lines parsed (AVA prints the passed count only when nothing
failed, so a test printing a fake ``  ✔ title`` line in a run with failures is not caught: the
TAP stream, with its ``# tests N``, is the stronger evidence and is preferred). Source: AVA's ``lib/reporters/default.js`` and
``lib/run-status.js`` (pending = selected, not finished), seen with ava 6.4.1.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from envpool.testrun.outcome import TestStatus
from envpool.testrun.polyglot.common import Result, count_mismatch, report_parser

RERUN_MARKER = "swemint-ava: the TAP reporter crashed; the same tests again with the default reporter"
"""The line the node test command prints between the dead TAP run and the console rerun."""

CRASH_FRAME = "reporters/tap.js"
"""A stack frame of AVA's TAP reporter: with no closing plan, the reporter itself died."""

_PLAN = re.compile(r"^1\.\.\d+\s*$", re.M)
_LINE = "  "  # AVA's line writer indents every report line by two spaces
_PASS = re.compile(r"^✔ (?:\[expected fail\] )?(.+)$")
_FAIL = re.compile(r"^[✘✖] \[(?:fail|unexpected pass)\]: (.+)$")
_SKIP = re.compile(r"^- \[(skip|todo)\] (.+)$")
_PENDING_HEAD = re.compile(r"^(\d+) tests? (?:were|was) pending in (.+)$")
_PENDING = re.compile(r"^◌ (.+)$")
_EXITED = re.compile(r"^[✘✖] (.+?) (?:exited with a non-zero exit code: -?\d+|exited due to .+)$")
_UNIT = re.compile(r"^(?:Uncaught exception|Unhandled rejection) in (.+)$|^Failed to exit when running (.+)$|"
                   r"^[✘✖] Exiting due to process\.exit\(\) when running (.+)$")
_DURATION = re.compile(r" \((?:\d+(?:\.\d+)?(?:ms|s|m|h|d) ?)+\)$")
_SUMMARY = "─"  # the line between the run's lines and the failures' details and counts
_COUNT = re.compile(r"^(\d+) (?:(test|hook)s? (failed|passed|skipped|remained pending after a timeout)|"
                    r"(known failure)s?)$")


def tap_crashed(tap: str) -> bool:
    """Whether an ``ava --tap`` output is a TAP reporter that died: no ``1..N`` plan and a stack
    frame of ``lib/reporters/tap.js`` (the same test the node test command makes in the shell)."""
    return not _PLAN.search(tap) and CRASH_FRAME in tap


def _title(line: str, headings: list[str], known: set[str]) -> tuple[str, list[str]]:
    """The test title of a failure line (`line` without its mark): the next failure heading it
    starts with (`headings` from there on returned), else the longest known id, else `line`."""
    for i, h in enumerate(headings):
        if line == h or line.startswith(h + " "):
            return h, headings[i + 1:]
    ids = [k for k in known if line == k or line.startswith(k + " ")]
    return (max(ids, key=len) if ids else line), headings


@report_parser()
def parse_ava_console(text: str, known_tests: Iterable[str] | None = None) -> Result:
    """Parse AVA's default reporter output (``ava --verbose``; module docstring). `known_tests`:
    ids of other runs, to cut a failure line's message off its title when AVA's failure
    headings do not show it. Never raises."""
    res = Result(source="log")
    lines = [ln[len(_LINE):].rstrip() for ln in text.splitlines() if ln.startswith(_LINE) and ln[2:3] != " "]
    cut = next((i for i, ln in enumerate(lines) if ln == _SUMMARY), None)
    head, tail = (lines, []) if cut is None else (lines[:cut], lines[cut + 1:])
    headings = list(tail)
    counts: dict[str, int] = {}
    last = max((i for i, ln in enumerate(tail) if ln == _SUMMARY), default=-1)
    for ln in tail[last + 1:]:
        if c := _COUNT.match(ln):
            counts[c.group(4) or f"{c.group(2)} {c.group(3)}"] = int(c.group(1))
    seen = {"failed": 0, "passed": 0, "known": 0, "skipped": 0, "pending": 0}
    known = set(known_tests or ())
    in_pending = False  # after "N tests were pending in FILE"
    for ln in head:
        if m := _FAIL.match(ln):
            title, headings = _title(m.group(1), headings, known)
            res.add(title, TestStatus.FAILED)
            seen["failed"] += 1
        elif m := _PASS.match(ln):
            raw = m.group(1)
            title = raw if raw in known else _DURATION.sub("", raw)
            res.add(title, TestStatus.PASSED)
            seen["known" if ln.startswith("✔ [expected fail] ") else "passed"] += 1
        elif m := _SKIP.match(ln):
            if m.group(1) == "skip":
                res.add(m.group(2), TestStatus.SKIPPED)
                seen["skipped"] += 1
        elif m := _PENDING_HEAD.match(ln):
            in_pending = True
            res.unit_failed(f"ava: timed out with {m.group(1)} test(s) pending in {m.group(2)}")
        elif in_pending and _PENDING.match(ln):
            seen["pending"] += 1  # never finished: no result (module docstring)
        elif m := _EXITED.match(ln):
            res.unit_failed(m.group(1))
        elif m := _UNIT.match(ln):
            res.unit_failed(next(g for g in m.groups() if g))
        elif ln.startswith(("✘ Exiting due to SIGINT", "✖ Exiting due to SIGINT")):
            res.anomalies.append("ava: the run was interrupted (SIGINT)")
    if cut is None and (res.ran or res.collection_errors):
        res.anomalies.append("ava: the console output has no closing summary: the run was cut short")
    _check_counts(res, counts, seen)
    return res


def _check_counts(res: Result, counts: dict[str, int], seen: dict[str, int]) -> None:
    """Summary counts against the lines parsed (failed tests and hooks are one count of lines)."""
    if not counts:
        return
    failed = counts.get("test failed", 0) + counts.get("hook failed", 0)
    count_mismatch(res, "ava failed tests and hooks", failed, seen["failed"])
    if "test passed" in counts:  # printed only when nothing failed
        count_mismatch(res, "ava passed tests", counts["test passed"], seen["passed"])
    count_mismatch(res, "ava known failures", counts.get("known failure", 0), seen["known"])
    count_mismatch(res, "ava skipped tests", counts.get("test skipped", 0), seen["skipped"])
    count_mismatch(res, "ava tests pending after the timeout",
                   counts.get("test remained pending after a timeout", 0), seen["pending"])


PARSERS = {"ava_console": parse_ava_console}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
