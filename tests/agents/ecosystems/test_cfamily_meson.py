"""S35 (issue 25): a C/C++ project built with Meson. Detection and the ranking of the meson route
beside other build systems (the CI's commands decide), the analysis (the project folder, the
``meson_version`` floor, ``dependency()`` names to Debian packages or index needs, the options
gating tests), the plan (setup, test command, parser, report), the repairs of a failed
``meson setup``, the loop's moves, targeted reruns and the pure parts of the in-container helper
(``recipes/meson_tests.py``). No Docker: `test_cfamily_meson_docker.py` mints a project end to end."""

from __future__ import annotations

import importlib.util
import json
from functools import partial

import pytest

from agents.diagnosis import diagnose
from agents.ecosystems import cfamily
from agents.ecosystems.base import Plan
from agents.ecosystems.cfamily import ECOSYSTEM, analyze, package_repair, systems
from agents.ecosystems.cfamily import c_meson
from agents.ecosystems.move_types import MoveContext
from agents.debindex import Need
from envpool.images import ImageConfig
from tests.agents.ecosystems.conftest import make_instance, make_tree

instance = partial(make_instance, language="c", instance_id="acme__calc-1", repo="acme/calc")

TOP = """project('calc', 'c',
  version : '1.0',
  meson_version : '>= 1.3.0',
  default_options : ['warning_level=3'])
zdep = dependency('zlib')
thr = dependency('threads')
opt = dependency('libfoo-1.0', required : false)
feat = dependency('libbar', required : get_option('bar'))
need = dependency('libquux-2', 'quux',
  version : '>= 2.0')  # a required dependency no table knows
lib = static_library('calc', 'src/calc.c')
subdir('tests')
"""
OPTIONS = """option('tests', type : 'boolean', value : false, description : 'Build the tests')
option('installed_tests', type : 'boolean', value : false)
option('bar', type : 'feature', value : 'auto')
option('unit_tests', type : 'feature', value : 'disabled')
option('docs', type : 'boolean', value : true)
"""
FILES = {"meson.build": TOP, "meson_options.txt": OPTIONS, "src/calc.c": "int calc;\n", "src/calc.h": "",
         "src/more.c": "", "tests/meson.build": "test('add', executable('t_add', 't_add.c'))\n", "tests/t_add.c": ""}
CI_MESON = """jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - run: pip install meson ninja
      - run: meson setup build -Dtests=true -Dwerror=true
      - run: meson test -C build
"""
CI_CMAKE = """jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - run: cmake -S . -B build && cmake --build build && ctest --test-dir build
"""


@pytest.fixture
def images(image_store):
    return image_store


# -- detection and ranking --------------------------------------------------------------------
def test_a_root_meson_project_is_detected_and_routed_to_meson(tmp_path):
    tree = make_tree(tmp_path, FILES)
    assert ECOSYSTEM.detect(tree, "c") == 12 and ECOSYSTEM.detect(tree, None) == 10
    assert systems(tree) == ["meson"]
    assert [r.name for r in ECOSYSTEM.routes(tree, "c")] == ["meson"]
    assert ECOSYSTEM.detect(tree, "python") == 0
    # a meson.build over no C sources (a meson-python package's) is no C project
    py = make_tree(tmp_path / "py", {"meson.build": "project('p')\n", "p/__init__.py": ""})
    assert ECOSYSTEM.detect(py, None) == 0


def test_the_ci_ranks_meson_beside_other_build_systems(tmp_path):
    both = {**FILES, "CMakeLists.txt": "project(calc C)\nenable_testing()\n"}
    # no CI: a tested CMake build first, meson next
    assert systems(make_tree(tmp_path / "a", both)) == ["cmake", "meson"]
    # the CI builds with meson only: meson first
    assert systems(make_tree(tmp_path / "b", {**both, ".github/workflows/ci.yml": CI_MESON})) == ["meson", "cmake"]
    # the CI builds with cmake only: meson last
    assert systems(make_tree(tmp_path / "c", {**FILES, "configure.ac": "AC_INIT([c],[1])\n",
                                              ".github/workflows/ci.yml": CI_MESON.replace("meson setup build",
                                                                                           "./configure &&")
                                              .replace("meson test -C build", "make check")})) == ["autotools", "meson"]
    # autotools beside meson without CI: meson first (autoreconf is the heavier route)
    assert systems(make_tree(tmp_path / "d", {**FILES, "configure.ac": "AC_INIT([c],[1])\n"})) == ["meson", "autotools"]
    assert systems(make_tree(tmp_path / "e", {**both, ".github/workflows/ci.yml": CI_CMAKE})) == ["cmake", "meson"]
    assert c_meson.ci_systems(make_tree(tmp_path / "f", {".github/workflows/ci.yml": CI_MESON})) == ["meson"]


