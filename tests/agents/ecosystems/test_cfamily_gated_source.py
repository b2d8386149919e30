"""S38 behind an option (issue 25 item 1: project options that gate tests): a touched test source
the CMake build compiles only with a project option that is off -- its folder is added by an
``add_subdirectory`` (or found by a ``file(GLOB ...)``, or listed) inside ``if(<option>)`` --
while other CTest tests exist. S38 said "compiled by no target" and the round ended with no
move, because the `test_option` move fired only when no CTest test was defined. Now the helper
names, after S38's line, the OFF options whose ``if`` guards the command adding the file's folder
(`cmake_tests.folder_gates`, the cache's OFF options of `off_options`), and the loop offers the
`test_option` move with them; with the option on, the touched file's target is built and its
new test runs. A plainly unlisted file (an explicit source list, no option gating it) keeps
S38's end of the round. Each test writes a small CMake project and runs the helper with the
host's cmake, ctest, g++ and GoogleTest, as `test_cfamily_unbuilt_source` does."""

from __future__ import annotations

import subprocess

from agents.ecosystems import cfamily
from agents.moves import candidates
from tests.agents.ecosystems.conftest import make_tree
from tests.agents.ecosystems.test_cfamily_gtest_suites import _module
from tests.agents.ecosystems.test_cfamily_unbuilt_source import BASE, LINE
from tests.agents.ecosystems.test_cfamily_unowned import (CALC, GTEST_TAIL, NEW, OLD, TOP, apply, cmake_plan, ctx,
                                                         helper, need, project, touched)

WHY = "no test ran: the runner reached no test after the patch"
GATED_TOP = TOP + ('option(CALC_WITH_CONTRIB "Build the contrib module and its tests" OFF)\n'
                   'option(CALC_SHARED "Build a shared library" OFF)\n'
                   "if (CALC_WITH_CONTRIB)  # the contrib module\n  add_subdirectory(contrib)\nendif ()\n")
CONTRIB = ("add_executable(contrib_test tests/test_contrib.cc)\n"
           + GTEST_TAIL.replace("calc_test", "contrib_test"))
CONTRIB_OLD = "#include <gtest/gtest.h>\nint calc(int);\nTEST(Contrib, Old) { EXPECT_EQ(calc(0), 1); }\n"
GATED = {"CMakeLists.txt": GATED_TOP, "calc.cc": CALC, "tests/CMakeLists.txt": BASE["tests/CMakeLists.txt"],
         "tests/test_old.cc": OLD, "contrib/CMakeLists.txt": CONTRIB, "contrib/tests/test_contrib.cc": CONTRIB_OLD}
FILE = "contrib/tests/test_contrib.cc"


def test_a_touched_test_in_a_folder_behind_an_off_option_gets_the_test_option_move(tmp_path):
    """The test_patch adds Contrib.New to contrib/tests/test_contrib.cc; the build adds contrib/
    only under ``if (CALC_WITH_CONTRIB)``, off, while calc_test's tests exist. The helper's S38
    line is followed by the option that gates the folder; the loop's candidates are the
    `test_option` move with ``-DCALC_WITH_CONTRIB=ON`` (was: none, the round ended) and its
    evidence names the file and the guard; configured so, the helper runs Contrib.New."""
    need("cmake", "ctest", "c++", "git")
    src, build, patch = project(tmp_path, GATED, {FILE: CONTRIB_OLD + "TEST(Contrib, New) { EXPECT_EQ(calc(2), 3); }\n"})
    files = touched(patch)
    assert files == [FILE]
    apply(src, patch)
    run = helper(src, build, "--verbose", files=files)
    out = run.stdout
    assert f"{FILE} is compiled by no target of this CMake build" in out and run.returncode == 2, out
    gate = ("swemint-cmake-tests: option CALC_WITH_CONTRIB=OFF gates contrib/tests/test_contrib.cc: "
            "CMakeLists.txt:8 if(CALC_WITH_CONTRIB) ... add_subdirectory(contrib)")
    assert gate in out, out
    assert "CALC_SHARED" not in out
    tree = make_tree(tmp_path / "tree", GATED)
    moves = candidates(cfamily.ECOSYSTEM, ctx(tree, cmake_plan(), WHY, out), set())
    assert [m.kind for m in moves] == ["test_option"]
    assert moves[0].request.options == {"cmake_flags": ["-DCALC_WITH_CONTRIB=ON"]}
    assert "contrib/tests/test_contrib.cc is compiled by no target" in moves[0].evidence
    assert "if(CALC_WITH_CONTRIB) ... add_subdirectory(contrib)" in moves[0].evidence
    # the option already on (the move's own plan): not offered again
    on = cmake_plan().model_copy(update={"setup_commands": ["cmake -S /testbed -B /opt/build -DCALC_WITH_CONTRIB=ON"]})
    assert candidates(cfamily.ECOSYSTEM, ctx(tree, on, WHY, out), set()) == []
    # the move's configure: the contrib target owns the file, the new test runs
    subprocess.run(["cmake", "-DCALC_WITH_CONTRIB=ON", str(build)], check=True, capture_output=True)
    again = helper(src, build, "--verbose", files=files)
    assert "compiled by no target" not in again.stdout, again.stdout
    assert "targets owning the touched files: contrib_test" in again.stdout
    assert "[       OK ] Contrib.New" in again.stdout and again.returncode == 0, again.stdout


