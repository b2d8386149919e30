#!/usr/bin/env python3
"""Build and run the CTest tests of the targets that own some files (run inside the container).

Usage: cmake_tests.py BUILD_DIR [--junit FILE] [--verbose] [--jobs N] [--timeout S] [--build-only]
                      [--rediscover] [--whole] [--only JSON] -- FILE...

FILE...: repository-relative paths (the files the test patch touches). Steps:
1. re-run cmake on BUILD_DIR (a patch may have changed CMakeLists.txt);
2. read CMake's File API codemodel (BUILD_DIR/.cmake/api/v1/query/codemodel-v2 must have been
   created before the first configure) and pick the executable targets that list one of FILE
   among their sources -- on the tree as the re-configure saw it, so a test source the
   test_patch adds to a target's list (or that a ``file(GLOB ...)`` now finds) has its owner;
   none -> every executable target that some CTest test runs (`test_targets`: by its command or
   an absolute argument, by name, or by the ``<target>_NOT_BUILT`` placeholder that
   ``gtest_discover_tests`` registers until the target is built); none of those either while
   CTest tests are defined -> the whole suite (class S32: a new test file no target owns at the
   base commit, a touched CMakeLists.txt or data file, tests run by scripts): every target is
   built and every test runs. Except (class S38: a touched compiled test source that no target
   of the build compiles, even after the test_patch and the re-configure -- a test file the
   project's explicit source list does not name, built upstream by another build system): when
   the touched files include compiled sources (`COMPILED_SUFFIXES`), no target of any type
   lists one of them nor any other touched file, no other listed source ``#include``s one, no
   CTest test's command or working directory names one or a folder holding it (nor runs a
   script of such a folder) and no rule of the native build names one or such a folder (a
   custom command calling its Makefile, an ExternalProject's source folder, a generated file's
   DEPENDS: `build_rules_name`) -- `unbuilt_sources` --, nothing is built or run: a helper line names them ("... is compiled by no target of this CMake build
   (after the test_patch): its tests cannot run here") and the collectors of their tests are
   reported as not built (the file ``<path> [compiled by no target]``, then the GoogleTest ids
   and Boost.Test units they declare: S34's section), so the before side is a side where those
   tests fail, and a round whose after side has them too ends with no test reached; the exit
   code is 2. When OFF options gate the file (the ``if`` around the ``add_subdirectory`` of its
   folder or an ancestor, or around a glob or list naming it: `folder_gates`), a line per option
   follows S38's ("option X=OFF gates <file>: <where>"), for the loop's `test_option` move. A touched header, data file or CMake list alone keeps the rule above;
3. build each picked target alone; a target that fails to build has its artifacts deleted, so a
   stale binary from an earlier build can never report results (the whole suite: one build of
   every target, keeping going past failures, then each executable target that failed is found
   by building it alone and has its artifacts deleted);
4. list CTest's tests again, now that the picked targets are built (tests a build step
   registers -- ``gtest_discover_tests`` runs the binary after it links -- exist only from then
   on: a googletest test the test_patch adds is not in the list read before the build), and run
   ``ctest`` on the tests whose command runs a picked target's artifact (or named like the
   target); none picked -> every test. A GoogleTest binary owning the touched files and built
   from other sources too (class S33: one binary of many test files, whose whole run can pass
   the run limit) runs only the suites the touched files define on this side
   (``gtest_suites.py``, installed beside this file): a binary CTest runs whole under
   ``GTEST_FILTER`` (the positive part; step 5 adds to its negative part), the per-case tests
   ``gtest_discover_tests``/``gtest_add_tests`` register by ``ctest -R``; a touched file
   defining no suite it reads, or a filter selecting no test, leaves the whole binaries (a helper
   line says which). No test defined at all: the cache's OFF options that may
   gate the tests are printed (`gating_options`: the re-configure's own lines naming one, and
   those whose name or help says test/check), for the loop's `test_option` move. ``--junit`` adds ``--output-junit FILE`` (CMake >= 3.21),
   ``--verbose`` adds ``-V`` (every test's output, each line prefixed ``N: ``). With
   ``--junit``, ctest keeps each test's whole output in the report (it keeps 1 KiB of a passing
   test's and 300 KiB of a failing test's by default, so a test program printing a TAP stream
   of hundreds of tests would be cut): ``--test-output-size-passed/-failed`` (ctest >= 3.24),
   else the same limits in BUILD_DIR/CTestCustom.cmake (`full_output`). A fixture setup test
   the selected tests need runs once alone first; when it fails, ``-FS`` keeps it out of the
   run, so its dependents run instead of being ``Not Run`` (`failed_fixtures`);
5. when a GoogleTest binary dies inside a test (a crash, an abort, ctest's timeout: a
   ``[ RUN      ] X`` with no result before its ctest test ends), every later test of that
   binary is missing from the run; ctest then runs once more with ``GTEST_FILTER=-X`` (up to
   3 rounds, the dead tests accumulated), and only the last round's output is printed, so the
   report is one whole run in which X is absent (`aborted_gtests`). The earlier rounds are
   named in helper lines. A test X that ran as its own CTest test (``gtest_discover_tests``'
   ``--gtest_filter=X``) hid nothing and starts no round;
6. when a test refuses to run as root (libuv: "The libuv test suite cannot be run as root."),
   ctest runs again as the unprivileged uid 65534 (`setpriv`; the build folder is handed to it
   first), and that round is the report (`refuses_root`);
7. the selected tests whose executable is a doctest binary run again with doctest's XML
   reporter, as the same user, and their reports are added as ``<swemint-doctest>`` sections
   to the ``--junit`` file (else printed after ctest's output), so their results are per test
   case and subcase (``doctest_runs.py``, installed beside this file);
8. so do the selected tests whose executable is a Catch2 (v2 or v3) binary, with Catch2's XML
   reporter, as ``<swemint-catch2>`` sections: per test case and section
   (``catch2_runs.py``, installed beside this file);
9. and the selected tests whose executable is a Boost.Test binary (class S36), with Boost.Test's
   JUnit logger, as ``<swemint-boost>`` sections: per test case, ids ``suite/sub/case``
   (``boost_runs.py``). A Boost.Test binary owning the touched files and built from other
   sources too runs only the units the touched files declare on this side
   (``boost_suites.py``): ``BOOST_TEST_RUN_FILTERS`` for the ctest round, ``--run_test`` for the
   JUnit run; a targeted rerun's ids that are units the binaries list replace them; a touched
   file declaring none, a binary that cannot list its units, or a filter selecting none of a
   binary's cases leaves the whole binaries (a helper line says which). An owner that failed to
   build reports the units its touched files declare (S34's section, `unbuilt_ids`).
``--build-only``: steps 1-3 only (the environment's setup builds what the test run will need,
not every target of a large project: nlohmann/json has hundreds), exit 0; S38 applies there only
when every such source exists on disk and no touched file is a CMake file (CMakeLists.txt,
``*.cmake``): the setup runs before the test_patch, which may add a missing source to a glob's
reach or a list, so until then the test targets are built as before.
``--only JSON`` (a targeted rerun: a JSON list of CTest test names): when every name is one of
the tests step 4 would run, only those run (``ctest -R`` of the names, anchored and escaped);
else the selection stays (a GoogleTest case inside a test binary is no CTest test: the caller
narrows those with ``GTEST_FILTER``, whose positive part then replaces step 4's suites).
``--rediscover``: each picked target is built with ``--clean-first``, so whatever its build
registers (googletest discovery) runs again after the test_patch (the loop's `rediscover` move).
``--whole``: the whole suite whatever owns the touched files (the loop's `whole_suite` move).
Exit code: ctest's (of the last round), or 2 when nothing could be selected. Standard library
only (python3 >= 3.5).
"""

