"""Run the Catch2 binaries of CTest tests with Catch2's XML reporter (inside the container).

Used by ``cmake_tests.py`` (installed beside it, with ``doctest_runs.py``; what the two share
is in ``ctest_reruns.py``) after its ctest run, so that a CTest test that is one Catch2 binary
of many test cases (gabime/spdlog's ``spdlog-utests``) has results per test case and section
instead of one CTest result. For each
selected CTest test whose command's executable is a Catch2 (v2 or v3) binary -- its file holds
the ``A Catch2 test executable`` / ``A Catch test executable`` string of Catch2's
``--libidentify`` and ``<exe> --libidentify`` answers ``version: X.Y.Z`` with X >= 2 (the probe
runs only after the file check, so no other test binary is ever started for it) -- the test's
command runs again in its WORKING_DIRECTORY with its ENVIRONMENT, its TIMEOUT (else the
helper's), as the same user as the ctest round, with ``--reporter xml --out FILE`` (the same
in v2 and v3; the command's own reporter, output, ``--success``, listing and ``--abort`` /
``--abortx`` options removed, so every test case it selects runs).
The XML reporter, not JUnit: it streams (Catch2 v2's JUnit reporter writes nothing until the
run ends), nests sections, and names a crash (``<FatalErrorCondition>``).

A command that already names test cases (a positional test spec that is not a tag expression:
``catch_discover_tests`` and ``ParseAndAddCatchTests`` add one CTest test per test case) is not
run again: its CTest id is already one test case. There are no further rounds: a binary that
dies inside a test case (Catch2 reports the signal, closes the report, and never runs the test
cases after it) keeps the results of the test cases before the crash, and its CTest result
stands for the rest (``envpool/testrun/polyglot/catch2_xml.py``). Each run becomes one section::

    <swemint-catch2 ctest="NAME" round="1" final="true" exit="RC">
    <Catch ...>...</Catch>            (v3: <Catch2TestRun ...>...</Catch2TestRun>)
    </swemint-catch2>

(Catch2's XML without its declaration) appended to the ``--output-junit`` file, or printed to
stdout after ctest's output. Standard library only (python3 >= 3.5).
"""

import os
import re

import ctest_reruns  # (installed beside this file)
from ctest_reruns import log

MARKERS = (b"A Catch2 test executable", b"A Catch test executable")
"""Catch2's ``--libidentify`` description (2.10+: "Catch2", 2.0-2.9: "Catch"), in every binary
that links Catch2's session."""
_VERSION = re.compile(r"^version:\s*(\d+)\.(\d+)", re.M)
_DESCRIPTION = re.compile(r"^description:\s*A Catch2? test executable", re.M)
PROBE_SECONDS = 30
TAG = "catch2"

_DROP_WITH_VALUE = {"-r", "--reporter", "-o", "--out", "--wait-for-keypress", "-x", "--abortx"}
_DROP_FLAGS = {"-s", "--success", "-l", "--list-tests", "-t", "--list-tags", "--list-test-names-only",
               "--list-reporters", "--list-listeners", "--libidentify", "-h", "-?", "--help", "-a", "--abort",
               "-b", "--break"}
"""Removed from the command: the reporter and its output, listing, and stopping at the first
failures (``--abort``: every test case should get a result)."""
_WITH_VALUE = {"-n", "--name", "-w", "--warn", "-d", "--durations", "-D",
               "--min-duration", "-f", "--input-file", "-c", "--section", "-v", "--verbosity", "--order",
               "--rng-seed", "--use-colour", "--colour-mode", "--benchmark-samples", "--benchmark-resamples",
               "--benchmark-confidence-interval", "--benchmark-warmup-time", "--shard-count", "--shard-index"}
"""Catch2 v2 and v3 options that take a value (a separate argument unless joined by ``=`` or
``:``, as Catch2's Clara splits them)."""


def catch2_version(exe, cwd, env):
    """(major, minor) of the Catch2 binary `exe` from ``exe --libidentify``; None when `exe` is
    not one (no marker in the file, no answer, or the probe fails)."""
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK) and any(ctest_reruns.has_marker(exe, m) for m in MARKERS)):
        return None
    out = ctest_reruns.answer(exe, ["--libidentify"], cwd, env, PROBE_SECONDS)
    if out is None:
        return None
    m = _VERSION.search(out)
    return (int(m.group(1)), int(m.group(2))) if m and _DESCRIPTION.search(out) else None


def _split(arg):
    """(option name, joined value or None) of an option argument."""
    m = re.match(r"^(--?[^=:]+)[=:](.*)$", arg)
    return (m.group(1), m.group(2)) if m else (arg, None)


def xml_command(cmd, out_file):
    """(`cmd` with Catch2's XML reporter writing to `out_file`, the command's positional test
    specs)."""
    args, specs, i = [], [], 1
    while i < len(cmd):
        a = cmd[i]
        i += 1
        if not a.startswith("-") or a == "-":
            specs.append(a)
            args.append(a)
            continue
        name, value = _split(a)
        if name in _DROP_WITH_VALUE:
            if value is None:
                i += 1  # its value, a separate argument
        elif name in _DROP_FLAGS:
            continue
        elif name in _WITH_VALUE and value is None and i < len(cmd):
            args += [a, cmd[i]]
            i += 1
        else:
            args.append(a)
    return [cmd[0]] + args + ["--reporter", "xml", "--out", out_file], specs


def names_cases(specs):
    """Whether the positional test specs `specs` name test cases (not only tags such as
    ``[unit]`` or ``~[slow]``)."""
    return any(s.strip() and not s.strip().lstrip("~").startswith("[") for s in specs)


def section(name, rc, xml):
    """One ``<swemint-catch2>`` section (bytes) around Catch2's XML `xml`."""
    return ctest_reruns.section(TAG, name, 1, True, rc, xml)


def run_catch2(build, names, timeout, prefix, junit):
    """Run the Catch2 binaries of the CTest tests `names` (None: all; module doc) and append
    their sections to `junit` (None: print them); a test whose command already names test cases
    is not run again. `prefix`: the command prefix the ctest round ran under (``setpriv ...``
    when tests refuse root), `timeout`: seconds per binary unless the test sets TIMEOUT.
    Returns how many tests were run again."""
    sections, n = [], 0
    for name, cmd, cwd, env, tmo in ctest_reruns.framework_tests(build, names, timeout, catch2_version, (2, 0),
                                                                 "Catch %d.%d is not Catch2"):
        with ctest_reruns.report_folder(TAG, prefix) as tmp:
            report = os.path.join(tmp, "report.xml")
            full, specs = xml_command(cmd, report)
            if names_cases(specs):
                log("%s runs named Catch2 test cases (%s): its CTest id is one test case" % (name, " ".join(specs)))
                continue
            n += 1
            rc, xml = ctest_reruns.run_for_report(prefix, full, cwd, env, tmo, report)
            if b"<Catch" not in xml:
                log("%s wrote no Catch2 XML report (exit %s): its CTest result stands" % (name, rc))
                continue
            sections.append(section(name, rc, xml))
    ctest_reruns.write_sections(sections, junit)
    if n:
        log("catch2: %d CTest test(s) ran again with Catch2's XML reporter" % n)
    return n