def test_a_meson_project_below_the_root_is_owned_by_the_nearest_ancestor(tmp_path):
    files = {"lib/meson.build": TOP, "lib/tests/meson.build": "", "lib/tests/t_add.c": "", "lib/src/calc.c": "",
             "lib/src/a.c": "", "other/meson.build": "project('other', 'c')\n", "README": ""}
    tree = make_tree(tmp_path, files)
    assert systems(tree) == ["meson"] and ECOSYSTEM.detect(tree, None) == 6
    assert c_meson.meson_projects(tree) == ["lib", "other"]
    assert c_meson.meson_folder(tree, ["other/x.c"]) == "other"
    assert c_meson.meson_folder(tree, ["lib/tests/t_add.c"]) == "lib"
    b = analyze(tree, ["lib/tests/t_add.c"], system="meson")
    assert b.system == "meson" and b.folder == "lib" and b.meson_min == "1.3.0"


# -- analysis ---------------------------------------------------------------------------------
def test_floor_dependencies_and_test_options(tmp_path):
    tree = make_tree(tmp_path, FILES)
    assert c_meson.meson_floor(TOP) == "1.3.0"
    assert c_meson.meson_floor("project('x', 'c', meson_version: ['>=0.60', '>=1.1.0'])") == "1.1.0"
    assert c_meson.meson_floor("project('x', 'c')") is None
    assert c_meson.dependencies(tree) == [("zlib", True), ("threads", True), ("libfoo-1.0", False),
                                          ("libbar", False), ("libquux-2", True), ("quux", True)]
    packages, ask, left = c_meson.dependency_packages(c_meson.dependencies(tree))
    assert packages == ["zlib1g-dev"]                  # threads: meson's own, nothing to install
    assert ask == ["libquux-2", "quux"] and left == ["libfoo-1.0", "libbar"]
    assert c_meson.test_options(tree) == [("tests", "boolean", "false"), ("unit_tests", "feature", "disabled")]
    assert c_meson.setup_flags(tree) == ["-Dtests=true", "-Dunit_tests=enabled"]
    b = analyze(tree, ["tests/t_add.c"])
    assert b.system == "meson" and b.packages == ["zlib1g-dev"] and b.pkgconfig_needs == ["libquux-2", "quux"]
    assert b.meson_flags == ["-Dtests=true", "-Dunit_tests=enabled"]
    assert "libfoo-1.0" in b.notes[-1]
    # meson.options (meson >= 1.1) is read as meson_options.txt
    alt = make_tree(tmp_path / "alt", {**{k: v for k, v in FILES.items() if k != "meson_options.txt"},
                                       "meson.options": OPTIONS})
    assert c_meson.test_options(alt)[0] == ("tests", "boolean", "false")


def test_meson_install_uses_debian_unless_the_floor_is_newer():
    pkgs, extra, note = c_meson.meson_install("0.60.0", "bookworm")
    assert pkgs == ["meson", "ninja-build", "pkg-config"] and extra == [] and "1.0.1" in note
    pkgs, extra, note = c_meson.meson_install("1.3.0", "bookworm")
    assert "python3-pip" in pkgs and extra == ["PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir "
                                               "'meson>=1.3.0'"]
    assert c_meson.meson_install(None, "bookworm")[1] == [] and c_meson.meson_install("9.0", "unknown")[1] == []


