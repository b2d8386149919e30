#!/usr/bin/env python3
"""Build and run the Meson tests of the targets that own some files (run inside the container; class S35).

Usage: meson_tests.py BUILD_DIR [--jobs N] [--timeout S] [--build-only] [--whole] [--only JSON] -- FILE...

FILE...: repository-relative paths (the files the test patch touches), resolved against the
current folder (/testbed). Steps:
1. ``ninja -C BUILD_DIR build.ninja``: meson regenerates the build when a meson.build changed (a
   test the test_patch registers with ``test()`` exists from then on), and its introspection
   files with it;
2. read the introspection (``BUILD_DIR/meson-info/intro-targets.json`` and ``intro-tests.json``,
   what ``meson introspect --targets`` / ``--tests`` print) and pick the targets owning one of
   FILE: listed among a target's ``target_sources`` (or ``extra_files``), or the meson.build
   that defines it (``defined_in``);
3. pick the tests whose program (``cmd[0]``) is an owning target's output or which depend on
   one (``depends``); none -> every test (a touched header, data file or library source no test
   program lists: the whole suite). Except (class S38, as under CMake): the touched files
   include compiled sources (`COMPILED_SUFFIXES`), no target lists or defines any touched file,
   no listed source ``#include``s one, no test's command or ``workdir`` names one or a folder
   holding it (nor runs a script of such a folder) and no ``build.ninja`` rule names one or such
   a folder (`unbuilt_sources`): nothing is built or run, a helper line names them ("... is compiled by
   no target of this Meson build (after the test_patch): its tests cannot run here") and one
   ``swemint-meson-tests: not built: <path> [compiled by no target]`` line each (`NOT_BUILT`: a
   collection error for the parser, so the side reports those tests as not built), printed and
   written as ``meson-logs/testlog.json`` (no meson test runs), exit 2;
4. build the picked tests' programs (the whole build for the whole suite) with ``ninja -k 0``,
   then, when ninja failed, ask it (``-n``) whether each program is up to date: one that is not failed to build,
   and its stale output from an earlier build is deleted, so it can never report results (class
   S34 under Meson: the test_patch's test uses the fix's new API);
5. run ``meson test -C BUILD_DIR --print-errorlogs --no-rebuild --num-processes N`` on the picked
   tests (``<project>:<name>``, fnmatch metacharacters escaped; no names for the whole suite),
   with ``--timeout-multiplier`` S/30 (meson's default per-test timeout is 30 s, so a test of the
   default gets S seconds, one that declares its own keeps its ratio). meson refuses a run naming
   a program that does not exist, so a picked test whose program did not build runs a stub in its
   place that prints ``swemint-meson-tests: unbuilt <target>`` and fails (meson logs it under its
   own name; the parser counts it a unit that failed to build); the stubs are removed after the run.
In a test run every line of ninja's and meson's output is printed behind ``| `` (`QUOTE`) and
the helper's own lines start ``swemint-meson-tests: `` (newlines in them escaped): a row's stored
command ``cat``s ``meson-logs/testlog.json`` after this console, and the parser reads the lines
starting with ``{`` -- a test's own output (meson repeats a failing test's) can never start one.
``--build-only``: steps 1-4, exit 0 (the environment's setup builds what the test run needs);
S38 applies there only when every such source exists and no meson.build / meson_options.txt /
meson.options is touched (the setup runs before the test_patch).
``--whole``: the whole suite whatever owns the touched files. ``--only JSON`` (a targeted rerun: a
JSON list of test ids as meson's log names them, `known_names`): only the picked tests with those
ids run; none of them known -> the selection stays. Exit code: meson test's, 2 when nothing
could be selected. Standard library only (python3 >= 3.5), with ``unbuilt_rules.py`` (what the S38
checks share with ``cmake_tests.py``) installed beside it (``c_meson.MESON_FILES``).
"""

import json
import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import unbuilt_rules  # noqa: E402  (installed beside this file)
from unbuilt_rules import COMPILED_SUFFIXES, HEADER_SUFFIXES, UNBUILT_SOURCE, included_names  # noqa: E402

UNBUILT = "swemint-meson-tests: unbuilt"
"""The line a stub standing for a program that did not build prints (`envpool.testrun.polyglot.meson`)."""
NOT_BUILT = "swemint-meson-tests: not built: "
"""The line naming a collector of tests that cannot run (S38), read by `envpool.testrun.polyglot.meson`."""
_MESON_FILES = ("meson.build", "meson_options.txt", "meson.options")
DEFAULT_TIMEOUT = 30.0
"""Seconds: meson's per-test timeout when test() does not give one."""


