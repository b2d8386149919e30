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
from agents.moves import MoveContext
from tests.agents.ecosystems.test_cfamily_unowned import (CALC, GTEST_TAIL, NEW, OLD, TOP, apply, cmake_plan, ctx,
                                                         helper, need, project, touched)

WHY = "no test ran: the runner reached no test after the patch"


def _ctx(tree, plan, output: str, touched=("contrib/tests/test_contrib.cc",)) -> MoveContext:
    return MoveContext(tree=tree, instance=None, plan=plan, touched=list(touched), why=WHY, output=output)
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
    moves = candidates(cfamily.ECOSYSTEM, _ctx(tree, cmake_plan(), out), set())
    assert [m.kind for m in moves] == ["test_option"]
    assert moves[0].request.options == {"cmake_flags": ["-DCALC_WITH_CONTRIB=ON"]}
    assert "contrib/tests/test_contrib.cc is compiled by no target" in moves[0].evidence
    assert "if(CALC_WITH_CONTRIB) ... add_subdirectory(contrib)" in moves[0].evidence
    # the option already on (the move's own plan): not offered again
    on = cmake_plan().model_copy(update={"setup_commands": ["cmake -S /testbed -B /opt/build -DCALC_WITH_CONTRIB=ON"]})
    assert candidates(cfamily.ECOSYSTEM, _ctx(tree, on, out), set()) == []
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


def test_the_gates_read_as_cmake_reads_them(tmp_path):
    """Review of S38-behind-an-option: the scanner read a command only at a line's start and
    every word of a condition but the one after ``NOT``. So a one-line ``if(X) ... endif()``
    left its ``if`` open and X "gated" every later ``add_subdirectory`` of the file; a ``"`` or
    ``#`` inside a bracket argument (``[[ ... ]]``) shifted the quoting of the rest of the file
    and lost the gate; ``if(X_TESTS OR X_BENCH)`` switched both on (one is enough, and the
    benchmarks may need what is not installed); ``NOT (A AND B)`` turned B on; an operand of
    ``STREQUAL`` / ``DEFINED`` counted as a switch."""
    def one(cmake: str, off=("OPT_A", "OPT_B")):
        return [o for o, _ in _gates(tmp_path / str(len(list(tmp_path.iterdir()))), {"CMakeLists.txt": cmake},
                                     ["tests/t.cc"], off)]

    assert one("if(OPT_A) add_definitions(-DA) endif()\nadd_subdirectory(tests)\n") == []
    assert one("if(OPT_A)\n  message(STATUS a) endif()\nadd_subdirectory(tests)\n") == []
    assert one('file(WRITE x.txt [[ say "hi ]])\nif(OPT_A)\n  add_subdirectory(tests)\nendif()\n') == ["OPT_A"]
    assert one('set(S [=[ # ]=])\nif(OPT_A)\n  add_subdirectory(tests)\nendif()\n') == ["OPT_A"]
    assert one("#[[\nif(OPT_A)\n]]\nadd_subdirectory(tests)\n") == []
    assert one('if(OPT_A)\n  message("a ) b # c")\n  add_subdirectory(tests)\nendif()\n') == ["OPT_A"]
    assert one("if(OPT_B_BENCH OR OPT_A_TESTS)\n  add_subdirectory(tests)\nendif()\n",
               off=("OPT_B_BENCH", "OPT_A_TESTS")) == ["OPT_A_TESTS"]
    assert one("if(NOT (OPT_A AND OPT_B))\n  add_subdirectory(tests)\nendif()\n") == []
    assert one("if((WIN32 OR OPT_A) AND NOT OPT_B)\n  add_subdirectory(tests)\nendif()\n") == ["OPT_A"]
    assert one("if(OPT_A\n   AND (OPT_B))\n  add_subdirectory(\n    tests)\nendif()\n") == ["OPT_A", "OPT_B"]
    assert one("if(DEFINED OPT_A OR CMAKE_BUILD_TYPE STREQUAL OPT_B)\n  add_subdirectory(tests)\nendif()\n") == []
    lines = ct.cmake_commands('set(A "x\ny")\n#[[\n]]\nset(B [[\n]])\nif(X) # c\n  foo(a\n b) endif()\n')
    assert [(n, c) for n, c, _ in lines] == [(1, "set"), (5, "set"), (7, "if"), (8, "foo"), (9, "endif")]


def test_no_gate_move_for_a_hardware_option_nor_a_forged_line(tmp_path):
    """A touched file behind ``if(X_ENABLE_GPU)`` (nested in ``if(X_BUILD_TESTS)``) cannot be
    built here: no move -- not -DX_ENABLE_GPU=ON (a configure that fails for want of CUDA), nor
    -DX_BUILD_TESTS=ON alone (the file still not built). A gate line naming a file the
    test_patch does not touch (a test or ``message()`` printing the helper's line) is no move."""
    tree = make_tree(tmp_path / "tree", GATED)
    s38 = ("swemint-cmake-tests: {} is compiled by no target of this CMake build (after the test_patch): its "
           "tests cannot run here\n")
    out = (s38.format("gpu/test/t.cc") + "swemint-cmake-tests: option X_ENABLE_GPU=OFF gates gpu/test/t.cc: CMakeLists.txt:3 if(X_ENABLE_GPU) ...\n"
           "swemint-cmake-tests: option X_BUILD_TESTS=OFF gates gpu/test/t.cc: gpu/CMakeLists.txt:1 if(X_BUILD_TESTS) ...\n")
    assert candidates(cfamily.ECOSYSTEM, _ctx(tree, cmake_plan(), out, touched=["gpu/test/t.cc"]), set()) == []
    forged = s38.format(FILE) + "swemint-cmake-tests: option CMAKE_SKIP_RPATH=OFF gates other.cc: CMakeLists.txt:1 if(X) ...\n"
    assert candidates(cfamily.ECOSYSTEM, _ctx(tree, cmake_plan(), forged), set()) == []
    ours = forged.replace("other.cc", "contrib/tests/test_contrib.cc")
    assert [m.key for m in candidates(cfamily.ECOSYSTEM, _ctx(tree, cmake_plan(), ours), set())] == ["-DCMAKE_SKIP_RPATH=ON"]
