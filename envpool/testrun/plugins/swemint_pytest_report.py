"""swemint's out-of-tree pytest plugin: exact per-test results as JSON lines.

Load it with ``-p swemint_pytest_report`` (its folder on PYTHONPATH). Environment:

- ``SWEMINT_REPORT``: path of the JSON-lines file to append to (outside the repository). Without
  it the plugin records nothing.
- ``SWEMINT_TEST_TIMEOUT``: optional per-test limit in seconds (float) on the *call* phase,
  enforced with ``signal.setitimer(ITIMER_REAL)``/SIGALRM: the test is reported failed and the
  run goes on. Skipped when another alarm is already pending (e.g. pytest-timeout's), off the
  main thread, or where setitimer does not exist.

Both variables are removed from ``os.environ`` at configure time, so the code under test (and
the subprocesses it starts) neither sees nor inherits them.

Records, one JSON object per line, flushed after each (so a killed run keeps what it wrote):

- ``{"kind": "session_start", "pid", "pytest", "python", "timeout"}``
- ``{"kind": "test", "nodeid", "when", "outcome", "wasxfail"?, "longrepr"?, "duration", "pid"}``
  for every ``pytest_runtest_logreport`` (``when`` in setup/call/teardown, ``outcome`` in
  passed/failed/skipped; ``longrepr`` is a short excerpt of the failure or skip reason).
- ``{"kind": "collect", "nodeid", "fspath", "outcome", "longrepr", "pid"}`` for every
  ``pytest_collectreport`` that did not pass (``outcome`` failed or skipped).
- ``{"kind": "timeout", "nodeid", "seconds", "pid"}`` when the per-test limit fired.
- ``{"kind": "collected", "count", "pid"}`` after collection.
- ``{"kind": "internalerror", "excrepr", "pid"}`` on a pytest internal error.
- ``{"kind": "session_finish", "exitstatus", "counts", "pid"}`` at the end (absent when the run
  was killed).

Compatibility: only hooks that exist since pytest 2.x/3.0 (runtest_logreport, collectreport,
collection_finish, sessionstart/finish, configure, internalerror, runtest_call as an old-style
hookwrapper); no annotations or typing imports; runs on Python 3.6+ with pytest 3.x to 9.x.
Idea as in pytest-dev's own pytest-reportlog, reduced to what grading needs.
"""

import json
import os
import signal
import sys
import threading
import time

import pytest

_REPORT_ENV = "SWEMINT_REPORT"
_TIMEOUT_ENV = "SWEMINT_TEST_TIMEOUT"
_LONGREPR_CHARS = 1200
_TIMEOUT_REPEAT = 5.0  # seconds between repeated alarms when a test swallows the first one


class SwemintTestTimeout(BaseException):
    """Raised inside a test that exceeded SWEMINT_TEST_TIMEOUT (BaseException: not swallowed
    by ``except Exception``)."""


class _Recorder(object):
    def __init__(self, path, timeout):
        self.path = path
        self.timeout = timeout
        self.pid = os.getpid()
        self.counts = {}
        self._fh = None

    def _open(self):
        parent = os.path.dirname(self.path)
        if parent and not os.path.isdir(parent):
            os.makedirs(parent)
        self._fh = open(self.path, "a", encoding="utf-8")

    def emit(self, record):
        record["pid"] = self.pid
        line = json.dumps(record, ensure_ascii=True, sort_keys=True, default=str) + "\n"
        for _attempt in (0, 1):
            try:
                if self._fh is None or self._fh.closed:
                    self._open()
                self._fh.write(line)
                self._fh.flush()
                return
            except (OSError, ValueError):  # fd closed by the code under test: reopen once
                self._fh = None

    def close(self):
        if self._fh is not None:
            try:
                self._fh.close()
            except Exception:
                pass
            self._fh = None


_recorder = None


def _excerpt(report):
    longrepr = getattr(report, "longrepr", None)
    if longrepr is None:
        return None
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # skip: (path, lineno, reason)
        text = str(longrepr[2])
    else:
        try:
            text = report.longreprtext
        except Exception:
            text = str(longrepr)
    if len(text) > _LONGREPR_CHARS:  # keep the end, where the error message is
        text = "..." + text[-_LONGREPR_CHARS:]
    return text


def _fspath(report):
    fspath = getattr(report, "fspath", None)
    if fspath is None:
        return report.nodeid.split("::")[0]
    return str(fspath)


def pytest_configure(config):
    global _recorder
    path = os.environ.pop(_REPORT_ENV, None)
    raw_timeout = os.environ.pop(_TIMEOUT_ENV, None)
    if not path or _recorder is not None:
        return
    timeout = None
    try:
        timeout = float(raw_timeout) if raw_timeout else None
    except ValueError:
        timeout = None
    if timeout is not None and timeout <= 0:
        timeout = None
    _recorder = _Recorder(path, timeout)
    _recorder.emit({
        "kind": "session_start",
        "pytest": getattr(pytest, "__version__", "?"),
        "python": sys.version.split()[0],
        "timeout": timeout,
    })


def pytest_unconfigure(config):
    global _recorder
    if _recorder is not None:
        _recorder.close()
        _recorder = None


def pytest_collection_finish(session):
    if _recorder is not None:
        _recorder.emit({"kind": "collected", "count": len(getattr(session, "items", []) or [])})


def pytest_collectreport(report):
    if _recorder is None or report.outcome == "passed":
        return
    _recorder.emit({
        "kind": "collect",
        "nodeid": report.nodeid,
        "fspath": _fspath(report),
        "outcome": report.outcome,
        "longrepr": _excerpt(report),
    })


def pytest_runtest_logreport(report):
    if _recorder is None:
        return
    record = {
        "kind": "test",
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "duration": round(float(getattr(report, "duration", 0.0) or 0.0), 4),
    }
    if hasattr(report, "wasxfail"):
        record["wasxfail"] = str(report.wasxfail)
    if report.outcome != "passed":
        record["longrepr"] = _excerpt(report)
    key = "%s_%s" % (report.when, report.outcome)
    _recorder.counts[key] = _recorder.counts.get(key, 0) + 1
    _recorder.emit(record)


def pytest_internalerror(excrepr, excinfo):
    if _recorder is not None:
        _recorder.emit({"kind": "internalerror", "excrepr": str(excrepr)[-_LONGREPR_CHARS:]})


def pytest_sessionfinish(session, exitstatus):
    if _recorder is None:
        return
    counts = dict(_recorder.counts)
    counts["testsfailed"] = getattr(session, "testsfailed", None)
    counts["testscollected"] = getattr(session, "testscollected", None)
    _recorder.emit({"kind": "session_finish", "exitstatus": int(exitstatus), "counts": counts})


def _can_arm():
    if _recorder is None or not _recorder.timeout or not hasattr(signal, "setitimer"):
        return False
    if threading.current_thread() is not threading.main_thread():
        return False
    return signal.getitimer(signal.ITIMER_REAL)[0] == 0  # not when another alarm is pending


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if not _can_arm():
        yield
        return
    seconds = _recorder.timeout
    fired = []

    def _on_alarm(signum, frame):
        fired.append(time.time())
        raise SwemintTestTimeout("swemint: test exceeded SWEMINT_TEST_TIMEOUT=%s s" % seconds)

    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds, _TIMEOUT_REPEAT)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if fired:
            _recorder.emit({"kind": "timeout", "nodeid": item.nodeid, "seconds": seconds})
