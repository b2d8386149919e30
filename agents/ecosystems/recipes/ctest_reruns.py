"""What ``doctest_runs.py`` and ``catch2_runs.py`` share (inside the container): running the
binaries of CTest tests again with a framework's XML reporter, and adding the reports after the
ctest run as ``<swemint-TAG>`` sections.

Installed beside ``cmake_tests.py`` with them (``agents/ecosystems/cfamily/c_setup.py``). Each selected
CTest test (``ctest --show-only=json-v1``: its command, WORKING_DIRECTORY, ENVIRONMENT and
TIMEOUT) whose executable the framework's probe recognizes at a version new enough (asked once
per executable) runs again, writing its report into a fresh folder, as the same user as the
ctest round (its command prefix, ``setpriv ...`` when tests refuse root: then with HOME=/tmp
and a folder everyone may write); the sections are appended to the ``--output-junit`` file, or
printed to stdout after ctest's output. Standard library only (python3 >= 3.5).
"""

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from xml.sax.saxutils import quoteattr


def log(msg):
    print("swemint-cmake-tests: " + msg, flush=True)


def has_marker(path, marker):
    """Whether the file `path` contains `marker` (a framework's string in every binary that
    links it; read in chunks)."""
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


def answer(exe, args, cwd, env, seconds=30):
    """What `exe` + `args` (a framework's probe: ``--version``, ``--libidentify``) prints,
    stdout and stderr, decoded; None when it cannot run, fails or outlasts `seconds`."""
    try:
        return subprocess.check_output([exe] + list(args), cwd=cwd, env=env, stderr=subprocess.STDOUT,
                                       timeout=seconds).decode("utf-8", "replace")
    except (OSError, subprocess.SubprocessError):
        return None


def show_only(build, quiet=True):
    """The tests ``ctest --show-only=json-v1`` lists in `build` (its ``tests`` entries: name,
    command, properties); [] when ctest cannot list them (logged unless `quiet`)."""
    try:
        raw = subprocess.check_output(["ctest", "--show-only=json-v1"], cwd=build)
    except (OSError, subprocess.CalledProcessError) as e:
        if not quiet:
            log("ctest --show-only failed: %s" % e)
        return []
    return json.loads(raw.decode("utf-8", "replace")).get("tests", [])


def ctest_specs(build, names):
    """[(name, command, working directory, environment, timeout or None)] of the CTest tests
    `names` (None: all) from ``ctest --show-only=json-v1`` (`show_only`)."""
    out = []
    for t in show_only(build):
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


def executable(program):
    """The file a CTest command's `program` runs: its real path when absolute, else the one PATH
    finds (else `program` as it is)."""
    return os.path.realpath(program) if os.path.isabs(program) else shutil.which(program) or program


def framework_tests(build, names, timeout, probe, floor, too_old):
    """Yield (name, command (a list), working directory, environment, seconds) for each CTest
    test `names` (None: all; `ctest_specs`) whose executable `probe(exe, cwd, env)` gives a
    version (major, minor) of at least `floor` for (asked once per executable, the first time a
    test runs it). A test whose executable is an older version is logged (`too_old` % version:
    why its CTest result stands) and skipped. `seconds`: the test's TIMEOUT, else `timeout`."""
    probed = {}
    for name, cmd, cwd, env, tmo in ctest_specs(build, names):
        exe = executable(cmd[0])
        if exe not in probed:
            probed[exe] = probe(exe, cwd, env)
        ver = probed[exe]
        if ver is None:
            continue
        if ver < floor:
            log("%s: %s: its CTest result stands" % (name, too_old % ver))
            continue
        yield name, list(cmd), cwd, env, tmo or float(timeout)


@contextlib.contextmanager
def report_folder(tag, prefix):
    """A fresh folder ``swemint-TAG-*`` for a binary's reports, which everyone may write when
    the runs go under the command prefix `prefix` (the unprivileged user); removed afterwards."""
    tmp = tempfile.mkdtemp(prefix="swemint-%s-" % tag)
    try:
        if prefix:
            os.chmod(tmp, 0o777)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_binary(cmd, cwd, env, timeout):
    """Run `cmd`; at `timeout` seconds SIGTERM (doctest and Catch2 then still close their
    report), SIGKILL 10 s later. Returns its exit code (None when it had to be killed)."""
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


