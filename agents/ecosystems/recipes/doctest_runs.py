"""Run the doctest binaries of CTest tests with doctest's XML reporter (inside the container).

Used by ``cmake_tests.py`` (installed beside it) after its ctest run, so that a doctest binary's
results are per test case and subcase instead of one CTest result. For each selected CTest test
whose command's executable is a doctest binary -- its file holds doctest's ``doctest version
is`` string and ``<exe> --version`` answers ``[doctest] doctest version is "X.Y.Z"`` (the probe
runs only after the file check, so no other test binary is ever started for it) -- the test's
command runs again in its WORKING_DIRECTORY with its ENVIRONMENT, its TIMEOUT (else the
helper's), as the same user as the ctest round, with ``--reporters=xml --out=FILE`` (the
command's own reporter, output, success and quiet options removed; doctest >= 2.3 has the XML
reporter). A run that crashed inside a test case (doctest reports ``<Exception crash="true">``
and never runs the test cases after it) or was cut off runs again with those test cases added to
``--test-case-exclude`` (merged with the command's own; up to ABORT_ROUNDS more rounds). Each
round becomes one section::

    <swemint-doctest ctest="NAME" round="N" final="true|false" exit="RC">
    <doctest ...>...</doctest>
    </swemint-doctest>

(doctest's XML without its declaration) appended to the ``--output-junit`` file, or printed to
stdout after ctest's output; ``envpool/testrun/polyglot/doctest_sections.py`` reads them. What
it shares with ``catch2_runs.py`` is in ``ctest_reruns.py`` (installed beside it). Standard
library only (python3 >= 3.5).
"""

import os
import re
import xml.etree.ElementTree as ET

import ctest_reruns  # (installed beside this file)
from ctest_reruns import log

TAG = "doctest"
ABORT_ROUNDS = 3
MARKER = b"doctest version is"
_VERSION = re.compile(r'\[doctest\] doctest version is "(\d+)\.(\d+)')
_OWN_OPTION = re.compile(r"^--?(?:dt-)?(?:r|reporters|o|out|s|success|q|quiet)(?:=.*)?$")
_EXCLUDE = re.compile(r"^--?(?:dt-)?(?:tce|test-case-exclude)=(.*)$")
PROBE_SECONDS = 30


def doctest_version(exe, cwd, env):
    """(major, minor) of the doctest binary `exe` from ``exe --version``; None when `exe` is
    not one (no marker in the file, no answer, or the probe fails)."""
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK) and ctest_reruns.has_marker(exe, MARKER)):
        return None
    m = _VERSION.search(ctest_reruns.answer(exe, ["--version"], cwd, env, PROBE_SECONDS) or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def filter_value(name):
    """A doctest filter matching the test case `name`: its commas (the filter separator; only
    newer doctest releases accept ``\\,``) and backslashes become the one-character wildcard."""
    return re.sub(r"[,\\]", "?", name)


def xml_command(cmd, out_file, exclude):
    """`cmd` with doctest's XML reporter writing to `out_file`, the test cases `exclude` added
    to its ``--test-case-exclude`` (merged with the command's own)."""
    args, own = [], []
    for a in cmd[1:]:
        m = _EXCLUDE.match(a)
        if m:
            own.append(m.group(1))
        elif not _OWN_OPTION.match(a):
            args.append(a)
    excl = [v for v in own if v] + [filter_value(n) for n in exclude]
    more = ["--test-case-exclude=" + ",".join(excl)] if excl else []
    return [cmd[0]] + args + more + ["--reporters=xml", "--out=" + out_file]


def crashed_cases(xml):
    """Test case names whose run crashed (``<Exception crash="true">``) or was cut off (the
    document ends inside a test case), in order."""
    parser = ET.XMLPullParser(events=("start", "end"))
    out, current, done = [], None, False
    try:
        parser.feed(xml)
        parser.close()
        done = True
    except (ET.ParseError, ValueError, LookupError):  # cut short, or bytes expat refuses
        pass
    for event, elem in parser.read_events():
        if elem.tag == "TestCase":
            current = elem.get("name", "") if event == "start" else None
        elif event == "end" and elem.tag == "Exception" and elem.get("crash") == "true" and current is not None:
            if current not in out:
                out.append(current)
    if not done and current is not None and current not in out:
        out.append(current)
    return out


def rounds(name, cmd, cwd, env, timeout, prefix, tmp):
    """The sections (bytes) of one doctest binary: rounds until no new test case crashes
    (`ctest_reruns.rounds` with doctest's XML command and crash reading)."""
    return ctest_reruns.rounds(TAG, name, lambda dead, report: xml_command(cmd, report, dead), crashed_cases,
                               b"<doctest", cwd, env, timeout, prefix, tmp, ABORT_ROUNDS)


def run_doctests(build, names, timeout, prefix, junit):
    """Run the doctest binaries of the CTest tests `names` (None: all; module doc) and append
    their sections to `junit` (None: print them). `prefix`: the command prefix the ctest round
    ran under (``setpriv ...`` when tests refuse root), `timeout`: seconds per binary unless
    the test sets TIMEOUT. Returns how many tests were doctest binaries."""
    sections, n = [], 0
    for name, cmd, cwd, env, tmo in ctest_reruns.framework_tests(build, names, timeout, doctest_version, (2, 3),
                                                                 "doctest %d.%d has no XML reporter"):
        n += 1
        with ctest_reruns.report_folder(TAG, prefix) as tmp:
            sections += rounds(name, cmd, cwd, env, tmo, prefix, tmp)
    ctest_reruns.write_sections(sections, junit)
    if sections:
        log("doctest: %d CTest test(s) ran again with doctest's XML reporter" % n)
    return n
