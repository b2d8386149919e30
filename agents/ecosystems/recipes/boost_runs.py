"""Run the Boost.Test binaries of CTest tests with Boost.Test's JUnit logger (inside the container;
class S36).

Used by ``cmake_tests.py`` (installed beside it, with ``boost_suites.py``) after its ctest run, so
that a CTest test that is one Boost.Test binary of many test cases has results per test case,
ids in Boost.Test's own form ``suite/sub/case``, instead of one CTest result. For each selected
CTest test whose executable is a Boost.Test binary -- `boost_suites.MARKER` in its file, and
``<exe> --version`` answers ``... Boost version X.Y.Z ...`` with X.Y >= 1.63, the first release
with the JUNIT log format (the probe runs only after the file check, so no other binary is
started for it) -- the test's command runs again in its WORKING_DIRECTORY with its ENVIRONMENT,
its TIMEOUT (else the helper's: Boost.Test has no command-line time limit per test case, only
its ``timeout`` decorator), as the same user as the ctest round, with
``--logger=JUNIT,all,FILE`` (the command's own logger, log format/level/sink and listing options
removed; what follows a bare ``--`` is the module's own and kept), and ``--run_test=F`` when the
run is narrowed to the touched files' units (`boost_suites.narrow`; a command with its own
``--run_test`` keeps it). A test case that crashed the binary (a signal: Boost.Test reports a
``system fatal error`` and aborts the rest of the run) is excluded with ``--run_test=!<path>``
in another round (up to ABORT_ROUNDS more; `ctest_reruns.rounds`). Each round becomes one
section::

    <swemint-boost ctest="NAME" round="N" final="true|false" exit="RC">
    <testsuite ...>...</testsuite>
    </swemint-boost>

(Boost.Test's JUnit without its declaration) appended to the ``--output-junit`` file, or
printed to stdout after ctest's output; ``envpool/testrun/polyglot/boost_junit.py`` reads them.
Standard library only (python3 >= 3.5).
"""

import functools
import re
import xml.etree.ElementTree as ET

import boost_suites  # (installed beside this file)
import ctest_reruns  # (installed beside this file)
from ctest_reruns import log

TAG = "boost"
ABORT_ROUNDS = 3
PROBE_SECONDS = 30
FLOOR = (1, 63)
_VERSION = re.compile(r"Boost version (\d+)\.(\d+)")
_DROP = re.compile(r"^--(?:logger|log_format|log_level|log_sink|list_content|list_labels|help|version|usage)(?:=.*)?$")
_DROP_WITH_VALUE = {"-f", "-l", "-k"}
_RUN_TEST = re.compile(r"^--run_test=|^-t.")
FATAL = "system fatal error"
"""The JUnit ``<error type>`` of a test case a signal stopped (the rest of the run is aborted)."""


def boost_version(exe, cwd, env):
    """(major, minor) of the Boost.Test binary `exe` from ``exe --version``; None when `exe` is
    not one (no marker in the file, no answer, or the probe fails)."""
    out = ctest_reruns.answer(exe, ["--version"], cwd, env, PROBE_SECONDS) if boost_suites.is_boost(exe) else None
    m = _VERSION.search(out or "")
    return (int(m.group(1)), int(m.group(2))) if m and "Boost.Test" in (out or "") else None


def junit_command(cmd, out_file, flt=None, dead=()):
    """`cmd` with Boost.Test's JUnit logger writing to `out_file` (module doc): its own logging
    and listing options removed, ``--run_test=flt`` in place of its own selection when `flt` is
    given, then ``--run_test=!<path>`` for each crashed test case in `dead`."""
    args, own, i = [], [], 1
    rest = cmd[cmd.index("--"):] if "--" in cmd[1:] else []
    head = cmd[:len(cmd) - len(rest)]
    while i < len(head):
        a = head[i]
        i += 1
        if a in _DROP_WITH_VALUE or a == "-t":
            if a == "-t" and i < len(head):
                own.append("--run_test=" + head[i])
            i += 1
        elif _RUN_TEST.match(a):
            own.append(a if a.startswith("--") else "--run_test=" + a[2:])
        elif not _DROP.match(a):
            args.append(a)
    select = ["--run_test=" + flt] if flt else own
    return ([cmd[0]] + args + select + ["--run_test=!" + d for d in dead] + ["--logger=JUNIT,all," + out_file]
            + rest)


def case_path(elem):
    """The path ``suite/sub/case`` of a JUnit ``<testcase>`` of Boost.Test (its ``classname`` is
    the parent suites joined by ``.``, absent for a case of the master suite)."""
    parent = (elem.get("classname") or "").replace(".", "/")
    return (parent + "/" if parent else "") + (elem.get("name") or "")


def crashed_cases(xml):
    """The paths of the test cases a signal stopped (`FATAL`), in order; [] for a report that
    does not parse."""
    try:
        root = ET.fromstring(xml)
    except (ET.ParseError, ValueError):
        return []
    return [case_path(t) for t in root.iter("testcase") if any(e.get("type") == FATAL for e in t.iter("error"))]


def _command(cmd, flt, dead, report):
    return junit_command(cmd, report, flt, dead)


def run_boost(build, names, timeout, prefix, junit, flt=None):
    """Run the Boost.Test binaries of the CTest tests `names` (None: all; module doc), narrowed
    to the filter set `flt` (None: whole) unless a command selects its own units, and append
    their sections to `junit` (None: print them). `prefix`: the command prefix the ctest round
    ran under (``setpriv ...`` when tests refuse root), `timeout`: seconds per binary unless the
    test sets TIMEOUT. Returns how many tests were Boost.Test binaries."""
    sections, n = [], 0
    for name, cmd, cwd, env, tmo in ctest_reruns.framework_tests(build, names, timeout, boost_version, FLOOR,
                                                                 "Boost.Test %d.%d has no JUNIT log format"):
        n += 1
        mine = None if boost_suites.own_filter(cmd) else flt
        with ctest_reruns.report_folder(TAG, prefix) as tmp:
            sections += ctest_reruns.rounds(TAG, name, functools.partial(_command, cmd, mine),
                                            crashed_cases, b"<testsuite", cwd, env, tmo, prefix, tmp, ABORT_ROUNDS)
    ctest_reruns.write_sections(sections, junit)
    if sections:
        log("boost: %d CTest test(s) ran again with Boost.Test's JUnit logger" % n)
    return n
