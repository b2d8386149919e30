"""swemint's per-test limit for ``cargo test`` (inside the container): cargo's runner for test
binaries (``CARGO_TARGET_<TRIPLE>_RUNNER``, `agents.ecosystems.rust.cargo_limits.runner_prefix`).

Usage: ``python3 cargo_watchdog.py LIMIT BINARY [ARGS...]`` (cargo appends the binary and its
arguments). libtest has no stable per-test time limit, so a hanging test used to keep the whole
``cargo test`` run until the run limit killed it, with nothing graded. This runner starts the
test binary, passes its output through unchanged, and watches libtest's result lines (``test
<name> ... ok``; the same lines the ``cargo_test`` parser reads). When no test has finished or
started for LIMIT seconds, the tests still running have each run at least LIMIT seconds: the
binary (its process group) is ended, and every test of the binary without a result
(``--list``) gets one:

- a test known to be running -- the one single-threaded libtest announced (``test x ... ``
  without a result), those it warned about (``test x has been running for over 60 seconds``),
  or the only test left -- is ``FAILED``;
- any other (queued behind hanging tests, or running unnoticed) runs again alone (``--exact``)
  under the same limit, at most 4 x LIMIT seconds of such reruns in all; its own status is
  printed, ``FAILED`` when it hangs again or when the budget is spent.

Their ``test <name> ... <status>`` lines and a ``test result:`` line with the binary's totals
follow, so the parser grades the binary's tests in libtest's own ids and its totals check holds;
the runner exits 101 (libtest's failing status) and cargo, run with ``--no-fail-fast``, goes on
with the next binary. A binary whose tests cannot be listed keeps what it printed (the parser
notes the missing result line). A binary that never prints libtest's ``running N tests`` (a
custom harness) runs without the limit. Doc tests do not go through cargo's runner. Standard library
only (python3 >= 3.6).
"""

import os
import re
import select
import signal
import subprocess
import sys
import time

_TEST = re.compile(r"^test (?P<name>.+?) \.\.\. ?(?P<rest>.*)$")
_TEST_INSIDE = re.compile(r"(?:^|(?<=\s))test (?P<name>\S.*?) \.\.\. (?P<st>ok|FAILED|ignored)")
_STATUS = re.compile(r"^(ok|FAILED|ignored(?:, .*)?)$")
_TAIL = re.compile(r"(ok|FAILED|ignored)$")
_WARNED = re.compile(r"^(?:test .+? \.\.\. )?test (?P<name>.+) has been running for over \d+ seconds$")
"""libtest's warning; multi-threaded, after the test's name: ``test x ... test x has been ...``."""
_HEADER = re.compile(r'^(?:running \d+ tests?|\{ ?"type": ?"suite", ?"event": ?"started".*)$')
_LISTED = re.compile(r"^(?P<name>.+): test$")
_VALUE_OPTIONS = {"--test-threads", "--skip", "--logfile", "--format", "--color", "-Z", "--shuffle-seed"}
RERUN_BUDGET = 4
"""Reruns of tests not known to hang stop after this many limits (seconds) in all."""


def _libtest_name(name):
    name = name.strip()
    for suffix in (" - should panic", " - should panic with message"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


class Tracker:
    """The results in a libtest binary's console output, read as the ``cargo_test`` parser reads
    them (`envpool.testrun.polyglot.rust.parse_cargo_test`): `done` (name -> ok | FAILED |
    ignored), `counts` (passed, failed, ignored), `pending` (the test single-threaded libtest
    announced without a result yet), `warned` (tests libtest said run for over 60 s)."""

    def __init__(self):
        self.done = {}
        self.counts = [0, 0, 0]
        self.pending = None
        self.warned = []
        self.skipping = False  # inside the ``failures:`` section (captured output)
        self.libtest = False  # libtest's header (``running N tests``) seen: the limit applies

    def _record(self, name, word):
        word = word.split(",")[0]
        self.done[name] = word
        self.counts[{"ok": 0, "FAILED": 1, "ignored": 2}[word]] += 1
        return True

    def feed(self, line):
        """Read one line; True when it reports a test's start or result (activity)."""
        if _HEADER.match(line):
            self.libtest = True
            return True
        if line.startswith("test result:"):
            self.skipping = False
            return True
        if line.strip() == "failures:":
            self.pending, self.skipping = None, True
            return False
        if self.skipping:
            return False
        w = _WARNED.match(line)
        if w:
            self.warned.append(_libtest_name(w.group("name")))
            return False
        m = _TEST.match(line)
        if m:
            name, rest = _libtest_name(m.group("name")), m.group("rest")
            st = _STATUS.match(rest.strip())
            tail = _TAIL.search(rest)
            if st is not None or tail is not None:
                return self._record(name, st.group(1) if st is not None else tail.group(1))
            self.pending = name
            return True
        m = _TEST_INSIDE.search(line)
        if m:
            return self._record(_libtest_name(m.group("name")), m.group("st"))
        if self.pending is not None:
            st = _STATUS.match(line.strip())
            tail = _TAIL.search(line)
            if st is not None or tail is not None:
                name, self.pending = self.pending, None
                return self._record(name, st.group(1) if st is not None else tail.group(1))
        return False

    def started(self, partial):
        """The test a partial last line announces (``test x ... `` before its result), or None."""
        m = _TEST.match(partial)
        return _libtest_name(m.group("name")) if m and not m.group("rest").strip() else None


def _end(proc):
    """Kill `proc`'s process group (the test binary and what it started) and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def watch(cmd, limit, out, tracker, loose=False):
    """Run `cmd`, copying its stdout to `out` (a binary stream) and feeding `tracker`, until it
    ends or nothing happens for `limit` seconds (no test starts or finishes; with `loose`, no
    output at all) once libtest's header has shown it is a libtest binary (a custom harness,
    ``harness = false``, runs without a limit). Returns (exit status or None when ended for hanging, the unfinished partial
    line)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, start_new_session=True)
    fd = proc.stdout.fileno()
    buf, last, announced = b"", time.monotonic(), None
    try:
        while True:
            ready, _, _ = select.select([fd], [], [], 0.25)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                if out is not None:
                    out.write(chunk)
                    out.flush()
                if loose:
                    last = time.monotonic()
                lines = (buf + chunk).split(b"\n")
                buf = lines.pop()
                for line in lines:
                    if tracker.feed(line.decode("utf-8", "replace").rstrip("\r")):
                        last = time.monotonic()
                start = tracker.started(buf.decode("utf-8", "replace"))
                if start is not None and start != announced:
                    announced, last = start, time.monotonic()
            elif proc.poll() is not None:
                break  # the binary ended; a process it started still holds the pipe
            if tracker.libtest and time.monotonic() - last > limit:
                _end(proc)
                return None, buf.decode("utf-8", "replace")
        return proc.wait(), buf.decode("utf-8", "replace")
    finally:
        proc.stdout.close()


