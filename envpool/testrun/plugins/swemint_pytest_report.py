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
- ``{"kind": "tamper", "what", "at", "detail", "pid"}`` when the tripwire (below) finds pytest's
  or pluggy's report path, or this plugin, replaced in-process; ``what`` lists module.qualname of
  each replaced object (each reported once), ``at`` the test node id or ``session_finish``.
- ``{"kind": "session_finish", "exitstatus", "counts", "seal": true, "pid"}`` at the end (absent
  when the run was killed); nothing is written after it.

Compatibility: only hooks that exist since pytest 2.x/3.0 (runtest_logreport, collectreport,
collection_finish, sessionstart/finish, configure, internalerror, runtest_protocol, runtest_call as
an old-style hookwrapper); no annotations or typing imports; runs on Python 3.6+ with pytest 3.x to 9.x.
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


# -- tripwire: the code under test rewiring pytest in-process ---------------------------------
#
# A patch can make the package under test, when the tests import it, replace what a report
# passes through (e.g. wrap TestReport.from_item_and_call so that failures come out passed): no
# test file is touched and every report source agrees. The identity of those internals is
# taken when this plugin is imported (``-p`` plugins load after pytest's own modules and before
# entry-point plugins, conftest files, test modules and the code under test) and compared at
# every ``pytest_runtest_logreport`` and at ``pytest_sessionfinish``. A difference at session
# end, or at a report of a test that does not use the ``monkeypatch`` fixture (pytest's own suite
# patches internals inside such tests and restores them), is sent as a ``tamper`` record: the
# host refuses to grade the run. It catches code that rewires these internals and leaves them
# rewired; code that patches this check too, or restores before it runs, is not caught.

_MISSING = object()
_UNREADABLE = object()

# module -> attribute paths ("Class.attr" looks the attribute up along the class's MRO, without
# running descriptors). Names absent in a pytest/pluggy version stay absent and compare equal.
_WATCHED = (
    ("_pytest.reports", (
        "TestReport", "BaseReport", "CollectReport", "TestReport.from_item_and_call", "TestReport.__init__",
        "TestReport.__new__", "TestReport.__setattr__", "TestReport.__getattribute__", "TestReport.__getattr__",
        "BaseReport.outcome", "BaseReport.passed", "BaseReport.failed", "BaseReport.skipped",
        "BaseReport.longreprtext", "BaseReport.when", "CollectReport.__init__",
        "pytest_report_to_serializable", "pytest_report_from_serializable")),
    ("_pytest.runner", (
        "TestReport", "CallInfo", "CallInfo.from_call", "CallInfo.__init__", "call_and_report",
        "call_runtest_hook", "runtestprotocol", "check_interactive_exception", "pytest_runtest_protocol",
        "pytest_runtest_makereport", "pytest_runtest_setup", "pytest_runtest_call", "pytest_runtest_teardown",
        "SetupState.setup", "SetupState.teardown_exact", "SetupState.prepare")),
    ("_pytest.python", (
        "pytest_pyfunc_call", "Function", "Function.runtest", "Function.setup", "PyobjMixin.obj")),
    ("_pytest.unittest", (
        "TestCaseFunction", "TestCaseFunction.runtest", "TestCaseFunction.addError", "TestCaseFunction.addFailure",
        "TestCaseFunction.addSkip", "TestCaseFunction.addExpectedFailure", "TestCaseFunction.addUnexpectedSuccess",
        "TestCaseFunction.addSuccess", "TestCaseFunction._addexcinfo", "pytest_runtest_makereport")),
    ("_pytest.outcomes", (
        "fail", "skip", "xfail", "exit", "importorskip", "fail.Exception", "skip.Exception", "xfail.Exception",
        "OutcomeException", "Failed", "Skipped", "XFailed", "Exit")),
    ("_pytest.skipping", (
        "pytest_runtest_setup", "pytest_runtest_call", "pytest_runtest_makereport", "pytest_report_teststatus",
        "evaluate_skip_marks", "evaluate_xfail_marks", "MarkEvaluator")),
    ("_pytest.main", (
        "pytest_runtestloop", "Session.pytest_runtest_logreport", "Session.pytest_collectreport")),
    ("_pytest.terminal", (
        "TerminalReporter", "TerminalReporter.pytest_runtest_logreport", "TerminalReporter.pytest_sessionfinish",
        "TerminalReporter.pytest_terminal_summary", "TerminalReporter.summary_failures",
        "TerminalReporter.summary_errors", "TerminalReporter.summary_stats", "TerminalReporter.short_test_summary",
        "TerminalReporter.build_summary_stats_line", "TerminalReporter.summary_passes",
        "build_summary_stats_line", "pytest_report_teststatus")),
    ("_pytest.junitxml", ("LogXML.pytest_runtest_logreport", "LogXML.pytest_sessionfinish")),
    ("_pytest.assertion.rewrite", (
        "AssertionRewritingHook.exec_module", "AssertionRewritingHook.load_module", "rewrite_asserts")),
    ("pytest", ("fail", "skip", "xfail", "exit")),
    ("pluggy._callers", ("_multicall", "_Result.get_result", "_Result.force_result")),
    ("pluggy.callers", ("_multicall", "_Result.get_result", "_Result.force_result")),
    ("pluggy._result", ("Result.get_result", "Result.force_result", "_Result.get_result")),
    ("pluggy._manager", ("_multicall", "PluginManager._hookexec")),
    ("pluggy.manager", ("_multicall", "PluginManager._hookexec")),
    ("pluggy._hooks", ("HookCaller.__call__", "_HookCaller.__call__", "HookCaller.call_historic")),
    ("pluggy._caller", ("HookCaller.__call__",)),
    ("pluggy.hooks", ("_HookCaller.__call__",)),
    ("pluggy", ("PluginManager._hookexec", "_MultiCall.execute", "_HookCaller.__call__")),
    ("_pytest.vendored_packages.pluggy", ("PluginManager._hookexec", "_MultiCall.execute", "_HookCaller.__call__",
                                          "_CallOutcome.get_result", "_CallOutcome.force_result")),
)