QUOTE = b"| "
"""What every line of ninja's and meson's output gets in front of it in a test run (not
``--build-only``): meson repeats a failing test's own output (``--print-errorlogs``), and a row's
stored command prints ``meson-logs/testlog.json`` after this console for the parser, which reads
the lines starting with ``{`` -- the code under test must never start one."""


def log(msg):
    """Print the helper's own line ``swemint-meson-tests: msg``; newlines in `msg` (a test name
    from the repository's meson.build may hold one) printed as ``\\n``, so it stays one line."""
    print("swemint-meson-tests: " + msg.replace("\r", "\\r").replace("\n", "\\n"), flush=True)


def run(cmd, quote=False):
    """Run `cmd`, its exit code; `quote`: its output (stdout and stderr) printed line by line
    behind `QUOTE` (lines split on ``\\n`` only, as the parser splits them)."""
    log("$ " + " ".join(cmd))
    if not quote:
        return subprocess.call(cmd)
    sys.stdout.flush()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = sys.stdout.buffer
    for line in iter(proc.stdout.readline, b""):
        out.write(QUOTE + line + (b"" if line.endswith(b"\n") else b"\n"))
        out.flush()
    proc.stdout.close()
    return proc.wait()


def introspect(build, what):
    """The JSON list meson-info/intro-<what>.json holds (``meson introspect --<what>`` when absent)."""
    path = os.path.join(build, "meson-info", "intro-%s.json" % what)
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        pass
    try:
        out = subprocess.check_output(["meson", "introspect", "--" + what, build])
        return json.loads(out.decode("utf-8", "replace"))
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        log("meson introspect --%s failed: %s" % (what, e))
        return []


def target_files(target):
    """Absolute paths of the files a target lists: its sources, generated sources, extra files."""
    out = []
    for group in target.get("target_sources") or []:
        for key in ("sources", "generated_sources"):
            out += [os.path.realpath(p) for p in group.get(key) or [] if isinstance(p, str)]
    out += [os.path.realpath(p) for p in target.get("extra_files") or [] if isinstance(p, str)]
    return out


def owners(targets, touched):
    """The targets listing one of `touched` (absolute paths) or defined in one of them."""
    want = set(touched)
    out = []
    for t in targets:
        defined = t.get("defined_in")
        if want & set(target_files(t)) or (isinstance(defined, str) and os.path.realpath(defined) in want):
            out.append(t)
    return out


def unbuilt_sources(targets, tests, touched, src, build, build_only=False):
    """The touched compiled sources (absolute paths) no target compiles (class S38), sorted; []
    when the rule does not apply: none touched; a target lists or defines a touched file; a
    listed C/C++ source or header ``#include``s a file named like one; a test's command or
    working directory (``workdir``) names one or a folder holding it (not the source or build tree
    itself), also inside an argument (``sh -c "make -C <folder>"``), or runs a script or program
    of the source tree lying in such a folder; a rule of ``build.ninja`` names one or such a
    folder as a word (a custom target calling a Makefile; not an include flag). `build_only`:
    also [] when one is not on disk yet or a Meson build file is touched (the test_patch may
    still list it)."""
    sources = sorted(f for f in touched if f.lower().endswith(COMPILED_SUFFIXES))
    if not sources or owners(targets, touched):
        return []
    if build_only and (any(os.path.basename(f) in _MESON_FILES for f in touched)
                       or not all(os.path.isfile(f) for f in sources)):
        return []
    roots = set(os.path.realpath(r) for r in (src, build, "/"))
    real_src, real_build = os.path.realpath(src), os.path.realpath(build)
    named = unbuilt_rules.command_paths(test.get("cmd") for test in tests)
    workdirs = [t.get("workdir") for t in tests if isinstance(t.get("workdir"), str) and os.path.isabs(t["workdir"])]
    for arg in [p for _, p in named] + workdirs:
        if os.path.realpath(arg) in roots:
            continue
        arg = os.path.realpath(arg)
        if any(f == arg or f.startswith(arg.rstrip("/") + "/") for f in sources):
            return []
    for real in unbuilt_rules.run_files(named, real_build):  # a script or program of the source tree beside the sources
        folder = os.path.dirname(real)
        if folder.startswith(real_src + os.sep) and any(f.startswith(folder + "/") for f in sources):
            return []
    code = [p for t in targets for p in target_files(t) if p.lower().endswith(COMPILED_SUFFIXES + HEADER_SUFFIXES)]
    if set(os.path.basename(f) for f in sources) & included_names(code, src):
        return []
    if build_rules_name(build, sources, real_src):
        return []
    return sources