# -- the plan ---------------------------------------------------------------------------------
def test_meson_plan(tmp_path, images):
    tree = make_tree(tmp_path, FILES)
    plan = ECOSYSTEM.plan(tree, instance(tree, created_at="2024-01-10 10:00:00"), ["tests/t_add.c"], ImageConfig())
    assert plan.build == "meson" and plan.toolchain.startswith("gcc 12")   # bookworm: meson 1.0.1 < 1.3.0
    setup = "\n".join(plan.setup_commands)
    assert "zlib1g-dev" in plan.setup_commands[0]
    assert "meson ninja-build pkg-config python3-pip" in setup and "'meson>=1.3.0'" in setup
    assert "mkdir -p /usr/local/libexec/swemint && echo " in setup and "meson_tests.py" in setup
    assert "> /usr/local/libexec/swemint/unbuilt_rules.py" in setup  # meson_tests.py imports it from its folder
    assert "rm -rf /opt/build && meson setup /opt/build /testbed -Dwerror=false -Dtests=true -Dunit_tests=enabled" \
        in setup
    assert plan.setup_commands[-1].startswith(f"python3 {c_meson.MESON_HELPER} /opt/build --build-only --jobs 2 -- "
                                              "tests/t_add.c || echo")
    assert plan.test_command == (f"python3 {c_meson.MESON_HELPER} /opt/build --jobs 2 "
                                 "--timeout ${SWEMINT_TEST_TIMEOUT:-120} -- tests/t_add.c")
    assert plan.parser == "meson_testlog" and plan.report_path == "/opt/build/meson-logs/testlog.json"
    assert plan.needs == [Need(kind="pkgconfig", name="libquux-2"), Need(kind="pkgconfig", name="quux")]
    assert ECOSYSTEM.build_command(plan) == (f"python3 {c_meson.MESON_HELPER} /opt/build --build-only --jobs 2 -- "
                                             "tests/t_add.c; true")
    rerun = ECOSYSTEM.targeted_plan(plan, ["unit - calc:add", "calc:mul"])
    assert rerun.test_command.startswith(
        f"python3 {c_meson.MESON_HELPER} /opt/build --only "
        + "'" + json.dumps(["calc:mul", "unit - calc:add"]) + "' --jobs 2")
    # a move's options reach the setup; anything but a boolean/feature value does not
    from agents.ecosystems.base import PlanRequest

    more = ECOSYSTEM.plan(tree, instance(tree, created_at="2024-01-10 10:00:00"), ["tests/t_add.c"], ImageConfig(),
                          PlanRequest(route="meson", options={"meson_flags": ["-Dslow=true", "-Dx=1;rm -rf /"]}))
    assert " -Dslow=true" in "\n".join(more.setup_commands) and "rm -rf /'" not in "\n".join(more.setup_commands)


# -- repairs ----------------------------------------------------------------------------------
MISSING = """Run-time dependency zlib found: NO (tried pkgconfig and cmake)
Run-time dependency libxml-2.0 found: NO (tried pkgconfig and cmake)

meson.build:5:7: ERROR: Dependency "zlib" not found, tried pkgconfig and cmake
"""


def test_a_missing_meson_dependency_is_installed():
    fix = package_repair(MISSING, set())
    assert fix is not None and "zlib1g-dev" in fix[0] and "libxml2-dev" in fix[0]
    assert package_repair(MISSING, {"\n".join(fix)}) is None
    d = diagnose('meson.build:9:7: ERROR: Dependency "libquux-2" not found, tried pkgconfig', "cfamily")
    assert d is not None and d.rule == "meson-dependency-not-found" and d.needs == [Need(kind="pkgconfig",
                                                                                          name="libquux-2")]


def test_a_meson_too_old_for_the_project_gets_pypi_meson(tmp_path, images):
    tree = make_tree(tmp_path, {**FILES, "meson.build": TOP.replace(">= 1.3.0", ">= 0.60.0")})
    plan = ECOSYSTEM.plan(tree, instance(tree, created_at="2024-01-10 10:00:00"), ["tests/t_add.c"], ImageConfig())
    conf = next(c for c in plan.setup_commands if " && meson setup " in c)
    out = "meson.build:1:0: ERROR: Meson version is 1.0.1 but project requires >= 1.4.0\n"
    fix = ECOSYSTEM.repair(plan, conf, out, set())
    assert fix[1].endswith("'meson>=1.4.0'") and fix[-1] == conf and "python3-pip" in fix[0]


# -- moves ------------------------------------------------------------------------------------
def meson_plan(flags: str = "") -> Plan:
    return Plan(ecosystem="cfamily", toolchain="gcc 12", image="i", build="meson",
                setup_commands=[f"rm -rf /opt/build && meson setup /opt/build /testbed -Dwerror=false {flags}"],
                test_command=f"python3 {c_meson.MESON_HELPER} /opt/build --jobs 2 -- tests/t_add.c",
                parser="meson_testlog", report_path="/opt/build/meson-logs/testlog.json")


def ctx(tree, plan, why="no test ran: x", output=""):
    return MoveContext(tree=tree, instance=None, plan=plan, touched=["tests/t_add.c"], why=why, output=output)


