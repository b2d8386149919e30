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
   program lists: the whole suite);
4. build the picked tests' programs (the whole build for the whole suite) with ``ninja -k 0``,
   then, when ninja failed, ask it (``-n``) whether each program is up to date: one that is not failed to build,
   and its stale output from an earlier build is deleted, so it can never report results (class
   S34 under Meson: the test_patch's test uses the fix's new API);
5. run ``meson test -C BUILD_DIR --print-errorlogs --no-rebuild --num-processes N`` on the picked
   tests whose program exists (``<project>:<name>``, fnmatch metacharacters escaped; no names for
   the whole suite when every program built), with ``--timeout-multiplier`` S/30 (meson's default
   per-test timeout is 30 s, so a test of the default gets S seconds, one that declares its own
   keeps its ratio);
6. append to ``BUILD_DIR/meson-logs/testlog.json`` one line per picked test whose program did not
   build: ``{"name": <meson's display name>, "result": "FAIL", "swemint": "unbuilt"}`` (meson
   refuses a run naming a program that does not exist, so they cannot be in its log).
``--build-only``: steps 1-4, exit 0 (the environment's setup builds what the test run needs).
``--whole``: the whole suite whatever owns the touched files. ``--only JSON`` (a targeted rerun: a
JSON list of test ids as meson's log names them): only the picked tests with those ids run; none
of them known -> the selection stays. Exit code: meson test's, 1 when a picked test did not build,
2 when nothing could be selected. Standard library only (python3 >= 3.5).
"""

import json
import os
import re
import subprocess
import sys

DEFAULT_TIMEOUT = 30.0
"""Seconds: meson's per-test timeout when test() does not give one."""


def log(msg):
    print("swemint-meson-tests: " + msg, flush=True)


def run(cmd, **kw):
    log("$ " + " ".join(cmd))
    return subprocess.call(cmd, **kw)


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


def pretty(test):
    """The name meson's console and log give a test (mtest's `get_pretty_suite`):
    ``[<suite>+<suite> - ]<project>:<name>``."""
    suites = [s for s in test.get("suite") or [] if isinstance(s, str)]
    project = suites[0].split(":", 1)[0] if suites else ""
    own = [s.split(":", 1)[1] for s in suites if ":" in s and s.split(":", 1)[1]]
    name = "%s:%s" % (project, test.get("name", ""))
    return "%s - %s" % ("+".join(own), name) if own else name


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
    run(["ninja", "-C", build, "build.ninja"])
    targets, tests = introspect(build, "targets"), introspect(build, "tests")
    touched = [os.path.realpath(os.path.join(os.getcwd(), f)) for f in files]
    owning = [] if whole else owners(targets, touched)
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
        built = run(["ninja", "-C", build, "-k", "0", "-j", jobs])
    elif wanted:
        rels = [os.path.relpath(f, build) for t in wanted for f in t.get("filename") or []]
        built = run(["ninja", "-C", build, "-k", "0", "-j", jobs] + rels)
    failed = [t for t in wanted if not up_to_date(build, t)] if built != 0 else []
    for t in failed:
        log("target %s failed to build: its outputs are deleted" % t.get("name", "?"))
        for f in t.get("filename") or []:
            if os.path.isfile(f):
                os.remove(f)
    if "--build-only" in args:
        return 0
    unbuilt = [i for i in picked if (tests[i].get("cmd") or [""])[0] and not os.path.exists(tests[i]["cmd"][0])]
    clash = set((project_of(tests[i]), tests[i].get("name")) for i in unbuilt)
    unbuilt += [i for i in picked if i not in unbuilt and (project_of(tests[i]), tests[i].get("name")) in clash]
    runnable = [i for i in picked if i not in unbuilt]
    if only is not None:
        names = set(only)
        chosen = [i for i in runnable if pretty(tests[i]) in names or
                  "%s:%s" % (project_of(tests[i]), tests[i].get("name")) in names]
        if chosen:
            log("only: %s" % " ".join(pretty(tests[i]) for i in chosen))
            runnable, everything = chosen, False
            unbuilt = [i for i in unbuilt if pretty(tests[i]) in names]
        else:
            log("only: none of %s is a picked test: the selection stays" % " ".join(sorted(names))[:400])
    logs = os.path.join(build, "meson-logs")
    testlog = os.path.join(logs, "testlog.json")
    if os.path.exists(testlog):
        os.remove(testlog)
    rc = 2 if not runnable and not unbuilt else 0
    if runnable:
        cmd = ["meson", "test", "-C", build, "--print-errorlogs", "--no-rebuild", "--num-processes", jobs]
        if timeout:
            cmd += ["--timeout-multiplier", "%g" % (float(timeout) / DEFAULT_TIMEOUT)]
        if not (everything and not unbuilt):
            names = []
            for i in runnable:
                name = "%s:%s" % (project_of(tests[i]), fnescape(tests[i].get("name", "")))
                if name not in names:
                    names.append(name)
            cmd += names
        rc = run(cmd)
    if unbuilt:
        if not os.path.isdir(logs):
            os.makedirs(logs)
        with open(testlog, "a") as f:
            for i in unbuilt:
                f.write(json.dumps({"name": pretty(tests[i]), "result": "FAIL", "swemint": "unbuilt",
                                    "command": tests[i].get("cmd") or []}) + "\n")
        log("tests whose program did not build: %s" % " ".join(pretty(tests[i]) for i in unbuilt))
        rc = rc or 1
    if rc == 2:
        log("no test to run")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