import fnmatch
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import boost_runs  # noqa: E402  (installed beside this file)
import boost_suites  # noqa: E402  (installed beside this file)
import catch2_runs  # noqa: E402  (installed beside this file)
import ctest_reruns  # noqa: E402  (installed beside this file)
import doctest_runs  # noqa: E402  (installed beside this file)
import gtest_suites  # noqa: E402  (installed beside this file)
import unbuilt_rules  # noqa: E402  (installed beside this file)
from unbuilt_rules import COMPILED_SUFFIXES, HEADER_SUFFIXES, UNBUILT_SOURCE, included_names  # noqa: E402

ABORT_ROUNDS = 3
_GT_RUN = re.compile(r"^(?:(\d+): )?\[ RUN +\] (\S+)")
_GT_END = re.compile(r"^(?:(\d+): )?\[ +(?:OK|FAILED|SKIPPED) +\] (\S+?)(?:,| |$)")
_CT_DONE = re.compile(r"^\s*\d+/\d+ +Test +#(\d+): ")
_AS_ROOT = re.compile(r"(?:cannot|can ?not|must not|should not|may not) be run as root|"
                      r"refus\w* to run as root|do not run (?:\S+ ){0,4}as root", re.I)
NOBODY = 65534
OUTPUT_LIMIT = 16 * 1024 * 1024  # bytes of one test's output in the JUnit report (the minter reads 64 MiB)
_CUSTOM_MARK = "# swemint-cmake-tests: keep whole test outputs"


def log(msg):
    print("swemint-cmake-tests: " + msg, flush=True)


def run(cmd, **kw):
    log("$ " + " ".join(cmd))
    return subprocess.call(cmd, **kw)


def codemodel(build):
    """[(name, type, [source paths relative to the top source dir], [absolute artifacts])]."""
    reply = os.path.join(build, ".cmake", "api", "v1", "reply")
    index = sorted(glob.glob(os.path.join(reply, "index-*.json")))
    if not index:
        return []
    with open(index[-1]) as f:
        idx = json.load(f)
    cm = None
    for obj in idx.get("objects", []):
        if obj.get("kind") == "codemodel":
            cm = obj.get("jsonFile")
    if not cm:
        return []
    with open(os.path.join(reply, cm)) as f:
        model = json.load(f)
    out = []
    for conf in model.get("configurations", [])[:1]:
        for t in conf.get("targets", []):
            with open(os.path.join(reply, t["jsonFile"])) as f:
                tj = json.load(f)
            sources = [s.get("path", "") for s in tj.get("sources", [])]
            arts = [os.path.realpath(os.path.join(build, a["path"])) for a in tj.get("artifacts", [])]
            out.append((tj.get("name"), tj.get("type"), sources, arts))
    return out


def ctest_tests(build, shown=None):
    """[(name, command list)] from ``ctest --show-only=json-v1`` (`ctest_reruns.show_only`;
    `shown`: its answer already read)."""
    shown = ctest_reruns.show_only(build, quiet=False) if shown is None else shown
    return [(t.get("name"), t.get("command") or []) for t in shown]


def ctest_workdirs(shown):
    """The WORKING_DIRECTORY of each CTest test of `shown` (``ctest --show-only=json-v1``'s
    tests: `ctest_reruns.show_only`), where one is set."""
    out = []
    for t in shown:
        for p in t.get("properties", []):
            if p.get("name") == "WORKING_DIRECTORY" and isinstance(p.get("value"), str):
                out.append(p["value"])
    return out


def ctest_fixtures(build):
    """{test name: (fixtures it requires, fixtures it sets up)} from ``ctest --show-only=json-v1``
    (the FIXTURES_REQUIRED / FIXTURES_SETUP properties; `ctest_reruns.show_only`); {} when ctest
    cannot list them."""
    out = {}
    for t in ctest_reruns.show_only(build):
        props = {p.get("name"): p.get("value") for p in t.get("properties", [])}
        def names(v):
            return set(v if isinstance(v, list) else ([v] if v else []))
        out[t.get("name")] = (names(props.get("FIXTURES_REQUIRED")), names(props.get("FIXTURES_SETUP")))
    return out


