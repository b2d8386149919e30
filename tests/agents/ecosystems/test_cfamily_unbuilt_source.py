"""S38 (issue 25): a touched compiled test source that no target of the build compiles, even after
the test_patch and the re-configure -- a test file the project's explicit source list
(``set(X_TEST_SRC a.cpp b.cpp)``) does not name, built upstream by another build system. The
CMake helper (`recipes/cmake_tests.py`) used to fall back to every test target (the whole
suite, 273 tests and ~12 minutes a run on the project that showed it, five runs a row) although
no such run can ever reach the file's tests. Now it builds and runs nothing, names the file(s)
and reports their tests as not built, so the round ends with no test reached (and no
`whole_suite` move), while a ``file(GLOB ...)`` list that picks the file up, a touched header
or data file alone, and a partly owned change keep today's selection. Each test writes a small
CMake project (git repository) and runs the helper with the host's cmake, ctest, g++ and
GoogleTest, as `test_cfamily_unowned` does; the Meson helper against stand-ins of meson and ninja,
as `test_cfamily_meson_helper` does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.ecosystems import cfamily
from agents.moves import candidates
from agents.verification import aborted_before_scope, judge
from envpool.grading import grade
from envpool.testrun.registry import get_parser
from tests.agents.ecosystems.conftest import make_tree
from tests.agents.ecosystems.test_cfamily_gtest_suites import _module
from tests.agents.ecosystems.test_cfamily_unowned import (CALC, GLOBBED, GTEST_TAIL, LISTED, NEW, OLD, TOP, apply,
                                                         cmake_plan, ctx, helper, need, project, touched)

LINE = "tests/test_new.cc is compiled by no target of this CMake build (after the test_patch): its tests cannot run here"
BASE = {"CMakeLists.txt": TOP, "calc.cc": CALC, "tests/CMakeLists.txt": LISTED, "tests/test_old.cc": OLD}


def _collectors(out: str, parser: str = "gtest_log") -> tuple[dict, list[str]]:
    rep = get_parser(parser)(out)
    return dict(rep.statuses), list(rep.collection_errors)


def test_an_unlisted_new_test_source_runs_nothing_and_names_the_file(tmp_path):
    """The test_patch adds tests/test_new.cc; the project lists its test sources explicitly and
    nothing lists the new one. Setup (before the test_patch: the file is not there, the list may
    still change) builds the test target as before; the test run after the test_patch builds and
    runs nothing and says why, reporting the file and its Calc.New as not built (was: "no target
    owns the touched files: building the 1 test targets" and every test of calc_test). The
    compile-once build after the test_patch (``--build-only``) builds nothing either."""
    need("cmake", "ctest", "c++", "git")
    src, build, patch = project(tmp_path, BASE, {"tests/test_new.cc": NEW})
    files = touched(patch)
    assert files == ["tests/test_new.cc"]
    setup = helper(src, build, "--build-only", files=files)
    assert setup.returncode == 0 and "building the 1 test targets" in setup.stdout, setup.stdout
    apply(src, patch)
    again = helper(src, build, "--build-only", files=files)
    assert again.returncode == 0 and LINE in again.stdout and "cmake --build" not in again.stdout, again.stdout
    run = helper(src, build, "--verbose", files=files)
    out = run.stdout
    assert LINE in out, out
    assert "$ ctest" not in out and "cmake --build" not in out and "Calc.Old" not in out, out
    assert run.returncode == 2
    statuses, errors = _collectors(out)
    assert statuses == {} and errors == ["tests/test_new.cc [compiled by no target]", "Calc.New"]


def test_with_junit_the_not_built_tests_are_the_report(tmp_path):
    """Under ``--junit`` (ctest >= 3.21, no GoogleTest) the report file holds only the section
    (an older report in its place is removed first: no ctest wrote one this run)."""
    need("cmake", "ctest", "c++", "git")
    src, build, patch = project(tmp_path, BASE, {"tests/test_new.cc": NEW})
    apply(src, patch)
    junit = tmp_path / "report.xml"
    junit.write_text('<?xml version="1.0"?><testsuite><testcase name="stale" status="run"/></testsuite>')
    run = helper(src, build, "--junit", str(junit), files=["tests/test_new.cc"])
    assert LINE in run.stdout and run.returncode == 2, run.stdout
    statuses, errors = _collectors(junit.read_text(), "ctest_junit")
    assert statuses == {} and errors == ["tests/test_new.cc [compiled by no target]", "Calc.New"]


def test_the_fix_listing_the_new_source_runs_it_on_the_after_side(tmp_path):
    """Only the fix lists the new file (the before side cannot compile it): the before side
    reports Calc.New as not built, the after side (fix applied) has calc_test own it and run it;
    graded, Calc.New is FAIL_TO_PASS (absent before: a test that did not compile fails)."""
    need("cmake", "ctest", "c++", "git")
    src, build, patch = project(tmp_path, BASE, {"tests/test_new.cc": NEW})
    apply(src, patch)
    before = helper(src, build, "--verbose", files=["tests/test_new.cc"])
    assert LINE in before.stdout, before.stdout
    (src / "tests/CMakeLists.txt").write_text(LISTED.replace("  test_old.cc\n", "  test_old.cc\n  test_new.cc\n"))
    after = helper(src, build, "--verbose", files=["tests/test_new.cc"])
    assert after.returncode == 0 and "targets owning the touched files: calc_test" in after.stdout, after.stdout
    parse = get_parser("gtest_log")
    b, a = parse(before.stdout), parse(after.stdout)
    assert b.collection_errors and not b.statuses and "Calc.New" in a.statuses
    scope = aborted_before_scope(patch, [b], [a])
    assert grade([b], [a], None, scope).FAIL_TO_PASS == ["Calc.New"]
    # both sides unable to compile it: no test reached after the patch, the round ends there
    assert judge([b], [b])[0] == "tests_not_run"


def test_a_glob_list_owns_the_new_source_and_runs_it(tmp_path):
    need("cmake", "ctest", "c++", "git")
    src, build, patch = project(tmp_path, {**BASE, "tests/CMakeLists.txt": GLOBBED}, {"tests/test_new.cc": NEW})
    apply(src, patch)
    run = helper(src, build, "--verbose", files=touched(patch))
    assert "compiled by no target" not in run.stdout, run.stdout
    assert "targets owning the touched files: calc_test" in run.stdout and "[       OK ] Calc.New" in run.stdout


def test_a_touched_header_or_data_file_alone_keeps_the_test_targets(tmp_path):
    """No compiled source among the touched files: S32's selection stays (the test targets)."""
    need("cmake", "ctest", "c++", "git")
    src, build, patch = project(tmp_path, BASE, {"tests/helper.h": "#pragma once\nint twice(int);\n",
                                                 "tests/data/cases.txt": "1 2\n"})
    apply(src, patch)
    run = helper(src, build, "--verbose", files=touched(patch))
    assert "compiled by no target" not in run.stdout, run.stdout
    assert "building the 1 test targets" in run.stdout and "[       OK ] Calc.Old" in run.stdout


def test_a_partly_owned_change_runs_the_owners(tmp_path):
    """The test_patch edits the listed tests/test_old.cc and adds an unlisted file: calc_test owns
    the first, so it is built and run as before."""
    need("cmake", "ctest", "c++", "git")
    src, build, patch = project(tmp_path, BASE, {"tests/test_new.cc": NEW,
                                                 "tests/test_old.cc": OLD + "TEST(Calc, Old2) { EXPECT_EQ(calc(0), 1); }\n"})
    apply(src, patch)
    run = helper(src, build, "--verbose", files=touched(patch))
    assert "compiled by no target" not in run.stdout, run.stdout
    assert "targets owning the touched files: calc_test" in run.stdout and "[       OK ] Calc.Old2" in run.stdout


ct = _module("cmake_tests")


def test_a_source_another_source_includes_or_a_test_builds_is_no_s38(tmp_path):
    """The guards, on the helper's function: a touched source that a listed file ``#include``s
    (a unity file), or that lies in a folder a CTest test's command names (a sub-project built
    at test time, ``ctest --build-and-test``), may run after all: S32's selection stays."""
    src, build = tmp_path / "src", tmp_path / "build"
    for name, text in {"tests/all.cc": '#include "test_new.cc"\n', "tests/test_new.cc": NEW,
                       "sub/main.cc": "int main() {}\n", "lib/a.cc": "int a;\n"}.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    build.mkdir()
    lib = [("a", "STATIC_LIBRARY", ["lib/a.cc"], [])]
    unity = [("u", "EXECUTABLE", ["tests/all.cc"], [])]
    tests = [("t", [str(build / "t")])]
    assert ct.unbuilt_sources(lib, {"tests/test_new.cc"}, tests, str(src), str(build)) == ["tests/test_new.cc"]
    assert ct.unbuilt_sources(lib + unity, {"tests/test_new.cc"}, tests, str(src), str(build)) == []
    sub = tests + [("find", ["/usr/bin/ctest", "--build-and-test", str(src / "sub"), str(build / "sub")])]
    assert ct.unbuilt_sources(lib, {"sub/main.cc"}, sub, str(src), str(build)) == []
    assert ct.unbuilt_sources(lib, {"sub/main.cc"}, tests, str(src), str(build)) == ["sub/main.cc"]
    # a library's source counts as compiled; a header or data file is no compiled source
    assert ct.unbuilt_sources(lib, {"lib/a.cc", "tests/test_new.cc"}, tests, str(src), str(build)) == []
    assert ct.unbuilt_sources(lib, {"tests/x.h", "tests/x.txt"}, tests, str(src), str(build)) == []
    # setup (before the test_patch): a missing file, or a touched CMake list, may still change it
    touched_ = {"tests/test_gone.cc"}
    assert ct.unbuilt_sources(lib, touched_, tests, str(src), str(build)) == ["tests/test_gone.cc"]
    assert ct.unbuilt_sources(lib, touched_, tests, str(src), str(build), build_only=True) == []
    both = {"tests/test_new.cc", "tests/CMakeLists.txt"}
    assert ct.unbuilt_sources(lib, both, tests, str(src), str(build)) == ["tests/test_new.cc"]
    assert ct.unbuilt_sources(lib, both, tests, str(src), str(build), build_only=True) == []


def test_no_whole_suite_move_after_the_helper_said_no_target_compiles_the_file(tmp_path):
    tree = make_tree(tmp_path, {"CMakeLists.txt": TOP})
    why = "no test ran: the runner reached no test after the patch"
    said = f"swemint-cmake-tests: {LINE} (nothing is built or run; their tests are reported as not built)\n"
    assert "whole_suite" not in [m.kind for m in candidates(cfamily.ECOSYSTEM, ctx(tree, cmake_plan(), why, said), set())]
    owners = "swemint-cmake-tests: no target owns the touched files: building the 1 test targets\n"
    assert "whole_suite" in [m.kind for m in candidates(cfamily.ECOSYSTEM, ctx(tree, cmake_plan(), why, owners), set())]


# --- Meson (stand-ins of meson and ninja that log their calls) ------------------------------------

TOOL = r'''#!PYTHON
import os, sys
with open(os.environ["TOOL_LOG"], "a") as f:
    f.write(os.path.basename(sys.argv[0]) + " " + " ".join(sys.argv[1:]) + "\n")
if "-n" in sys.argv:
    print("ninja: no work to do.")
sys.exit(0)
'''


def _meson(tmp_path: Path, files: list[str], *args: str) -> tuple[subprocess.CompletedProcess, str, Path]:
    bin_dir, build, src = tmp_path / "bin", tmp_path / "build", tmp_path / "src"
    for d in (bin_dir, build / "meson-info", src / "tests"):
        d.mkdir(parents=True, exist_ok=True)
    for tool in ("meson", "ninja"):
        (bin_dir / tool).write_text(TOOL.replace("PYTHON", sys.executable))
        (bin_dir / tool).chmod(0o755)
    (src / "tests" / "t_old.c").write_text("int main(void) { return 0; }\n")
    (src / "tests" / "t_new.c").write_text("int main(void) { return 0; }\n")
    program = build / "tests" / "t_old"
    targets = [{"id": "t_old@exe", "name": "t_old", "filename": [str(program)],
                "defined_in": str(src / "tests/meson.build"), "target_sources": [{"sources": [str(src / "tests/t_old.c")]}]}]
    tests = [{"suite": ["calc"], "name": "old", "cmd": [str(program)], "depends": ["t_old@exe"]}]
    (build / "meson-info" / "intro-targets.json").write_text(json.dumps(targets))
    (build / "meson-info" / "intro-tests.json").write_text(json.dumps(tests))
    log = tmp_path / "tools.log"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "TOOL_LOG": str(log)}
    out = subprocess.run([sys.executable, str(cfamily.RECIPES / "meson_tests.py"), str(build), "--jobs", "1", *args,
                          "--", *files], cwd=src, env=env, capture_output=True, text=True, timeout=120)
    return out, log.read_text() if log.exists() else "", build


