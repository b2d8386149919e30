"""S33 (issue 25): one GoogleTest binary built from many test files (faiss's ``faiss_test``) ran
whole for a test_patch touching one file -- over the run limit on a loaded host. The in-container
helper (`recipes/cmake_tests.py` with `recipes/gtest_suites.py`) now runs only the suites the
touched files define: ``GTEST_FILTER`` for a binary CTest runs whole, ``ctest -R`` for the
per-case tests of ``gtest_discover_tests``; the whole binary when a touched file defines no suite
it reads or the filter selects nothing. Pure tests on sources the tests write, then the helper
with the host's cmake, ctest, g++ and GoogleTest on small git repositories (skipped without)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

from agents.ecosystems import cfamily
from tests.agents.ecosystems.test_cfamily_unowned import HELPER, apply, cmake_plan, helper, need, project, touched


def _module(name: str):
    sys.path.insert(0, str(cfamily.RECIPES))  # they import one another, as installed beside each other
    try:
        spec = importlib.util.spec_from_file_location(name, cfamily.RECIPES / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(cfamily.RECIPES))


gs = _module("gtest_suites")

HEAD = "#include <gtest/gtest.h>\nint calc(int, int);\n"


def test_suites_of_each_macro_form():
    assert gs.suites(HEAD + "TEST(Calc, Adds) {}\nTEST_F(CalcFixture, Subs) {}\nGTEST_TEST(Plain, One) {}\n") == \
        ["Calc.*", "CalcFixture.*", "Plain.*"]
    params = ("class P : public ::testing::TestWithParam<int> {};\nTEST_P(P, Same) {}\nTEST_P(P, Other) {}\n"
              "INSTANTIATE_TEST_SUITE_P(Small, P, ::testing::Values(1, 2));\n"
              "INSTANTIATE_TEST_CASE_P(Big,\n    P, ::testing::Values(9));\n")
    assert gs.suites(params) == ["Small/P.*", "Big/P.*"]
    assert gs.suites("TEST_P(Q, x) {}\n") == ["*/Q.*"]  # instantiated elsewhere: any prefix
    typed = ("template <class T> class Ty : public ::testing::Test {};\nusing Types = ::testing::Types<int, long>;\n"
             "TYPED_TEST_SUITE(Ty, Types);\nTYPED_TEST(Ty, Holds) {}\nTYPED_TEST_CASE(Old, Types);\n")
    assert gs.suites(typed) == ["Ty/*.*", "Old/*.*"]
    typed_p = ("TYPED_TEST_SUITE_P(Tp);\nTYPED_TEST_P(Tp, Works) {}\nREGISTER_TYPED_TEST_SUITE_P(Tp, Works);\n"
               "INSTANTIATE_TYPED_TEST_SUITE_P(My, Tp, Types);\n")
    assert gs.suites(typed_p) == ["My/Tp/*.*"]
    assert gs.suites("TYPED_TEST_P(Up, w) {}\n") == ["*/Up/*.*"]


def test_suites_skip_comments_and_what_is_no_test():
    text = ('// TEST(Gone, a) {}\n/* TEST(Also, b) {}\n*/\nconst char* p = "dir/*.txt";\nTEST(Kept, c) {}\n'
            "class X { FRIEND_TEST(Friend, d); };\n#define TESTISH(a, b) 0\n")
    assert gs.suites(text) == ["Kept.*"]
    assert gs.suites("int helper(int a) { return a; }\n") == []


def test_file_suites_read_the_side_being_run(tmp_path):
    f = tmp_path / "t.cc"
    f.write_text(HEAD + "TEST(Old, a) {}\n")
    assert gs.file_suites(str(f)) == ["Old.*"]
    f.write_text(HEAD + "TEST(Old, a) {}\nTEST(New, b) {}\n")  # the test_patch adds a suite
    assert gs.file_suites(str(f)) == ["Old.*", "New.*"]
    assert gs.file_suites(str(tmp_path / "absent.cc")) == []


def test_a_file_is_parsed_once_for_the_selection_and_the_declared_ids(tmp_path):
    """The helper asks a touched file's suites (S33's selection) and, when its target failed to
    build, its declared ids (S34): one parse of the text (`definitions`) serves both; a changed
    file (the other side) is parsed anew."""
    f = tmp_path / "t.cc"
    f.write_text(HEAD + "TEST(Calc, Adds) {}\nTEST_P(P, Same) {}\nINSTANTIATE_TEST_SUITE_P(Small, P, V);\n")
    gs.definitions.cache_clear()
    assert gs.file_suites(str(f)) == ["Calc.*", "Small/P.*"]
    assert gs.file_suites(str(f), gs.declared) == ["Calc.Adds", "Small/P.Same"]
    assert gs.definitions.cache_info().misses == 1 and gs.definitions.cache_info().hits == 1
    f.write_text(HEAD + "TEST(Calc, Adds) {}\nTEST(Calc, Subs) {}\n")
    assert gs.file_suites(str(f), gs.declared) == ["Calc.Adds", "Calc.Subs"]
    assert gs.definitions.cache_info().misses == 2


def test_the_filter_combines_with_a_callers_filter_and_the_dead_tests():
    ct = _module("cmake_tests")
    pats = ["A.*", "Small/P.*"]
    assert gs.narrowed(pats, None) == "A.*:Small/P.*"
    assert gs.narrowed(pats, "-Slow.x") == "A.*:Small/P.*-Slow.x"  # the caller's negative part stays
    assert gs.narrowed(pats, "A.one:A.two") == "A.one:A.two"  # a targeted rerun's cases replace the suites
    flt = ct.with_excluded(gs.narrowed(pats, "-Slow.x"), ["A.dies"])  # step 5's dead test
    assert flt == "A.*:Small/P.*-Slow.x:A.dies"
    assert ct.with_excluded(gs.narrowed(pats, None), ["A.dies"]) == "A.*:Small/P.*-A.dies"
    assert [t for t in ("A.dies", "A.ok", "Small/P.Same/0", "B.ok", "Slow.x") if gs.selects(flt, t)] == \
        ["A.ok", "Small/P.Same/0"]
    assert gs.selects(None, "Any.thing") and gs.selects("-B.*", "A.x") and not gs.selects("-B.*", "B.x")


def test_per_case_ctest_tests_match_their_suites():
    assert gs.case_of(["/b/t", "--gtest_filter=Small/P.Same/0", "--gtest_also_run_disabled_tests"]) == \
        "Small/P.Same/0"
    assert gs.case_of(["/b/t"]) is None and gs.case_of([]) is None
    pats = ["A.*", "Small/P.*", "Ty/*.*", "*/Tp/*.*"]
    for case in ("A.x", "Small/P.Same/0", "Ty/0.Holds", "My/Tp/1.Works", "*/P.Same/*"):  # the last: gtest_add_tests
        assert gs.case_matches(case, pats), case
    for case in ("B.x", "Small/Q.Same/0", "Ty2/0.Holds", "AA.x"):
        assert not gs.case_matches(case, pats), case


def test_listing_is_parsed_with_parameters_and_types():
    text = ("Running main() from gtest_main.cc\nA.\n  Old\n  New\nSmall/P.\n  Same/0  # GetParam() = 1\n"
            "Ty/0.  # TypeParam = int\n  Holds\n")
    assert gs.parse_listing(text) == ["A.Old", "A.New", "Small/P.Same/0", "Ty/0.Holds"]


def _fake_binary(tmp_path: Path, listing: str) -> str:
    """An executable that answers --gtest_list_tests with `listing` and carries GoogleTest's marker."""
    exe = tmp_path / "calc_test"
    exe.write_text("#!/bin/sh\n# gtest_list_tests\ncat <<'EOF'\n" + listing + "EOF\n")
    exe.chmod(0o755)
    return str(exe)


