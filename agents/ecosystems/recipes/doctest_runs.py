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
stdout after ctest's output; ``envpool/testrun/polyglot/doctest_sections.py`` reads them.
Standard library only (python3 >= 3.5).
"""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from xml.sax.saxutils import quoteattr

ABORT_ROUNDS = 3
MARKER = b"doctest version is"
_VERSION = re.compile(r'\[doctest\] doctest version is "(\d+)\.(\d+)')
_OWN_OPTION = re.compile(r"^--?(?:dt-)?(?:r|reporters|o|out|s|success|q|quiet)(?:=.*)?$")
_EXCLUDE = re.compile(r"^--?(?:dt-)?(?:tce|test-case-exclude)=(.*)$")
PROBE_SECONDS = 30


def log(msg):
    print("swemint-cmake-tests: " + msg, flush=True)


def has_marker(path, marker=MARKER):
    """Whether the file `path` contains `marker` (doctest's version string; read in chunks)."""
    try:
        with open(path, "rb") as f:
            tail = b""
            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    return False
                if marker in tail + chunk:
                    return True
                tail = chunk[-len(marker):]
    except (IOError, OSError):
        return False


def doctest_version(exe, cwd, env):
    """(major, minor) of the doctest binary `exe` from ``exe --version``; None when `exe` is
    not one (no marker in the file, no answer, or the probe fails)."""
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK) and has_marker(exe)):
        return None
    try:
        out = subprocess.check_output([exe, "--version"], cwd=cwd, env=env, stderr=subprocess.STDOUT,
                                      timeout=PROBE_SECONDS)
    except (OSError, subprocess.SubprocessError):
        return None
    m = _VERSION.search(out.decode("utf-8", "replace"))
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


def run_binary(cmd, cwd, env, timeout):
    """Run `cmd`; at `timeout` seconds SIGTERM (doctest then still closes its report), SIGKILL
    10 s later. Returns its exit code (None when it had to be killed)."""
    with open(os.devnull, "wb") as null:
        try:
            p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=null, stderr=null)
        except OSError as e:
            log("cannot run %s: %s" % (cmd[0], e))
            return 127
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            log("%s timed out after %s s" % (cmd[0], timeout))
            return None


def section(name, rnd, final, rc, xml, tag="doctest"):
    """One ``<swemint-doctest>`` section (bytes) around doctest's XML `xml` (`tag`: the
    section's name after ``swemint-``; ``catch2_runs.py`` writes ``catch2`` ones)."""
    body = re.sub(rb"^\s*<\?xml[^>]*\?>\s*", b"", xml)
    head = "<swemint-%s ctest=%s round=\"%d\" final=\"%s\" exit=\"%s\">\n" % (
        tag, quoteattr(name), rnd, "true" if final else "false", "" if rc is None else rc)
    return head.encode("utf-8") + body.rstrip() + ("\n</swemint-%s>\n" % tag).encode("ascii")


def ctest_specs(build, names):
    """[(name, command, working directory, environment, timeout or None)] of the CTest tests
    `names` (None: all) from ``ctest --show-only=json-v1``."""
    try:
        raw = subprocess.check_output(["ctest", "--show-only=json-v1"], cwd=build)
    except (OSError, subprocess.CalledProcessError):
        return []
    out = []
    for t in json.loads(raw.decode("utf-8", "replace")).get("tests", []):
        props = {p.get("name"): p.get("value") for p in t.get("properties", [])}
        if names is not None and t.get("name") not in names or not t.get("command") or props.get("DISABLED"):
            continue
        env = dict(os.environ)
        for kv in props.get("ENVIRONMENT") or []:
            k, _, v = kv.partition("=")
            env[k] = v
        try:
            tmo = float(props.get("TIMEOUT")) if props.get("TIMEOUT") else None
        except (TypeError, ValueError):
            tmo = None
        out.append((t.get("name"), t["command"], props.get("WORKING_DIRECTORY") or build, env, tmo))
    return out


def rounds(name, cmd, cwd, env, timeout, prefix, tmp):
    """The sections (bytes) of one doctest binary: rounds until no new test case crashes."""
    dead, runs = [], []
    for rnd in range(1, ABORT_ROUNDS + 2):
        report = os.path.join(tmp, "r%d.xml" % rnd)
        full = prefix + xml_command(cmd, report, dead)
        log("$ " + " ".join(shlex.quote(a) for a in full))
        rc = run_binary(full, cwd, env, timeout)
        try:
            with open(report, "rb") as f:
                xml = f.read()
        except (IOError, OSError):
            xml = b""
        if b"<doctest" not in xml:
            log("%s wrote no doctest XML report (exit %s)%s" % (
                name, rc, "" if runs else ": its CTest result stands"))
            break
        runs.append((rnd, rc, xml))
        new = [c for c in crashed_cases(xml) if c not in dead]
        if not new or rnd > ABORT_ROUNDS:
            break
        log("doctest test case(s) crashed %s, hiding the rest of it: %s; running it again without them "
            "(round %d)" % (name, "; ".join(new), rnd + 1))
        dead += new
    return [section(name, rnd, i == len(runs) - 1, rc, xml) for i, (rnd, rc, xml) in enumerate(runs)]


def run_doctests(build, names, timeout, prefix, junit):
    """Run the doctest binaries of the CTest tests `names` (None: all; module doc) and append
    their sections to `junit` (None: print them). `prefix`: the command prefix the ctest round
    ran under (``setpriv ...`` when tests refuse root), `timeout`: seconds per binary unless
    the test sets TIMEOUT. Returns how many tests were doctest binaries."""
    probed, sections, n = {}, [], 0
    for name, cmd, cwd, env, tmo in ctest_specs(build, names):
        exe = os.path.realpath(cmd[0]) if os.path.isabs(cmd[0]) else shutil.which(cmd[0]) or cmd[0]
        if exe not in probed:
            probed[exe] = doctest_version(exe, cwd, env)
        ver = probed[exe]
        if ver is None:
            continue
        if ver < (2, 3):
            log("%s: doctest %d.%d has no XML reporter: its CTest result stands" % (name, ver[0], ver[1]))
            continue
        n += 1
        if prefix:
            env = dict(env, HOME="/tmp")
        tmp = tempfile.mkdtemp(prefix="swemint-doctest-")
        try:
            if prefix:
                os.chmod(tmp, 0o777)
            sections += rounds(name, list(cmd), cwd, env, tmo or float(timeout), prefix, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if sections:
        if junit:
            with open(junit, "ab") as f:
                f.write(b"\n" + b"".join(sections))
        else:
            sys.stdout.flush()
            sys.stdout.buffer.write(b"".join(sections))
            sys.stdout.flush()
        log("doctest: %d CTest test(s) ran again with doctest's XML reporter" % n)
    return n