def test_meson_an_unlisted_new_test_source_runs_nothing_and_names_the_file(tmp_path):
    out, tools, build = _meson(tmp_path, ["tests/t_new.c"])
    assert "tests/t_new.c is compiled by no target of this Meson build (after the test_patch)" in out.stdout, out.stdout
    assert out.returncode == 2 and "meson test" not in tools and "-k 0" not in tools, tools
    rep = get_parser("meson_testlog")((build / "meson-logs" / "testlog.json").read_text())
    assert rep.statuses == {} and rep.collection_errors == ["tests/t_new.c [compiled by no target]"]
    assert get_parser("meson_testlog")(out.stdout).collection_errors == rep.collection_errors


def test_meson_a_touched_header_alone_keeps_the_whole_suite(tmp_path):
    out, tools, _ = _meson(tmp_path, ["tests/common.h"])
    assert "compiled by no target" not in out.stdout and "the whole suite (1 tests)" in out.stdout, out.stdout
    assert "meson test" in tools


def test_meson_a_quoted_line_is_no_collector():
    text = "| swemint-meson-tests: not built: forged [compiled by no target]\n"
    assert get_parser("meson_testlog")(text).collection_errors == []


def test_an_unbuilt_source_marker_names_no_test_id():
    """`GTEST_TAIL` builds calc_test; the collector ``<path> [compiled by no target]`` covers no
    GoogleTest id (it only makes the side a side that reported its tests as not built)."""
    from envpool.grading import in_failed_collector

    assert "gtest_discover_tests" in GTEST_TAIL
    assert not in_failed_collector("Calc.New", ["tests/test_new.cc [compiled by no target]"])


