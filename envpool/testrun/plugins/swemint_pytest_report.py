"""swemint's out-of-tree pytest plugin: exact per-test results, sent to the host as signed frames.

Load it with ``-p swemint_pytest_report`` (its folder on PYTHONPATH). Environment:

- ``SWEMINT_CHANNEL``: a file descriptor number (the runner uses 3) to write the records to, as
  frames of swemint's report channel (``envpool.testrun.channel``). Without it the plugin records
  nothing.
- ``SWEMINT_KEY=stdin``: the first line of stdin is the run's key, in hex. It is read when pytest
  imports this plugin (``-p`` plugins are imported before conftest files and test modules), then
  stdin is pointed at /dev/null. Each frame carries an HMAC-SHA256 chained to the previous one;
  after the sealing ``session_finish`` record the key is forgotten. Without a key the frames
  carry ``-`` (unauthenticated).
- ``SWEMINT_TEST_TIMEOUT``: optional per-test limit in seconds (float) on the *call* phase,
  enforced with ``signal.setitimer(ITIMER_REAL)``/SIGALRM: the test is reported failed and the
  run goes on. Skipped when another alarm is already pending (e.g. pytest-timeout's), off the
  main thread, or where setitimer does not exist.

The variables are removed from ``os.environ`` when the plugin is imported, and the channel's
descriptor is replaced by a non-inheritable copy, so subprocesses of the tests neither see nor
inherit them. None of this hides anything from code running in this same process (see the
module docstring of ``envpool.testrun.channel``).

Records, one JSON object per frame:

- ``{"kind": "session_start", "pid", "pytest", "python", "timeout"}``
- ``{"kind": "test", "nodeid", "when", "outcome", "wasxfail"?, "longrepr"?, "duration", "pid"}``
  for every ``pytest_runtest_logreport`` (``when`` in setup/call/teardown, ``outcome`` in
  passed/failed/skipped; ``longrepr`` is a short excerpt of the failure or skip reason).
- ``{"kind": "collect", "nodeid", "fspath", "outcome", "longrepr", "pid"}`` for every
  ``pytest_collectreport`` that did not pass (``outcome`` failed or skipped).
- ``{"kind": "timeout", "nodeid", "seconds", "pid"}`` when the per-test limit fired.
- ``{"kind": "collected", "count", "pid"}`` after collection.
- ``{"kind": "internalerror", "excrepr", "pid"}`` on a pytest internal error.
- ``{"kind": "session_finish", "exitstatus", "counts", "seal": true, "pid"}`` at the end (absent
  when the run was killed); nothing is written after it.

Compatibility: only hooks that exist since pytest 2.x/3.0 (runtest_logreport, collectreport,
collection_finish, sessionstart/finish, configure, internalerror, runtest_call as an old-style
hookwrapper); no annotations or typing imports; runs on Python 3.6+ with pytest 3.x to 9.x.
Idea as in pytest-dev's own pytest-reportlog, reduced to what grading needs.
"""

import base64
import hashlib
import hmac
import json
import os
import signal
import sys
import threading
import time

import pytest

_CHANNEL_ENV = "SWEMINT_CHANNEL"
_KEY_ENV = "SWEMINT_KEY"
_TIMEOUT_ENV = "SWEMINT_TEST_TIMEOUT"
_PREFIX = b"\x1eSWR1 "
_LONGREPR_CHARS = 1200
_TIMEOUT_REPEAT = 5.0  # seconds between repeated alarms when a test swallows the first one


class SwemintTestTimeout(BaseException):
    """Raised inside a test that exceeded SWEMINT_TEST_TIMEOUT (BaseException: not swallowed
    by ``except Exception``)."""


def _read_key_line(fd):
    """The hex key on the first line of `fd` (at most 256 bytes read), or None."""
    data = b""
    while len(data) < 256 and not data.endswith(b"\n"):
        try:
            chunk = os.read(fd, 256 - len(data))
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    try:
        key = bytearray(bytes.fromhex(data.strip().decode("ascii")))
    except (ValueError, UnicodeDecodeError):
        return None
    return key or None


class _Channel(object):
    """Writes records as chained frames to a private descriptor; forgets the key once sealed."""

    def __init__(self, fd, key):
        self.fd = fd
        self.key = key
        self.seq = 0
        self.prev = b""
        self.sealed = False

    def write(self, record, seal=False):
        if self.sealed:
            return
        payload = json.dumps(record, ensure_ascii=True, sort_keys=True, default=str).encode("ascii")
        if self.key is not None:
            msg = ("%d" % self.seq).encode("ascii") + b"\x00" + self.prev + b"\x00" + payload
            mac = hmac.new(bytes(self.key), msg, hashlib.sha256).hexdigest().encode("ascii")
        else:
            mac = b"-"
        frame = _PREFIX + ("%d " % self.seq).encode("ascii") + mac + b" " + base64.b64encode(payload) + b"\n"
        self.seq += 1
        self.prev = mac
        view = memoryview(frame)
        while len(view):
            try:
                n = os.write(self.fd, view)
            except InterruptedError:
                continue
            except OSError:
                break  # the channel is gone: the host sees an unsealed, short chain
            view = view[n:]
        if seal:
            self.sealed = True
            if self.key is not None:
                for i in range(len(self.key)):
                    self.key[i] = 0
            self.key = None


def _open_channel():
    """The channel named by SWEMINT_CHANNEL (its key from stdin with SWEMINT_KEY=stdin), or None."""
    fd_text = os.environ.pop(_CHANNEL_ENV, None)
    key_source = os.environ.pop(_KEY_ENV, None)
    if not fd_text:
        return None
    try:
        fd = int(fd_text)
        private = os.dup(fd)  # Python >= 3.4: not inherited by subprocesses
        os.close(fd)
    except (ValueError, OSError):
        return None
    key = None
    if key_source == "stdin":
        key = _read_key_line(0)
        try:
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.close(null)
        except OSError:
            pass
    return _Channel(private, key)


_channel = _open_channel()  # at import: before conftest files and the tests are imported


class _Recorder(object):
    def __init__(self, channel, timeout):
        self.channel = channel
        self.timeout = timeout
        self.pid = os.getpid()
        self.counts = {}

    def emit(self, record, seal=False):
        record["pid"] = self.pid
        self.channel.write(record, seal=seal)

    def close(self):
        pass


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
    raw_timeout = os.environ.pop(_TIMEOUT_ENV, None)
    if _channel is None or _recorder is not None:
        return
    timeout = None
    try:
        timeout = float(raw_timeout) if raw_timeout else None
    except ValueError:
        timeout = None
    if timeout is not None and timeout <= 0:
        timeout = None
    _recorder = _Recorder(_channel, timeout)
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
    _recorder.emit({"kind": "session_finish", "exitstatus": int(exitstatus), "counts": counts, "seal": True},
                   seal=True)


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
