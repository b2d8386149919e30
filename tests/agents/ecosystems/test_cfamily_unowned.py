"""S32 (issue 25): touched files that no CMake target owns at the base commit -- a test source
the test_patch adds (to a target's source list, or picked up by ``file(GLOB ...)``, or listed
only by the fix), a touched script or data file. The in-container helper
(`recipes/cmake_tests.py`) used to build "0 test targets" there: a ``gtest_discover_tests``
target that is not built yet is known to CTest only by its ``<target>_NOT_BUILT`` placeholder,
and tests run by scripts name no target. Each test writes a small CMake project as a git
repository, makes the test_patch with git, and runs the helper with the host's cmake, ctest,
compilers (and GoogleTest) as the setup and the test run do; the loop's `whole_suite` move is
checked on the ecosystem's hook."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agents.ecosystems import cfamily
from agents.ecosystems.base import Plan
from agents.ecosystems.move_types import MoveContext
from agents.moves import candidates
from tests.agents.ecosystems.conftest import make_tree

HELPER = str(cfamily.RECIPES / "cmake_tests.py")


def _helper_module():
    spec = importlib.util.spec_from_file_location("cmake_tests", HELPER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def need(*tools: str) -> None:
    if not all(shutil.which(t) for t in tools):
        pytest.skip(f"{', '.join(tools)} needed on the host")


def git(src: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=src,
                          check=True, capture_output=True, text=True).stdout


def project(tmp_path: Path, base: dict[str, str], patched: dict[str, str]) -> tuple[Path, Path, str]:
    """(src, build, test_patch): `base` committed in a git repository at tmp_path/src, the
    test_patch = git's diff to `base` + `patched` (new files included), the tree back at the base
    commit, configured into tmp_path/build with the File API query (as the plan's setup does)."""
    src, build = tmp_path / "src", tmp_path / "build"
    for name, text in base.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    git(src.parent, "init", "-q", str(src))
    git(src, "add", "-A")
    git(src, "commit", "-qm", "base")
    for name, text in patched.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    git(src, "add", "-A")
    patch = git(src, "diff", "--cached", "HEAD")
    git(src, "reset", "-q", "--hard", "HEAD")
    (build / ".cmake/api/v1/query").mkdir(parents=True)
    (build / ".cmake/api/v1/query/codemodel-v2").touch()
    r = subprocess.run(["cmake", "-S", str(src), "-B", str(build)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("the project does not configure on this host (GoogleTest: libgtest-dev): " + r.stdout[-300:])
    return src, build, patch


def touched(patch: str) -> list[str]:
    return [line.split(" b/", 1)[1] for line in patch.splitlines() if line.startswith("diff --git ")]


def helper(src: Path, build: Path, *args: str, files: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, HELPER, str(build), *args, "--", *files], cwd=src, capture_output=True,
                          text=True, timeout=900)


def apply(src: Path, patch: str) -> None:
    subprocess.run(["git", "apply", "-"], cwd=src, input=patch, text=True, check=True)


TOP = "cmake_minimum_required(VERSION 3.16)\nproject(p CXX)\nenable_testing()\nadd_library(calc calc.cc)\n" \
      "add_subdirectory(tests)\n"
CALC = "int calc(int a) { return a + 1; }\n"
GTEST_TAIL = ("find_package(GTest REQUIRED)\ntarget_link_libraries(calc_test calc GTest::gtest_main)\n"
              "include(GoogleTest)\ngtest_discover_tests(calc_test)\n")
LISTED = "set(CALC_TEST_SRC\n  test_old.cc\n)\nadd_executable(calc_test ${CALC_TEST_SRC})\n" + GTEST_TAIL
GLOBBED = "file(GLOB CALC_TEST_SRC ${CMAKE_CURRENT_SOURCE_DIR}/test_*.cc)\nadd_executable(calc_test ${CALC_TEST_SRC})\n" \
          + GTEST_TAIL
OLD = "#include <gtest/gtest.h>\nint calc(int);\nTEST(Calc, Old) { EXPECT_EQ(calc(1), 2); }\n"
NEW = "#include <gtest/gtest.h>\nint calc(int);\nTEST(Calc, New) { EXPECT_EQ(calc(2), 3); }\n"


def _setup_then_test_run(tmp_path, tests_cmake: str, patched: dict[str, str]) -> tuple[str, str]:
    """The plan's setup (``--build-only`` on the test_patch's paths at the base commit), then the
    test_patch applied and the test run (``--verbose``): (setup output, test run output)."""
    need("cmake", "ctest", "c++", "git")
    src, build, patch = project(tmp_path, {"CMakeLists.txt": TOP, "calc.cc": CALC, "tests/CMakeLists.txt": tests_cmake,
                                           "tests/test_old.cc": OLD}, patched)
    files = touched(patch)
    setup = helper(src, build, "--build-only", files=files)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    apply(src, patch)
    run = helper(src, build, "--verbose", files=files)
    assert run.returncode == 0, run.stdout + run.stderr
    return setup.stdout, run.stdout


def test_a_test_source_the_test_patch_adds_to_the_list_is_owned_after_the_reconfigure(tmp_path):
    """The test_patch adds tests/test_new.cc and lists it in tests/CMakeLists.txt: at the base
    commit no target owns it, and the setup builds the test target known only by its
    ``calc_test_NOT_BUILT`` placeholder (was: "building the 0 test targets"); the test run
    re-configures with the test_patch, so calc_test owns the new file and its new test runs."""
    setup, run = _setup_then_test_run(tmp_path, LISTED, {
        "tests/test_new.cc": NEW, "tests/CMakeLists.txt": LISTED.replace("  test_old.cc\n", "  test_old.cc\n  test_new.cc\n")})
    assert "building the 1 test targets" in setup and "--target calc_test" in setup, setup
    assert "targets owning the touched files: calc_test" in run, run
    assert "[       OK ] Calc.New" in run and "[       OK ] Calc.Old" in run


def test_a_test_source_a_glob_picks_up_is_owned_after_the_reconfigure(tmp_path):
    """The same with ``file(GLOB ...)``: the test_patch adds only the new source; the
    re-configure globs again and calc_test owns it."""
    setup, run = _setup_then_test_run(tmp_path, GLOBBED, {"tests/test_new.cc": NEW})
    assert "building the 1 test targets" in setup, setup
    assert "targets owning the touched files: calc_test" in run, run
    assert "[       OK ] Calc.New" in run and "[       OK ] Calc.Old" in run


def test_a_test_source_only_the_fix_lists_leaves_the_test_targets_not_zero_at_setup(tmp_path):
    """The test_patch adds tests/test_new.cc but the fix lists it (the before side): at setup
    (before the test_patch) the test targets are built (calc_test, known by its placeholder), not
    0 targets. After the test_patch nothing compiles it on this side: S38, nothing runs and its
    tests are reported as not built (`test_cfamily_unbuilt_source`; was every test target)."""
    need("cmake", "ctest", "c++", "git")
    src, build, patch = project(tmp_path, {"CMakeLists.txt": TOP, "calc.cc": CALC, "tests/CMakeLists.txt": LISTED,
                                           "tests/test_old.cc": OLD}, {"tests/test_new.cc": NEW})
    setup = helper(src, build, "--build-only", files=touched(patch))
    assert setup.returncode == 0 and "building the 1 test targets" in setup.stdout, setup.stdout
    apply(src, patch)
    run = helper(src, build, "--verbose", files=touched(patch))
    assert "tests/test_new.cc is compiled by no target of this CMake build" in run.stdout, run.stdout
    assert "NOT_BUILT" not in run.stdout and "$ ctest" not in run.stdout


SCRIPTED_TOP = ("cmake_minimum_required(VERSION 3.16)\nproject(p C)\nenable_testing()\n"
                "add_executable(tool tool.c)\nadd_executable(broken broken.c)\n"
                "add_test(NAME cli COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli.sh WORKING_DIRECTORY ${CMAKE_BINARY_DIR})\n")
TOOL = '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n'
CLI = "#!/bin/sh\n./tool | grep -q hello\n"


def test_tests_run_by_a_script_no_target_owns_get_the_whole_suite(tmp_path):
    """A touched test script (data no target owns) whose CTest test names no target: the helper
    builds every target (keeping going past one that does not compile, whose artifact is then
    deleted) and runs every test -- the script's tool is built and the test passes (was: 0
    targets built, the script failed for the tool's absence)."""
    need("cmake", "ctest", "cc", "git")
    src, build, patch = project(tmp_path, {"CMakeLists.txt": SCRIPTED_TOP, "tool.c": TOOL, "broken.c": "int main(void) {}\n",
                                           "tests/cli.sh": "#!/bin/sh\nexit 1\n"},
                                {"tests/cli.sh": CLI, "broken.c": "int main(void) { return nope; }\n"})
    assert touched(patch) == ["broken.c", "tests/cli.sh"]  # the fix breaks `broken`; the test_patch: cli.sh
    setup = helper(src, build, "--build-only", files=["tests/cli.sh"])
    assert "the whole suite (building every target" in setup.stdout, setup.stdout
    assert (build / "tool").exists() and (build / "broken").exists()
    apply(src, patch)
    run = helper(src, build, "--verbose", files=["tests/cli.sh"])
    assert "the whole suite (building every target" in run.stdout, run.stdout
    assert "target broken failed to build" in run.stdout
    assert not (build / "broken").exists()  # no stale binary from the setup's build
    assert run.returncode == 0 and "1/1 Test #1: cli" in run.stdout, run.stdout + run.stderr


def test_whole_runs_every_test_whatever_owns_the_touched_file(tmp_path):
    """``--whole`` (the loop's `whole_suite` move): another target's test runs too."""
    need("cmake", "ctest", "cc", "git")
    top = ("cmake_minimum_required(VERSION 3.16)\nproject(p C)\nenable_testing()\n"
           "add_executable(a a.c)\nadd_test(NAME a COMMAND a)\nadd_executable(b b.c)\nadd_test(NAME b COMMAND b)\n")
    main = "int main(void) { return 0; }\n"
    src, build, _ = project(tmp_path, {"CMakeLists.txt": top, "a.c": main, "b.c": main}, {})
    narrow = helper(src, build, "--verbose", files=["a.c"])
    assert "targets owning the touched files: a" in narrow.stdout and "Test #2: b" not in narrow.stdout
    whole = helper(src, build, "--whole", "--verbose", files=["a.c"])
    assert whole.returncode == 0 and "Test #1: a" in whole.stdout and "Test #2: b" in whole.stdout, whole.stdout


def test_test_targets_know_a_gtest_target_by_its_not_built_placeholder(tmp_path):
    mod = _helper_module()
    exe = str(tmp_path / "bin" / "run_me")
    targets = [("calc_test", "EXECUTABLE", [], [str(tmp_path / "calc_test")]),
               ("runner", "EXECUTABLE", [], [exe]), ("tool", "EXECUTABLE", [], [str(tmp_path / "tool")])]
    tests = [("calc_test_NOT_BUILT", None), ("wrapped", ["/bin/sh", "-c", "x", exe])]
    assert [t[0] for t in mod.test_targets(targets, tests)] == ["calc_test", "runner"]
    assert mod.test_targets(targets, [("cli", ["/bin/sh", "script.sh"])]) == []
    (tmp_path / "CMakeCache.txt").write_text("CMAKE_GENERATOR:INTERNAL=Ninja\n")
    assert mod.keep_going(str(tmp_path)) == ["--", "-k", "0"]
    (tmp_path / "CMakeCache.txt").write_text("CMAKE_GENERATOR:INTERNAL=Unix Makefiles\n")
    assert mod.keep_going(str(tmp_path)) == ["--", "-k"]


# --- the loop's `whole_suite` move (agents.moves), from a stalled round's output ----------------

def cmake_plan(extra: str = "") -> Plan:
    return Plan(ecosystem="cfamily", toolchain="gcc 12", image="i", build="cmake", setup_commands=[],
                test_command=f"python3 {cfamily.HELPER} /opt/build {extra}--verbose --jobs 2 -- tests/test_new.cc",
                parser="gtest_log")


def ctx(tree, plan, why: str, output: str) -> MoveContext:
    return MoveContext(tree=tree, instance=None, plan=plan, touched=["tests/test_new.cc"], why=why, output=output)


def test_a_stalled_round_with_a_narrower_selection_gets_the_whole_suite_move(tmp_path):
    tree = make_tree(tmp_path, {"CMakeLists.txt": TOP})
    said = "swemint-cmake-tests: targets owning the touched files: calc_test\n"
    why = "tests the test_patch adds never ran: Shard.Split"
    moves = candidates(cfamily.ECOSYSTEM, ctx(tree, cmake_plan(), why, said), set())
    assert [m.kind for m in moves] == ["rediscover", "whole_suite"]  # both retests, discovery first
    whole = moves[1]
    assert f"{cfamily.HELPER} /opt/build --whole --verbose" in whole.test.test_command
    assert whole.test.parser == "gtest_log" and whole.request is None
    assert why in whole.evidence and "targets owning the touched files: calc_test" in whole.evidence
    # the compile-once step builds what the move's run will build
    build = cfamily.ECOSYSTEM.build_command(cmake_plan("--whole "))
    assert build is not None and "--build-only --whole " in build
    assert "--whole" not in cfamily.ECOSYSTEM.build_command(cmake_plan())


def test_no_whole_suite_move_when_it_ran_or_no_test_is_defined(tmp_path):
    tree = make_tree(tmp_path, {"CMakeLists.txt": TOP})
    why = "no test ran: x"
    assert [m.kind for m in cfamily.ECOSYSTEM.next_moves(ctx(tree, cmake_plan("--whole "), why, ""))] == []
    ran_whole = ("swemint-cmake-tests: no target owns the touched files and no target is known to run a CTest test: "
                 "the whole suite (building every target, running every test)\n")
    assert cfamily.ECOSYSTEM.next_moves(ctx(tree, cmake_plan(), why, ran_whole)) == []
    none = "swemint-cmake-tests: no target owns the touched files: building the 0 test targets\n" \
           "swemint-cmake-tests: no CTest tests are defined\n"
    assert "whole_suite" not in [m.kind for m in cfamily.ECOSYSTEM.next_moves(ctx(tree, cmake_plan(), why, none))]