def build_rules_name(build, files, src):
    """Whether ``build.ninja`` names one of `files` (absolute paths) or a folder holding one below
    `src`, absolute or relative to `build`, as a word (a custom target's command or input: a
    Makefile it calls, ``make -C <folder>``); not an include flag (``-I<folder>``)
    (`unbuilt_rules.build_rules_name`)."""
    return unbuilt_rules.build_rules_name(build, files, src, [os.path.join(build, "build.ninja")], relative=True)


def pretty(test):
    """The name meson's console and log give a test (mtest's `get_pretty_suite`):
    ``[<suite>+<suite> - ]<project>:<name>``."""
    suites = [s for s in test.get("suite") or [] if isinstance(s, str)]
    project = suites[0].split(":", 1)[0] if suites else ""
    own = [s.split(":", 1)[1] for s in suites if ":" in s and s.split(":", 1)[1]]
    name = "%s:%s" % (project, test.get("name", ""))
    return "%s - %s" % ("+".join(own), name) if own else name


def known_names(test):
    """The names a test's id may have in meson's log: ``[<suites> - ]<project>:<name>`` (meson >= 1.2's
    display name), ``<project>[:<suites>] / <name>`` (older releases, a build with several
    suites), ``<name>`` (older releases, one suite) and ``<project>:<name>``."""
    suites = [s for s in test.get("suite") or [] if isinstance(s, str)]
    project, name = project_of(test), test.get("name", "")
    own = "+".join(s.split(":", 1)[1] if ":" in s else "" for s in suites)
    return {pretty(test), name, "%s:%s" % (project, name), "%s%s / %s" % (project, ":" + own if own else "", name)}


def project_of(test):
    suites = [s for s in test.get("suite") or [] if isinstance(s, str)]
    return suites[0].split(":", 1)[0] if suites else ""


def fnescape(name):
    """`name` as an fnmatch pattern matching only itself (meson matches test names with fnmatch)."""
    return re.sub(r"([*?\[])", r"[\1]", name)


def program_targets(targets, tests):
    """{test index: the target whose output is the test's program} (tests running a built program)."""
    by_file = {}
    for t in targets:
        for f in t.get("filename") or []:
            by_file[os.path.realpath(f)] = t
    out = {}
    for i, test in enumerate(tests):
        cmd = test.get("cmd") or []
        if cmd and isinstance(cmd[0], str) and os.path.realpath(cmd[0]) in by_file:
            out[i] = by_file[os.path.realpath(cmd[0])]
    return out


def up_to_date(build, target):
    """Whether ninja has nothing left to do for the target's outputs (its build succeeded)."""
    rels = [os.path.relpath(f, build) for f in target.get("filename") or []]
    if not rels:
        return True
    try:
        out = subprocess.check_output(["ninja", "-C", build, "-n"] + rels, stderr=subprocess.STDOUT)
    except (OSError, subprocess.CalledProcessError):
        return False
    return b"no work to do" in out