def run_for_report(prefix, cmd, cwd, env, timeout, report):
    """Log and run `prefix` + `cmd` (`run_binary`; under a prefix with HOME=/tmp). Returns (its
    exit code, the report file `report` it wrote: bytes, b"" when it wrote none)."""
    full = prefix + cmd
    log("$ " + " ".join(shlex.quote(a) for a in full))
    rc = run_binary(full, cwd, dict(env, HOME="/tmp") if prefix else env, timeout)
    try:
        with open(report, "rb") as f:
            return rc, f.read()
    except (IOError, OSError):
        return rc, b""


def rounds(tag, name, command, crashed, marker, cwd, env, timeout, prefix, tmp, max_rounds=3):
    """The sections (bytes) of one binary of CTest test `name` run for its report, again without
    the test cases that crashed it (doctest's and Boost.Test's runs: the framework stops, or
    reports nothing, after a crash): round N runs `command(dead, report)` -- the argv with the
    test cases `dead` excluded, writing the report file `report` in `tmp` -- and reads
    `crashed(report bytes)`, the test cases it died in; rounds stop when none is new, after
    `max_rounds` more rounds, or when a report lacks `marker` (bytes: not the framework's
    report; logged, and with no earlier round the CTest result stands). `tag` names the
    framework in the sections and the helper lines."""
    dead, runs = [], []
    for rnd in range(1, max_rounds + 2):
        report = os.path.join(tmp, "r%d.xml" % rnd)
        rc, xml = run_for_report(prefix, command(dead, report), cwd, env, timeout, report)
        if marker not in xml:
            log("%s wrote no %s report (exit %s)%s" % (name, tag, rc, "" if runs else ": its CTest result stands"))
            break
        runs.append((rnd, rc, xml))
        new = [c for c in crashed(xml) if c not in dead]
        if not new or rnd > max_rounds:
            break
        log("%s test case(s) crashed %s, hiding the rest of it: %s; running it again without them "
            "(round %d)" % (tag, name, "; ".join(new), rnd + 1))
        dead += new
    return [section(tag, name, rnd, i == len(runs) - 1, rc, xml) for i, (rnd, rc, xml) in enumerate(runs)]


_MARKUP = re.compile(rb"<(?=/?swemint-|\?xml)")
_SUMMARY = re.compile(rb"(\d)%(?=\s*tests? passed)")


def inert(body):
    """The report `body` (bytes) with nothing the ctest parsers read as the helper's own markup:
    a ``<`` that starts ``<swemint-``, ``</swemint-`` or ``<?xml`` becomes ``&lt;`` and the
    ``%`` of ``N% tests passed`` (ctest's summary line, the console's offset) ``&#37;``. The
    report's text is the code under test's (a Boost.Test JUnit log keeps an assertion's message
    and the values it prints raw in CDATA): unchanged, that text could end its section and
    forge another (of any kind, for any CTest test), or move the offset after which sections
    count. Both replacements keep a report that parses the same outside CDATA (entities there)
    and change only the text inside it; a report never has such elements of its own."""
    return _SUMMARY.sub(rb"\1&#37;", _MARKUP.sub(b"&lt;", body))


def section(tag, name, rnd, final, rc, xml):
    """One ``<swemint-TAG ctest="NAME" round="N" final="true|false" exit="RC">`` section (bytes)
    around the XML report `xml` (without its declaration; `inert`: nothing in it can end the
    section or be read as another)."""
    body = inert(re.sub(rb"^\s*<\?xml[^>]*\?>\s*", b"", xml))
    head = "<swemint-%s ctest=%s round=\"%d\" final=\"%s\" exit=\"%s\">\n" % (
        tag, quoteattr(name), rnd, "true" if final else "false", "" if rc is None else rc)
    return head.encode("utf-8") + body.rstrip() + ("\n</swemint-%s>\n" % tag).encode("ascii")


def write_sections(sections, junit):
    """Append `sections` (bytes; none: nothing) to the file `junit`, after a newline (None:
    print them to stdout)."""
    if not sections:
        return
    if junit:
        with open(junit, "ab") as f:
            f.write(b"\n" + b"".join(sections))
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(b"".join(sections))
        sys.stdout.flush()
