"""Repository test drivers found from the tree (no Docker): a driver counts only when the
project's CI, scripts, tox.ini or Makefiles run it; the build before it comes from the root
Makefile or from the Makefile whose target runs it (ranked by CI's `make -C`); touched test files
become the driver's own arguments; routes and plans of cfamily and python; the header repair."""

from __future__ import annotations

import shlex
import subprocess
import sys
from functools import partial

import pytest

from agents.diagnosis import diagnose
from agents.ecosystems import cfamily, python
from agents.ecosystems.base import PlanRequest
from agents.ecosystems.drivers import RECIPES, driver_tests, find_drivers, make_build, driver_test_specs
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig
from tests.agents.ecosystems.conftest import make_instance, make_tree

instance = partial(make_instance, language="c", instance_id="acme__interp-1", repo="acme/interp")

PORT_MAKEFILE = """PROG = interp
BUILD ?= build-std
all: $(BUILD)/$(PROG)
$(BUILD)/$(PROG): main.c
\tmkdir -p $(BUILD) && cc -o $@ main.c
test: $(BUILD)/$(PROG)
\tcd ../../tests && INTERP_BIN=../ports/host/$(BUILD)/$(PROG) ./run-tests.py
"""
OTHER_PORT = """test:
\tcd ../../tests && ./run-tests.py --target board
"""
CI = """jobs:
  host:
    steps:
      - run: make -C ports/host
      - run: make -C ports/host test
"""
INTERP_TREE = {"ports/host/Makefile": PORT_MAKEFILE, "ports/host/main.c": "int main(){return 0;}\n",
               "ports/board/Makefile": OTHER_PORT, "ports/board/main.c": "", "py/a.c": "", "py/b.h": "",
               "tests/run-tests.py": "#!/usr/bin/env python3\n", "tests/basics/add.py": "print(1)\n",
               "tests/basics/add.py.exp": "1\n", "tests/float/sub.py": "", ".github/workflows/host.yml": CI}


def test_run_tests_driver_found_from_ci_and_makefile(tmp_path):
    tree = make_tree(tmp_path, INTERP_TREE)
    [driver] = find_drivers(tree, "cfamily")
    assert driver.path == "tests/run-tests.py" and driver.route == "driver:run-tests"
    assert set(driver.evidence) == {"ports/host/Makefile", "ports/board/Makefile"}
    build = make_build(tree, driver)
    assert (build.folder, build.target) == ("ports/host", "test")  # CI builds there; board is never built
    assert find_drivers(tree, "python") == []


def test_a_driver_nobody_runs_is_not_a_route(tmp_path):
    files = {k: v for k, v in INTERP_TREE.items() if not k.endswith("Makefile") and not k.startswith(".github")}
    tree = make_tree(tmp_path, files)
    assert find_drivers(tree, "cfamily") == []
    assert cfamily.ECOSYSTEM.detect(tree, "c") == 0


def test_cfamily_routes_and_plan_of_a_driver(tmp_path, image_store):
    tree = make_tree(tmp_path, {**INTERP_TREE, "tests/float/add_float.py": "", ".gitmodules":
                                '[submodule "lib/berkeley-db-1.xx"]\n\tpath = lib/berkeley-db-1.xx\n\turl = https://e.org/berkeley-db-1.xx\n'})
    eco = cfamily.ECOSYSTEM
    assert eco.detect(tree, "c") == 6  # no build file at the root: the driver's Makefile claims it
    assert [r.name for r in eco.routes(tree, "c")][0] == "driver:run-tests"
    touched = ["tests/basics/add.py", "tests/basics/add.py.exp"]
    plan = eco.plan(tree, instance(tree), touched, ImageConfig(), PlanRequest(route="driver:run-tests"))
    make = "make -C ports/host -j2 MICROPY_PY_BTREE=0"
    assert plan.setup_commands[0] == "mkdir -p lib/berkeley-db-1.xx" and plan.setup_commands[1] == make
    assert "make -C ports/host -n MICROPY_PY_BTREE=0 test" in plan.setup_commands[2]
    assert plan.parser == "script_status_log" and plan.test_files == ["tests/basics/add.py"]
    assert plan.test_command.startswith(make + " > /tmp/swemint-build.log 2>&1 || {")
    # first the touched test's regression neighbours, then its folders whole, then the test alone
    assert plan.test_command.endswith("; fi; cd tests && python3 run-tests.py basics/add.py float/add_float.py")
    assert [(t.name, t.test_command.rsplit("&& ", 1)[1]) for t in plan.test_alternatives] == \
        [("folders", "python3 run-tests.py -d basics"), ("touched", "python3 run-tests.py basics/add.py")]
    with pytest.raises(EnvBuildError, match="touches none of its tests"):
        eco.plan(tree, instance(tree), ["ports/host/main.c"], ImageConfig(), PlanRequest(route="driver:run-tests"))


