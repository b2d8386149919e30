"""Repositories' own test drivers: one status line per test script, the Tcl test helper of
Redis-style servers, and unittest's verbose console (Django-style ``tests/runtests.py``).

Test ids are what the driver prints:
- `script_status_log` (``tests/run-tests.py`` style drivers, run from their folder): the script
  path as given, ``basics/fun1.py``. Lines ``pass  basics/fun1.py``, ``FAIL  basics/x.py``,
  ``skip  basics/y.py``; cross-checked against ``N tests passed`` (summed over invocations).
- `tcl_helper_log` (``runtest`` -> ``tests/test_helper.tcl``): the test's name as given to
  ``test {name} {...}``, ``XTRIM with MINID option``. ``[ok]: name`` (newer helpers append
  `` (N ms)``), ``[err]: name in tests/unit/x.tcl`` (detail lines follow), ``[skip]: name``;
  ``[exception]: ...`` (the helper stopped: the unit's remaining tests are absent) and
  ``[timeout]: ...`` are recorded as a failed unit. ``[ignore]`` (a tag filtered the test out)
  is not a result.
- `unittest_log` (``python -m unittest -v``, Django's ``runtests.py --verbosity 2``): ``name
  (module.Class)`` as unittest prints it (Python >= 3.11 prints ``name (module.Class.name)``;
  kept as printed). A docstring's first line, printed on the next line, is not part of the id.
  ``Ran N tests`` is cross-checked (summed over runs).
- `sympy_test_log` (SymPy's ``bin/test --verbose``, `sympy/utilities/runtests.py`
  `PyTestReporter`): the test function's bare name, ``test_ccode_sinc``, as SWE-bench's sympy
  log parser gives it. After a file header ``sympy/x/tests/test_y.py[N]`` each test prints
  ``name <status>`` (``ok``, ``F``, ``E``, ``f`` xfail, ``X`` xpass; skips ``s``/``w`` slow/``T``
  timeout/``K`` with their message before the letter), the file's last one followed by ``[OK]``
  or ``[FAIL]``; ``path[?]   Failed to import`` is a file that failed to load; ``tests
  finished: P passed`` is cross-checked.

Status mapping:

| driver line                          | TestStatus |
|--------------------------------------|------------|
| `pass` / `[ok]` / `... ok`           | PASSED     |
| `FAIL` / `[err]` / `... FAIL`        | FAILED     |
| `... ERROR`                          | ERROR      |
| `skip` / `[skip]` / `... skipped`    | SKIPPED    |
| `... expected failure`               | XFAIL      |
| `... unexpected success`             | FAILED     |
| sympy `ok` / `F` / `E` / `f` / `X`    | PASSED / FAILED / ERROR / XFAIL / XPASS |
| sympy `s` / `w` / `T` / `K`           | SKIPPED    |

Sources: MicroPython's ``tests/run-tests.py`` (``print("pass ", test_file)``), Redis'
``tests/test_helper.tcl`` (``send_data_packet`` statuses), CPython's
``unittest.runner.TextTestResult``, SymPy's ``sympy/utilities/runtests.py`` (``PyTestReporter``).
"""

from __future__ import annotations

import re

from envpool.testrun.outcome import TestStatus
from envpool.testrun.polyglot.common import Result, count_mismatch, report_parser, shell_lines

_SCRIPT = re.compile(r"^(pass|FAIL|skip) +(\S(?:.*\S)?)\s*$")
_SCRIPT_PASSED = re.compile(r"^(\d+) tests passed\s*$")
_SCRIPT_WORD = {"pass": TestStatus.PASSED, "FAIL": TestStatus.FAILED, "skip": TestStatus.SKIPPED}


@report_parser()
def parse_script_status_log(text: str) -> Result:
    """Parse a driver printing one ``pass|FAIL|skip  <script>`` line per test script. Lines are
    split on ``\\n`` only (`shell_lines`): the units runner (`agents.ecosystems.cfamily.units`)
    prefixes the code under test's lines with ``| ``, so a lone ``\\r`` in them starts no line."""
    res = Result(source="log")
    passed = 0
    total: int | None = None
    for line in shell_lines(text):
        m = _SCRIPT.match(line)
        if m:
            res.add(m.group(2), _SCRIPT_WORD[m.group(1)])
            passed += m.group(1) == "pass"
            continue
        m = _SCRIPT_PASSED.match(line)
        if m:
            total = (total or 0) + int(m.group(1))
    count_mismatch(res, "tests passed", total, passed)
    return res