def flags_only(args):
    """`args` without libtest's positional filters and ``--exact`` (a rerun names its one test
    with ``--exact``)."""
    out, i = [], 0
    while i < len(args):
        a = args[i]
        if a.startswith("-") and a != "--exact":
            out.append(a)
            if a in _VALUE_OPTIONS and i + 1 < len(args):
                out.append(args[i + 1])
                i += 1
        i += 1
    return out


def pretty(args):
    """Whether libtest prints its pretty per-test lines for `args` (not ``--quiet`` / ``-q``, not
    ``--format terse|json``)."""
    if "-q" in args or "--quiet" in args:
        return False
    for i, a in enumerate(args):
        value = a.split("=", 1)[1] if a.startswith("--format=") else \
            (args[i + 1] if a == "--format" and i + 1 < len(args) else None)
        if value is not None and value != "pretty":
            return False
    return True


def listed(binary, args, limit):
    """The binary's test names for `args` (``--list``), or None when it cannot list them."""
    proc = subprocess.Popen([binary, *args, "--list"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        raw, _ = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        _end(proc)
        return None
    if proc.returncode != 0:
        return None
    return [m.group("name") for m in map(_LISTED.match, raw.decode("utf-8", "replace").splitlines()) if m]


def rerun(binary, args, name, limit):
    """The status (ok | FAILED | ignored) of test `name` run alone within `limit` seconds."""
    t = Tracker()
    rc, _ = watch([binary, *flags_only(args), "--exact", name], limit, None, t)
    return t.done.get(name, "FAILED") if rc is not None else "FAILED"


def main(argv):
    if len(argv) < 3:
        sys.stderr.write("usage: cargo_watchdog.py LIMIT BINARY [ARGS...]\n")
        return 2
    limit, binary, args = max(1.0, float(argv[1])), argv[2], argv[3:]
    if "--list" in args:
        os.execvp(binary, [binary, *args])
    out = sys.stdout.buffer
    tracker = Tracker()
    began = time.monotonic()
    rc, partial = watch([binary, *args], limit, out, tracker, loose=not pretty(args))
    if rc is not None:
        return rc
    if not pretty(args):  # terse or JSON output: no test names to complete
        out.write(("\nswemint: no output of %s for %g s (the per-test limit): ended\n" % (binary, limit)).encode())
        return 101
    names = listed(binary, args, limit)
    running = [n for n in [tracker.pending, tracker.started(partial), *tracker.warned] if n and n not in tracker.done]
    todo = [n for n in (names or []) if n not in tracker.done]
    todo += [n for n in running if n not in todo]
    known = set(running) | (set(todo) if len(todo) == 1 else set())
    lines, spent = [], 0.0
    for name in todo:
        if name in known or spent > RERUN_BUDGET * limit:
            word = "FAILED"
        else:
            t0 = time.monotonic()
            word = rerun(binary, args, name, limit)
            spent += time.monotonic() - t0
        tracker.counts[{"ok": 0, "FAILED": 1, "ignored": 2}[word]] += 1
        lines.append("test %s ... %s" % (name, word))
    hung = sorted(known & set(todo))
    note = ("swemint: no test of %s finished for %g s (the per-test limit): ended; over the limit: %s; "
            "%d other unfinished test(s) run again alone%s"
            % (binary, limit, ", ".join(hung) or "none known", len(todo) - len(hung),
               "" if names is not None else "; its tests could not be listed"))
    text = ("\n" if partial else "") + note + "\n" + "".join(line + "\n" for line in lines)
    if names is not None:  # else tests queued behind the hang are unknown: the run is not graded
        p, f, i = tracker.counts
        text += ("\ntest result: FAILED. %d passed; %d failed; %d ignored; 0 measured; 0 filtered out; "
                 "finished in %.2fs\n\n" % (p, f, i, time.monotonic() - began))
    out.write(text.encode())
    out.flush()
    return 101


if __name__ == "__main__":
    sys.exit(main(sys.argv))