def failed_fixtures(build, selected, timeout):
    """Fixtures whose setup test fails, among those the `selected` tests (None = all) require:
    each setup test runs once on its own first. CTest would otherwise add it to the run and mark
    every dependent `Not Run` when it fails -- e.g. a setup that clones test data from a host the
    test run cannot reach (no network), which the touched tests may not even use."""
    fx = ctest_fixtures(build)
    wanted = set()
    for name, (req, _) in fx.items():
        if selected is None or name in selected:
            wanted |= req
    bad = set()
    for name, (_, sets) in sorted(fx.items()):
        mine = sets & wanted
        if not mine or (selected is not None and name in selected):
            continue
        pattern = "^" + re.sub(r"([][.+*?^$()|\\])", r"\\\1", name) + "$"
        if run(["ctest", "--timeout", timeout, "--output-on-failure", "-R", pattern, "-FA", ".*"], cwd=build) != 0:
            log("fixture setup %s failed: its dependents run without fixture(s) %s" % (name, " ".join(sorted(mine))))
            bad |= mine
    return bad


def ctest_version():
    """(major, minor) of the ``ctest`` on PATH; () when it cannot tell."""
    try:
        out = subprocess.check_output(["ctest", "--version"]).decode("utf-8", "replace")
    except (OSError, subprocess.CalledProcessError):
        return ()
    m = re.search(r"(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else ()


def full_output(build):
    """ctest options that keep up to OUTPUT_LIMIT bytes of every test's output in the JUnit
    report: ``--test-output-size-passed/-failed`` (ctest >= 3.24); older ctest reads
    CTEST_CUSTOM_MAXIMUM_PASSED/FAILED_TEST_OUTPUT_SIZE from BUILD_DIR/CTestCustom.cmake, so
    those lines are appended to it once (after the project's own settings, which a re-configure
    may have rewritten) and [] is returned. Sources: ctest(1), CTEST_CUSTOM_MAXIMUM_*_TEST_OUTPUT_SIZE."""
    if ctest_version() >= (3, 24):
        return ["--test-output-size-passed", str(OUTPUT_LIMIT), "--test-output-size-failed", str(OUTPUT_LIMIT)]
    path = os.path.join(build, "CTestCustom.cmake")
    try:
        with open(path) as f:
            if _CUSTOM_MARK in f.read():
                return []
    except OSError:
        pass
    with open(path, "a") as f:
        f.write("\n%s\nset(CTEST_CUSTOM_MAXIMUM_PASSED_TEST_OUTPUT_SIZE %d)\n"
                "set(CTEST_CUSTOM_MAXIMUM_FAILED_TEST_OUTPUT_SIZE %d)\n" % (_CUSTOM_MARK, OUTPUT_LIMIT, OUTPUT_LIMIT))
    log("ctest < 3.24: whole test outputs through %s" % path)
    return []


def aborted_gtests(text):
    """GoogleTest tests that started and never reported a result before their ctest test
    ended (the binary crashed, aborted or was killed by a timeout), in order. Lines may carry
    ``ctest -V``'s ``N: `` prefix (N: the ctest test number)."""
    running, out = {}, []
    for line in text.splitlines():
        m = _GT_RUN.match(line)
        if m:
            key = m.group(1) or ""
            if running.get(key):  # a new test started: the previous one never finished
                out.append(running[key])
            running[key] = m.group(2)
            continue
        m = _GT_END.match(line)
        if m:
            key = m.group(1) or ""
            if running.get(key) == m.group(2):
                running[key] = None
            continue
        m = _CT_DONE.match(line)
        if m:
            for key in (m.group(1), ""):
                if running.get(key):
                    out.append(running[key])
                    running[key] = None
    out += [v for v in running.values() if v]
    seen = set()
    return [x for x in out if not (x in seen or seen.add(x))]


def with_excluded(flt, names):
    """A GTEST_FILTER value: `flt` (None: all) with `names` added to its negative part."""
    neg = ":".join(names)
    if not flt:
        return "-" + neg
    return flt + (":" if "-" in flt else "-") + neg


def refuses_root(text):
    """Whether a test's output says it will not run as root."""
    return bool(_AS_ROOT.search(text))


def unprivileged(cmd, build, src):
    """`cmd` run as uid/gid 65534 through util-linux's `setpriv`, after handing the `build`
    and `src` trees to that uid (tests write into their working directory: libuv's is the
    source tree; every run is a fresh container) and removing the earlier round's
    ``--output-junit`` file; None when not root or without setpriv."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or not setpriv:
        return None
    for top in (build, src):
        for root, dirs, files in os.walk(top):
            for name in dirs + files:
                try:
                    os.lchown(os.path.join(root, name), NOBODY, NOBODY)
                except OSError:
                    pass
        os.chown(top, NOBODY, NOBODY)
    if "--output-junit" in cmd:  # the root round's report file: the new round must write its own
        junit = os.path.join(build, cmd[cmd.index("--output-junit") + 1])
        try:
            os.remove(junit)
        except OSError:
            pass
    return [setpriv, "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"] + cmd


def run_ctest(cmd, build, src, flt=None, own=(), extra=None):
    """Run `cmd` (ctest) in `build`, with GTEST_FILTER=`flt` when given (step 4's suites of the
    touched files, the caller's own value merged in: `gtest_suites.narrowed`), else the caller's,
    and the variables `extra` (step 9's ``BOOST_TEST_RUN_FILTERS``; None: none);
    when GoogleTest binaries die inside a test, run it again without those tests (module
    docstring, step 5: added to the filter's negative part; not a case in `own`, which ran as
    its own CTest test -- ``gtest_discover_tests`` -- and hid nothing); when a test refuses root,
    again as an unprivileged uid (step 6). Prints the last round's output; returns (its exit code, its
    command: `cmd`, or `cmd` behind ``setpriv``)."""
    dead, base = [], flt or os.environ.get("GTEST_FILTER")
    for rnd in range(ABORT_ROUNDS + 2):
        env = dict(os.environ)
        if cmd[0] == shutil.which("setpriv"):
            env["HOME"] = "/tmp"
        shown = dict(extra or {})
        if dead or flt:
            env["GTEST_FILTER"] = shown["GTEST_FILTER"] = with_excluded(base, dead) if dead else base
        env.update(shown)
        log("$ " + "".join("%s=%s " % (k, shlex.quote(v)) for k, v in sorted(shown.items())) + " ".join(cmd))
        with tempfile.TemporaryFile() as f:
            rc = subprocess.call(cmd, cwd=build, env=env, stdout=f, stderr=subprocess.STDOUT)
            f.seek(0)
            text = f.read().decode("utf-8", "replace")
        if refuses_root(text) and cmd[0] != shutil.which("setpriv"):
            as_nobody = unprivileged(cmd, build, src)
            if as_nobody is not None:
                log("a test refuses to run as root: running ctest again as uid %d" % NOBODY)
                cmd = as_nobody
                continue
        new = [t for t in aborted_gtests(text) if t not in dead and t not in own]
        if not new or rnd >= ABORT_ROUNDS:
            sys.stdout.write(text)
            sys.stdout.flush()
            return rc, cmd
        log("GoogleTest test(s) died without a result, hiding the rest of their binary: %s; "
            "running ctest again without them (round %d)" % (" ".join(new), rnd + 2))
        dead += new
    return rc, cmd


_TESTISH = re.compile(r"test|check", re.I)


def off_options(build):
    """[(name, help)] of the BOOL cache entries that are off (``cmake -N -LH``: the cache as the
    last configure left it, advanced entries excluded); [] when cmake cannot list them."""
    try:
        raw = subprocess.check_output(["cmake", "-N", "-LH", build], stderr=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError):
        return []
    out, helptext = [], ""
    for line in raw.decode("utf-8", "replace").splitlines():
        if line.startswith("//"):
            helptext = (helptext + " " + line[2:].strip()).strip()
            continue
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*):BOOL=(.*)$", line)
        if m and m.group(2).strip().upper() in ("OFF", "FALSE", "NO", "0", "N", ""):
            out.append((m.group(1), helptext))
        helptext = ""
    return out


def gating_options(build, configure_output):
    """Lines naming the options that may gate the tests (printed when no CTest test is defined):
    ``configure says: <line>`` for each line of the re-configure's output naming an OFF option,
    ``option NAME=OFF (<help>)`` for each OFF option whose name or help says test/check."""
    options = off_options(build)
    names = dict(options)
    lines = []
    for line in configure_output.splitlines():
        words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", line))
        if words & set(names) and len(lines) < 10:
            lines.append("configure says: " + line.strip()[:300])
    for name, helptext in options:
        if (_TESTISH.search(name) or _TESTISH.search(helptext)) and len(lines) < 40:
            lines.append("option %s=OFF (%s)" % (name, helptext[:200]))
    return lines


CMAKE_FILES_LIMIT = 2000
"""CMake files of the source tree `folder_gates` reads at most (each up to 1 MiB)."""
_CMAKE_COMMAND = re.compile(r"^[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(", re.M)
_CMAKE_ARG = re.compile(r'"((?:[^"\\]|\\.)*)"|([^\s()"]+)')
_GLOB_CHARS = re.compile(r"[*?[]")
_HERE_VARS = ("${CMAKE_CURRENT_SOURCE_DIR}", "${CMAKE_CURRENT_LIST_DIR}")
_TOP_VARS = ("${CMAKE_SOURCE_DIR}", "${PROJECT_SOURCE_DIR}", "${CMAKE_HOME_DIRECTORY}")


def cmake_files(src, build=None):
    """The repository-relative paths of the source tree's CMake files (CMakeLists.txt,
    ``*.cmake``), hidden folders and the build folder left out, at most `CMAKE_FILES_LIMIT`."""
    out, skip = [], os.path.realpath(build) if build else None
    for root, dirs, names in os.walk(src):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "CMakeFiles"
                         and os.path.realpath(os.path.join(root, d)) != skip)
        for name in sorted(names):
            if _CMAKE_FILE.search(name) and len(out) < CMAKE_FILES_LIMIT:
                out.append(norm(os.path.join(root, name), src))
        if len(out) >= CMAKE_FILES_LIMIT:  # the rest of the tree is not walked
            break
    return out


_CMAKE_TOP = re.compile(r"(\n)|(#)|([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(|[A-Za-z0-9_]+|[^\n#A-Za-z0-9_]+")
_CMAKE_TOKEN = re.compile(r'([ \t\r]+)|(\n)|(#)|(\()|(\))|\[(=*)\[|"((?:[^"\\]|\\.)*)(?:"|\Z)|((?:[^\s()#"\\]|\\.)+)|(.)',
                          re.S)
_BRACKET_OPEN = re.compile(r"\[(=*)\[")
_CONDITION_COMMANDS = ("if", "elseif", "while")


def _comment_end(text, i):
    """The end of the comment that starts at `text[i]` (``#``): a bracket comment ``#[=[ ... ]=]``
    or the line's end."""
    m = _BRACKET_OPEN.match(text, i + 1)
    if m:
        end = text.find("]%s]" % m.group(1), m.end())
        return len(text) if end < 0 else end + len(m.group(1)) + 2
    end = text.find("\n", i)
    return len(text) if end < 0 else end


def cmake_commands(text):
    """[(line, command in lower case, [arguments])] of a CMake file, read as CMake's own lexer
    does: commands anywhere on a line (``if(X) ... endif()`` on one), line and bracket comments
    (``#``, ``#[[ ... ]]``) dropped, quoted arguments (a ``)`` or ``#`` inside) and bracket
    arguments (``[[ ... ]]``, a ``"`` or ``if(`` inside) unquoted; the parentheses of an
    argument list are kept as ``(`` / ``)`` in a condition (``if``, ``elseif``, ``while``) and
    dropped elsewhere."""
    out, i, line, n = [], 0, 1, len(text)
    while i < n:
        m = _CMAKE_TOP.match(text, i)
        if m.group(1):
            line, i = line + 1, m.end()
            continue
        if m.group(2):
            end = _comment_end(text, i)
            line, i = line + text.count("\n", i, end), end
            continue
        if not m.group(3):
            i = m.end()
            continue
        name, at, i, depth, args = m.group(3).lower(), line, m.end(), 1, []
        while i < n and depth:
            t = _CMAKE_TOKEN.match(text, i)
            if t.group(2):
                line += 1
            elif t.group(3):
                end = _comment_end(text, i)
                line, i = line + text.count("\n", i, end), end
                continue
            elif t.group(4) or t.group(5):
                depth += 1 if t.group(4) else -1
                if depth and name in _CONDITION_COMMANDS:
                    args.append(t.group(0))
            elif t.group(6) is not None:
                close = "]%s]" % t.group(6)
                end = text.find(close, t.end())
                end = n if end < 0 else end
                args.append(text[t.end():end])
                line, i = line + text.count("\n", i, end), min(n, end + len(close))
                continue
            elif t.group(7) is not None:
                args.append(t.group(7))
                line += t.group(0).count("\n")
            elif t.group(8):
                args.append(t.group(8))
                line += t.group(0).count("\n")
            i = t.end()
        out.append((at, name, args))
    return out


_UNARY = frozenset(("EXISTS", "COMMAND", "DEFINED", "POLICY", "TARGET", "TEST", "IS_DIRECTORY", "IS_SYMLINK",
                    "IS_ABSOLUTE", "IS_READABLE", "IS_WRITABLE", "IS_EXECUTABLE"))
_BINARY = frozenset(("EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL", "STREQUAL", "STRLESS",
                     "STRLESS_EQUAL", "STRGREATER", "STRGREATER_EQUAL", "VERSION_EQUAL", "VERSION_LESS",
                     "VERSION_LESS_EQUAL", "VERSION_GREATER", "VERSION_GREATER_EQUAL", "PATH_EQUAL", "MATCHES",
                     "IN_LIST", "IS_NEWER_THAN"))


def condition_needs(cond, off):
    """The OFF options (of `off`) an ``if`` condition needs ON to hold, as a list in the
    condition's order ([] none): the condition read with CMake's precedence (parentheses, unary
    and binary tests, ``NOT``, ``AND``, ``OR``); an option under ``NOT`` is never needed (on, it
    makes the condition false), an operand of a test (``DEFINED X``, ``X STREQUAL ...``) is not
    a switch; of ``OR``'s alternatives the one naming an option, those whose every option says
    test/check first, then the fewest -- not all of them (``if(X_TESTS OR X_BENCHMARKS)`` needs
    one). A condition it cannot read needs nothing."""
    toks, pos = list(cond), [0]

    def peek():
        return toks[pos[0]].upper() if pos[0] < len(toks) else None

    def take():
        pos[0] += 1
        return toks[pos[0] - 1]

    def either():
        alts = [a for a in both() if a]
        while peek() == "OR":
            take()
            alts += [a for a in both() if a]
        return alts or [()]

    def both():
        alts = negated()
        while peek() == "AND":
            take()
            right = negated()
            alts = [a + tuple(o for o in b if o not in a) for a in alts for b in right]
        return alts

    def negated():
        if peek() == "NOT":
            take()
            negated()
            return [()]
        return primary()

    def primary():
        if peek() is None:
            raise ValueError("condition ends early")
        if peek() == "(":
            take()
            alts = either()
            if peek() != ")":
                raise ValueError("no closing parenthesis")
            take()
            return alts
        if peek() in _UNARY:
            take()
            take()
            return [()]
        word = take()
        if peek() in _BINARY:
            take()
            take()
            return [()]
        word = re.sub(r"^\$\{(\w+)\}$", r"\1", word)
        return [(word,)] if word in off else [()]

    try:
        alts = either()
    except (ValueError, IndexError):
        return []
    if pos[0] != len(toks):
        return []
    alts = [a for a in alts if a]
    if not alts:
        return []
    best = min(alts, key=lambda a: (sum(1 for o in a if not _TESTISH.search(o)), len(a)))
    return list(best)


def _cmake_path(arg, here):
    """The repository-relative path an argument names from a CMake file in folder `here` ("" the
    top), or None (another variable, an absolute path, outside the tree)."""
    for var in _HERE_VARS + _TOP_VARS:
        if arg.startswith(var):
            arg, here = "." + arg[len(var):], here if var in _HERE_VARS else ""
    if "$" in arg or os.path.isabs(arg):
        return None
    path = os.path.normpath(os.path.join(here, arg))
    return None if path.startswith("..") else ("" if path == "." else path)


def _names_source(name, args, here, f):
    """Whether command `name` (`args`, in a CMake file of folder `here`) adds `f` to the build:
    ``add_subdirectory`` / ``subdirs`` of a folder holding it, a ``file(GLOB[_RECURSE] ...)``
    pattern matching it, or any command naming the file itself."""
    if name in ("add_subdirectory", "subdirs"):
        folders = args[:1] if name == "add_subdirectory" else args
        return any(p and f.startswith(p + "/") for p in (_cmake_path(a, here) for a in folders))
    if name == "file" and args and args[0].upper() in ("GLOB", "GLOB_RECURSE"):
        for a in args[1:]:
            p = _cmake_path(a, here) if _GLOB_CHARS.search(a) else None
            if p is None:
                continue
            folder, pattern = os.path.split(p)
            inside = f.startswith(folder + "/") if args[0].upper() == "GLOB_RECURSE" else os.path.dirname(f) == folder
            if inside and fnmatch.fnmatchcase(os.path.basename(f), pattern):
                return True
        return False
    return any(_cmake_path(a, here) == f for a in args)


def folder_gates(src, sources, off, build=None):
    """[(option, source, where)]: the OFF options (`off`: names, `off_options`) in the condition
    of an ``if``/``elseif`` branch of a CMake file of the source tree that holds the command
    adding a source of `sources` to the build (S38's files: ``add_subdirectory`` of its folder or
    an ancestor, a ``file(GLOB ...)`` finding it, a list naming it) -- the options that would
    build it. `where`: ``<cmake file>:<line> if(<condition>) ... <command>(<args>)``. Of a
    condition, the options `condition_needs` ON (not one under ``NOT``, one alternative of an
    ``OR``); an ``else`` branch gates nothing here; each (option, source) once."""
    off, out, seen = set(off), [], set()
    if not off:
        return out
    for rel in cmake_files(src, build):
        try:
            with open(os.path.join(src, rel), encoding="utf-8", errors="replace") as fh:
                text = fh.read(1024 * 1024)
        except (IOError, OSError):
            continue
        if not any(o in text for o in off):
            continue
        here, stack = os.path.dirname(rel), []
        for line, name, args in cmake_commands(text):
            if name == "if":
                stack.append((line, args))
            elif name in ("elseif", "else") and stack:
                stack[-1] = (line, args if name == "elseif" else None)
            elif name == "endif" and stack:
                stack.pop()
            elif stack:
                for f in sources:
                    if not _names_source(name, args, here, f):
                        continue
                    for at, cond in stack:
                        for o in condition_needs(cond or [], off):
                            if (o, f) not in seen:
                                seen.add((o, f))
                                out.append((o, f, "%s:%d if(%s) ... %s(%s)" % (rel, at, " ".join(cond), name,
                                                                               " ".join(args))))
    return out


def reconfigure(build):
    """Run ``cmake BUILD`` again (a patch may have changed CMakeLists.txt); (exit code, output)."""
    log("$ cmake " + build)
    with tempfile.TemporaryFile() as f:
        rc = subprocess.call(["cmake", build], stdout=f, stderr=subprocess.STDOUT)
        f.seek(0)
        return rc, f.read().decode("utf-8", "replace")


NOT_BUILT = "_NOT_BUILT"
"""The suffix of the test ``gtest_discover_tests`` registers for a target not built yet (its name
and command are ``<target>_NOT_BUILT``, CMake's GoogleTest module, both discovery modes)."""


def test_targets(targets, tests):
    """The executable `targets` (codemodel entries) that some CTest test of `tests` ([(name,
    command)]) runs: its command's program or an absolute argument is the target's artifact, the
    test is named like the target, or it is the target's ``_NOT_BUILT`` placeholder."""
    exes, names = set(), set()
    for name, cmd in tests:
        names.add(name)
        if name and name.endswith(NOT_BUILT):
            names.add(name[:-len(NOT_BUILT)])
        if cmd:
            exes.add(os.path.realpath(cmd[0]))
            exes.update(os.path.realpath(x) for x in cmd[1:] if os.path.isabs(x))
    return [t for t in targets if exes & set(t[3]) or t[0] in names]


def keep_going(build):
    """The native build tool's keep-going switch for the generator BUILD_DIR was configured with
    (``cmake --build ... -- <switch>``): make's ``-k``, ninja's ``-k 0``; [] for another."""
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            m = re.search(r"^CMAKE_GENERATOR:INTERNAL=(.*)$", f.read(), re.M)
    except OSError:
        m = None
    gen = m.group(1).strip() if m else ""
    if "Ninja" in gen:
        return ["--", "-k", "0"]
    if "Makefiles" in gen:
        return ["--", "-k"]
    return []


def build_whole(build, jobs, targets, clean):
    """Build every target (`clean`: from clean), keeping going past failures; when the build fails,
    each executable target is built alone to find those that fail, and their artifacts are
    deleted (a stale binary never reports results). Returns the names of the failed targets."""
    cmd = ["cmake", "--build", build, "-j", jobs] + (["--clean-first"] if clean else [])
    if run(cmd + keep_going(build)) == 0:
        return []
    failed = []
    for name, _, _, arts in targets:
        if run(["cmake", "--build", build, "--target", name, "-j", jobs]) != 0:
            log("target %s failed to build: its tests cannot run" % name)
            failed.append(name)
            for a in arts:
                if os.path.exists(a):
                    os.remove(a)
    return failed


def norm(path, src):
    path = path.replace("\\", "/")
    if os.path.isabs(path):
        path = os.path.relpath(path, src)
    return os.path.normpath(path)


def owners(picked, touched, src, read=gtest_suites.suites):
    """[(target, artifacts, {touched file it lists: its GoogleTest suites -- or what `read` gives,
    `boost_suites.selection`: its Boost.Test units}, how many other C/C++ sources)] of the
    `picked` targets (`gtest_suites.narrow`, `boost_suites.narrow`), read from the working tree (a
    touched header it lists defines none: its binary stays whole)."""
    out = []
    for name, _, sources, arts in picked:
        listed = set(norm(s, src) for s in sources)
        mine = dict((f, gtest_suites.file_suites(os.path.join(src, f), read)) for f in sorted(listed & touched))
        others = [f for f in listed - touched if f.lower().endswith(gtest_suites.SOURCE_SUFFIXES)]
        out.append((name, arts, mine, len(others)))
    return out


_CMAKE_FILE = re.compile(r"(?:^|/)CMakeLists\.txt$|\.cmake$", re.I)


def unbuilt_sources(every, touched, tests, src, build, build_only=False, dirs=()):
    """The touched compiled sources no target of the build compiles (class S38), sorted; [] when
    the rule does not apply: no touched compiled source (`COMPILED_SUFFIXES`); a target of any
    type (`every`, codemodel entries) lists a touched file; a listed C/C++ source or header
    ``#include``s a file named like one of them (a test file included by another); a CTest test's
    command (`tests`) or working directory (`dirs`) names one of them, or a folder holding one
    (other than the source and build trees themselves: a test that builds a sub-project at test
    time, ``make -C <folder>``), also inside an argument (``sh -c "make -C <folder>"``,
    ``-DDIR=<folder>``), or runs a script or program of the source tree that lies in such a
    folder (a ``run_all.sh`` beside the sources building them); a rule of the native build
    (`build_rules_name`: a custom command, ExternalProject's source folder, a generated file's
    DEPENDS) names one of them or such a folder. `build_only`: the
    setup's build before the test_patch -- also [] when one of them is not on disk yet or a
    touched file is a CMake file (the test_patch may still make it compiled)."""
    sources = sorted(f for f in touched if f.lower().endswith(COMPILED_SUFFIXES))
    if not sources:
        return []
    listed = set(norm(s, src) for t in every for s in t[2])
    if touched & listed:
        return []
    if build_only and (any(_CMAKE_FILE.search(f) for f in touched)
                       or not all(os.path.isfile(os.path.join(src, f)) for f in sources)):
        return []
    roots = set(os.path.realpath(r) for r in (src, build, "/"))
    real_src, real_build = os.path.realpath(src), os.path.realpath(build)
    named = unbuilt_rules.command_paths(cmd for _, cmd in tests)
    for path in [p for _, p in named] + [d for d in dirs if d and os.path.isabs(d)]:
        if os.path.realpath(path) in roots:
            continue
        rel = norm(os.path.realpath(path), real_src)
        if not rel.startswith("..") and any(f == rel or f.startswith(rel.rstrip("/") + "/") for f in sources):
            return []
    for real in unbuilt_rules.run_files(named, real_build):  # a script or program of the source tree beside the sources
        rel = os.path.dirname(norm(real, real_src))
        if rel and not rel.startswith("..") and any(f.startswith(rel + "/") for f in sources):
            return []
    code = [p for p in listed if p.lower().endswith(COMPILED_SUFFIXES + HEADER_SUFFIXES)]
    if set(os.path.basename(f) for f in sources) & included_names(code, src):
        return []
    if build_rules_name(build, [os.path.join(real_src, f) for f in sources], real_src):
        return []
    return sources


BUILD_RULE_FILES = ("build.ninja", "build.make")


def rule_files(build):
    """The native build's rule files under `build` (`BUILD_RULE_FILES`: Ninja's ``build.ninja``,
    the Makefile generator's ``build.make`` files), in ``os.walk`` order."""
    for root, _, names in os.walk(build):
        for name in names:
            if name in BUILD_RULE_FILES:
                yield os.path.join(root, name)


def build_rules_name(build, files, src):
    """Whether a rule of the native build under `build` (`rule_files`) names one of `files`
    (absolute paths) or a folder holding one below `src`, as a word: a custom command's DEPENDS or
    command (a Makefile CMake calls, ``make -C <folder>``; ExternalProject's source folder; a
    generated file's inputs). Not CMake's own dependency scanning (``cmake_depends`` lines name
    every folder that defines targets) nor an include flag (``-I<folder>``)
    (`unbuilt_rules.build_rules_name`)."""
    return unbuilt_rules.build_rules_name(build, files, src, rule_files(build), ignore="cmake_depends")


def unbuilt_source_ids(sources, src):
    """The collectors of the tests of `sources` (S38): each file as ``<path> [compiled by no
    target]`` (a collector no id lies under: the side reports it), then the GoogleTest ids and
    Boost.Test units they declare (`unbuilt_ids`' readers), each once."""
    out = ["%s %s" % (f, UNBUILT_SOURCE) for f in sources]
    out += [c for f in sources for read in (gtest_suites.declared, boost_suites.declared)
            for c in gtest_suites.file_suites(os.path.join(src, f), read)]
    seen = set()
    return [c for c in out if not (c in seen or seen.add(c))]


UNBUILT_TAG = "unbuilt"
UNBUILT_ANCHOR = "the tests of the targets that failed to build follow"
"""The helper line printed right before the ``<swemint-unbuilt>`` sections on the console: the
parsers read the sections only after the last such line (a test's or a build's output, printed
before it, cannot add collectors)."""


def unbuilt_ids(target, touched, src, tests):
    """The collectors of the tests target `target` (a codemodel entry) would have run had it
    built (class S34): the GoogleTest ids the touched files it lists declare
    (`gtest_suites.declared`, read on this side's tree) and their Boost.Test units (S36,
    `boost_suites.declared`), then the CTest tests that run its
    artifact whole (named like it, or its command or an absolute argument is its artifact; not a
    one-case ``--gtest_filter`` test nor the ``_NOT_BUILT`` placeholder)."""
    name, _, sources, arts = target
    listed = set(norm(s, src) for s in sources)
    out = [c for f in sorted(listed & touched) for read in (gtest_suites.declared, boost_suites.declared)
           for c in gtest_suites.file_suites(os.path.join(src, f), read)]
    arts = set(arts)
    for n, cmd in tests:
        if n.endswith(NOT_BUILT) or gtest_suites.case_of(cmd):
            continue
        runs = bool(cmd) and any(os.path.realpath(x) in arts for x in cmd[:1] + [a for a in cmd[1:] if os.path.isabs(a)])
        if n == name or runs:
            out.append(n)
    seen = set()
    return [c for c in out if not (c in seen or seen.add(c))]


def unbuilt_section(name, ids):
    """One ``<swemint-unbuilt target="NAME">`` section (bytes): a collector a line, XML-escaped."""
    body = "".join(xml_escape(i) + "\n" for i in ids)
    return ("<swemint-%s target=%s>\n%s</swemint-%s>\n" % (UNBUILT_TAG, quoteattr(name), body, UNBUILT_TAG)).encode("utf-8")


def report_unbuilt(unbuilt, report, quiet=False):
    """Add the sections of the `unbuilt` targets ([(name, collectors)]) to the ``--output-junit``
    file `report` (after ctest's document), else print them after `UNBUILT_ANCHOR`. `quiet`: no
    line per target (S38's sources, named by the caller)."""
    if not unbuilt:
        return
    for name, ids in unbuilt:
        if not quiet:
            log("target %s failed to build: its %d test(s) are reported as not built" % (name, len(ids)))
    if not report:
        log(UNBUILT_ANCHOR)
    ctest_reruns.write_sections([unbuilt_section(n, i) for n, i in unbuilt], report)


def main(argv):
    if "--" not in argv:
        print(__doc__)
        return 2
    opts, files = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    build, junit, verbose, jobs, timeout, only = opts[0], None, False, "2", "600", None
    build_only = "--build-only" in opts
    rediscover = "--rediscover" in opts
    whole = "--whole" in opts
    opts = [o for o in opts if o not in ("--build-only", "--rediscover", "--whole")]
    i = 1
    while i < len(opts):
        if opts[i] == "--junit":
            junit, i = opts[i + 1], i + 2
        elif opts[i] == "--jobs":
            jobs, i = opts[i + 1], i + 2
        elif opts[i] == "--timeout":
            timeout, i = opts[i + 1], i + 2
        elif opts[i] == "--only":
            only, i = json.loads(opts[i + 1]), i + 2
        else:
            verbose, i = verbose or opts[i] == "--verbose", i + 1
    src = os.getcwd()
    rc, configured = reconfigure(build)
    if rc != 0:
        sys.stdout.write("\n".join(configured.splitlines()[-60:]) + "\n")
        log("re-configure failed (the build below shows why)")
    touched = set(norm(f, src) for f in files)
    every = codemodel(build)
    targets = [t for t in every if t[1] == "EXECUTABLE"]
    shown = ctest_reruns.show_only(build, quiet=False)  # one listing for the tests and S38's working directories
    tests = ctest_tests(build, shown)
    picked = [] if whole else [t for t in targets if touched & set(norm(s, src) for s in t[2])]
    owned = bool(picked)
    lone = [] if whole or picked or not tests else unbuilt_sources(every, touched, tests, src, build, build_only,
                                                                     ctest_workdirs(shown))
    if lone:  # S38: no build of this project compiles them: the whole suite cannot run their tests
        log("%s %s compiled by no target of this CMake build (after the test_patch): its tests cannot run "
            "here (nothing is built or run; their tests are reported as not built)"
            % (" ".join(lone), "is" if len(lone) == 1 else "are"))
        for name, f, where in folder_gates(src, lone, [n for n, _ in off_options(build)], build):
            log("option %s=OFF gates %s: %s" % (name, f, where[:300]))
        if build_only:
            return 0
        report = os.path.join(build, junit) if junit else None
        if report and os.path.exists(report):
            os.remove(report)  # no ctest ran: an older report is not this run's
        report_unbuilt([(lone[0], unbuilt_source_ids(lone, src))], report, quiet=True)
        return 2
    if whole:
        log("the whole suite (--whole): building every target, running every test")
    elif picked:
        log("targets owning the touched files: " + " ".join(t[0] for t in picked))
    else:
        picked = test_targets(targets, tests)
        if picked or not tests:
            log("no target owns the touched files: building the %d test targets" % len(picked))
        else:
            whole = True
            log("no target owns the touched files and no target is known to run a CTest test: "
                "the whole suite (building every target, running every test)")
    if whole:
        build_whole(build, jobs, targets, rediscover)
    failed = []
    for target in picked:
        name, _, _, arts = target
        clean = ["--clean-first"] if rediscover else []
        if run(["cmake", "--build", build, "--target", name, "-j", jobs] + clean) != 0:
            log("target %s failed to build: its tests cannot run" % name)
            failed.append(target)
            for a in arts:
                if os.path.exists(a):
                    os.remove(a)
    if build_only:
        return 0
    if picked or whole:  # what the builds registered (googletest discovery) is in the list only now
        tests = ctest_tests(build)
    report = os.path.join(build, junit) if junit else None
    # S34: an owner that failed to build reports the tests it would have run as not built
    unbuilt = [(t[0], unbuilt_ids(t, touched, src, tests)) for t in failed] if owned else []
    unbuilt = [(n, i) for n, i in unbuilt if i]
    names = set(t[0] for t in picked)
    arts = set(a for t in picked for a in t[3])
    selected = [n for n, c in tests
                if n in names or (n.endswith(NOT_BUILT) and n[:-len(NOT_BUILT)] in names)
                or (c and os.path.realpath(c[0]) in arts)
                or any(os.path.realpath(x) in arts for x in c[1:] if os.path.isabs(x))]
    flt = None
    if owned and tests:  # S33: one GoogleTest binary of many test files runs the touched files' suites
        selected, flt = gtest_suites.narrow(build, owners(picked, touched, src), tests, selected,
                                            os.environ.get("GTEST_FILTER"))
    if only and tests:
        pool = selected if selected and len(selected) < len(tests) else [n for n, _ in tests]
        if set(only) <= set(pool):
            selected = [n for n in pool if n in set(only)]
            log("targeted: the CTest tests %s" % " ".join(selected))
        else:
            log("targeted: %d name(s) are no CTest test here: the selection stays" % len(set(only) - set(pool)))
    bflt = None
    if tests and (owned or only):  # S36: Boost.Test binaries run the touched files' units (or the rerun's)
        bflt = boost_suites.narrow(build, owners(picked, touched, src, boost_suites.selection) if owned else [],
                                   tests, selected or [n for n, _ in tests], only)
    cmd = ["ctest", "--timeout", timeout]
    if junit:
        cmd += ["--output-junit", junit] + full_output(build)
    if verbose:
        cmd += ["-V"]
    else:
        cmd += ["--output-on-failure"]
    if selected and len(selected) < len(tests):
        cmd += ["-R", "^(" + "|".join(re.sub(r"([][.+*?^$()|\\])", r"\\\1", n) for n in selected) + ")$"]
    elif not tests:
        log("no CTest tests are defined")
        for line in gating_options(build, configured):
            log(line)
        report_unbuilt(unbuilt, report)
        return 2
    bad = failed_fixtures(build, set(selected) if selected and len(selected) < len(tests) else None, timeout)
    if bad:
        cmd += ["-FS", "^(" + "|".join(re.sub(r"([][.+*?^$()|\\])", r"\\\1", f) for f in sorted(bad)) + ")$"]
    own = set(gtest_suites.case_of(c) for _, c in tests) - {None}  # a case CTest runs alone hides no other
    rc, last = run_ctest(cmd, build, src, flt, own, {"BOOST_TEST_RUN_FILTERS": bflt} if bflt else None)
    prefix = last[:-len(cmd)] if len(last) > len(cmd) else []
    chosen = set(selected) if selected and len(selected) < len(tests) else None
    doctest_runs.run_doctests(build, chosen, timeout, prefix, report)
    catch2_runs.run_catch2(build, chosen, timeout, prefix, report)
    boost_runs.run_boost(build, chosen, timeout, prefix, report, bflt)
    report_unbuilt(unbuilt, report)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
