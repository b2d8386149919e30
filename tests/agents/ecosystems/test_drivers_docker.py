"""Repository test drivers minted end to end in Docker, on small repositories the tests write:

- an interpreter-style C project with no build file at the root: its port's Makefile builds the
  binary and its `test` target runs ``tests/run-tests.py`` with the binary's path in the
  environment (taken from ``make -n test``); the driver runs the touched test's folder;
- a server-style C project whose ``runtest`` needs tclsh: analysis reads "You need tcl 8.5 or
  newer" in the driver, Execution asks Debian's file index for tclsh and installs its package
  before the setup, and round 1 verifies with the Tcl helper's test names;
- a Django-style Python project (``tests/runtests.py``: unittest with a settings module, run by
  tox.ini): ids as unittest prints them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.ecosystems import cfamily, python
from agents.models import StepRecord
from tests.agents.ecosystems.conftest import make_patches, make_repo

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture
def git_patches(tmp_path):
    """``git_patches(files, tests, fix)`` -> (test_patch, patch): git diffs of `tests` and `fix`
    over a repository holding `files`."""
    def make(files: dict[str, str], tests: dict[str, str], fix: dict[str, str]) -> tuple[str, str]:
        git_dir, _ = make_repo(tmp_path / f"patches-{len(list(tmp_path.iterdir()))}", files)
        return make_patches(git_dir, tests, fix)
    return make

RUN_TESTS = r'''#!/usr/bin/env python3
import os, subprocess, sys
from glob import glob
args = sys.argv[1:]
if args and args[0] == "-d":
    files = sorted(f for d in args[1:] for f in glob(d + "/*.py"))
else:
    files = args
passed = 0
for f in files:
    ok = subprocess.run([sys.executable, f], env=dict(os.environ)).returncode == 0
    passed += ok
    print(("pass " if ok else "FAIL ") + " " + f)
print("%d tests performed" % len(files))
print("%d tests passed" % passed)
'''
PORT_MAKEFILE = """PROG = interp
BUILD ?= build-std
all: $(BUILD)/$(PROG)
$(BUILD)/$(PROG): main.c
\tmkdir -p $(BUILD) && cc -O0 -o $@ main.c
test: $(BUILD)/$(PROG)
\tcd ../../tests && INTERP_BIN=../ports/host/$(BUILD)/$(PROG) ./run-tests.py
"""
MAIN_BUG = '#include <stdio.h>\n#include <stdlib.h>\nint main(int c, char **v) { printf("%d\\n", atoi(v[1]) - atoi(v[2])); return 0; }\n'
MAIN_FIX = MAIN_BUG.replace(" - ", " + ")
CHECK = "import os, subprocess\nout = subprocess.run([os.environ['INTERP_BIN'], '{a}', '{b}'], capture_output=True, text=True).stdout\nassert out.strip() == '{want}', out\n"


def test_interpreter_port_with_run_tests_driver(mint_with, git_patches):
    files = {"ports/host/Makefile": PORT_MAKEFILE, "ports/host/main.c": MAIN_BUG, "py/a.c": "", "py/b.c": "",
             "tests/run-tests.py": RUN_TESTS, "tests/basics/zero.py": CHECK.format(a=0, b=0, want=0),
             ".github/workflows/unix.yml": "jobs:\n  unix:\n    steps:\n      - run: make -C ports/host\n"
                                           "      - run: make -C ports/host test\n"}
    test_patch, patch = git_patches(files, {"tests/basics/add.py": CHECK.format(a=2, b=3, want=5)},
                                    {"ports/host/main.c": MAIN_FIX})
    res = mint_with(cfamily.ECOSYSTEM, files, "interp", language="c", created_at="2024-01-10 10:00:00",
                    patch=patch, test_patch=test_patch)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["basics/add.py"] and res.PASS_TO_PASS == ["basics/zero.py"]
    assert res.parser == "script_status_log"
    # the `related` selection: every test of the touched folder, by name (zero.py is not touched)
    assert res.test_command.endswith("cd tests && python3 run-tests.py basics/add.py basics/zero.py")
    log = Path(res.log_path).read_text()
    assert "pass  basics/add.py" in log  # INTERP_BIN came from `make -n test`: without it every test fails


RUNTEST = """#!/bin/sh
TCLSH=""
for V in 8.5 8.6 8.7; do T=`which tclsh$V 2>/dev/null` && TCLSH=$T; done
if [ -z "$TCLSH" ]; then echo "You need tcl 8.5 or newer in order to run the server test"; exit 1; fi
$TCLSH tests/test_helper.tcl "$@"
"""
HELPER = r"""set ::units {}
for {set i 0} {$i < [llength $argv]} {incr i} {
    set opt [lindex $argv $i]
    if {$opt eq "--single"} { incr i; lappend ::units [lindex $argv $i] } elseif {$opt eq "--clients"} { incr i }
}
proc test {name code} {
    if {[catch {uplevel 1 $code} err]} { puts "\[err\]: $name in $::curfile"; puts $err } else { puts "\[ok\]: $name (1 ms)" }
}
proc assert_equal {a b} { if {$a ne $b} { error "Expected '$a' to equal '$b'" } }
foreach u $::units { set ::curfile "tests/$u.tcl"; source $::curfile }
puts "\[1/1 done\]: [join $::units] (0 seconds)"
"""
UNIT = "test {SUM of zeros} { assert_equal [exec src/server 0 0] 0 }\n"
SERVER_MAKEFILE = "all: src/server\nsrc/server: src/server.c\n\tcc -O0 -o src/server src/server.c\ntest: src/server\n\t./runtest\n"


def test_server_runtest_driver_gets_tcl_before_round_1(mint_with, git_patches):
    files = {"Makefile": SERVER_MAKEFILE, "src/server.c": MAIN_BUG, "src/a.h": "", "src/b.h": "",
             "runtest": RUNTEST, "tests/test_helper.tcl": HELPER, "tests/unit/sum.tcl": UNIT}
    test_patch, patch = git_patches(files, {"tests/unit/sum.tcl": UNIT + "test {SUM of two numbers} "
                                                                         "{ assert_equal [exec src/server 2 3] 5 }\n"},
                                    {"src/server.c": MAIN_FIX})
    res = mint_with(cfamily.ECOSYSTEM, files, "server", language="c", created_at="2024-01-10 10:00:00",
                    patch=patch, test_patch=test_patch)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["SUM of two numbers"] and res.PASS_TO_PASS == ["SUM of zeros"]
    assert res.round == 1 and len(res.rounds) == 1
    assert res.parser == "tcl_helper_log" and "sh runtest --clients 1 --single unit/sum" in res.test_command
    assert "--no-install-recommends tcl " in res.setup_script
    steps = [StepRecord.model_validate_json(x) for x in Path(res.trajectory_path).read_text().splitlines()]
    q = [s for s in steps if s.rule == "debian-index"]
    assert q and q[0].command == "apt-file search --regexp '^/(usr/)?s?bin/tclsh$'" and "-> tcl" in q[0].note
    first = next(s for s in steps if s.rule == "recipe:cfamily:needs")
    assert first.exit_code == 0 and steps.index(first) < steps.index(next(s for s in steps
                                                                           if s.rule == "recipe:cfamily:0"))


RUNTESTS = """#!/usr/bin/env python
import argparse, importlib, os, sys, unittest