def _narrow(monkeypatch, tmp_path, mine, tests, base=None, others=3):
    exe = _fake_binary(tmp_path, "A.\n  Old\n  New\nB.\n  Old\n")
    monkeypatch.setattr(gs.ctest_reruns, "ctest_specs",
                        lambda build, names: [(n, [exe], str(tmp_path), dict(os.environ), None) for n in names])
    tests = [(n, [exe] + args) for n, args in tests]
    return gs.narrow(str(tmp_path), [("calc_test", [exe], mine, others)], tests, [n for n, _ in tests], base)


def test_narrow_a_binary_ctest_runs_whole_with_the_filter(monkeypatch, tmp_path, capsys):
    sel, flt = _narrow(monkeypatch, tmp_path, {"tests/a.cc": ["A.*"]}, [("calc_test", [])])
    assert (sel, flt) == (["calc_test"], "A.*")
    assert "GTEST_FILTER=A.* selects 2 of its 3 tests" in capsys.readouterr().out
    sel, flt = _narrow(monkeypatch, tmp_path, {"tests/a.cc": ["A.*"]}, [("calc_test", [])], base="-A.New")
    assert flt == "A.*-A.New"
    # a targeted rerun's own cases stand (they came from this narrowed run)
    assert _narrow(monkeypatch, tmp_path, {"tests/a.cc": ["A.*"]}, [("calc_test", [])], base="A.Old")[1] is None