# --- review-s38: sources the CMake build does compile, though no codemodel target lists them ------

_C_TOP = "cmake_minimum_required(VERSION 3.16)\nproject(p C)\nenable_testing()\nadd_library(calc calc.c)\n"
_C_MAIN = "int main(void) { return 0; }\n"
_C_CHECK = "check:\n\tfor f in t_*.c; do cc $$f -o t.out && ./t.out || exit 1; done\n"
_C_BASE = {"calc.c": "int calc(int x) { return x + 1; }\n", "tests/t_old.c": _C_MAIN}
BUILT_ELSEWHERE = {
    # a custom target calls the folder's Makefile; ctest runs the script beside the sources
    "make_target_and_script": {
        "CMakeLists.txt": _C_TOP + "add_custom_target(progs ALL COMMAND make -C ${CMAKE_CURRENT_SOURCE_DIR}/tests)\n"
                                   "add_test(NAME unit COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/run_all.sh)\n",
        "tests/Makefile": "all: $(patsubst %.c,%,$(wildcard t_*.c))\n",
        "tests/run_all.sh": "#!/bin/sh\ncd \"$(dirname \"$0\")\" && for t in t_*; do case $t in *.c) ;; *) ./$t || exit 1;; "
                            "esac; done\n"},
    "make_in_working_directory": {
        "CMakeLists.txt": _C_TOP + "add_test(NAME unit COMMAND make check WORKING_DIRECTORY "
                                   "${CMAKE_CURRENT_SOURCE_DIR}/tests)\n",
        "tests/Makefile": _C_CHECK},
    "make_inside_sh_c": {
        "CMakeLists.txt": _C_TOP + "add_test(NAME unit COMMAND sh -c \"make -C ${CMAKE_CURRENT_SOURCE_DIR}/tests check\")\n",
        "tests/Makefile": _C_CHECK},
    "cmake_build_of_a_custom_target": {
        "CMakeLists.txt": _C_TOP + "add_custom_target(check COMMAND make -C ${CMAKE_CURRENT_SOURCE_DIR}/tests check)\n"
                                   "add_test(NAME unit COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target check)\n",
        "tests/Makefile": _C_CHECK},
    "external_project": {
        "CMakeLists.txt": _C_TOP + "include(ExternalProject)\nExternalProject_Add(tp SOURCE_DIR "
                                   "${CMAKE_CURRENT_SOURCE_DIR}/tests INSTALL_COMMAND \"\" BUILD_ALWAYS 1)\n"
                                   "add_test(NAME t_old COMMAND ${CMAKE_BINARY_DIR}/tp-prefix/src/tp-build/t_old)\n",
        "tests/CMakeLists.txt": "cmake_minimum_required(VERSION 3.16)\nproject(t C)\nfile(GLOB T t_*.c)\n"
                                "foreach(f ${T})\nget_filename_component(n ${f} NAME_WE)\nadd_executable(${n} ${f})\n"
                                "endforeach()\n"},
}


