"""What every polyglot parser shares: decoding, a result builder, the parser wrapper, JSON/XML helpers.

A parser here is a `ReportParser`: calling it with a runner's output (`bytes | str`, plus
keyword options) returns a `TestRunReport`; `.check(...)` on the same input returns the
*anomalies*, reasons the parse must not be trusted (a count the runner printed disagrees with the
tests parsed, a stream cut short). A report with anomalies always has `tests_ran=False`, so it
can never be graded as "all passed"; the integrator must also refuse to grade such a run on the
*before* side (see `envpool.testrun.polyglot` for the contract).

Common options of the parsers that take them:
- ``known_tests``: ids expected in this run (e.g. from the other side's run). When the runner
  shows that a unit failed to build or load (a Go package, a crate, a Maven module, a jest file),
  the known ids of that unit that have no result are given FAILED (build) or ERROR (load). These
  synthetic results do not make ``tests_ran`` True.
- ``root``: the checkout path inside the sandbox (default ``/testbed``), stripped from absolute
  file paths so ids are repository-relative.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from envpool.testrun.outcome import TestStatus
from envpool.testrun.parsers import junit_results, junit_status, parse_xml, strip_ansi, worse

if TYPE_CHECKING:
    from envpool.testrun.status import TestRunReport

Source = Literal["junit", "log", "json"]
DEFAULT_ROOT = "/testbed"


def to_text(data: bytes | str) -> str:
    """UTF-8 text of a runner's output: undecodable bytes replaced, ANSI removed, CRLF -> LF."""
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    return strip_ansi(data).replace("\r\n", "\n")


def shell_lines(text: str) -> list[str]:
    """`text`'s lines split on ``\\n`` only, as line-based shell tools (sed, grep, cut, tail)
    split them -- not `str.splitlines`, which also splits on a lone ``\\r``, ``\\v``, ``\\f``,
    ``\\x1c``-``\\x1e``, ``\\x85`` and U+2028/2029: a runner that prefixes each line of the code
    under test's output (``| ``) prefixes ``| junk\\rswemint-unit: x exit 0`` once, so splitting
    it there would make a line the code under test printed look like the runner's own. (CRLF is
    LF already: `to_text`.)"""
    return text.split("\n")


def to_bytes(data: bytes | str) -> bytes:
    """Bytes for XML parsers (which read the encoding from the XML declaration)."""
    return data if isinstance(data, bytes) else data.encode("utf-8", errors="replace")


def relpath(path: str, root: str | None = DEFAULT_ROOT) -> str:
    """`path` relative to `root` when it lies below it (``/testbed/src/a.js`` -> ``src/a.js``)."""
    path = path.replace("\\", "/")
    if root:
        r = root.rstrip("/") + "/"
        if path.startswith(r):
            return path[len(r):]
    return path[2:] if path.startswith("./") else path


@dataclass
class Result:
    """A parse in progress: statuses, collection errors (unit labels), anomalies.

    `ran` counts results the runner itself reported; ids filled in by `fail_known` do not.
    """

    source: Source
    statuses: dict[str, TestStatus] = field(default_factory=dict)
    collection_errors: list[str] = field(default_factory=list)
    anomalies: list[str] = field(default_factory=list)
    ran: int = 0
    exit_code: int | None = None

    def add(self, test_id: str, status: TestStatus) -> None:
        """Record a status reported by the runner (several for one id combine with `worse`)."""
        test_id = test_id.strip()
        if test_id:
            self.statuses[test_id] = worse(self.statuses.get(test_id), status)
            self.ran += 1

    def unit_failed(self, label: str) -> None:
        """Note a unit (package, crate, file) that failed to build or load."""
        if label and label not in self.collection_errors:
            self.collection_errors.append(label)

    def fail_known(self, known: Iterable[str] | None, status: TestStatus,
                   belongs: Callable[[str], bool] = lambda _id: True) -> None:
        """Give `status` to known ids of a failed unit (`belongs(id)`) that have no result."""
        for test_id in known or ():
            if belongs(test_id) and test_id not in self.statuses:
                self.statuses[test_id] = status

    def report(self) -> TestRunReport:
        """The `TestRunReport`; `tests_ran` is False without runner results or with anomalies.
        (pydantic is imported here, so the cores stay stdlib only.)"""
        from envpool.testrun.status import TestRunReport

        return TestRunReport(statuses=self.statuses, collection_errors=self.collection_errors,
                             exit_code=self.exit_code, tests_ran=self.ran > 0 and not self.anomalies,
                             source=self.source)


Core = Callable[..., Result]


