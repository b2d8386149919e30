"""Pure parsers of pytest's reports: a runner's report (str or bytes) -> `TestRunReport`, by name in
`PARSERS` (collected into the one registry, `envpool.testrun.registry`), and the helpers the other
runners' parsers share (`strip_ansi`, `worse`, JUnit XML).

Sources for pytest, best first (SWE-bench v5 keeps the parser *name* in each dataset row
and resolves it through a registry, `swebench/harness/log_parsers/__init__.py`; so do we):

- ``pytest_channel``: the signed frames of our plugin `swemint_pytest_report` in a console
  stream (a row's `test_command` output; verified with the run's key when given);
- ``pytest_plugin``: the same records as JSON lines (exact node ids, setup/teardown errors,
  xfail/xpass, collection errors per collector);
- ``pytest_junit``: pytest's JUnit XML (``--junitxml``), read with the stdlib's ElementTree; the dotted
  ``classname`` loses information, so node ids are rebuilt best effort;
- ``pytest_log``: the ``short test summary info`` of ``pytest -rA`` in the console log.

Every parser: never raises on bad input (undecodable bytes are replaced, broken lines skipped),
and a report where no test parses has ``tests_ran=False`` -- never "all passed".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from envpool.testrun.outcome import TestStatus

if TYPE_CHECKING:
    from envpool.testrun.status import TestRunReport

Parser = Callable[..., "TestRunReport"]
Parts = tuple[dict[str, TestStatus], list[str], "int | None"]
"""What a core parser finds: (statuses by test id, collection errors, exit status or None).
Cores are stdlib only (`envpool.testrun.statuslines` runs them inside environment images);
the public parsers wrap them in a `TestRunReport` (pydantic)."""

_RANK = {TestStatus.PASSED: 0, TestStatus.XPASS: 0, TestStatus.SKIPPED: 1, TestStatus.XFAIL: 1,
         TestStatus.FAILED: 2, TestStatus.ERROR: 3}


def _text(data: str | bytes) -> str:
    if isinstance(data, bytes):
        return data.decode("utf-8", errors="replace")
    return data


def worse(a: TestStatus | None, b: TestStatus) -> TestStatus:
    """The worse of two statuses of one test (ERROR > FAILED > SKIPPED/XFAIL > PASSED/XPASS).

    Used when one test yields several reports (a teardown error after a pass, a rerun).
    On a tie the earlier status is kept.
    """
    if a is None or _RANK[b] > _RANK[a]:
        return b
    return a


def make_report(parts: Parts, source: str, reasons: dict[str, str] | None = None) -> TestRunReport:
    """A `TestRunReport` (source `source`) of a core parser's `parts`; `tests_ran` is True when a
    test status was parsed; `reasons` (test id -> why it did not pass) when the core gave them.
    pydantic is imported here only, never by the cores."""
    from envpool.testrun.status import TestRunReport

    statuses, collection_errors, exit_code = parts
    return TestRunReport(statuses=statuses, collection_errors=collection_errors, exit_code=exit_code,
                         tests_ran=bool(statuses), source=source, reasons=dict(reasons or {}))


def _add_unique(items: list[str], item: str) -> None:
    if item and item not in items:
        items.append(item)


# -- (1) plugin JSON lines ---------------------------------------------------------------------

def normalise_nodeid(nodeid: str) -> str:
    """pytest < 4 put the class instance in node ids (`path::Class::()::test`); SWE-bench and
    every later pytest write `path::Class::test`. Parametrisation brackets are left untouched."""
    head, bracket, params = nodeid.partition("[")
    head = head.replace("::()::", "::")
    if head.endswith("::()"):
        head = head[:-4]
    return head + bracket + params


def plugin_records(data: str | bytes) -> list[dict]:
    """The JSON records of a `swemint_pytest_report` file, in order.

    Lines that are not JSON objects (a line cut by a kill) are skipped. When the file holds a
    `session_start` record, only records with that session's `pid` are kept (a pytest started
    by the code under test cannot add results to ours).
    """
    records: list[dict] = []
    for line in _text(data).splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            records.append(rec)
    first = next((r for r in records if r.get("kind") == "session_start"), None)
    if first is not None and "pid" in first:
        records = [r for r in records if r.get("pid") == first["pid"]]
    return records


def _phase_status(rec: dict) -> TestStatus | None:
    when, outcome, xfail = rec.get("when"), rec.get("outcome"), "wasxfail" in rec
    if outcome == "failed":
        return TestStatus.FAILED if when == "call" else TestStatus.ERROR
    if outcome == "skipped":
        if when == "teardown":
            return None
        return TestStatus.XFAIL if xfail else TestStatus.SKIPPED
    if outcome == "passed" and when == "call":
        return TestStatus.XPASS if xfail else TestStatus.PASSED
    return None


def parse_pytest_plugin(data: str | bytes) -> TestRunReport:
    """Parse our plugin's JSON lines into a `TestRunReport` (source "plugin"); see
    `records_parts` for the mapping."""
    return parse_pytest_records(plugin_records(data))


def parse_pytest_channel(data: str | bytes, key: str | bytes | None = None) -> TestRunReport:
    """Parse the plugin's frames out of a console stream (a row's `test_command` output, where
    the frames go to stdout with the console; `envpool.testrun.channel`). `key`: the run's key
    (hex or bytes) to verify them; without it the frames are read unauthenticated. A stream with
    a forged frame, a gap or no sealed end gives `tests_ran=False` (never graded)."""
    from envpool.testrun.channel import read_channel

    raw = data.encode("utf-8", errors="replace") if isinstance(data, str) else data
    k = bytes.fromhex(key) if isinstance(key, str) else key
    chan = read_channel(raw, k, exclusive=False)
    rep = parse_pytest_records(chan.records)
    if chan.tampered or not chan.sealed:
        rep = rep.model_copy(update={"tests_ran": False})
    return rep


def parse_pytest_records(records: Iterable[dict]) -> TestRunReport:
    """The plugin's records (dicts, in order) as a `TestRunReport` (source "plugin"); see
    `records_parts`; `reasons` carries the skip / failure / collection-error excerpts."""
    reasons: dict[str, str] = {}
    parts = records_parts(records, reasons)
    return make_report(parts, "plugin", reasons)


def plugin_parts(data: str | bytes) -> Parts:
    """The statuses, collection errors and exit status in our plugin's JSON lines (stdlib only);
    see `records_parts`."""
    return records_parts(plugin_records(data))


def records_parts(records: Iterable[dict], reasons: dict[str, str] | None = None) -> Parts:
    """The statuses, collection errors and exit status in our plugin's records (stdlib only).

    Mapping per node id: call passed -> PASSED (with wasxfail -> XPASS), call failed -> FAILED,
    call/setup skipped -> SKIPPED (with wasxfail -> XFAIL), setup or teardown failed -> ERROR;
    several reports for one id combine with `worse`. Collect reports that failed give
    `collection_errors` (collector node ids: a file path for a module that failed to import,
    `path::Class` for a class, a folder for a package/conftest). `exit_code` is the pytest
    session's exit status when the session finished (None when it was killed); `tests_ran` is
    True only when at least one test report was parsed. `reasons`, when given, is filled with
    test id (or collector id) -> the last REASON_CHARS characters of why it did not pass.
    """
    statuses: dict[str, TestStatus] = {}
    collection_errors: list[str] = []
    reasons = {} if reasons is None else reasons
    exit_code = None
    for rec in records:
        kind = rec.get("kind")
        if kind == "test" and isinstance(rec.get("nodeid"), str):
            st = _phase_status(rec)
            if st is not None:
                nid = normalise_nodeid(rec["nodeid"])
                statuses[nid] = worse(statuses.get(nid), st)
                if st not in (TestStatus.PASSED, TestStatus.XPASS) and rec.get("longrepr"):
                    reasons.setdefault(nid, str(rec["longrepr"])[-REASON_CHARS:])
        elif kind == "collect" and rec.get("outcome") == "failed":
            cid = str(rec.get("nodeid") or rec.get("fspath") or "")
            _add_unique(collection_errors, cid)
            if rec.get("longrepr"):
                reasons.setdefault(cid, str(rec["longrepr"])[-REASON_CHARS:])
        elif kind == "session_finish" and isinstance(rec.get("exitstatus"), int):
            exit_code = rec["exitstatus"]
    return statuses, collection_errors, exit_code


REASON_CHARS = 600
"""Characters of a failure or skip reason kept per test in `TestRunReport.reasons`."""


def plugin_exit_status(data: str | bytes) -> int | None:
    """The pytest exit status the plugin recorded at session end, or None (run killed)."""
    for rec in reversed(plugin_records(data)):
        if rec.get("kind") == "session_finish" and isinstance(rec.get("exitstatus"), int):
            return rec["exitstatus"]
    return None


def plugin_timeouts(data: str | bytes) -> list[str]:
    """Node ids whose call phase was stopped by SWEMINT_TEST_TIMEOUT, in order."""
    return [str(r.get("nodeid")) for r in plugin_records(data) if r.get("kind") == "timeout"]


# -- (2) JUnit XML -----------------------------------------------------------------------------

def _dotted_module(path: str) -> str:
    return re.sub(r"\.py$", "", path).replace("/", ".")


def _split_classname(classname: str, known_files: Iterable[str] | None) -> tuple[str, list[str]]:
    """(file path, class names) from a dotted junit classname such as `tests.test_x.TestA`."""
    parts = [p for p in classname.split(".") if p]
    if known_files:
        by_module = {_dotted_module(f): f for f in known_files}
        for k in range(len(parts), 0, -1):
            mod = ".".join(parts[:k])
            if mod in by_module:
                return by_module[mod], parts[k:]
    # heuristic: classes start with a capital letter (pytest's default `Test*`)
    k = next((i for i, p in enumerate(parts) if i > 0 and p[:1].isupper()), len(parts))
    return "/".join(parts[:k]) + ".py", parts[k:]


def junit_case_id(classname: str, name: str, file: str | None = None,
                  known_files: Iterable[str] | None = None) -> str:
    """Rebuild a pytest node id from a JUnit testcase.

    With the `file` attribute (pytest's xunit1 family, `-o junit_family=xunit1`) the path is
    exact and the rest of `classname` are the classes; without it the module is found among
    `known_files` (paths relative to the rootdir) or guessed (first capitalised part = class).
    Folders with dots in their names or nested classes may still come out wrong (info lost).
    """
    if file:
        mod = _dotted_module(file)
        rest = classname[len(mod):].lstrip(".") if classname.startswith(mod) else ""
        classes = [p for p in rest.split(".") if p]
        path = file
    else:
        path, classes = _split_classname(classname, known_files)
    return "::".join([path, *classes, name])


JUNIT_RESULT_TAGS = ("error", "failure", "skipped")
"""Children of a `<testcase>` that carry its result (Surefire's flaky/rerun children do not)."""


def parse_xml(raw: bytes):
    """The root element of an XML document (`xml.etree.ElementTree`), None when unparsable.

    The stdlib parser is used (not junitparser: its releases need Python >= 3.10 and installed
    metadata, and these parsers also run inside environment images on Python 3.9); expat refuses
    entity-expansion bombs itself (libexpat >= 2.4)."""
    import xml.etree.ElementTree as ET

    try:
        return ET.fromstring(raw)
    except Exception:  # ParseError, and ValueError on odd encodings
        return None


def junit_results(case) -> list:
    """The result elements (`<error>`, `<failure>`, `<skipped>`) of a `<testcase>` element."""
    return [child for child in case if child.tag in JUNIT_RESULT_TAGS]


def junit_status(results) -> TestStatus | None:
    """Status of one JUnit `<testcase>` from its result elements (`junit_results`): error ->
    ERROR, failure -> FAILED, skipped -> SKIPPED (type `pytest.xfail` -> XFAIL), worst wins;
    none = passed, returned as None so callers choose."""
    st: TestStatus | None = None
    for r in results:
        if r.tag == "error":
            st = worse(st, TestStatus.ERROR)
        elif r.tag == "failure":
            st = worse(st, TestStatus.FAILED)
        elif r.tag == "skipped":
            st = worse(st, TestStatus.XFAIL if (r.get("type") or "") == "pytest.xfail" else TestStatus.SKIPPED)
    return st


def parse_pytest_junit(data: str | bytes, known_files: Iterable[str] | None = None) -> TestRunReport:
    """Parse pytest's JUnit XML into a `TestRunReport` (source "junit"), the fallback source;
    see `junit_parts` for the mapping."""
    return make_report(junit_parts(data, known_files), "junit")


def junit_parts(data: str | bytes, known_files: Iterable[str] | None = None) -> Parts:
    """Statuses and collection errors in pytest's JUnit XML (stdlib ElementTree).

    failure -> FAILED, error -> ERROR (setup/teardown), skipped with type `pytest.xfail` ->
    XFAIL, other skipped -> SKIPPED, no result -> PASSED (a non-strict XPASS shows as a pass).
    A testcase with empty classname and message "collection failure" is a collection error of
    its module. Unparsable XML yields an empty report with `tests_ran=False`.
    """
    raw = data if isinstance(data, bytes) else data.encode("utf-8", errors="replace")
    root = parse_xml(raw)
    if root is None:
        return {}, [], None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    statuses: dict[str, TestStatus] = {}
    collection_errors: list[str] = []
    known = list(known_files) if known_files else None
    for suite in suites:
        for case in suite.findall("testcase"):
            file = case.get("file")
            classname, name = case.get("classname") or "", case.get("name") or ""
            results = junit_results(case)
            if not classname and any(r.tag == "error" and (r.get("message") or "").startswith(
                    "collection failure") for r in results):
                _add_unique(collection_errors, file or _split_classname(name, known)[0])
                continue
            st = junit_status(results) or TestStatus.PASSED
            nodeid = junit_case_id(classname, name, file, known)
            prev = statuses.get(nodeid)
            statuses[nodeid] = st if prev is None else worse(prev, st)
    return statuses, collection_errors, None


# -- (3) console log: the -rA short test summary ----------------------------------------------

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
"""ANSI escape sequences (CSI and two-character escapes)."""

_SUMMARY_HEADER = re.compile(r"^=+ short test summary info =+\s*$")
_SECTION_RULE = re.compile(r"^=+ .* =+\s*$|^=+\s*$")
_LINE = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)\s+(.*)$")
_LOG_STATUS = {"PASSED": TestStatus.PASSED, "FAILED": TestStatus.FAILED,
               "ERROR": TestStatus.ERROR, "XFAIL": TestStatus.XFAIL, "XPASS": TestStatus.XPASS,
               "SKIPPED": TestStatus.SKIPPED}


def strip_ansi(text: str) -> str:
    """Remove ANSI colour and cursor escape sequences."""
    return ANSI_RE.sub("", text)


def split_summary_id(rest: str, known_ids: Iterable[str] | None = None, *,
                     has_message: bool = True) -> str:
    """The node id at the start of a summary line's remainder (`id` or `id - message`).

    `PASSED` lines carry no message (`has_message=False`): the whole remainder is the id, exact
    even with ' - ', spaces or brackets in it. Other lines may end in ` - message` (or, pytest
    4.x XPASS, ` reason`), and pytest does not quote ids, so the split is a best guess:
    (1) the longest known id (`known_ids`, e.g. from another report) the line starts with;
    (2) without `[` before the first ' - ', cut there (then at the first space after the last
    `::`); (3) else cut after the first `]` followed by ' - ' or the line end at which the
    brackets opened after the test name balance, else after the last such `]`.
    """
    rest = rest.rstrip()
    if known_ids:
        best = ""
        for k in known_ids:
            if len(k) > len(best) and (rest == k or rest.startswith(k + " ")):
                best = k
        if best:
            return best
    if not has_message:
        return rest
    dash = rest.find(" - ")
    bracket = rest.find("[")
    if bracket < 0 or (0 <= dash < bracket):
        head = rest if dash < 0 else rest[:dash]
        colons = head.rfind("::")
        space = head.find(" ", colons + 2) if colons >= 0 else -1
        return head if space < 0 else head[:space]
    ends = [i + 1 for i, c in enumerate(rest)
            if c == "]" and (i + 1 == len(rest) or rest.startswith(" - ", i + 1))]
    if not ends:
        ends = [i + 1 for i, c in enumerate(rest) if c == "]" and rest.startswith(" ", i + 1)]
    if not ends:
        return rest if dash < 0 else rest[:dash]
    for end in ends:
        part = rest[bracket:end]
        if part.count("[") == part.count("]"):
            return rest[:end]
    return rest[:ends[-1]]


def summary_lines(text: str) -> list[str]:
    """Lines of the *last* `short test summary info` section (ANSI stripped).

    Only the last section counts: output captured from tests is printed before it, so a test
    printing a fake `PASSED x` line or a fake summary header cannot add results. Empty when the
    log has no summary (run killed, or pytest too old for -rA).
    """
    lines = strip_ansi(text).replace("\r\n", "\n").split("\n")
    start = None
    for i, line in enumerate(lines):
        if _SUMMARY_HEADER.match(line.strip()):
            start = i + 1
    if start is None:
        return []
    out = []
    for line in lines[start:]:
        if _SECTION_RULE.match(line.strip()):
            break
        out.append(line.rstrip("\r"))
    return out


def parse_pytest_log(data: str | bytes, known_ids: Iterable[str] | None = None) -> TestRunReport:
    """Parse the `-rA` short test summary of a pytest console log (source "log"); see
    `log_parts` for the forms read."""
    return make_report(log_parts(data, known_ids), "log")


def log_parts(data: str | bytes, known_ids: Iterable[str] | None = None) -> Parts:
    """Statuses and collection errors in the `-rA` short test summary of a pytest log.

    Lines `PASSED id`, `FAILED id[ - msg]`, `ERROR id[ - msg]`, `XFAIL id[ - reason]`,
    `XPASS id[ reason]` (pytest 4.x to 9.x forms); `SKIPPED [n] file:line: reason` names no id
    and is ignored; `ERROR path` without `::` is a collection error. A test listed twice (PASSED
    then ERROR at teardown) gets the worse status. Non-UTF-8 bytes are replaced; ANSI removed.
    """
    known = set(known_ids) if known_ids else None
    statuses: dict[str, TestStatus] = {}
    collection_errors: list[str] = []
    for line in summary_lines(_text(data)):
        m = _LINE.match(line)
        if not m:
            continue
        word, rest = m.group(1), m.group(2)
        if word == "SKIPPED" and rest.startswith("["):
            continue
        nodeid = normalise_nodeid(split_summary_id(rest, known, has_message=word != "PASSED") or "")
        if not nodeid:
            continue
        if word == "ERROR" and "::" not in nodeid:
            _add_unique(collection_errors, nodeid)
            continue
        statuses[nodeid] = worse(statuses.get(nodeid), _LOG_STATUS[word])
    return statuses, collection_errors, None


PARSERS: dict[str, Parser] = {
    "pytest_channel": parse_pytest_channel,
    "pytest_plugin": parse_pytest_plugin,
    "pytest_junit": parse_pytest_junit,
    "pytest_log": parse_pytest_log,
}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