def _built_elsewhere(tmp_path, files):
    need("cmake", "ctest", "cc", "make", "git")
    src, build, patch = project(tmp_path, {**_C_BASE, **files}, {"tests/t_new.c": _C_MAIN})
    for name in files:
        if name.endswith(".sh"):
            (src / name).chmod(0o755)
    return src, build, patch



@pytest.mark.parametrize("case", sorted(BUILT_ELSEWHERE))
def test_a_new_source_the_cmake_build_compiles_outside_the_codemodel_is_no_s38(tmp_path, case):
    """The new tests/t_new.c is listed by no codemodel target, yet the CMake build compiles it: a
    Makefile a custom target or a CTest test calls (by folder, working directory, inside ``sh -c``,
    through ``cmake --build --target``), an ExternalProject whose source folder holds it. The
    whole suite runs it (as before S38), not "compiled by no target" and nothing."""
    src, build, patch = _built_elsewhere(tmp_path, BUILT_ELSEWHERE[case])
    apply(src, patch)
    for name in BUILT_ELSEWHERE[case]:
        if name.endswith(".sh"):
            (src / name).chmod(0o755)
    run = helper(src, build, "--verbose", files=touched(patch))
    assert "compiled by no target" not in run.stdout, run.stdout
    assert "the whole suite" in run.stdout and "100% tests passed" in run.stdout, run.stdout


