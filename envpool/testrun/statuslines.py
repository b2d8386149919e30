"""Status lines: our parsers' verdicts printed in a form SWE-bench's own log parser reads.

SWE-bench harness v5 grades a run by `PARSER_REGISTRY[row.log_parser](log)`. None of its
parsers reads our reports (plugin frames, `go test -json`, Surefire XML, ...) and its pytest
parser cuts ids at the first space. So the eval script of every row we export runs *this* module
inside the image (`--run CMD`): it runs the row's test command itself (`Relay`), passes the
runner's output on to the log through `neutralise`, and once the command is done prints one
line per test:

    swemint-status/1 begin parser=<name>
    --- PASS: <test id> (0s)          PASSED, XPASS
    --- FAIL: <test id> (0s)          FAILED, ERROR, XFAIL, absent but expected, collection errors
    --- SKIP: <test id> (0s)          SKIPPED
    swemint-status/1 end tests=<n>

That is the `--- PASS: name (duration)` form of `go test -v`, which swebench's
`parse_log_gotest` (regex ``^--- (PASS|FAIL|SKIP): (.+) \\((.+)\\)$`` on the stripped line,
swebench 5.0.2 `harness/log_parsers/go.py`) reads back exactly for every id without a newline or
surrounding whitespace: its greedy name group ends at the last `` (``, which is ours. Rows say
`log_parser: parse_log_gotest`, `eval_type: pass_and_fail`, and `status_format:
swemint-status/1`. Every id the row grades (`--known-file`) gets a line, FAIL when the report
lacks it. The runner's lines that look like ours or like a SWE-bench marker reach the log
escaped, so the code under test cannot print a status line or end the graded part early. The
verdict is the minter's rule (`envpool.testrun.crosscheck`; pytest: `pytest_verdict`, polyglot:
`poly_verdict`); a run that fails it prints `render_untrusted`: the reasons, a FAIL line for
every graded id and `>>>>> Tests Errored`. Status mapping as `envpool.grading`: only
PASSED/XPASS pass (an XFAIL is a FAIL line, where swebench would count it as passed).

This module and everything it imports are stdlib only (XML through `xml.etree`):
`build_zipapp()` packs them into one file that runs on the image's `python3` (>= 3.9): carried
by every eval script (`envpool.evalscript.embed_tool`) and put in every environment image at
`TOOL_PATH` (what eval scripts before the `--run` mode call). `python -m envpool.testrun.statuslines --help` runs it
on the host.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from envpool.testrun.outcome import TestStatus

FRAME_PREFIX = "\x1eSWR1 "
"""`envpool.testrun.channel.PREFIX` as text (not imported: this module loads before any other)."""

FORMAT = "swemint-status/1"
"""Name and version of the line format; a row's `status_format`."""
LOG_PARSER = "parse_log_gotest"
"""The swebench parser (`PARSER_REGISTRY` name) that reads the lines."""
TOOL_PATH = "/opt/swemint/bin/swemint-status.pyz"
"""Where the zipapp lives in every environment image."""
TESTS_ERRORED = ">>>>> Tests Errored"
"""swebench's marker of a run that must not be graded (`harness/constants` TESTS_ERROR)."""

_WORD = {TestStatus.PASSED: "PASS", TestStatus.XPASS: "PASS", TestStatus.SKIPPED: "SKIP",
         TestStatus.FAILED: "FAIL", TestStatus.ERROR: "FAIL", TestStatus.XFAIL: "FAIL"}


def status_line(test_id: str, status: TestStatus | None) -> str | None:
    """One `--- WORD: id (0s)` line (None: absent -> FAIL). Returns None for an id the format
    cannot carry (a newline in it, or whitespace at either end)."""
    if not test_id or "\n" in test_id or "\r" in test_id or test_id != test_id.strip():
        return None
    return f"--- {_WORD.get(status, 'FAIL') if status is not None else 'FAIL'}: {test_id} (0s)"


