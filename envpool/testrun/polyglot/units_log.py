"""swemint's units runner (`agents.ecosystems.cfamily.units.units_command`): one block per unit
(a make target or a script of a suite with no per-test report of its own), each graded by the
per-file report its tool printed when there is one, else by the unit's exit status.

The class (issue 25, S13): a test target that runs a tool over many test files (``make test``
-> ``cram -v tests/*.t``, ``prove t/*.t``, automake's harness) fails as a whole when any one
file fails, so one unrelated failing file hides the fix when the target is graded as one test.
The tool reports each file; those lines are the results.

Input, per unit (what `units_command` prints): the tail of its output behind ``| `` (never read
here), its report lines -- the lines of its whole output that `REPORT_LINE_ERE` selects --
behind ``|: ``, then ``swemint-unit: <id> exit <rc>`` and ``pass|FAIL  <id>`` (the latter for
`script_status_log`, not read here).

Test ids: the file as the tool prints it (relative to the folder the tool ran in: ``make test``
at the root -> ``tests/empty.t``); a unit without a per-file report is its own id (the
Multi-SWE-bench name `units_command` gives it: ``tests/test-calc``, ``test``).

| report line (behind ``|: ``)                                   | tool         | TestStatus |
|----------------------------------------------------------------|--------------|------------|
| ``<file>: passed``                                             | cram ``-v``  | PASSED     |
| ``<file>: failed``                                             | cram ``-v``  | FAILED     |
| ``<file>: skipped`` / ``<file>: empty``                        | cram ``-v``  | SKIPPED    |
| ``<file> ..... ok`` (or ``ok`` on a later line, ``prove -v``)  | prove        | PASSED     |
| ``<file> ..... skipped: why``                                  | prove        | SKIPPED    |
| ``Failed N/M subtests`` / ``Dubious, ...`` / ``No subtests run`` after ``<file> ..`` | prove | FAILED |
| ``PASS:`` / ``FAIL:`` / ``SKIP:`` / ``XFAIL:`` / ``XPASS:`` / ``ERROR:`` ``<test>`` | automake harness | as `automake_log` |
| ``test <name> ... ok`` / ``     <name> ... FAILED`` (a parallel group's member) | pg_regress up to 15 | PASSED / FAILED |
| ``ok N - <name>  12 ms`` / ``not ok N + <name>  12 ms`` (``+``: a parallel group's member) | pg_regress 16+ (TAP) | PASSED / FAILED |
| ``... failed (ignored)`` / ``# (ignored)`` / ``# SKIP``                        | pg_regress   | SKIPPED    |

A unit that exited non-zero with no result line but a ``|! swemint-stop: <line>`` line saying its
harness stopped before the tests ran no test: it is no result at all (not a FAILED unit, which would fail on both sides alike). Only the runner's
own after-script of a pg_regress unit (`agents.ecosystems.cfamily.pg_regress.stop_diagnosis`)
prints that line, with the first line of the unit's output matching `STOP_LINE_ERE` (pg_regress
16+'s ``# postmaster failed, ...`` before its ``Bail out!``; pg_regress up to 15's ``pg_regress:
postmaster failed``, ``... initdb failed``): another unit printing ``# could not ...`` (a TAP
diagnostic) and exiting non-zero is a FAILED unit, and the code under test cannot print such a
line itself (`RUNNER_PREFIX`: its lines reach the parser behind ``| ``, its report lines behind
``|: ``, never behind ``|! ``; ``|: `` lines starting with ``swemint-`` are ignored, and
`units_command` drops them too). A process of the code under test that writes to the runner's
own standard output as the same user is not kept out (as `envpool.testrun.channel` says of
pytest); pg_regress runs as the user ``swemint``. When no
unit of the run gave a result, the run's anomaly names each stopped unit with the messages of
the ``|! swemint-log: <file>: <line>`` lines its `Unit.after` script printed first (a server log's
cause, its time and pid dropped: pg_regress's ``log/postmaster.log``), then its first stop line,
so the run is "tests not run" with that cause in its reason (`envpool.evaluation.NO_REPORT`'s path); a stopped unit beside units that ran is
left out of the grade.

A unit with report lines: its files are the results, and the unit itself is one more FAILED
result only when it exited non-zero with no file failing (the target failed outside its files:
a build step, a count the tool could not reach). A prove file still open when the unit ended
(no status line: the tool was stopped) is FAILED. Cross-checks, per unit: cram's ``# Ran N
tests`` against its file lines, prove's ``Files=N`` against its files, automake's ``# TOTAL: N``
against its lines, pg_regress's ``N of M tests failed`` / ``All M tests passed`` against its
tests; a mismatch is an anomaly (the report was cut).

pg_regress (PostgreSQL's regression driver: ``make check`` / ``make installcheck`` of PostgreSQL
itself and of its extensions, PGXS's ``REGRESS``; issue 25, class S12) runs many SQL tests
(``sql/<name>.sql`` against ``expected/<name>.out``) in one call and fails as a whole when one
differs; its test names are the results. Its TAP lines are told apart from other TAP streams (a
``prove -v`` file's ``ok 1 - adds``) by the run time in ms that pg_regress always prints.

Sources: pg_regress 15 and 17 (Debian bookworm's and trixie's) on a tiny suite, serial and
with a parallel schedule (tests/data/polyglot/regenerate_pg_regress.sh), cram's ``tests/cram.t`` (verbose mode, ``# Ran 8 tests, 2 skipped, 1 failed.``; the
``CRAM`` environment variable holds extra options, so ``CRAM=-v`` asks any cram call for the
verbose report), TAP::Harness 3.44's console formatter (``prove`` and ``prove -v`` as run on a
tiny suite), automake's parallel harness (`cfamily.parse_automake_log`).
"""