def test_a_source_a_custom_command_compiles_is_no_s38_at_setup_or_run(tmp_path):
    """A touched tests/t_new.c compiled by ``add_custom_command(OUTPUT t_new.o ... DEPENDS
    tests/t_new.c)`` into t_old: the setup builds t_old and the run runs it (was: nothing built at
    setup, nothing run)."""
    top = (_C_TOP + "add_custom_command(OUTPUT t_new.o COMMAND cc -c ${CMAKE_CURRENT_SOURCE_DIR}/tests/t_new.c "
           "-o t_new.o DEPENDS tests/t_new.c)\nadd_executable(t_old tests/t_old.c t_new.o)\nadd_test(NAME t_old COMMAND t_old)\n")
    need("cmake", "ctest", "cc", "git")
    src, build, patch = project(tmp_path, {**_C_BASE, "CMakeLists.txt": top, "tests/t_new.c": "int x;\n"},
                                {"tests/t_new.c": "int y;\n"})
    setup = helper(src, build, "--build-only", files=touched(patch))
    assert "compiled by no target" not in setup.stdout and "--target t_old" in setup.stdout, setup.stdout
    apply(src, patch)
    run = helper(src, build, "--verbose", files=touched(patch))
    assert "compiled by no target" not in run.stdout and "100% tests passed" in run.stdout, run.stdout