def render(statuses: dict[str, TestStatus], collection_errors: Iterable[str] = (),
           known: Iterable[str] = (), parser: str = "") -> str:
    """The status block for one run: every parsed test, every collection error (as FAIL), then
    every `known` id the report lacks (FAIL), sorted within each group."""
    lines = [f"{FORMAT} begin parser={parser}"]
    seen = set()
    for tid in sorted(statuses):
        line = status_line(tid, statuses[tid])
        if line:
            lines.append(line)
            seen.add(tid)
    for label in sorted(set(collection_errors) - set(statuses)):
        line = status_line(label, TestStatus.ERROR)
        if line:
            lines.append(line)
            seen.add(label)
    for tid in sorted(set(known) - seen):
        line = status_line(tid, None)
        if line:
            lines.append(line)
    lines.append(f"{FORMAT} end tests={len(lines) - 1}")
    return "\n".join(lines) + "\n"


def read_status_lines(log: str) -> dict[str, str]:
    """Test id -> "PASS" / "FAIL" / "SKIP" from the status lines in `log` (later lines win, as
    in swebench's parser). The inverse of `render`, for tests and `swemint eval`."""
    import re

    out: dict[str, str] = {}
    for line in log.split("\n"):
        m = re.match(r"^--- (PASS|FAIL|SKIP): (.+) \((.+)\)$", line.strip())
        if m:
            out[m.group(2)] = m.group(1)
    return out


def _read(path: str | None, limit: int | None = None) -> bytes:
    if not path:
        return b""
    try:
        with open(path, "rb") as f:
            return f.read() if limit is None else f.read(limit + 1)
    except OSError:
        return b""


# -- the runner's output on its way to the log ---------------------------------------------------

ESCAPE = "swemint-escaped| "
"""Prefix of a line of the runner's output that could pass for a status line or a marker."""
_MARKER_RUN = re.compile(r">{5,}")


def neutralise(line: str) -> str:
    """`line` (one line, no newline) as it may enter the harness's log: a line that swebench or
    we could read as ours -- a SWE-bench marker (`>>>>> ...`: swebench finds its markers as
    *substrings* anywhere in the log, so every run of five or more `>` is broken up), a
    `--- PASS|FAIL|SKIP:` line (`parse_log_gotest` matches the stripped line), or a
    `swemint-status/` line -- gets `ESCAPE` in front; other lines are unchanged."""
    stripped = line.strip()
    if ">>>>>" in line:
        return ESCAPE + _MARKER_RUN.sub(lambda m: " ".join(m.group()), line)
    if stripped.startswith(("--- ", FORMAT)):
        return ESCAPE + line
    return line