def test_a_plainly_unlisted_source_still_ends_the_round_with_no_move(tmp_path):
    """The faiss-like case: an explicit test source list that does not name the new file, and an
    OFF option gating another folder: S38's line, no option named, no move."""
    need("cmake", "ctest", "c++", "git")
    src, build, patch = project(tmp_path, {k: v for k, v in GATED.items()}, {"tests/test_new.cc": NEW})
    apply(src, patch)
    run = helper(src, build, "--verbose", files=touched(patch))
    assert LINE in run.stdout and run.returncode == 2, run.stdout
    assert "gates" not in run.stdout, run.stdout
    tree = make_tree(tmp_path / "tree", GATED)
    assert candidates(cfamily.ECOSYSTEM, ctx(tree, cmake_plan(), WHY, run.stdout), set()) == []


ct = _module("cmake_tests")


def _gates(tmp_path, files: dict[str, str], sources: list[str], off=("OPT_A", "OPT_B", "OPT_C")):
    src = tmp_path / "src"
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    return [(o, f) for o, f, _ in ct.folder_gates(str(src), sources, list(off), str(src / "build"))]


def test_the_gates_of_a_folder_nested_globbed_listed_or_negated(tmp_path):
    """`folder_gates` on CMake files alone: nested guards in two files (each OFF option of the
    chain), a ``file(GLOB ...)`` or a list inside the guard, an ancestor folder; not a guard after
    ``NOT`` nor an ``else`` branch, not an option guarding another folder, not a commented-out
    line, not an option that is not off, not the build folder's own CMake files."""
    files = {
        "CMakeLists.txt": ("if(OPT_A AND BUILD_TESTING)\n  add_subdirectory(extra)\nendif()\n"
                           "# if(OPT_C)\n#   add_subdirectory(other)\n# endif()\n"
                           "if(NOT OPT_C)\n  add_subdirectory(plain)\nelse()\n  add_subdirectory(alt)\nendif()\n"
                           "if(${OPT_C})\n  add_subdirectory(\"${CMAKE_CURRENT_SOURCE_DIR}/deep\")\nendif()\n"),
        "extra/CMakeLists.txt": ("if (OPT_B)\n  file(GLOB T ${CMAKE_CURRENT_SOURCE_DIR}/t_*.cc)\n"
                                 "  add_executable(extra_test ${T})\nendif ()\n"),
        "plain/CMakeLists.txt": "if(OPT_B)\n  add_executable(p listed.cc)\nendif()\n",
        "build/CMakeLists.txt": "if(OPT_A)\n  add_subdirectory(../unused)\nendif()\n",
    }
    assert _gates(tmp_path, files, ["extra/t_new.cc"]) == [("OPT_A", "extra/t_new.cc"), ("OPT_B", "extra/t_new.cc")]
    assert _gates(tmp_path, files, ["extra/x_new.cc"]) == [("OPT_A", "extra/x_new.cc")]  # the glob misses it
    assert _gates(tmp_path, files, ["plain/listed.cc"]) == [("OPT_B", "plain/listed.cc")]
    assert _gates(tmp_path, files, ["plain/unlisted.cc"]) == []
    assert _gates(tmp_path, files, ["alt/a.cc", "other/o.cc"]) == []
    assert _gates(tmp_path, files, ["deep/sub/d.cc"]) == [("OPT_C", "deep/sub/d.cc")]
    assert _gates(tmp_path, files, ["deep/sub/d.cc"], off=("OPT_A",)) == []
    assert _gates(tmp_path, files, ["unused/u.cc"]) == []