@pytest.mark.parametrize("generator", ["Unix Makefiles", "Ninja"])
def test_an_unlisted_source_in_a_folder_of_targets_is_still_s38_under_either_generator(tmp_path, monkeypatch, generator):
    """The native build's rules name the folder of a target's sources in CMake's own dependency
    scanning (Makefiles: ``cmake_depends``) and include flags (``-I<folder>``): neither counts."""
    need("cmake", "ctest", "c++", "git")
    if generator == "Ninja":
        need("ninja")
    monkeypatch.setenv("CMAKE_GENERATOR", generator)
    listed = LISTED.replace("add_executable", "include_directories(${CMAKE_CURRENT_SOURCE_DIR})\nadd_executable", 1)
    src, build, patch = project(tmp_path, {**BASE, "tests/CMakeLists.txt": listed}, {"tests/test_new.cc": NEW})
    apply(src, patch)
    run = helper(src, build, "--verbose", files=touched(patch))
    assert LINE in run.stdout and "$ ctest" not in run.stdout, run.stdout


mt = _module("meson_tests")


def test_meson_a_source_the_build_compiles_outside_the_introspection_is_no_s38(tmp_path):
    """Meson's guards, on the helper's function: a test's working directory, a folder inside a
    ``sh -c`` argument or a script beside the new source, and a ``build.ninja`` rule (a custom
    target calling the folder's Makefile) keep today's whole suite; an include flag naming the
    folder does not."""
    src, build = tmp_path / "src", tmp_path / "build"
    (src / "tests").mkdir(parents=True)
    build.mkdir()
    for name in ("t_old.c", "t_new.c"):
        (src / "tests" / name).write_text("int main(void) { return 0; }\n")
    (src / "tests" / "run_all.sh").write_text("#!/bin/sh\nmake -C \"$(dirname \"$0\")\" check\n")
    new = str((src / "tests" / "t_new.c").resolve())
    folder = str((src / "tests").resolve())
    targets = [{"id": "t_old@exe", "name": "t_old", "filename": [str(build / "t_old")],
                "defined_in": str(src / "tests/meson.build"), "target_sources": [{"sources": [str(src / "tests/t_old.c")]}]}]
    plain = [{"name": "old", "cmd": [str(build / "t_old")]}]

    def lone(tests):
        return mt.unbuilt_sources(targets, tests, [new], str(src), str(build))

    assert lone(plain) == [new]
    assert lone(plain + [{"name": "u", "cmd": ["/usr/bin/make", "check"], "workdir": folder}]) == []
    assert lone(plain + [{"name": "u", "cmd": ["/bin/sh", "-c", f"make -C {folder} check"]}]) == []
    assert lone(plain + [{"name": "u", "cmd": ["/bin/sh", str(src / "tests" / "run_all.sh")]}]) == []
    rel = os.path.relpath(folder, build)
    (build / "build.ninja").write_text(f"build tests/t_old.p/t_old.c.o: c_COMPILER ../x.c\n ARGS = -I{rel} -I{folder}\n")
    assert lone(plain) == [new]
    (build / "build.ninja").write_text(f"build progs: CUSTOM_COMMAND\n COMMAND = make -C {folder}\n")
    assert lone(plain) == []
    (build / "build.ninja").write_text(f"build progs: CUSTOM_COMMAND\n COMMAND = make -C {rel}\n")
    assert lone(plain) == []