def main(argv):
    args, files = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    build = os.path.abspath(args[0])
    jobs = args[args.index("--jobs") + 1] if "--jobs" in args else "2"
    timeout = args[args.index("--timeout") + 1] if "--timeout" in args else ""
    only = json.loads(args[args.index("--only") + 1]) if "--only" in args else None
    whole = "--whole" in args
    quote = "--build-only" not in args
    run(["ninja", "-C", build, "build.ninja"], quote)
    targets, tests = introspect(build, "targets"), introspect(build, "tests")
    touched = [os.path.realpath(os.path.join(os.getcwd(), f)) for f in files]
    owning = [] if whole else owners(targets, touched)
    lone = [] if whole or owning or not tests else \
        unbuilt_sources(targets, tests, touched, os.getcwd(), build, "--build-only" in args)
    if lone:  # S38: no build of this project compiles them: the whole suite cannot run their tests
        rel = [os.path.relpath(f, os.getcwd()) for f in lone]
        log("%s %s compiled by no target of this Meson build (after the test_patch): its tests cannot run "
            "here (nothing is built or run; their tests are reported as not built)"
            % (" ".join(rel), "is" if len(rel) == 1 else "are"))
        if "--build-only" in args:
            return 0
        lines = ["%s%s %s\n" % (NOT_BUILT, f.replace("\n", "\\n"), UNBUILT_SOURCE) for f in rel]
        sys.stdout.write("".join(lines))
        sys.stdout.flush()
        logs = os.path.join(build, "meson-logs")
        if not os.path.isdir(logs):
            os.makedirs(logs)
        with open(os.path.join(logs, "testlog.json"), "w") as f:  # the report the plan reads: no meson run
            f.write("".join(lines))
        return 2
    ids = set(t.get("id") for t in owning)
    outs = set(os.path.realpath(f) for t in owning for f in t.get("filename") or [])
    picked = [i for i, t in enumerate(tests)
              if (t.get("cmd") and os.path.realpath(t["cmd"][0]) in outs) or ids & set(t.get("depends") or [])]
    if whole:
        log("the whole suite (%d tests): asked for" % len(tests))
    elif not owning:
        log("no target owns the touched files: the whole suite (%d tests)" % len(tests))
    elif not picked:
        log("targets owning the touched files: %s; no test runs them: the whole suite (%d tests)"
            % (" ".join(t.get("name", "?") for t in owning), len(tests)))
    else:
        log("targets owning the touched files: %s; their tests: %s"
            % (" ".join(t.get("name", "?") for t in owning), " ".join(pretty(tests[i]) for i in picked)))
    if picked:  # meson test selects by <project>:<name>: a test sharing a picked test's name runs too (S35)
        same = set((project_of(tests[i]), tests[i].get("name")) for i in picked)
        twins = [i for i, t in enumerate(tests) if i not in picked and (project_of(t), t.get("name")) in same]
        if twins:
            log("tests sharing a picked test's name (meson selects by name; their programs are built too): %s"
                % " ".join(pretty(tests[i]) for i in twins))
            picked += twins
    everything = not picked
    if everything:
        picked = list(range(len(tests)))
    programs = program_targets(targets, tests)
    wanted = []
    for i in picked:
        if i in programs and programs[i] not in wanted:
            wanted.append(programs[i])
    built = 0
    if everything:
        built = run(["ninja", "-C", build, "-k", "0", "-j", jobs], quote)
    elif wanted:
        rels = [os.path.relpath(f, build) for t in wanted for f in t.get("filename") or []]
        built = run(["ninja", "-C", build, "-k", "0", "-j", jobs] + rels, quote)
    failed = [t for t in wanted if not up_to_date(build, t)] if built != 0 else []
    for t in failed:
        log("target %s failed to build: its outputs are deleted" % t.get("name", "?"))
        for f in t.get("filename") or []:
            if os.path.isfile(f):
                os.remove(f)
    if "--build-only" in args:
        return 0
    missing = [i for i in picked if (tests[i].get("cmd") or [""])[0] and not os.path.exists(tests[i]["cmd"][0])]
    stubs = [i for i in missing if i in programs]
    absent = [i for i in missing if i not in programs]
    if absent:
        log("tests whose program is no target and does not exist, left out: %s"
            % " ".join(pretty(tests[i]) for i in absent))
    runnable = [i for i in picked if i not in absent]
    if only is not None:
        names = set(only)
        chosen = [i for i in runnable if names & known_names(tests[i])]
        if chosen:
            log("only: %s" % " ".join(pretty(tests[i]) for i in chosen))
            runnable, everything = chosen, False
        else:
            log("only: none of %s is a picked test: the selection stays" % " ".join(sorted(names))[:400])
    # meson runs every test of a selected <project>:<name>: a same-named test left out by --only
    # runs too, so its unbuilt program needs its stub as well (or meson stops before any test)
    selected = set((project_of(tests[i]), tests[i].get("name")) for i in runnable)
    stubs = [i for i in stubs if i in runnable or (project_of(tests[i]), tests[i].get("name")) in selected]
    testlog = os.path.join(build, "meson-logs", "testlog.json")
    if os.path.exists(testlog):
        os.remove(testlog)
    if not runnable:
        log("no test to run")
        return 2
    written = []
    for i in stubs:  # meson refuses a run naming a program that does not exist: a stub fails in its place
        path = tests[i]["cmd"][0]
        if path not in written:
            if not os.path.isdir(os.path.dirname(path)):
                os.makedirs(os.path.dirname(path))
            with open(path, "w") as f:
                line = "%s %s" % (UNBUILT, str(programs[i].get("name", "?")).replace("\n", "\\n"))
                # a target's name is the repository's: quoted, printed as is (dash's echo reads backslashes)
                f.write("#!/bin/sh\nprintf '%%s\\n' %s\nexit 1\n" % shlex.quote(line))
            os.chmod(path, 0o755)
            written.append(path)
    if stubs:
        log("tests whose program did not build (run as a stub that fails): %s"
            % " ".join(pretty(tests[i]) for i in stubs))
    cmd = ["meson", "test", "-C", build, "--print-errorlogs", "--no-rebuild", "--num-processes", jobs]
    if timeout:
        cmd += ["--timeout-multiplier", "%g" % (float(timeout) / DEFAULT_TIMEOUT)]
    if not everything or absent:
        names = []
        for i in runnable:
            name = "%s:%s" % (project_of(tests[i]), fnescape(tests[i].get("name", "")))
            if name not in names:
                names.append(name)
        cmd += names
    try:
        return run(cmd, quote=True)
    finally:
        for path in written:  # never left where ninja would take it for a built program
            os.remove(path)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