_TCL = re.compile(r"^\[(ok|err|skip|exception|timeout)\]: (.*?)\s*$")
_TCL_MS = re.compile(r" \(\d+ ms\)$")
_TCL_IN = re.compile(r"^(.*) in (\S+\.tcl)$")


@report_parser()
def parse_tcl_helper_log(text: str) -> Result:
    """Parse the Tcl test helper's console (module docstring)."""
    res = Result(source="log")
    for line in text.splitlines():
        m = _TCL.match(line)
        if not m:
            continue
        word, data = m.groups()
        if word == "ok":
            res.add(_TCL_MS.sub("", data), TestStatus.PASSED)
        elif word == "skip":
            res.add(data, TestStatus.SKIPPED)
        elif word == "err":
            inside = _TCL_IN.match(data)
            if inside:
                res.add(inside.group(1), TestStatus.FAILED)
            else:
                res.unit_failed(f"[err] {data[:200]}")
        else:
            res.unit_failed(f"[{word}] {data[:200]}")
    return res


_UT = re.compile(r"^(?P<id>\w+ \([\w.]+\))(?: (?P<doc>.*?))? \.\.\. (?P<rest>.*)$")
_UT_HEAD = re.compile(r"^(?P<id>\w+ \([\w.]+\))$")
_UT_DONE = re.compile(r"^(?P<doc>.*?) \.\.\. (?P<rest>.*)$")
_UT_RAN = re.compile(r"^Ran (\d+) tests? in ")


def _ut_status(rest: str) -> TestStatus | None:
    rest = rest.strip()
    if rest == "ok":
        return TestStatus.PASSED
    if rest.startswith("FAIL"):
        return TestStatus.FAILED
    if rest.startswith("ERROR"):
        return TestStatus.ERROR
    if rest.startswith("skipped"):
        return TestStatus.SKIPPED
    if rest.startswith("expected failure"):
        return TestStatus.XFAIL
    if rest.startswith("unexpected success"):
        return TestStatus.FAILED
    return None


@report_parser()
def parse_unittest_log(text: str) -> Result:
    """Parse unittest's verbose console (module docstring)."""
    res = Result(source="log")
    parsed = 0
    total: int | None = None
    pending: str | None = None
    for line in text.splitlines():
        m = _UT_RAN.match(line)
        if m:
            total = (total or 0) + int(m.group(1))
            pending = None
            continue
        m = _UT.match(line)
        if m and (st := _ut_status(m.group("rest"))) is not None:
            res.add(m.group("id"), st)
            parsed += 1
            pending = None
            continue
        m = _UT_HEAD.match(line)
        if m:
            pending = m.group("id")
            continue
        if pending is not None:
            m = _UT_DONE.match(line)
            st = _ut_status(m.group("rest")) if m else None
            if st is not None:
                res.add(pending, st)
                parsed += 1
            pending = None
    count_mismatch(res, "unittest Ran", total, parsed)
    return res


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SYMPY_TEST = re.compile(r"^(test_\w*) (.*?)\s*(?:\[(?:OK|FAIL)\])?\s*$")
_SYMPY_WORD = {"ok": TestStatus.PASSED, "F": TestStatus.FAILED, "E": TestStatus.ERROR, "f": TestStatus.XFAIL,
               "X": TestStatus.XPASS, "s": TestStatus.SKIPPED, "w": TestStatus.SKIPPED, "T": TestStatus.SKIPPED,
               "K": TestStatus.SKIPPED}
_SYMPY_IMPORT = re.compile(r"^(\S+\.py)\[\?\]\s+Failed to import")
_SYMPY_DONE = re.compile(r"^=*\s*tests finished: (\d+) passed")


@report_parser()
def parse_sympy_test_log(text: str) -> Result:
    """Parse SymPy's ``bin/test --verbose`` console (module docstring)."""
    res = Result(source="log")
    passed = 0
    total: int | None = None
    for raw in text.splitlines():
        line = _ANSI.sub("", raw)
        m = _SYMPY_IMPORT.match(line)
        if m:
            res.unit_failed(m.group(1))
            continue
        m = _SYMPY_DONE.match(line)
        if m:
            total = (total or 0) + int(m.group(1))
            continue
        m = _SYMPY_TEST.match(line)
        if not m:
            continue
        words = m.group(2).split()
        st = _SYMPY_WORD.get(words[-1]) if words else None
        if st is None:
            continue
        res.add(m.group(1), st)
        passed += st is TestStatus.PASSED
    count_mismatch(res, "sympy tests finished", total, passed)
    return res


PARSERS = {"script_status_log": parse_script_status_log,
           "tcl_helper_log": parse_tcl_helper_log,
           "unittest_log": parse_unittest_log,
           "sympy_test_log": parse_sympy_test_log}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""