from __future__ import annotations

import re

from envpool.testrun.outcome import TestStatus
from envpool.testrun.polyglot.cfamily import _AM_TOTAL, _AM_WORD, _AUTOMAKE
from envpool.testrun.parsers import worse
from envpool.testrun.polyglot.common import Result, report_parser, shell_lines

__all__ = ["REPORT_LINE_ERE", "RUNNER_LINE", "RUNNER_PREFIX", "STOP_LINE_ERE", "parse_unit_report_log", "per_file_report"]

REPORT_LINE_ERE = ("^[^ ]+\\.[A-Za-z0-9_]+: (passed|failed|skipped|empty) *$|^# Ran [0-9]+ tests"
                   "|^(\\[[0-9:]+\\] )?[^ ]+ \\.\\.+( |$)"
                   "|^(ok( *$| +[0-9.]+ ?ms)|skipped|Failed [0-9]+/[0-9]+ subtests|Dubious, |No subtests run|"
                   "All [0-9]+ subtests passed)"
                   "|^Files=[0-9]+, Tests=|^(PASS|FAIL|SKIP|XFAIL|XPASS|ERROR): |^# TOTAL: "
                   "|^(test +| +)[^ ]+ +\\.\\.\\. |^(not )?ok +[0-9]+ +[-+] +[^ ]+ +[0-9.]+ ms"
                   "|^(# )? *(All [0-9]+ tests passed|[0-9]+ of [0-9]+ tests (failed|passed))")
"""POSIX ERE (``grep -E``) selecting the lines of a unit's output that may be per-file report
lines; the parser reads them precisely. Loose on purpose: a line it selects that is not a report
line is ignored."""
STOP_LINE_ERE = "^[A-Za-z0-9_-]*regress: |^# (postmaster|initdb|could not)"
"""POSIX ERE of the lines saying pg_regress stopped before its tests (module docstring): pg_regress's
own, not TAP's bare ``Bail out!`` (a test script that bails out because of the bug fails). Read
by pg_regress's after-script only (`agents.ecosystems.cfamily.pg_regress.stop_diagnosis`), which
prints the first such line as ``swemint-stop: <line>``; not a report line."""
RUNNER_PREFIX = "|! "
"""The prefix of the lines a unit's after-script prints for the parser (``|! swemint-stop: ``,
``|! swemint-log: ``): the runner writes every line of a unit's own output behind ``| `` or
``|: ``, and neither `strip_ansi` nor anything a test prints can turn those into ``|! ``; only
these lines can declare a stop or give its cause."""
RUNNER_LINE = "swemint-"
"""The start of the lines only the runner's after-scripts print (behind `RUNNER_PREFIX`); a
``|: `` line starting so is ignored, and `units_command` drops the unit's own lines starting so."""
MAX_STOP_REASON = 700
"""At most this many characters of a stopped unit's anomaly."""