COMMON_OPTIONS = frozenset({"known_tests", "root", "per_test_timeout"})
"""Options every parser accepts; those a parser has no use for are ignored. ``per_test_timeout``:
the run's per-test limit in seconds (`envpool.testrun.limits`; Go reads it, `golang` module doc)."""


class ReportParser:
    """A pure parser: `p(data, **options) -> TestRunReport`, `p.check(data, **options) -> [anomaly]`.

    Wraps a core function `core(text_or_bytes, **options) -> Result`. Text cores get `to_text`
    (decoded with replacement, ANSI stripped); `raw=True` cores (XML) get bytes. Never raises on
    bad input: the cores skip what they cannot read. `COMMON_OPTIONS` are accepted by every
    parser (so callers can pass them uniformly); any other unknown option is a TypeError.
    """

    def __init__(self, core: Core, raw: bool = False) -> None:
        functools.update_wrapper(self, core)
        self.core, self.raw = core, raw
        self.accepts = frozenset(inspect.signature(core).parameters)

    def run(self, data: bytes | str, **options: Any) -> Result:
        options = {k: v for k, v in options.items() if k in self.accepts or k not in COMMON_OPTIONS}
        return self.core(to_bytes(data) if self.raw else to_text(data), **options)

    def __call__(self, data: bytes | str, **options: Any) -> TestRunReport:
        return self.run(data, **options).report()

    def check(self, data: bytes | str, **options: Any) -> list[str]:
        return list(self.run(data, **options).anomalies)


def report_parser(raw: bool = False) -> Callable[[Core], ReportParser]:
    """Decorator making a `ReportParser` of a core function."""
    return lambda core: ReportParser(core, raw)


def count_mismatch(result: Result, what: str, expected: int | None, got: int) -> None:
    """Add an anomaly when a count printed by the runner differs from the parsed count."""
    if expected is not None and expected != got:
        result.anomalies.append(f"{what}: the runner reports {expected}, {got} parsed")


def find_json(text: str, keys: Iterable[str]) -> dict | None:
    """The last JSON object in `text` that has all `keys` (a report mixed with console output).

    Tries the whole text first, then every line starting with ``{`` (reporters print their
    object from the start of a line); the *last* match wins, as a reporter prints at the end.
    """
    keys = tuple(keys)

    def ok(obj: Any) -> bool:
        return isinstance(obj, dict) and all(k in obj for k in keys)

    try:
        whole = json.loads(text)
        if ok(whole):
            return whole
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    found = None
    for m in re.finditer(r"^\{", text, re.M):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        if ok(obj):
            found = obj
    return found


def items(obj: Any, key: str) -> list:
    """``obj[key]`` when `obj` is a dict and that is a list, else [] (reports from JSON are not
    trusted to have the documented shape)."""
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, list) else []


def split_xml_documents(raw: bytes) -> list[bytes]:
    """Several XML reports concatenated (``cat reports/*.xml``) -> one document each."""
    parts = [p for p in re.split(rb"(?=<\?xml[\s?])", raw) if p.strip()]
    return parts or [raw]


@dataclass(frozen=True)
class JunitCase:
    """One `<testcase>`: attributes, its outcome (FAILED/ERROR/SKIPPED/PASSED), the message of
    its first result element, the name of the suite around it, the text of its `<system-out>`
    (ctest puts the test's output there), and the ``type`` attributes of its result elements
    (Boost.Test's ``system fatal error``)."""

    name: str
    classname: str
    attrs: dict[str, str]
    status: TestStatus
    suite: str
    message: str = ""
    output: str = ""
    kinds: tuple[str, ...] = ()


def junit_cases(raw: bytes) -> Iterator[JunitCase]:
    """Every `<testcase>` of one or more JUnit XML documents, nested suites included.

    Outcome: `<error>` -> ERROR, `<failure>` -> FAILED, `<skipped>` -> SKIPPED, none -> PASSED
    (worst wins). Surefire's `<flakyFailure>`/`<rerunFailure>` children are ignored: the test's
    own result is the final one. Unparsable documents yield nothing.
    """
    for doc in split_xml_documents(raw):
        root = parse_xml(doc)
        if root is None:
            continue
        parents = {child: parent for parent in root.iter() for child in parent}
        for elem in root.iter("testcase"):
            results = junit_results(elem)
            st = junit_status(results)
            parent = parents.get(elem)
            out = elem.find("system-out")
            yield JunitCase(name=elem.get("name") or "", classname=elem.get("classname") or "",
                            attrs=dict(elem.attrib), status=st or TestStatus.PASSED,
                            suite=(parent.get("name") or "") if parent is not None else "",
                            message=(results[0].get("message") or "") if results else "",
                            output=(out.text or "") if out is not None else "",
                            kinds=tuple(r.get("type") or "" for r in results))