def test_narrow_falls_back_to_the_whole_binary(monkeypatch, tmp_path, capsys):
    # the touched file defines no suite (a helper source the binary lists)
    sel, flt = _narrow(monkeypatch, tmp_path, {"tests/a.cc": ["A.*"], "tests/util.cc": []}, [("calc_test", [])])
    assert (sel, flt) == (["calc_test"], None)
    assert "tests/util.cc defines no GoogleTest suite this helper reads: the whole binaries run" in capsys.readouterr().out
    # the filter selects no test of the binary (a suite its listing does not have)
    sel, flt = _narrow(monkeypatch, tmp_path, {"tests/a.cc": ["Gone.*"]}, [("calc_test", [])])
    assert flt is None and "selects none of its 3 tests: the whole binaries run" in capsys.readouterr().out
    # built from the touched file alone: nothing to narrow, nothing said
    assert _narrow(monkeypatch, tmp_path, {"tests/a.cc": ["A.*"]}, [("calc_test", [])], others=0) == (["calc_test"], None)
    assert capsys.readouterr().out == ""


def test_narrow_per_case_ctest_tests_by_their_suites(monkeypatch, tmp_path):
    cases = [("A.Old", ["--gtest_filter=A.Old"]), ("A.New", ["--gtest_filter=A.New"]), ("B.Old", ["--gtest_filter=B.Old"])]
    assert _narrow(monkeypatch, tmp_path, {"tests/a.cc": ["A.*"]}, cases) == (["A.Old", "A.New"], None)
    assert _narrow(monkeypatch, tmp_path, {"tests/a.cc": ["Z.*"]}, cases) == (["A.Old", "A.New", "B.Old"], None)


def test_run_ctest_sets_the_filter_and_adds_the_dead_test_to_it(tmp_path, capsys):
    """Step 5 under the suites' filter: round 1 runs GTEST_FILTER=the suites; a test dies, round 2
    adds it to the negative part. A case that ran as its own CTest test hides nothing: no round 2."""
    ct = _module("cmake_tests")
    seen = tmp_path / "filters"
    fake = tmp_path / "fake_ctest.py"
    fake.write_text("import os, sys\nf = os.environ.get('GTEST_FILTER', '')\n"
                    f"open({str(seen)!r}, 'a').write(f + '\\n')\n"
                    "print('[ RUN      ] A.first')\nprint('[       OK ] A.first (0 ms)')\n"
                    "if 'A.dies' not in f.partition('-')[2]:\n    print('[ RUN      ] A.dies')\n    sys.exit(1)\n"
                    "print('[ RUN      ] A.later')\nprint('[       OK ] A.later (0 ms)')\n")
    rc, _ = ct.run_ctest([sys.executable, str(fake)], str(tmp_path), str(tmp_path), "A.*:Small/P.*")
    assert rc == 0 and seen.read_text().splitlines() == ["A.*:Small/P.*", "A.*:Small/P.*-A.dies"]
    out = capsys.readouterr().out
    assert "$ GTEST_FILTER='A.*:Small/P.*' " in out and "A.later" in out
    seen.unlink()
    rc, _ = ct.run_ctest([sys.executable, str(fake)], str(tmp_path), str(tmp_path), None, {"A.dies"})
    assert rc == 1 and seen.read_text().splitlines() == [""]


# --- the helper on real projects (host cmake, ctest, g++, GoogleTest) ----------------------------

TOP = ("cmake_minimum_required(VERSION 3.16)\nproject(p CXX)\nenable_testing()\nfind_package(GTest REQUIRED)\n"
       "include(GoogleTest)\nadd_library(calc calc.cc)\n"
       "add_executable(calc_test tests/test_a.cc tests/test_b.cc tests/util.cc)\n"
       "target_link_libraries(calc_test calc GTest::gtest_main)\n")
WHOLE = TOP + "add_test(NAME calc_test COMMAND calc_test)\n"
DISCOVERED = TOP + "gtest_discover_tests(calc_test)\n"
CALC = "int calc(int a, int b) { return a + b; }\n"
UTIL = "int twice(int a) { return 2 * a; }\n"
TEST_A = HEAD + ("TEST(A, Old) { EXPECT_EQ(calc(1, 0), 1); }\nclass P : public ::testing::TestWithParam<int> {};\n"
                 "TEST_P(P, Same) { EXPECT_EQ(calc(GetParam(), 0), GetParam()); }\n"
                 "INSTANTIATE_TEST_SUITE_P(Small, P, ::testing::Values(1, 2));\n")
TEST_A_NEW = TEST_A + "TEST(ANew, Adds) { EXPECT_EQ(calc(2, 3), 5); }\n"  # the test_patch adds a suite
TEST_B = HEAD + "TEST(B, Old) { EXPECT_EQ(calc(0, 0), 0); }\nTEST(B, Other) { EXPECT_EQ(calc(2, 2), 4); }\n"