_CRAM = re.compile(r"^(\S+\.\w+): (passed|failed|skipped|empty)\s*$")
_CRAM_WORD = {"passed": TestStatus.PASSED, "failed": TestStatus.FAILED, "skipped": TestStatus.SKIPPED,
              "empty": TestStatus.SKIPPED}
_CRAM_RAN = re.compile(r"^# Ran (\d+) tests\b")
_PROVE_HEAD = re.compile(r"^(?:\[[\d:]+\] )?(\S*(?:/|\.\w+)\S*) \.{2,}(?: (.*?))?\s*$")
_PROVE_PASS = re.compile(r"^ok(?:\s+\d+(?:\.\d+)?\s*ms\b.*)?\s*$")
_PROVE_SKIP = re.compile(r"^skipped\b")
_PROVE_FAIL = re.compile(r"^(?:Failed \d+/\d+ subtests|Dubious, |No subtests run)")
_PROVE_OK_AFTER = re.compile(r"^All \d+ subtests passed")
_PROVE_FILES = re.compile(r"^Files=(\d+), Tests=\d+")
_PGR_OLD = re.compile(r"^(?:test\s+|\s+)(\S+)\s+\.\.\.\s+(ok|FAILED|failed \(ignored\)|ignored)(?=\s|$)")
_PGR_TAP = re.compile(r"^(not )?ok\s+\d+\s+[-+]\s+(\S+)\s+\d+(?:\.\d+)?\s*ms\b\s*(#.*)?$")
_PGR_TOTAL = re.compile(r"^(?:#\s*)?\s*(?:All (\d+) tests passed|\d+ of (\d+) tests (?:failed|passed))")
_UNIT_END = re.compile(r"^swemint-unit: (\S(?:.*\S)?) exit (\d+)\s*$")
_STOP = "swemint-stop: "
_CAUSE = "swemint-log: "
_SAYS = re.compile(r"\b(?:LOG|FATAL|PANIC|ERROR|WARNING|DETAIL|HINT): |: error: ")
_LOG_FILE = re.compile(r"^.*?/log/[\w.-]+: ")
_LOG_PREFIX = re.compile(r"^.*?\b(?=(?:LOG|FATAL|PANIC|ERROR|WARNING|DETAIL|HINT):)")


def _cause(line: str) -> str:
    """A ``swemint-log: <file>: <line>`` line's message: the file and the server's log line
    prefix (time, pid) dropped, ``LOG:  x`` -> ``LOG: x``. Only lines with a severity
    (``FATAL:``, ``LOG:``, ...) or ``: error:`` are used (`_SAYS`)."""
    text = _LOG_PREFIX.sub("", _LOG_FILE.sub("", line, count=1), count=1)
    return re.sub(r"^([A-Z]+):\s+", r"\1: ", text).strip()


def _prove_status(text: str) -> TestStatus | None:
    if _PROVE_PASS.match(text) or _PROVE_OK_AFTER.match(text):
        return TestStatus.PASSED
    if _PROVE_SKIP.match(text):
        return TestStatus.SKIPPED
    if _PROVE_FAIL.match(text):
        return TestStatus.FAILED
    return None