def test_related_tests_are_the_folders_and_same_named_tests_elsewhere(tmp_path):
    from agents.ecosystems.drivers import related_tests

    tree = make_tree(tmp_path, INTERP_TREE)
    driver = find_drivers(tree, "cfamily")[0]
    sel = next(s for s in driver.spec.select if s.kind == "related")
    files = ["tests/basics/try_finally_return.py", "tests/basics/try1.py", "tests/basics/list.py",
             "tests/micropython/viper_try.py", "tests/micropython/viper_list.py", "tests/import/try_module.py",
             "tests/perf_bench/try_bench.py", "tests/basics/try1.py.exp", "tests/run-tests.py", "tests/try.py",
             "tests/feature_check/try_check.py"]
    got = related_tests(driver, sel, ["tests/basics/try_finally_return.py"], files)
    assert got == ["tests/basics/list.py", "tests/basics/try1.py", "tests/basics/try_finally_return.py",
                   "tests/import/try_module.py", "tests/micropython/viper_try.py"]


def test_driver_env_from_make_dry_run():
    """The helper reads `make -n <target>` and exports the words before the driver, quoted."""
    dry = ("make -C ../../mpy-cross\ncd ../../tests && INTERP_BIN=../ports/host/build-std/interp "
           "EXTRA='a b' ./run-tests.py -d basics\n")
    out = subprocess.run([sys.executable, str(RECIPES / "driver_env.py"), "run-tests.py"], input=dry,
                         capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["export INTERP_BIN=../ports/host/build-std/interp", "export EXTRA='a b'"]
    env = subprocess.run(["bash", "-c", out + 'printf %s "$EXTRA"'], capture_output=True, text=True).stdout
    assert env == "a b"


RUNTEST = """#!/bin/sh
TCLSH=`which tclsh8.6 2>/dev/null`
[ -z "$TCLSH" ] && { echo "You need tcl 8.5 or newer in order to run the test"; exit 1; }
$TCLSH tests/test_helper.tcl "$@"
"""


def test_runtest_units_from_touched_tcl_files(tmp_path):
    tree = make_tree(tmp_path, {"Makefile": "all:\n\tcd src && $(MAKE)\n", "src/Makefile": "test:\n\t@(cd ..; ./runtest)\n",
                                "src/server.c": "", "src/a.h": "", "src/b.c": "", "runtest": RUNTEST,
                                "tests/test_helper.tcl": "", "tests/unit/type/list.tcl": "",
                                "tests/helpers/util.tcl": ""})
    [driver] = find_drivers(tree, "cfamily")
    assert driver.route == "driver:runtest" and driver.evidence == ["src/Makefile"]
    assert make_build(tree, driver).folder == "."  # the root Makefile builds everything
    tests = driver_tests(driver, ["tests/unit/type/list.tcl", "runtest", "src/server.c"])
    assert tests == ["tests/unit/type/list.tcl"]
    [spec] = driver_test_specs(driver, tests)
    assert spec.test_command == "sh runtest --clients 1 --single unit/type/list" and spec.parser == "tcl_helper_log"


RUNTESTS = """import argparse, os, sys, unittest
p = argparse.ArgumentParser()
p.add_argument("labels", nargs="*")
p.add_argument("--settings")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "test_sqlite")
"""


def test_django_style_runtests_route_in_python(tmp_path, image_store):
    files = {"setup.py": "from setuptools import setup\nsetup(name='minidj')\n", "minidj/__init__.py": "",
             "tests/runtests.py": RUNTESTS, "tests/calc_app/__init__.py": "", "tests/calc_app/tests.py": "",
             "tox.ini": "[testenv]\ncommands = {envpython} runtests.py {posargs}\nchangedir = tests\n"}
    tree = make_tree(tmp_path, files)
    eco = python.ECOSYSTEM
    assert [r.name for r in eco.routes(tree, "python")] == ["driver:runtests", "uv"]
    inst = make_instance(tree, "python", instance_id="acme__minidj-1", repo="acme/minidj")
    plan = eco.plan(tree, inst, ["tests/calc_app/tests.py"], ImageConfig(), PlanRequest(route="driver:runtests"))
    assert plan.parser == "unittest_log" and plan.build == "driver:runtests" and plan.state["driver"] == "runtests"
    assert shlex.split(plan.test_command) == ["cd", "tests", "&&", "/opt/venv/bin/python", "runtests.py",
                                              "--verbosity", "2", "--parallel", "1", "calc_app.tests"]
    assert plan.test_alternatives[0].test_command.endswith("--parallel 1 calc_app")
    assert eco.stored_test_command(plan, plan.test_command).endswith(plan.test_command)
    uv = eco.plan(tree, inst, ["tests/calc_app/tests.py"], ImageConfig(), PlanRequest(route="uv"))
    assert uv.parser == "pytest_channel" and "driver" not in uv.state
    # without the settings-module marker it is not a Django-style driver: pytest stays the route
    plain = make_tree(tmp_path / "plain", {**files, "tests/runtests.py": "import pytest\npytest.main()\n"})
    assert [r.name for r in eco.routes(plain, "python")] == ["uv"]


def test_a_missing_header_is_a_need_for_debians_index():
    d = diagnose("modffi.c:40:10: fatal error: ffi.h: No such file or directory\ncompilation terminated.\n",
                 "cfamily")
    assert (d.kind, [n.label for n in d.needs], d.rule) == ("missing_system", ["header ffi.h"], "missing-header")
    assert d.packages == []  # Debian's index answers it (agents.debindex), no table


def test_shebang_interpreter():
    from agents.ecosystems.drivers import shebang

    assert shebang("#!/usr/bin/env python3\nimport x\n") == "python3"
    assert shebang("#!/bin/sh\n") == "sh" and shebang("#!/usr/bin/env -S bash -e\n") == "bash"
    assert shebang("import x\n") == "" and shebang("#!/bin/$(rm -rf /)\n") == ""


SYMPY_BIN_TEST = "#!/usr/bin/env python\nfrom sympy.utilities.runtests import test\nimport sys\nsys.exit(not test(*sys.argv[1:]))\n"


def test_sympy_bin_test_is_the_uv_routes_second_test_configuration(tmp_path, image_store):
    """sympy-11400 (2016): its test modules import `raises` from sympy.utilities.pytest, which
    under pytest does not define it, so pytest collects nothing; SWE-bench runs SymPy with its
    own `bin/test -C --verbose`. The driver is not a route of its own (pytest works on newer
    trees, whose rows are exact): it is the uv route's configuration after the first, run from
    the root with the touched files as given, parsed by `sympy_test_log`."""
    files = {"setup.py": "from setuptools import setup\nsetup(name='sympy')\n", "sympy/__init__.py": "",
             "bin/test": SYMPY_BIN_TEST, "bin/test_travis.sh": "#!/bin/bash\nbin/test --split ${SPLIT}\n",
             ".travis.yml": "script:\n  - bin/test_travis.sh\n", "sympy/printing/tests/test_ccode.py": ""}
    tree = make_tree(tmp_path, files)
    eco = python.ECOSYSTEM
    assert [r.name for r in eco.routes(tree, "python")] == ["uv"]
    found = find_drivers(tree, "python")
    assert [d.spec.id for d in found] == ["sympy-bin-test"] and found[0].evidence == ["bin/test_travis.sh"]
    inst = make_instance(tree, "python", instance_id="sympy__sympy-1", repo="sympy/sympy")
    plan = eco.plan(tree, inst, ["sympy/printing/tests/test_ccode.py"], ImageConfig(), PlanRequest(route="uv"))
    assert plan.parser == "pytest_channel"
    second = plan.test_alternatives[0]
    assert second.parser == "sympy_test_log"
    assert shlex.split(second.test_command) == ["/opt/venv/bin/python", "bin/test", "-C", "--verbose",
                                                "sympy/printing/tests/test_ccode.py"]
    # a bin/test nobody's CI names, or one that is not SymPy's, is no driver
    assert find_drivers(make_tree(tmp_path / "nci", {**files, ".travis.yml": "script: make\n",
                                                     "bin/test_travis.sh": "make\n"}), "python") == []
    assert find_drivers(make_tree(tmp_path / "other", {**files, "bin/test": "#!/bin/sh\nexec pytest\n"}),
                        "python") == []