def _run(tmp_path, cmake: str, patched: dict[str, str], *args: str):
    need("cmake", "ctest", "c++", "git")
    src, build, patch = project(tmp_path, {"CMakeLists.txt": cmake, "calc.cc": CALC, "tests/test_a.cc": TEST_A,
                                           "tests/test_b.cc": TEST_B, "tests/util.cc": UTIL}, patched)
    files = touched(patch)
    setup = helper(src, build, "--build-only", files=files)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    apply(src, patch)
    run = helper(src, build, "--verbose", *args, files=files)
    assert run.returncode == 0, run.stdout + run.stderr
    return src, build, files, run.stdout


def test_a_binary_ctest_runs_whole_runs_only_the_touched_files_suites(tmp_path):
    """One gtest binary of three sources, one CTest test: the test_patch touches test_a.cc (a new
    suite ANew); only A, Small/P and ANew run -- B's tests do not."""
    src, build, files, out = _run(tmp_path, WHOLE, {"tests/test_a.cc": TEST_A_NEW})
    assert files == ["tests/test_a.cc"]
    assert "only the suites of tests/test_a.cc: A.*:Small/P.*:ANew.*" in out, out
    assert "GTEST_FILTER=A.*:Small/P.*:ANew.* selects 4 of its 6 tests" in out
    assert "$ GTEST_FILTER='A.*:Small/P.*:ANew.*' ctest" in out
    for t in ("A.Old", "Small/P.Same/0", "Small/P.Same/1", "ANew.Adds"):
        assert f"[       OK ] {t} (" in out, t
    assert "B.Old" not in out and "B.Other" not in out
    # --whole (the loop's whole_suite move) still runs everything
    whole = helper(src, build, "--verbose", "--whole", files=files)
    assert "[       OK ] B.Other (" in whole.stdout and "GTEST_FILTER" not in whole.stdout, whole.stdout


def test_a_targeted_rerun_filter_replaces_the_suites(tmp_path):
    """The targeted rerun's command (`CFamily.targeted_plan`: GTEST_FILTER=the cases before the
    helper, --only the CTest names), run by a shell on the narrowed project: the cases it names
    run, within the touched file's suites, and nothing of test_b.cc."""
    src, build, files, _ = _run(tmp_path, WHOLE, {"tests/test_a.cc": TEST_A_NEW})
    plan = cmake_plan().model_copy(update={"test_command": f"python3 {cfamily.HELPER} /opt/build --verbose --jobs 2 -- "
                                                          + " ".join(files)})
    rerun = cfamily.ECOSYSTEM.targeted_plan(plan, ["ANew.Adds", "Small/P.Same/1"])
    assert rerun is not None and rerun.test_command.startswith("GTEST_FILTER=ANew.Adds:Small/P.Same/1 ")
    cmd = rerun.test_command.replace(cfamily.HELPER, f"{sys.executable} {HELPER}").replace("python3 ", "", 1)
    r = subprocess.run(["bash", "-c", cmd.replace("/opt/build", str(build))], cwd=src, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "GTEST_FILTER=ANew.Adds:Small/P.Same/1 (the caller's) stands" in r.stdout, r.stdout
    assert "[       OK ] ANew.Adds (" in r.stdout and "[       OK ] Small/P.Same/1 (" in r.stdout
    assert "A.Old" not in r.stdout and "Small/P.Same/0" not in r.stdout and "B.Old" not in r.stdout


def test_discovered_tests_run_by_ctest_R_of_the_touched_suites(tmp_path):
    """gtest_discover_tests: each case is a CTest test; those of the touched file's suites run. A
    targeted rerun (--only CTest names) within them runs its names; one outside keeps the suites."""
    src, build, files, out = _run(tmp_path, DISCOVERED, {"tests/test_a.cc": TEST_A_NEW})
    assert "calc_test: 4 of its 6 one-case CTest tests are in those suites: ctest -R of them" in out, out
    assert "ANew.Adds" in out and "A.Old" in out and "B.Old" not in out and "B.Other" not in out
    only = helper(src, build, "--only", json.dumps(["ANew.Adds"]), files=files).stdout
    assert "targeted: the CTest tests ANew.Adds" in only and "A.Old" not in only, only
    outside = helper(src, build, "--only", json.dumps(["B.Old"]), files=files).stdout
    assert "the selection stays" in outside and "B.Old" not in outside.split("selection stays", 1)[1], outside


def test_a_touched_file_with_no_suite_runs_the_whole_binary(tmp_path):
    """The test_patch touches test_a.cc and util.cc (no suite): the whole binary runs."""
    _, _, files, out = _run(tmp_path, WHOLE, {"tests/test_a.cc": TEST_A_NEW,
                                              "tests/util.cc": UTIL + "int thrice(int a) { return 3 * a; }\n"})
    assert files == ["tests/test_a.cc", "tests/util.cc"]
    assert "tests/util.cc defines no GoogleTest suite this helper reads: the whole binaries run" in out, out
    assert "[       OK ] B.Other (" in out and "[       OK ] ANew.Adds (" in out