def per_file_report(lines: list[str]) -> tuple[dict[str, TestStatus], list[str]]:
    """The per-file results of one unit's report lines (module docstring): ``{file: status}``
    (several statuses for one file combine to the worst) and the anomalies (counts the tools
    printed that the lines do not reach). Lines that are no report line are ignored."""
    out: dict[str, TestStatus] = {}
    anomalies: list[str] = []
    counted = {"cram # Ran": 0, "prove Files=": 0, "automake # TOTAL": 0, "pg_regress tests": 0}
    totals: dict[str, int] = {}
    opened: list[str] = []  # prove files whose header came without a status yet
    current: str | None = None  # the prove file whose status lines follow

    def put(name: str, st: TestStatus) -> None:
        out[name] = worse(out.get(name), st)

    def total(what: str, n: str) -> None:
        totals[what] = totals.get(what, 0) + int(n)

    for line in lines:
        if m := _PGR_TAP.match(line):
            ignored = bool(m.group(3)) and re.search(r"\bSKIP\b|ignored", m.group(3)) is not None
            put(m.group(2), TestStatus.SKIPPED if ignored else
                TestStatus.FAILED if m.group(1) else TestStatus.PASSED)
            counted["pg_regress tests"] += 1
        elif m := _PGR_OLD.match(line):
            word = m.group(2)
            put(m.group(1), TestStatus.PASSED if word == "ok" else TestStatus.FAILED if word == "FAILED"
                else TestStatus.SKIPPED)
            counted["pg_regress tests"] += 1
        elif m := _PGR_TOTAL.match(line):
            total("pg_regress tests", m.group(1) or m.group(2))
        elif m := _CRAM.match(line):
            put(m.group(1), _CRAM_WORD[m.group(2)])
            counted["cram # Ran"] += 1
        elif m := _CRAM_RAN.match(line):
            total("cram # Ran", m.group(1))
        elif m := _PROVE_FILES.match(line):
            total("prove Files=", m.group(1))
            current = None
        elif m := _AM_TOTAL.match(line):
            total("automake # TOTAL", m.group(1))
        elif m := _AUTOMAKE.match(line):
            put(m.group(2), _AM_WORD[m.group(1)])
            counted["automake # TOTAL"] += 1
        elif m := _PROVE_HEAD.match(line):
            current = m.group(1)
            counted["prove Files="] += 1
            st = _prove_status(m.group(2) or "")
            if st is None:
                opened.append(current)
            else:
                put(current, st)
        elif current is not None and (st := _prove_status(line)) is not None:
            if current in opened:
                opened.remove(current)
            put(current, st)
    for name in opened:  # no status line: the tool was stopped while it ran
        put(name, TestStatus.FAILED)
    for what, n in totals.items():
        if n != counted[what]:
            anomalies.append(f"{what}: the runner reports {n}, {counted[what]} parsed")
    return out, anomalies


@report_parser()
def parse_unit_report_log(text: str) -> Result:
    """Parse `units_command`'s output (module docstring): per unit its per-file report, else
    its exit status; a unit whose harness stopped before its tests gives no result."""
    res = Result(source="log")
    block: list[str] = []
    runner: list[str] = []
    stopped: list[str] = []
    for line in shell_lines(text):
        if line.startswith("|: "):
            block.append(line[3:])
            continue
        if line.startswith(RUNNER_PREFIX):
            runner.append(line[len(RUNNER_PREFIX):])
            continue
        m = _UNIT_END.match(line)
        if not m:
            continue
        unit, rc = m.group(1), int(m.group(2))
        causes = [b[len(_CAUSE):].strip() for b in runner if b.startswith(_CAUSE)]
        stops = [b[len(_STOP):].strip() for b in runner if b.startswith(_STOP)]
        block = [b for b in block if not b.startswith(RUNNER_LINE)]
        runner = []
        files, anomalies = per_file_report(block)
        block = []
        res.anomalies += [f"{unit}: {a}" for a in anomalies]
        for name, st in files.items():
            res.add(name, st)
        if not files and rc != 0 and stops:
            said = "; ".join(dict.fromkeys(_cause(c) for c in causes if _SAYS.search(c)))
            stopped.append((f"{unit}: the harness stopped before any test ran" + (f": {said}" if said else "")
                            + f" ({stops[0][:160]})")[:MAX_STOP_REASON])
        elif not files:
            res.add(unit, TestStatus.PASSED if rc == 0 else TestStatus.FAILED)
        elif rc != 0 and not any(st in (TestStatus.FAILED, TestStatus.ERROR) for st in files.values()):
            res.add(unit, TestStatus.FAILED)
    if stopped and not res.statuses:
        res.anomalies += stopped
    return res


PARSERS = {"unit_report_log": parse_unit_report_log}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