def main():
    p = argparse.ArgumentParser()
    p.add_argument("labels", nargs="*")
    p.add_argument("--settings")
    p.add_argument("-v", "--verbosity", type=int, default=1)
    p.add_argument("--parallel", type=int, default=0)
    a = p.parse_args()
    os.environ["DJANGO_SETTINGS_MODULE"] = a.settings or os.environ.get("DJANGO_SETTINGS_MODULE", "test_sqlite")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    importlib.import_module(os.environ["DJANGO_SETTINGS_MODULE"])
    suite = unittest.defaultTestLoader.loadTestsFromNames(a.labels or ["calc_app.tests"])
    sys.exit(not unittest.TextTestRunner(verbosity=a.verbosity).run(suite).wasSuccessful())


if __name__ == "__main__":
    main()
"""
APP_TESTS = """import importlib, os, unittest
from minidj.calc import add

settings = importlib.import_module(os.environ["DJANGO_SETTINGS_MODULE"])


class CalcTests(unittest.TestCase):
    def test_zero(self):
        self.assertEqual(add(0, 0), settings.ZERO)
"""


def test_django_style_runtests_driver(mint_with, git_patches):
    files = {"setup.py": "from setuptools import setup\nsetup(name='minidj', version='1.0', packages=['minidj'])\n",
             "minidj/__init__.py": "", "minidj/calc.py": "def add(a, b):\n    return a - b\n",
             "tests/runtests.py": RUNTESTS, "tests/test_sqlite.py": "ZERO = 0\n",
             "tests/calc_app/__init__.py": "", "tests/calc_app/tests.py": APP_TESTS,
             "tox.ini": "[testenv]\nchangedir = tests\ncommands = {envpython} runtests.py {posargs}\n"}
    test_patch, patch = git_patches(files, {"tests/calc_app/tests.py": APP_TESTS + "\n    def test_add(self):\n"
                                                                               "        self.assertEqual(add(2, 3), 5)\n"},
                                    {"minidj/calc.py": "def add(a, b):\n    return a + b\n"})
    res = mint_with(python.ECOSYSTEM, files, "minidj", language="python", created_at="2024-01-10 10:00:00",
                    patch=patch, test_patch=test_patch)
    assert res.outcome == "verified", res.reason
    assert [t.split(" (")[0] for t in res.FAIL_TO_PASS] == ["test_add"]
    assert res.FAIL_TO_PASS[0].startswith("test_add (calc_app.tests.CalcTests")
    assert [t.split(" (")[0] for t in res.PASS_TO_PASS] == ["test_zero"]
    assert res.parser == "unittest_log" and "runtests.py --verbosity 2 --parallel 1 calc_app.tests" in res.test_command