# hooks whose implementations a report passes through (their registered functions are watched)
_WATCHED_HOOKS = (
    "pytest_runtest_protocol", "pytest_runtest_setup", "pytest_runtest_call", "pytest_runtest_teardown",
    "pytest_runtest_makereport", "pytest_runtest_logreport", "pytest_report_teststatus", "pytest_pyfunc_call",
    "pytest_runtestloop", "pytest_sessionfinish", "pytest_terminal_summary")


def _lookup(obj, name):
    """`obj`'s attribute `name` without running descriptors or ``__getattr__`` (a module's or an
    instance's dict, then along the class MRO); _MISSING when absent. Never raises."""
    try:
        if not isinstance(obj, type):
            d = getattr(obj, "__dict__", None)
            if isinstance(d, dict) and name in d:
                return d[name]
            if type(obj).__name__ == "module":
                return _MISSING
            obj = type(obj)
        for klass in type.__dict__["__mro__"].__get__(obj):
            d = type.__dict__["__dict__"].__get__(klass)
            if name in d:
                return d[name]
        return _MISSING
    except Exception:
        return _UNREADABLE


def _resolve(root, path):
    obj = root
    for part in path.split("."):
        if obj is _MISSING or obj is _UNREADABLE:
            return obj
        obj = _lookup(obj, part)
    return obj


def _hookimpls(caller):
    try:
        get = getattr(caller, "get_hookimpls", None)
        if get is not None:
            return list(get())
        return list(getattr(caller, "_wrappers", [])) + list(getattr(caller, "_nonwrappers", []))
    except Exception:
        return []


class _Tripwire(object):
    """Identities taken once (module attributes at import, the plugin manager's at session
    start); `changed()` names what differs now."""

    def __init__(self):
        self.watched = []  # (label, root, path, identity)
        self.hooks = []  # (hook caller, [(label, impl, function)])
        self.reported = set()
        for modname, paths in _WATCHED:
            module = sys.modules.get(modname)
            if module is None:
                continue
            for path in paths:
                self.watched.append((modname + "." + path, module, path, _resolve(module, path)))
        me = sys.modules.get(__name__)
        if me is not None:
            for path in ("pytest_runtest_logreport", "pytest_sessionfinish", "pytest_configure",
                         "pytest_runtest_protocol", "_Channel", "_Channel.write", "_Recorder", "_Recorder.emit",
                         "_Tripwire.changed", "_Tripwire.check", "_check_tripwire", "_channel", "_lookup", "_resolve"):
                self.watched.append((__name__ + "." + path, me, path, _resolve(me, path)))

    def add_manager(self, pm):
        """The plugin manager's call path and the functions registered for the report hooks."""
        for path in ("_inner_hookexec", "_hookexec", "hook"):
            self.watched.append(("pluginmanager." + path, pm, path, _resolve(pm, path)))
        relay = _lookup(pm, "hook")
        for name in _WATCHED_HOOKS:
            caller = _lookup(relay, name)
            if caller is _MISSING or caller is _UNREADABLE:
                continue
            self.watched.append(("hook." + name, relay, name, caller))
            for path in ("_hookexec", "__call__"):
                self.watched.append(("hook.%s.%s" % (name, path), caller, path, _lookup(caller, path)))
            impls = [("hook.%s[%s]" % (name, getattr(impl, "plugin_name", "?")), impl, getattr(impl, "function", None))
                     for impl in _hookimpls(caller)]
            self.hooks.append((caller, impls))

    def changed(self):
        out = []
        for label, root, path, ident in self.watched:
            if _resolve(root, path) is not ident:
                out.append(label)
        for caller, impls in self.hooks:
            now = set(id(i) for i in _hookimpls(caller))
            for label, impl, function in impls:
                if id(impl) not in now:
                    out.append(label + " (removed)")
                elif getattr(impl, "function", None) is not function:
                    out.append(label)
        return out

    def check(self, where, exempt):
        """The changes not yet reported, unless `exempt` (then nothing is reported now)."""
        try:
            found = self.changed()
        except Exception as e:  # never break the run; the failure itself is a finding
            found = ["tripwire check failed: %s" % type(e).__name__]
        if exempt or not found:
            return []
        new = [n for n in found if n not in self.reported]
        self.reported.update(new)
        return new


_tripwire = None  # made at the end of this module, once every function it watches exists
_current = {"item": None}


def _uses_monkeypatch(item):
    try:
        return "monkeypatch" in (getattr(item, "fixturenames", None) or ())
    except Exception:
        return False


def _check_tripwire(where, exempt=False):
    if _tripwire is None or _recorder is None:
        return
    new = _tripwire.check(where, exempt)
    if new:
        _recorder.emit({"kind": "tamper", "what": new, "at": where,
                        "detail": "pytest internals a report passes through were replaced in-process"})


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


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    if _tripwire is not None and _recorder is not None:
        try:
            _tripwire.add_manager(session.config.pluginmanager)
        except Exception:
            pass


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    _current["item"] = item


def pytest_runtest_logreport(report):
    if _recorder is None:
        return
    item = _current["item"]
    exempt = item is not None and getattr(item, "nodeid", None) == report.nodeid and _uses_monkeypatch(item)
    _check_tripwire(report.nodeid, exempt)
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
    _check_tripwire("session_finish")
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


_tripwire = _Tripwire() if _channel is not None else None