class Relay:
    """Run a shell command with stdout and stderr on one pipe; forward its output, line by line
    through `neutralise`, to `out` as it arrives, and keep what grading needs in memory: the
    plugin's frames (`frames`, at most `frame_cap` bytes, else `frames_truncated`) and the rest
    of the console (`console`: head and tail, `console_cap` bytes in all). Lines are split as
    swebench reads the log (universal newlines: `\\n`, `\\r\\n`, `\\r`); bytes that are not
    UTF-8 are replaced. The command's stdin is /dev/null (no key: its frames are unsigned).
    `run()` returns the exit code; `held_open` is True when the pipe was still open `grace`
    seconds after the command exited (a process it left behind holds it)."""

    def __init__(self, command: str, out, *, console_cap: int = 16 << 20, frame_cap: int = 64 << 20,
                 grace: float = 10.0):
        self.command, self.out, self.grace = command, out, grace
        self.console_cap, self.frame_cap = console_cap, frame_cap
        self.head: list[str] = []
        self.tail: list[str] = []
        self.head_size = self.tail_size = 0
        self.dropped = 0
        self.frames: list[str] = []
        self.frame_size = 0
        self.frames_truncated = False
        self.held_open = False

    def _keep(self, text: str) -> None:
        if self.head_size < self.console_cap // 4:
            self.head.append(text)
            self.head_size += len(text)
            return
        self.tail.append(text)
        self.tail_size += len(text)
        while self.tail_size > self.console_cap - self.head_size and len(self.tail) > 1:
            gone = self.tail.pop(0)
            self.tail_size -= len(gone)
            self.dropped += len(gone)

    def _line(self, line: str) -> None:
        at = line.find(FRAME_PREFIX)
        if at >= 0:
            frame = line[at:]
            if self.frame_size + len(frame) > self.frame_cap:
                self.frames_truncated = True
            else:
                self.frames.append(frame)
                self.frame_size += len(frame) + 1
            line = line[:at]
            if not line:
                return
        self._keep(line + "\n")
        if not self.held_open:  # once given up on, a left-behind writer reaches the log no more
            self.out.write((neutralise(line) + "\n").encode("utf-8", "replace"))

    def _pump(self, fd: int) -> None:
        import codecs
        import io

        dec = io.IncrementalNewlineDecoder(codecs.getincrementaldecoder("utf-8")("replace"), translate=True)
        pending = ""
        while True:
            chunk = os.read(fd, 1 << 16)
            text = dec.decode(chunk, final=not chunk)
            pending += text
            lines = pending.split("\n")
            pending = lines.pop()
            for line in lines:
                self._line(line)
            if not chunk:
                break
            self.out.flush()
        if pending:
            self._line(pending)
        self.out.flush()

    def run(self) -> int:
        import subprocess
        import threading

        proc = subprocess.Popen(["bash", "-c", self.command], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        pump = threading.Thread(target=self._pump, args=(proc.stdout.fileno(),), daemon=True)
        pump.start()
        code = proc.wait()
        pump.join(self.grace)
        self.held_open = pump.is_alive()
        return code

    @property
    def console(self) -> str:
        """The console output kept (frames removed), with a marker where the middle was dropped."""
        cut = [f"[swemint-status: {self.dropped} characters of output not kept]\n"] if self.dropped else []
        return "".join(self.head + cut + self.tail)

    def frame_bytes(self) -> bytes:
        """The frames, one a line, for `channel.read_channel`."""
        return "".join(f + "\n" for f in self.frames).encode("ascii", "replace")


# -- verdicts --------------------------------------------------------------------------------------

def pytest_parts(report: bytes, junit: bytes, log: bytes, test_files: Sequence[str] = ()):
    """(statuses, collection errors, source) from our plugin's JSON lines, else pytest's JUnit
    XML, else the `-rA` log: the first that shows a test or a collection error wins. Kept for
    eval scripts exported before `swemint-status/1` runs the tests itself (`Relay`); those take
    no cross-check, see `pytest_verdict`."""
    from envpool.testrun import parsers

    candidates = []
    if report:
        candidates.append((parsers.plugin_parts(report), "plugin"))
    if junit:
        candidates.append((parsers.junit_parts(junit, known_files=list(test_files) or None), "junit"))
    candidates.append((parsers.log_parts(log), "log"))
    for (statuses, errors, _code), source in candidates:
        if statuses or errors:
            return statuses, errors, source
    return {}, [], "none"


def pytest_verdict(relay: Relay, exit_code: int, junit: bytes, test_files: Sequence[str] = ()):
    """(statuses, collection errors, problems) of one pytest run the relay carried: the results are
    the plugin's records from the frames in the output (required: a run without them is not
    graded), checked by the minter's rule (`crosscheck.findings`: channel chain and seal, exit
    status against the results and against the session's own, collected against reported, and
    the JUnit XML and the `-rA` summary against the records), plus the output held open."""
    from envpool.testrun import channel, crosscheck, parsers

    chan = channel.read_channel(relay.frame_bytes(), None, exclusive=False, truncated=relay.frames_truncated)
    records = chan.records
    statuses, errors, _ = parsers.records_parts(records)
    finish = next((r for r in reversed(records) if r.get("kind") == "session_finish"), None)
    runner_exit = finish.get("exitstatus") if finish and isinstance(finish.get("exitstatus"), int) else None
    counts = [r.get("count") for r in records if r.get("kind") == "collected"]
    loaded = any(r.get("kind") == "session_start" for r in records)
    others = {}
    if junit:
        others["junit"] = parsers.junit_parts(junit, known_files=list(test_files) or None)[0]
    others["log"] = parsers.log_parts(relay.console)[0]
    found = crosscheck.findings(statuses, errors, exit_code=exit_code, runner_exit=runner_exit,
                                session_finished=chan.sealed if loaded else None,
                                collected=counts[-1] if counts and isinstance(counts[-1], int) else None,
                                tampered=chan.tampered, report_too_large=relay.frames_truncated,
                                others={k: v for k, v in others.items() if v}, pytest_codes=True)
    problems = [("tamper: " if t else "") + m for _, m, t in found]
    if not loaded and not chan.tampered:
        problems.append("no report from the pytest plugin in the output (it did not load, or pytest never started)")
    if relay.held_open:
        problems.append(HELD_OPEN)
    return statuses, errors, problems


HELD_OPEN = "tamper: a process kept the test command's output open after the command exited"


def poly_parts(parser: str, raw: bytes, options: dict | None = None, known: Sequence[str] = ()):
    """(statuses, collection errors, anomalies) of polyglot parser `parser` on `raw`."""
    from envpool.testrun.registry import PARSERS

    opts = dict(options or {})
    if known:
        opts["known_tests"] = list(known)
    res = PARSERS[parser].run(raw, **opts)
    return res.statuses, res.collection_errors, list(res.anomalies)


def poly_verdict(parser: str, raw: bytes, options: dict | None, known: Sequence[str], *, too_large: bool,
                 held_open: bool = False):
    """(statuses, collection errors, problems) of a polyglot run: the parser's own checks and
    the rule of `envpool.evaluation.run_report_command` (`crosscheck.findings`; no test and no
    unit that failed to build is no report)."""
    from envpool.testrun import crosscheck

    statuses, errors, anomalies = poly_parts(parser, b"" if too_large else raw, options, known)
    found = crosscheck.findings(statuses, errors, parser_anomalies=anomalies, report_too_large=too_large)
    problems = [("tamper: " if t else "") + m for _, m, t in found]
    if not statuses and not errors and not too_large:
        problems.append("the report shows no test")
    if held_open:
        problems.append(HELD_OPEN)
    return statuses, errors, problems


def render_untrusted(known: Iterable[str], problems: Sequence[str], parser: str = "") -> str:
    """The block of a run that must not be graded: the reasons, a FAIL line for every graded id
    (none passes), and swebench's `>>>>> Tests Errored` (it refuses a log holding that marker
    anywhere, even after a forged end marker)."""
    lines = [f"{FORMAT} untrusted parser={parser}: {'; '.join(problems)[:2000]}"]
    lines += [line for line in (status_line(t, None) for t in sorted(set(known))) if line]
    lines += [f"{FORMAT} end tests={len(lines) - 1}", TESTS_ERRORED]
    return "\n".join(lines) + "\n"


def _preload() -> None:
    """Import everything the verdict needs before the code under test runs: afterwards nothing is
    read from the zipapp or the standard library on disk, which that code could replace."""
    import base64  # noqa: F401
    import binascii  # noqa: F401
    import codecs  # noqa: F401
    import hashlib  # noqa: F401
    import hmac  # noqa: F401
    import subprocess  # noqa: F401
    import threading  # noqa: F401
    import xml.etree.ElementTree as ET

    from envpool.testrun import channel, crosscheck, parsers  # noqa: F401
    from envpool.testrun.registry import PARSERS  # noqa: F401 - every parser module

    ET.fromstring(b"<a/>")  # loads pyexpat


def main(argv: Sequence[str] | None = None) -> int:
    """`swemint-status.pyz KIND ...`: print the status block of one run.

    With `--run CMD` (what eval scripts do) the tool runs the test command itself (`Relay`): its
    output reaches the log neutralised, the verdict comes from what the tool saw, and the block
    is printed after the command and everything it started is done; the exit status is the
    command's (pytest) or 0 (poly). Without `--run` it reads the files given (older scripts).
    An untrusted run prints `render_untrusted` (and, without `--run`, exits 3)."""
    ap = argparse.ArgumentParser(prog="swemint-status", description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=["pytest", "poly", "reset-tests"],
                    help="reset-tests: every test path of the tree that differs from HEAD back to HEAD "
                         "(envpool.testpaths.reset_main), before a test_patch is applied")
    ap.add_argument("--run", help="the test command (bash), run by the tool with its output relayed")
    ap.add_argument("--parser", default="pytest_plugin", help="parser name (a key of envpool.testrun.registry.PARSERS)")
    ap.add_argument("--options", default="{}", help="parser options as a JSON object")
    ap.add_argument("--input", help="poly: the runner's report file (default: the command's output)")
    ap.add_argument("--report", help="pytest without --run: the plugin's JSON lines")
    ap.add_argument("--junit", help="pytest: the JUnit XML")
    ap.add_argument("--log", help="pytest without --run: the console log")
    ap.add_argument("--test-files", default="", help="pytest: test files, comma-separated")
    ap.add_argument("--known-file", help="ids graded by the row, one per line")
    ap.add_argument("--report-cap", type=int, default=64 << 20, help="bytes of a report file read at most")
    ap.add_argument("--language", default="", help="reset-tests: the row's language (its rule groups; none: all)")
    ap.add_argument("--keep", default="[]", help="reset-tests: paths left as they are (a JSON list)")
    ap.add_argument("--root", default="/testbed", help="reset-tests: the git work tree")
    a = ap.parse_args(argv)
    if a.kind == "reset-tests":
        from envpool.testpaths import reset_main

        return reset_main(a.language or None, json.loads(a.keep), a.root)
    known = [k for k in _read(a.known_file).decode("utf-8", "replace").split("\n") if k.strip()]
    files = [f for f in a.test_files.split(",") if f]
    out = sys.stdout.buffer
    code = 0
    if a.run is not None:
        _preload()
        if a.input:
            try:
                os.unlink(a.input)  # a stale report is never read
            except OSError:
                pass
        relay = Relay(a.run, out)
        code = relay.run()
        if a.kind == "pytest":
            name = "pytest_channel"
            statuses, errors, problems = pytest_verdict(relay, code, _read(a.junit, a.report_cap), files)
        else:
            name = a.parser
            raw = _read(a.input, a.report_cap) if a.input else relay.console.encode("utf-8", "replace")
            if a.input:  # the report, as the runner wrote it, into the log (neutralised)
                for line in raw.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n").split("\n"):
                    out.write((neutralise(line) + "\n").encode("utf-8", "replace"))
            too_large = len(raw) > a.report_cap or (not a.input and relay.dropped > 0)
            statuses, errors, problems = poly_verdict(a.parser, raw, json.loads(a.options), known,
                                                      too_large=too_large, held_open=relay.held_open)
            code = 0
    elif a.kind == "pytest":
        statuses, errors, source = pytest_parts(_read(a.report), _read(a.junit), _read(a.log), files)
        problems = [] if statuses or errors else ["no test result in the plugin report, JUnit XML or log"]
        name = f"pytest_{source}"
    else:
        statuses, errors, problems = poly_parts(a.parser, _read(a.input), json.loads(a.options), known)
        name = a.parser
        if not statuses and not errors and not problems:
            problems = ["the report shows no test"]
    if problems:
        out.write(render_untrusted(set(known) | set(statuses), problems, name).encode("utf-8", "replace"))
        out.flush()
        return code if a.run is not None else 3
    out.write(render(statuses, errors, known, name).encode("utf-8", "replace"))
    out.flush()
    return code


def _package_files() -> dict[str, bytes]:
    """Archive name -> source of every module the tool imports (envpool's parsers, the test-path
    rules and their reader `envpool.testpaths`, with the rules as JSON)."""
    root = Path(__file__).resolve().parents[2]  # the folder holding envpool/
    names = ["envpool/__init__.py", "envpool/testrun/__init__.py", "envpool/testrun/outcome.py",
             "envpool/testrun/parsers.py", "envpool/testrun/statuslines.py", "envpool/testrun/channel.py",
             "envpool/testrun/crosscheck.py", "envpool/testrun/registry.py", "envpool/testpaths.py"]
    names += sorted(str(p.relative_to(root)) for p in (root / "envpool/testrun/polyglot").glob("*.py"))
    from envpool.testpaths import RULES_JSON, packaged_rules

    files = {n: (root / n).read_bytes() for n in names}
    files[f"envpool/{RULES_JSON}"] = json.dumps(packaged_rules(), sort_keys=True).encode()  # no YAML reader there
    return files


def build_zipapp() -> bytes:
    """The tool as one zipapp (bytes): `python3 swemint-status.pyz ...` runs `main`. Its
    content is deterministic (fixed timestamps), so images built from it hash the same."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        entries = {"__main__.py": b"import sys\nfrom envpool.testrun.statuslines import main\n"
                                  b"sys.exit(main())\n", **_package_files()}
        for name in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, entries[name])
    return b"#!/usr/bin/env python3\n" + buf.getvalue()


if __name__ == "__main__":
    sys.exit(main())