def test_moves_of_a_meson_round(tmp_path):
    tree = make_tree(tmp_path, {**FILES, ".github/workflows/ci.yml": CI_MESON})
    moves = ECOSYSTEM.next_moves(ctx(tree, meson_plan()))
    options = [m for m in moves if m.kind == "test_option"]
    # the CI's -Dtests=true first (its evidence), the other test-gating option next
    assert [m.request.options["meson_flags"] for m in options] == [["-Dtests=true"], ["-Dunit_tests=enabled"]]
    assert "ci.yml" in options[0].evidence
    whole = [m for m in moves if m.kind == "whole_suite"]
    assert len(whole) == 1 and " --whole " in whole[0].test.test_command
    # options already in the setup are not offered again; the helper's whole suite has no whole_suite move
    done = ECOSYSTEM.next_moves(ctx(tree, meson_plan("-Dtests=true -Dunit_tests=enabled"),
                                    output="swemint-meson-tests: no target owns the touched files: the whole suite (3 "
                                           "tests)"))
    assert not [m for m in done if m.kind in ("test_option", "whole_suite")]
    setup = ECOSYSTEM.next_moves(ctx(tree, meson_plan(), why="setup failed: x"))
    assert [m.kind for m in setup] == ["ci_setup"]
    # -Dwerror=true is a strict build's option (STRICT_OPTION): not taken from the CI
    assert setup[0].request.options == {"meson_flags": ["-Dtests=true"]}


# -- the helper's pure parts ------------------------------------------------------------------
def _helper():
    spec = importlib.util.spec_from_file_location("meson_tests", str(cfamily.RECIPES / "meson_tests.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_helper_names_owners_and_programs():
    h = _helper()
    add = {"suite": ["calc:unit"], "name": "add", "cmd": ["/b/tests/t_add"], "depends": ["x@@t_add@exe"]}
    both = {"suite": ["calc:unit", "calc:slow"], "name": "a*b", "cmd": ["/usr/bin/sh"], "depends": []}
    plain = {"suite": ["calc"], "name": "mul", "cmd": ["/b/tests/t_mul"], "depends": []}
    assert [h.pretty(t) for t in (add, both, plain)] == ["unit - calc:add", "unit+slow - calc:a*b", "calc:mul"]
    assert h.fnescape("a*b?[c]") == "a[*]b[?][[]c]"
    targets = [{"id": "x@@t_add@exe", "name": "t_add", "filename": ["/b/tests/t_add"], "defined_in": "/s/tests/meson.build",
                "target_sources": [{"sources": ["/s/tests/t_add.c"], "generated_sources": []}]},
               {"id": "calc@sta", "name": "calc", "filename": ["/b/libcalc.a"], "defined_in": "/s/meson.build",
                "target_sources": [{"sources": ["/s/src/calc.c"]}], "extra_files": ["/s/src/calc.h"]}]
    assert [t["name"] for t in h.owners(targets, ["/s/tests/t_add.c"])] == ["t_add"]
    assert [t["name"] for t in h.owners(targets, ["/s/src/calc.h"])] == ["calc"]
    assert [t["name"] for t in h.owners(targets, ["/s/tests/meson.build"])] == ["t_add"]
    assert h.owners(targets, ["/s/README"]) == []
    assert h.program_targets(targets, [add, both, plain]) == {0: targets[0]}
    # a targeted rerun's ids in either release's form name the test
    assert {"unit - calc:add", "calc:unit / add", "add", "calc:add"} <= h.known_names(add)
    assert "calc / mul" in h.known_names(plain) and "calc:unit+slow / a*b" in h.known_names(both)


def test_a_meson_project_below_the_root_comes_after_a_root_makefile(tmp_path):
    # a vendored library's meson.build (third_party/) does not take the project's own Makefile's place
    files = {"Makefile": "all:\n\tcc -o calc src/calc.c\ntest:\n\t./run_tests.sh\n", "src/calc.c": "",
             "src/a.c": "", "src/b.c": "", "third_party/inih/meson.build": "project('inih', 'c')\n",
             "third_party/inih/ini.c": ""}
    tree = make_tree(tmp_path, files)
    assert systems(tree) == ["make", "meson"]
    assert analyze(tree, ["tests/t.c"]).system == "make"
    # a Makefile without a test target is still a route, before the vendored project
    plain = make_tree(tmp_path / "plain", {**files, "Makefile": "all:\n\tcc -o calc src/calc.c\n"})
    assert systems(plain) == ["make", "meson"]
