"""C/C++ analysis and plans (no Docker): build-system choice, Debian packages for dependencies
and missing submodules (jq's oniguruma), CMake options, the gcc/cmake choice, test commands and
parsers per build system, repairs, and the in-container CMake target selection helper."""

from __future__ import annotations

import re

import importlib.util
import json
from datetime import date
from functools import partial

import pytest

import envpool.toolchains.cfamily_image as tc
from agents.ecosystems import cfamily
from agents.ecosystems.cfamily import ECOSYSTEM, analyze, era_gcc
from envpool.images import ImageConfig
from tests.agents.ecosystems.conftest import make_instance, make_tree

instance = partial(make_instance, language="c", instance_id="acme__widget-1", repo="acme/widget")


@pytest.fixture
def images(image_store):
    """The C/C++ toolchain images the plans make, in a fake image store (no Docker)."""
    return image_store


def toolchains(store) -> list[tuple[str, str | None]]:
    """(gcc major, the cmake series installed from PyPI or None) of each C/C++ toolchain image
    `store` made, in order."""
    out = []
    for _, tag, _, script in store.built:
        if tag.startswith("swemint/cfamily:gcc"):
            cmake = re.search(r"'cmake==([\d.]+?)(?:\.\*)?'", script)
            out.append((tag.split(":gcc", 1)[1].split("-", 1)[0], cmake.group(1) if cmake else None))
    return out


JQ_CONFIGURE = """AC_INIT([jq], [1.6])
AC_PROG_YACC
AC_ARG_ENABLE([valgrind], AS_HELP_STRING([--disable-valgrind], [no valgrind]))
AC_ARG_ENABLE([docs], AS_HELP_STRING([--disable-docs], [no docs]))
AC_CHECK_LIB([onig],[onig_version])
AC_CONFIG_SUBDIRS([modules/oniguruma])
"""
GITMODULES = '[submodule "modules/oniguruma"]\n\tpath = modules/oniguruma\n\turl = https://example.org/kkos/oniguruma.git\n'

CMAKE_TOP = """cmake_minimum_required(VERSION 3.1...3.18)
project(widget CXX)
option(WIDGET_TEST "Generate the test target." ON)
option(WIDGET_FUZZ "Fuzzers." OFF)
set(CMAKE_CXX_STANDARD 17)
find_package(ZLIB REQUIRED)
enable_testing()
add_subdirectory(test)
"""
CMAKE_TEST = """add_executable(widget-test widget-test.cc)
add_test(NAME widget-test COMMAND widget-test)
add_test(find-package-test ${CMAKE_CTEST_COMMAND})
find_package(widget)
"""


def test_detect_scores(tmp_path):
    cm = make_tree(tmp_path / "a", {"CMakeLists.txt": CMAKE_TOP})
    assert ECOSYSTEM.detect(cm, "cpp") == 12 and ECOSYSTEM.detect(cm, None) == 10
    assert ECOSYSTEM.detect(cm, "python") == 0 and ECOSYSTEM.detect(cm, "go") == 0
    mk = make_tree(tmp_path / "b", {"Makefile": "all:\n\tcc -o x x.c\n", "x.c": "", "y.c": "", "z.h": ""})
    assert ECOSYSTEM.detect(mk, None) == 6
    node = make_tree(tmp_path / "c", {"package.json": "{}", "Makefile": "test:\n\tnpm test\n"})
    assert ECOSYSTEM.detect(node, None) == 0


def test_jq_like_autotools_uses_debian_oniguruma(tmp_path):
    tree = make_tree(tmp_path, {"configure.ac": JQ_CONFIGURE, "Makefile.am": "TESTS = tests/shtest\n",
                                ".gitmodules": GITMODULES, "src/main.c": "int main(){}\n",
                                "tests/shtest": "#!/bin/sh\n"})
    b = analyze(tree, ["tests/shtest"])
    assert b.system == "autotools" and not b.configure_committed
    # the missing submodule is filled from Debian's source package, so its own tests run
    assert b.sources == {"modules/oniguruma": "libonig"}
    assert b.source_flags == {"modules/oniguruma": (["--with-oniguruma=builtin"], ["--with-oniguruma=yes"])}
    assert "libonig-dev" in b.packages  # the fallback when Debian no longer serves the source
    assert {"--disable-valgrind", "--disable-docs"} <= set(b.configure_flags)
    assert any("oniguruma" in n and "Debian's source package libonig" in n for n in b.notes)
    # a submodule path that is not plain keeps the Debian-library route
    odd = make_tree(tmp_path / "odd", {"configure.ac": JQ_CONFIGURE, "src/main.c": "int main(){}\n",
                                       ".gitmodules": GITMODULES.replace("modules/oniguruma", "mod ules/oniguruma")})
    b2 = analyze(odd, [])
    assert b2.sources == {} and "--with-oniguruma=yes" in b2.configure_flags and "libonig-dev" in b2.packages


def test_autotools_plan_runs_make_check_with_automake_parser(tmp_path, images):
    tree = make_tree(tmp_path, {"configure.ac": JQ_CONFIGURE, ".gitmodules": GITMODULES,
                                "tests/shtest": "#!/bin/sh\n"})
    plan = ECOSYSTEM.plan(tree, instance(tree, created_at="2020-12-28 21:21:22"), ["tests/shtest"], ImageConfig())
    assert toolchains(images) == [("10", None)]  # a 2020 PR: bullseye's gcc 10
    assert plan.toolchain.startswith("gcc 10")
    # the submodule directory, filled from the upstream tarball of Debian's source package
    assert plan.setup_commands[1] == "mkdir -p modules/oniguruma"
    fetch = plan.setup_commands[2]
    assert "apt-get source --download-only --tar-only -qq libonig" in fetch and "-C /testbed/modules/oniguruma" in fetch
    assert "deb-src" in fetch and fetch.endswith("/var/lib/apt/lists/*") and "unavailable" in fetch
    conf = "./configure --disable-valgrind --disable-docs"
    assert plan.setup_commands[3:] == [
        "autoreconf -fi",
        f"if [ -f modules/oniguruma/configure.ac ]; then {conf} --with-oniguruma=builtin; "
        f"else {conf} --with-oniguruma=yes; fi",
        "make -j2", "make -j2 check TESTS="]
    assert plan.test_command == "make -j2 -k check" and plan.parser == "automake_log"
    assert plan.report_path is None


def test_committed_configure_is_not_regenerated(tmp_path, images):
    tree = make_tree(tmp_path, {"configure.ac": "AC_INIT([x],[1])\n", "configure": "#!/bin/sh\n",
                                "t/a.test": ""})
    plan = ECOSYSTEM.plan(tree, instance(tree), ["t/a.test"], ImageConfig())
    assert "autoreconf -fi" not in plan.setup_commands and plan.setup_commands[0] == "./configure"


def test_cmake_analysis(tmp_path):
    tree = make_tree(tmp_path, {"CMakeLists.txt": CMAKE_TOP, "test/CMakeLists.txt": CMAKE_TEST,
                                "test/widget-test.cc": '#include "gtest/gtest.h"\nTEST(Widget, Works) {}\n'})
    b = analyze(tree, ["test/widget-test.cc"], project="widget")
    assert b.system == "cmake" and b.cmake_min == "3.1" and b.cxx_std == "17"
    assert b.packages == ["zlib1g-dev"]  # the project's own find_package(widget) is no dependency
    assert "-DWIDGET_TEST=ON" in b.cmake_flags and "-DBUILD_TESTING=ON" in b.cmake_flags
    assert not any("FUZZ" in f for f in b.cmake_flags)
    assert b.gtest


def test_the_cmake_configure_command_is_one_helper_for_the_plan_and_a_library_build():
    """`c_setup.cmake_configure`: source and build folder, the build type when given, each flag
    once, every value one quoted word; the C/C++ plan and `c_library.library_build` use it."""
    from agents.ecosystems.cfamily.c_setup import cmake_configure

    assert cmake_configure(build_type="None", flags=["-DBUILD_TESTING=ON", "-DX=ON", "-DX=ON"]) == \
        "cmake -S /testbed -B /opt/build -DCMAKE_BUILD_TYPE=None -DBUILD_TESTING=ON -DX=ON"
    assert cmake_configure("/testbed/my lib", "/testbed/my lib/build") == \
        "cmake -S '/testbed/my lib' -B '/testbed/my lib/build'"
    assert cmake_configure(build_type="Rel;rm -rf /", flags=["-DA=$(x)"]).endswith(
        "-DCMAKE_BUILD_TYPE='Rel;rm -rf /' '-DA=$(x)'")
    with pytest.raises(ValueError):
        cmake_configure("/testbed/a\0b")


def test_cmake_plan_gtest_and_ctest_parsers(tmp_path, images):
    files = {"CMakeLists.txt": CMAKE_TOP, "test/CMakeLists.txt": CMAKE_TEST,
             "test/widget-test.cc": '#include "gtest/gtest.h"\nTEST(Widget, Works) {}\n'}
    tree = make_tree(tmp_path / "g", files)
    plan = ECOSYSTEM.plan(tree, instance(tree, created_at="2020-05-14 14:49:55"), ["test/widget-test.cc"],
                          ImageConfig())
    assert plan.parser == "gtest_log" and plan.report_path is None
    assert plan.test_command == (f"python3 {cfamily.HELPER} /opt/build --verbose --jobs 2 "
                                 "--timeout ${SWEMINT_TEST_TIMEOUT:-120} -- test/widget-test.cc")
    assert any("codemodel-v2" in c and "cmake -S /testbed -B /opt/build" in c and "-DWIDGET_TEST=ON" in c
               for c in plan.setup_commands)
    # setup builds the targets the test run needs, not the whole project
    assert any(c.startswith(f"python3 {cfamily.HELPER} /opt/build --build-only --jobs 2 -- test/widget-test.cc")
               for c in plan.setup_commands)
    assert not any(c.startswith("cmake --build /opt/build") for c in plan.setup_commands)
    # plain CTest tests: JUnit from ctest when the cmake is >= 3.21 (bookworm: 3.25), console before
    files["test/widget-test.cc"] = "int main() { return 0; }\n"
    tree = make_tree(tmp_path / "c", {**files, "test/CMakeLists.txt": "add_test(NAME t COMMAND t)\n"})
    new = ECOSYSTEM.plan(tree, instance(tree, created_at="2024-01-10 00:00:00"), ["test/widget-test.cc"], ImageConfig())
    assert new.parser == "ctest_junit" and new.report_path == cfamily.JUNIT and "--junit" in new.test_command
    old = ECOSYSTEM.plan(tree, instance(tree, created_at="2020-01-10 00:00:00"), ["test/widget-test.cc"], ImageConfig())
    assert old.parser == "ctest_log" and old.report_path is None
    assert "--verbose" in old.test_command  # -V: passing tests' output (a TAP stream) is shown too


def test_a_targeted_ctest_rerun_names_its_ctest_tests_and_gtest_cases(tmp_path, images):
    """`targeted_plan` (CMake): the helper's ``--only`` with the CTest test names (an id's part
    before ``::``), and under the GoogleTest parser ``GTEST_FILTER`` of the ``Suite.Test`` cases;
    None for a command not of the helper's form."""
    files = {"CMakeLists.txt": CMAKE_TOP, "test/CMakeLists.txt": CMAKE_TEST,
             "test/widget-test.cc": '#include "gtest/gtest.h"\nTEST(Widget, Works) {}\n'}
    tree = make_tree(tmp_path / "g", files)
    plan = ECOSYSTEM.plan(tree, instance(tree, created_at="2020-05-14 14:49:55"), ["test/widget-test.cc"],
                          ImageConfig())
    t = ECOSYSTEM.targeted_plan(plan, ["Widget.Works", "P/Widget.Param/0"])
    assert t is not None and t.parser == "gtest_log"
    assert t.test_command == ("GTEST_FILTER=P/Widget.Param/0:Widget.Works "
                              + plan.test_command.replace("/opt/build ", "/opt/build --only "
                                                          "'[\"P/Widget.Param/0\", \"Widget.Works\"]' ", 1))
    files["test/widget-test.cc"] = "int main() { return 0; }\n"
    tree = make_tree(tmp_path / "c", {**files, "test/CMakeLists.txt": "add_test(NAME t COMMAND t)\n"})
    new = ECOSYSTEM.plan(tree, instance(tree, created_at="2024-01-10 00:00:00"), ["test/widget-test.cc"], ImageConfig())
    t = ECOSYSTEM.targeted_plan(new, ["calc add", "cases::a case > section", "cases::other"])
    assert t is not None and "GTEST_FILTER" not in t.test_command
    assert "/opt/build --only '[\"calc add\", \"cases\"]' --junit" in t.test_command
    assert ECOSYSTEM.targeted_plan(new.model_copy(update={"test_command": "make check"}), ["x"]) is None


def test_helper_is_installed_verbatim(tmp_path, images):
    import base64
    import gzip
    import re
    tree = make_tree(tmp_path, {"CMakeLists.txt": CMAKE_TOP})
    plan = ECOSYSTEM.plan(tree, instance(tree), ["test/x.cc"], ImageConfig())
    cmd = next(c for c in plan.setup_commands if cfamily.HELPER in c)
    written = {m.group(2).rsplit("/", 1)[-1]: gzip.decompress(base64.b64decode(m.group(1)))
               for m in re.finditer(r"echo (\S+) \| base64 -d \| gzip -dc > (\S+)", cmd)}
    assert written == {n: (cfamily.RECIPES / n).read_bytes() for n in ("cmake_tests.py", "doctest_runs.py",
                                                                       "catch2_runs.py", "boost_runs.py",
                                                                       "gtest_suites.py", "boost_suites.py",
                                                                       "ctest_reruns.py", "unbuilt_rules.py")}
    assert all(f"/usr/local/libexec/swemint/{n}" in cmd for n in written)  # beside each other: they import one another
    assert len(cmd.encode()) < 131072 - 4096  # one sh -c argument: under MAX_ARG_STRLEN (plain base64 was not)


def test_era_and_standard_choose_gcc(tmp_path, images):
    assert era_gcc(date(2020, 5, 1)) == "10" and era_gcc(date(2022, 1, 1)) == "10"
    assert era_gcc(date(2023, 7, 1)) == "12" and era_gcc(date(2026, 1, 1)) == "14"
    assert era_gcc(None) == "12"
    top = CMAKE_TOP.replace("set(CMAKE_CXX_STANDARD 17)", "target_compile_features(w PUBLIC cxx_std_23)")
    tree = make_tree(tmp_path, {"CMakeLists.txt": top})
    plan = ECOSYSTEM.plan(tree, instance(tree, created_at="2020-01-01 00:00:00"), [], ImageConfig())
    assert toolchains(images)[-1][0] == "12" and plan.toolchain.startswith("gcc 12")  # C++23 raises the floor


def test_pick_gcc_records_substitutions():
    assert tc.pick_gcc("12") == ("12", [])
    major, subs = tc.pick_gcc("11")
    assert major == "12" and "gcc 11 requested, 12 provided" in subs[0]
    major, subs = tc.pick_gcc("20")
    assert major == "14" and "newest available" in subs[0]


def test_new_cmake_comes_from_pypi_wheel(image_store):
    choice = tc.ensure_image("12", ImageConfig(route="debootstrap"), cmake="3.28")
    _, tag, parent, script = image_store.built[-1]
    assert tag == choice.image and parent.startswith("swemint/debian:bookworm-")
    assert "'cmake==3.28.*'" in script and "/opt/cmake/bin/pip install" in script
    assert choice.version == "gcc 12, cmake 3.28" and choice.route == "debootstrap"
    assert any("cmake 3.28 required" in s for s in choice.substitutions)
    plain = tc.ensure_image("10", ImageConfig(route="debootstrap"), cmake="3.1")
    assert "pip install" not in image_store.built[-1][3] and plain.version == "gcc 10, cmake 3.18"


def test_the_cmake_wheel_decision_is_one_function_for_the_image_and_a_library_build(tmp_path):
    """`cfamily_image.cmake_wheel_series`: PyPI's cmake series when the project's floor is newer
    (major.minor) than the cmake at hand; the toolchain image asks it against its suite's cmake,
    `c_library.library_build` against the oldest suite's."""
    from agents.ecosystems.cfamily.c_library import LibraryBuild, library_build

    assert tc.cmake_wheel_series("3.28.1", "3.25") == "3.28" and tc.cmake_wheel_series("4.0", "3.31") == "4.0"
    assert tc.cmake_wheel_series("3.25.2", "3.25") is None and tc.cmake_wheel_series("3", "3.18") is None
    assert tc.cmake_wheel_series(None, "3.18") is None and tc.OLDEST_CMAKE == "3.18"
    lib = LibraryBuild(system="cmake", folder="cpp", build_dir="cpp/build")
    for floor, wheel in (("3.20", "'cmake==3.20.*'"), ("3.10", None)):
        tree = make_tree(tmp_path / floor, {"cpp/CMakeLists.txt": f"cmake_minimum_required(VERSION {floor})\n"})
        steps, _, _ = library_build(tree, lib)
        assert any(wheel in s for s in steps) if wheel else not any("pip install" in s for s in steps)


def test_repair_installs_missing_dependency_once():
    from agents.ecosystems.base import PolyPlan
    plan = PolyPlan(ecosystem="cfamily", toolchain="gcc 12", image="x", test_command="t", parser="ctest_log")
    out = "CMake Error: Could NOT find ZLIB (missing: ZLIB_LIBRARY ZLIB_INCLUDE_DIR)"
    fix = ECOSYSTEM.repair(plan, "cmake -S .", out, set())
    assert fix and "zlib1g-dev" in fix[0] and fix[0].startswith("export DEBIAN_FRONTEND")
    assert ECOSYSTEM.repair(plan, "cmake -S .", out, {"\n".join(fix)}) is None
    assert "libxml2-dev" in ECOSYSTEM.repair(plan, "./configure", "No package 'libxml-2.0' found", set())[0]
    assert ECOSYSTEM.repair(plan, "make", "error: expected ';' before '}'", set()) is None


# --- the in-container helper (recipes/cmake_tests.py), on a synthetic File API reply -----------

def _helper():
    spec = importlib.util.spec_from_file_location("cmake_tests", cfamily.RECIPES / "cmake_tests.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_helper_reads_the_codemodel(tmp_path):
    reply = tmp_path / ".cmake/api/v1/reply"
    reply.mkdir(parents=True)
    targets = {"t-a.json": {"name": "printf-test", "type": "EXECUTABLE",
                            "sources": [{"path": "test/printf-test.cc"}, {"path": "test/util.cc"}],
                            "artifacts": [{"path": "bin/printf-test"}]},
               "t-b.json": {"name": "fmt", "type": "STATIC_LIBRARY", "sources": [{"path": "src/format.cc"}],
                            "artifacts": [{"path": "libfmt.a"}]}}
    for name, body in targets.items():
        (reply / name).write_text(json.dumps(body))
    (reply / "codemodel-v2-1.json").write_text(json.dumps(
        {"configurations": [{"targets": [{"jsonFile": n} for n in targets]}]}))
    (reply / "index-2024.json").write_text(json.dumps(
        {"objects": [{"kind": "codemodel", "jsonFile": "codemodel-v2-1.json"}]}))
    model = _helper().codemodel(str(tmp_path))
    assert [(n, t) for n, t, _, _ in model] == [("printf-test", "EXECUTABLE"), ("fmt", "STATIC_LIBRARY")]
    assert model[0][2] == ["test/printf-test.cc", "test/util.cc"]
    assert model[0][3] == [str((tmp_path / "bin/printf-test").resolve())]
    assert _helper().codemodel(str(tmp_path / "none")) == []


def test_helper_runs_the_dependents_of_a_fixture_setup_that_fails(tmp_path):
    """nlohmann/json: `download_test_data` (a FIXTURES_SETUP cloning from GitHub) fails without
    network and CTest marked the touched test `Not Run`; the helper runs the setup alone first,
    keeps it out with -FS, and the touched test runs (real cmake/ctest on this host)."""
    import re
    import shutil
    import subprocess
    import sys

    if not (shutil.which("cmake") and shutil.which("ctest") and shutil.which("cc")):
        pytest.skip("cmake, ctest and a C compiler are needed on the host")
    src, build = _configured(tmp_path, {
        "t1.c": "int main(void) { return 0; }\n", "other.c": "int main(void) { return 0; }\n",
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.16)\nproject(p C)\nenable_testing()\n"
                          "add_executable(t1 t1.c)\n"
                          'add_test(NAME download_test_data COMMAND sh -c "echo no network; exit 1")\n'
                          "set_tests_properties(download_test_data PROPERTIES FIXTURES_SETUP TEST_DATA)\n"
                          "add_test(NAME t1 COMMAND t1)\nset_tests_properties(t1 PROPERTIES FIXTURES_REQUIRED TEST_DATA)\n"
                          "add_executable(other other.c)\nadd_test(NAME other COMMAND other)\n"})
    junit = tmp_path / "j.xml"
    r = subprocess.run([sys.executable, str(cfamily.RECIPES / "cmake_tests.py"), str(build), "--junit", str(junit),
                        "--", "t1.c"], cwd=src, capture_output=True, text=True, timeout=300)
    assert "fixture setup download_test_data failed" in r.stdout, r.stdout
    assert r.returncode == 0, r.stdout + r.stderr
    cases = {m.group(1): m.group(2) for m in re.finditer(r'<testcase name="([^"]+)"[^>]*status="(\w+)"', junit.read_text())}
    assert cases == {"t1": "run"}  # the touched test ran; neither the failed setup nor `other`


def test_helper_finds_gtest_tests_that_died_without_a_result():
    text = ("1: [ RUN      ] Fmt.ok\n1: [       OK ] Fmt.ok (0 ms)\n2: [ RUN      ] Other.fine\n"
            "1: [ RUN      ] Fmt.line_buffering\n"
            "1/2 Test #1: format-test ......***Timeout  60.01 sec\n"
            "2: [       OK ] Other.fine (1 ms)\n2/2 Test #2: other-test .......   Passed    0.01 sec\n"
            "[ RUN      ] Plain.crash\n[ RUN      ] Plain.next\n[  FAILED  ] Plain.next (0 ms)\n")
    assert _helper().aborted_gtests(text) == ["Fmt.line_buffering", "Plain.crash"]
    assert _helper().with_excluded(None, ["A.b", "C.d"]) == "-A.b:C.d"
    assert _helper().with_excluded("Fmt.*", ["A.b"]) == "Fmt.*-A.b"
    assert _helper().with_excluded("Fmt.*-X.y", ["A.b"]) == "Fmt.*-X.y:A.b"


def test_helper_reruns_a_gtest_binary_without_the_test_that_killed_it(tmp_path):
    """fmtlib/fmt-3901: one GoogleTest test hung until ctest's timeout killed the binary, so
    every later test of format-test was missing (the run failed its count check and the gold
    FAIL_TO_PASS test came out flaky). The helper runs ctest again with that test filtered out
    and prints only the whole run (real cmake, ctest and GoogleTest on this host)."""
    import shutil
    import subprocess
    import sys

    from envpool.testrun.polyglot.cfamily import parse_gtest_log

    if not (shutil.which("cmake") and shutil.which("ctest") and shutil.which("c++")):
        pytest.skip("cmake, ctest and a C++ compiler are needed on the host")
    src, build = tmp_path / "src", tmp_path / "build"
    src.mkdir()
    (src / "t.cc").write_text(
        "#include <gtest/gtest.h>\n#include <cstdlib>\n"
        "TEST(Fmt, first) { EXPECT_EQ(1, 1); }\nTEST(Fmt, dies) { std::abort(); }\n"
        "TEST(Fmt, later) { EXPECT_EQ(2, 2); }\nTEST(Fmt, last) { EXPECT_EQ(3, 3); }\n")
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(p CXX)\nenable_testing()\nfind_package(GTest)\n"
        "if(NOT GTest_FOUND)\n  message(FATAL_ERROR \"no gtest\")\nendif()\n"
        "add_executable(format-test t.cc)\ntarget_link_libraries(format-test GTest::gtest_main)\n"
        "add_test(NAME format-test COMMAND format-test)\n")
    (build / ".cmake/api/v1/query").mkdir(parents=True)
    (build / ".cmake/api/v1/query/codemodel-v2").touch()
    if subprocess.run(["cmake", "-S", str(src), "-B", str(build)], capture_output=True).returncode != 0:
        pytest.skip("GoogleTest (libgtest-dev) is needed on the host")
    r = subprocess.run([sys.executable, str(cfamily.RECIPES / "cmake_tests.py"), str(build), "--verbose",
                        "--", "t.cc"], cwd=src, capture_output=True, text=True, timeout=600)
    assert "died without a result" in r.stdout and "GTEST_FILTER=-Fmt.dies" in r.stdout, r.stdout
    assert r.returncode == 0, r.stdout + r.stderr
    res = parse_gtest_log(r.stdout)
    assert {k: v.value for k, v in res.statuses.items()} == {"Fmt.first": "PASSED", "Fmt.later": "PASSED",
                                                            "Fmt.last": "PASSED"}
    assert parse_gtest_log.check(r.stdout) == []  # one whole run: the count check holds


def test_helper_reruns_tests_that_refuse_root_as_an_unprivileged_uid(tmp_path):
    """libuv: "The libuv test suite cannot be run as root." -- every test failed on both sides.
    The helper runs ctest again as uid 65534 and that round is the report (real cmake/ctest;
    needs root and util-linux's setpriv on the host)."""
    import os
    import re
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    if os.geteuid() != 0 or not (shutil.which("setpriv") and shutil.which("cmake") and shutil.which("cc")):
        pytest.skip("root, setpriv, cmake and a C compiler are needed on the host")
    top = Path(tempfile.mkdtemp(prefix="swemint-root-"))  # not under pytest's 0700 tmp: uid 65534 must enter
    try:
        top.chmod(0o755)
        src, build = top / "src", top / "build"
        src.mkdir()
        (src / "t.c").write_text('#include <stdio.h>\n#include <unistd.h>\nint main(void) {\n'
                                 '  if (getuid() == 0) { puts("The suite cannot be run as root."); return 1; }\n'
                                 '  FILE *f = fopen("scratch.txt", "w"); if (!f) return 2; fclose(f); return 0;\n}\n')
        (src / "CMakeLists.txt").write_text(  # like libuv: the tests run in (and write to) the source tree
            "cmake_minimum_required(VERSION 3.16)\nproject(p C)\nenable_testing()\n"
            "add_executable(t t.c)\nadd_test(NAME t COMMAND t WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})\n")
        (build / ".cmake/api/v1/query").mkdir(parents=True)
        (build / ".cmake/api/v1/query/codemodel-v2").touch()
        subprocess.run(["cmake", "-S", str(src), "-B", str(build)], check=True, capture_output=True)
        (top / "out").mkdir(mode=0o1777)
        (top / "out").chmod(0o1777)  # like /tmp, where the minter's report file lives
        junit = top / "out" / "j.xml"
        r = subprocess.run([sys.executable, str(cfamily.RECIPES / "cmake_tests.py"), str(build), "--junit",
                            str(junit), "--", "t.c"], cwd=src, capture_output=True, text=True, timeout=300)
        assert "refuses to run as root" in r.stdout, r.stdout
        assert r.returncode == 0, r.stdout + r.stderr
        cases = {m.group(1): m.group(2) for m in re.finditer(r'<testcase name="([^"]+)"[^>]*status="(\w+)"',
                                                              junit.read_text())}
        assert cases == {"t": "run"}  # the unprivileged round's report, not the root round's
    finally:
        shutil.rmtree(top, ignore_errors=True)


DOCTEST_MAIN = "#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN\n#include <doctest/doctest.h>\n"


def _doctest_project(top, sources: dict[str, str], tests: str):
    """A CMake project under `top` whose doctest binaries are `sources` (name -> code) and whose
    CTest tests are `tests` (CMake code), configured into top/build with the File API query.
    Skips when the host lacks cmake, ctest, a C++ compiler or doctest (Debian doctest-dev)."""
    import shutil
    import subprocess

    if not (shutil.which("cmake") and shutil.which("ctest") and shutil.which("c++")):
        pytest.skip("cmake, ctest and a C++ compiler are needed on the host")
    src, build = top / "src", top / "build"
    src.mkdir()
    (src / "main.cpp").write_text(DOCTEST_MAIN)
    for name, code in sources.items():
        (src / name).write_text(code)
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\nproject(p CXX)\nenable_testing()\n"
        "find_path(DOCTEST_INCLUDE doctest/doctest.h)\n"
        "if(NOT DOCTEST_INCLUDE)\n  message(FATAL_ERROR \"no doctest\")\nendif()\n"
        "include_directories(${DOCTEST_INCLUDE})\nadd_library(test_main OBJECT main.cpp)\n" + tests)
    (build / ".cmake/api/v1/query").mkdir(parents=True)
    (build / ".cmake/api/v1/query/codemodel-v2").touch()
    if subprocess.run(["cmake", "-S", str(src), "-B", str(build)], capture_output=True).returncode != 0:
        pytest.skip("doctest is needed on the host (Debian: apt-get install doctest-dev)")
    return src, build


@pytest.mark.slow
def test_helper_gives_doctest_binaries_case_and_subcase_ids(tmp_path):
    """nlohmann/json-4237: one CTest test per doctest binary, so our ids were `test-udt_cpp11`
    while gold lists doctest test cases and subcases. The helper runs the touched doctest
    binaries again with doctest's XML reporter (a crashed one without the crashed test case);
    a plain test keeps its CTest id (real cmake, ctest and doctest on this host)."""
    import subprocess
    import sys

    from envpool.testrun.polyglot.cfamily import parse_ctest_junit, parse_ctest_log

    udt = ('#include <doctest/doctest.h>\nTEST_CASE("basic usage") {\n'
           '  SUBCASE("conversion to json") { CHECK(1 == 2); }\n'
           '  SUBCASE("conversion from json") { SUBCASE("via get") { CHECK(true); } }\n}\n'
           'TEST_CASE("Issue #924") { CHECK(true); }\n')
    crash = ('#include <doctest/doctest.h>\n#include <cstdlib>\nTEST_CASE("dies") { std::abort(); }\n'
             'TEST_CASE("later") { CHECK(true); }\n')
    src, build = _doctest_project(tmp_path, {"unit-udt.cpp": udt, "crash.cpp": crash, "plain.cpp": "int main() {}\n",
                                                     "other.cpp": "int main() {}\n"}, (
        "foreach(std 11 14)\n  add_executable(test-udt_cpp${std} unit-udt.cpp $<TARGET_OBJECTS:test_main>)\n"
        "  set_target_properties(test-udt_cpp${std} PROPERTIES CXX_STANDARD ${std})\n"
        "  add_test(NAME test-udt_cpp${std} COMMAND test-udt_cpp${std} --no-skip WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})\n"
        "endforeach()\nadd_executable(test-crash crash.cpp $<TARGET_OBJECTS:test_main>)\n"
        "add_test(NAME test-crash COMMAND test-crash)\n"
        "add_executable(plain plain.cpp)\nadd_test(NAME plain COMMAND plain)\n"
        "add_executable(other other.cpp)\nadd_test(NAME other COMMAND other)\n"))
    helper = [sys.executable, str(cfamily.RECIPES / "cmake_tests.py"), str(build)]
    touched = ["--", "unit-udt.cpp", "crash.cpp", "plain.cpp"]
    want = {"basic usage > conversion to json": "FAILED", "basic usage > conversion from json": "PASSED",
            "basic usage > via get": "PASSED", "Issue #924": "PASSED", "dies": "FAILED", "later": "PASSED",
            "plain": "PASSED"}
    junit = tmp_path / "j.xml"
    r = subprocess.run(helper + ["--junit", str(junit)] + touched, cwd=src, capture_output=True, text=True,
                       timeout=600)
    assert "doctest: 3 CTest test(s) ran again with doctest's XML reporter" in r.stdout, r.stdout + r.stderr
    assert "crashed test-crash" in r.stdout and "--test-case-exclude=dies" in r.stdout
    raw = junit.read_bytes()
    assert {k: v.value for k, v in parse_ctest_junit(raw).statuses.items()} == want  # not `other`: not touched
    assert parse_ctest_junit.check(raw) == []
    r = subprocess.run(helper + touched, cwd=src, capture_output=True, text=True, timeout=600)
    assert {k: v.value for k, v in parse_ctest_log(r.stdout).statuses.items()} == want
    assert parse_ctest_log.check(r.stdout) == []


@pytest.mark.slow
def test_helper_runs_doctest_binaries_as_the_uid_ctest_ran_them(tmp_path):
    """A doctest binary that refuses root: ctest runs again as uid 65534, and so must its XML
    round, or every id would fail (real cmake/ctest/doctest; needs root and setpriv)."""
    import os
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from envpool.testrun.polyglot.cfamily import parse_ctest_junit

    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("root and setpriv are needed on the host")
    top = Path(tempfile.mkdtemp(prefix="swemint-root-"))  # not under pytest's 0700 tmp: uid 65534 must enter
    try:
        top.chmod(0o755)
        code = ('#include <doctest/doctest.h>\n#include <cstdio>\n#include <unistd.h>\n'
                'TEST_CASE("as nobody") {\n  if (getuid() == 0) std::puts("This suite cannot be run as root.");\n'
                '  SUBCASE("uid") { CHECK(getuid() != 0); }\n}\n')
        src, build = _doctest_project(top, {"t.cpp": code}, (
            "add_executable(t t.cpp $<TARGET_OBJECTS:test_main>)\n"
            "add_test(NAME t COMMAND t WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})\n"))
        (top / "out").mkdir(mode=0o1777)
        (top / "out").chmod(0o1777)
        junit = top / "out" / "j.xml"
        r = subprocess.run([sys.executable, str(cfamily.RECIPES / "cmake_tests.py"), str(build), "--junit",
                            str(junit), "--", "t.cpp"], cwd=src, capture_output=True, text=True, timeout=600)
        assert "refuses to run as root" in r.stdout and "setpriv --reuid=65534" in r.stdout, r.stdout + r.stderr
        assert {k: v.value for k, v in parse_ctest_junit(junit.read_bytes()).statuses.items()} == {
            "as nobody > uid": "PASSED"}
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _catch2_runs():
    """recipes/catch2_runs.py as a module (it imports ctest_reruns from its own folder)."""
    import sys

    sys.path.insert(0, str(cfamily.RECIPES))
    try:
        spec = importlib.util.spec_from_file_location("catch2_runs", cfamily.RECIPES / "catch2_runs.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(cfamily.RECIPES))


def test_catch2_rerun_command_swaps_the_reporter_and_keeps_the_projects_options():
    c2 = _catch2_runs()
    cmd, specs = c2.xml_command(["/b/utests", "-r", "console", "--out=x.txt", "-s", "-a", "-x", "3", "--order",
                                 "decl", "--reporter=junit::out=j.xml", "-d", "yes", "[unit]", "-w", "NoAssertions"],
                                "/t/r.xml")  # the reporter, its output, --success and --abort(x) go
    assert cmd == ["/b/utests", "--order", "decl", "-d", "yes", "[unit]", "-w", "NoAssertions",
                   "--reporter", "xml", "--out", "/t/r.xml"]
    assert specs == ["[unit]"] and not c2.names_cases(specs)  # a tag filter: still many test cases
    # catch_discover_tests / ParseAndAddCatchTests: one CTest test per named test case
    assert c2.names_cases(c2.xml_command(["/b/utests", "pattern formatter", "--rng-seed", "7"], "r")[1])
    assert c2.names_cases(["~[slow]", "a*"]) and not c2.names_cases(["~[slow]"])


CATCH2_TESTS = """#include <catch2/catch.hpp>
static int fixed = FIXED;  // 0: the bug, 1: the fix
TEST_CASE("passes", "[fast]") { CHECK(1 == 1); }
TEST_CASE("fmt::join / ranges") { CHECK(fixed == 1); }
TEST_CASE("pattern formatter") {
  SECTION("short level") { CHECK(true); }
  SECTION("full level") { CHECK(fixed == 1); }
}
"""
CATCH2_CRASH = """#include <catch2/catch.hpp>
#include <cstdlib>
static int fixed = FIXED;
TEST_CASE("before the crash") { CHECK(true); }
TEST_CASE("crashes") { if (!fixed) std::abort(); CHECK(true); }
TEST_CASE("after the crash") { CHECK(true); }
"""


@pytest.mark.slow
def test_helper_gives_catch2_binaries_case_and_section_ids(tmp_path):
    """gabime/spdlog: one CTest test (`spdlog-utests`) holds every Catch2 test case, so
    FAIL_TO_PASS was `spdlog-utests`. The helper runs the touched Catch2 binaries again with
    Catch2's XML reporter: ids `<ctest test>::<test case>` (`> <section>`), the same on the
    before and the after side; a binary that crashes keeps the test cases before the crash and
    its CTest result; a plain test keeps its CTest id (real cmake, ctest and Debian's Catch2 2)."""
    import shutil
    import subprocess
    import sys

    from envpool.grading import grade, test_name
    from envpool.testrun.polyglot.cfamily import parse_ctest_junit, parse_ctest_log

    if not (shutil.which("cmake") and shutil.which("ctest") and shutil.which("c++")):
        pytest.skip("cmake, ctest and a C++ compiler are needed on the host")
    src, build = tmp_path / "src", tmp_path / "build"
    src.mkdir()
    (src / "utests.cpp").write_text(CATCH2_TESTS.replace("FIXED", "0"))
    (src / "crash.cpp").write_text(CATCH2_CRASH.replace("FIXED", "0"))
    (src / "plain.cpp").write_text("int main() { return 0; }\n")
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\nproject(p CXX)\nenable_testing()\nfind_package(Catch2 2 REQUIRED)\n"
        "add_executable(spdlog-utests utests.cpp)\n"
        "target_link_libraries(spdlog-utests PRIVATE Catch2::Catch2WithMain)\n"
        "add_test(NAME spdlog-utests COMMAND spdlog-utests -r console)\n"
        "add_executable(crash-utests crash.cpp)\ntarget_link_libraries(crash-utests PRIVATE Catch2::Catch2WithMain)\n"
        "add_test(NAME crash-utests COMMAND crash-utests)\n"
        "add_executable(plain plain.cpp)\nadd_test(NAME plain COMMAND plain)\n")
    (build / ".cmake/api/v1/query").mkdir(parents=True)
    (build / ".cmake/api/v1/query/codemodel-v2").touch()
    if subprocess.run(["cmake", "-S", str(src), "-B", str(build)], capture_output=True).returncode != 0:
        pytest.skip("Catch2 2 is needed on the host (Debian: apt-get install catch2)")
    helper = [sys.executable, str(cfamily.RECIPES / "cmake_tests.py"), str(build), "--jobs", "1"]
    touched = ["--", "utests.cpp", "crash.cpp", "plain.cpp"]

    def side(junit):
        r = subprocess.run(helper + ["--junit", str(junit)] + touched, cwd=src, capture_output=True, text=True,
                           timeout=600)
        assert "catch2: 2 CTest test(s) ran again with Catch2's XML reporter" in r.stdout, r.stdout + r.stderr
        raw = junit.read_bytes()
        assert parse_ctest_junit.check(raw) == []
        return parse_ctest_junit(raw)

    before = side(tmp_path / "before.xml")
    assert {k: v.value for k, v in before.statuses.items()} == {
        "spdlog-utests::passes": "PASSED", "spdlog-utests::fmt::join / ranges": "FAILED",
        "spdlog-utests::pattern formatter > short level": "PASSED",
        "spdlog-utests::pattern formatter > full level": "FAILED",
        "crash-utests::before the crash": "PASSED", "crash-utests::crashes": "FAILED",
        "crash-utests": "FAILED",  # the CTest result stands for the test cases the crash hid
        "plain": "PASSED"}
    assert before.collection_errors == ["crash-utests [Catch2 run stopped early]"] and before.tests_ran
    r = subprocess.run(helper + touched, cwd=src, capture_output=True, text=True, timeout=600)  # the console route
    assert parse_ctest_log(r.stdout).statuses == before.statuses and parse_ctest_log.check(r.stdout) == []

    (src / "utests.cpp").write_text(CATCH2_TESTS.replace("FIXED", "1"))  # the fix: the helper rebuilds
    (src / "crash.cpp").write_text(CATCH2_CRASH.replace("FIXED", "1"))
    after = side(tmp_path / "after.xml")
    assert set(after.statuses) == set(before.statuses) - {"crash-utests"} | {"crash-utests::after the crash"}
    assert all(st.value == "PASSED" for st in after.statuses.values()) and after.collection_errors == []
    g = grade([before], [after])
    assert g.FAIL_TO_PASS == ["crash-utests::after the crash", "crash-utests::crashes",
                              "spdlog-utests::fmt::join / ranges", "spdlog-utests::pattern formatter > full level"]
    assert "spdlog-utests::passes" in g.PASS_TO_PASS and "plain" in g.PASS_TO_PASS
    assert test_name("spdlog-utests::pattern formatter > full level") == "pattern formatter"


def test_a_makefile_beside_cmake_is_a_route_only_with_a_test_target(tmp_path):
    """nlohmann/json: a maintainer Makefile (amalgamate, pretty) beside CMake; when the CMake
    build failed, the loop's next route ran `make -k check`: "No rule to make target 'check'"."""
    cm = "cmake_minimum_required(VERSION 3.1)\nproject(p)\nenable_testing()\n"
    tree = make_tree(tmp_path / "a", {"CMakeLists.txt": cm, "Makefile": "amalgamate:\n\ttrue\n"})
    assert cfamily.systems(tree) == ["cmake"]
    tree = make_tree(tmp_path / "b", {"CMakeLists.txt": cm, "Makefile": "all:\n\ttrue\ncheck: all\n\ttrue\n"})
    assert cfamily.systems(tree) == ["cmake", "make"]
    tree = make_tree(tmp_path / "c", {"Makefile": "all:\n\ttrue\n", "a.c": "int main(void){return 0;}\n"})
    assert cfamily.systems(tree) == ["make"]  # no other build system: the plain Makefile is the route


def test_helper_build_only_builds_the_targets_owning_the_touched_files(tmp_path):
    """The setup's `--build-only`: the target owning the touched file is built, the others are
    not, and no test runs (real cmake on this host)."""
    import shutil
    import subprocess
    import sys

    if not (shutil.which("cmake") and shutil.which("ctest") and shutil.which("cc")):
        pytest.skip("cmake, ctest and a C compiler are needed on the host")
    src, build = _configured(tmp_path, {
        "t1.c": "int main(void) { return 1; }\n", "other.c": "int main(void) { return 0; }\n",
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.16)\nproject(p C)\nenable_testing()\n"
                          "add_executable(t1 t1.c)\nadd_test(NAME t1 COMMAND t1)\n"
                          "add_executable(other other.c)\nadd_test(NAME other COMMAND other)\n"})
    r = subprocess.run([sys.executable, str(cfamily.RECIPES / "cmake_tests.py"), str(build), "--build-only",
                        "--", "t1.c"], cwd=src, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr  # t1 fails when run: it was not run
    assert (build / "t1").exists() and not (build / "other").exists()
    assert "Test #" not in r.stdout


def _configured(tmp_path, files: dict[str, str]):
    """(src, build): `files` written to tmp_path/src and configured by the host's cmake into
    tmp_path/build with the File API codemodel query the helper reads."""
    import subprocess

    src, build = tmp_path / "src", tmp_path / "build"
    src.mkdir()
    for name, text in files.items():
        (src / name).write_text(text)
    (build / ".cmake/api/v1/query").mkdir(parents=True)
    (build / ".cmake/api/v1/query/codemodel-v2").touch()
    subprocess.run(["cmake", "-S", str(src), "-B", str(build)], check=True, capture_output=True)
    return src, build


GATED_TOP = """cmake_minimum_required(VERSION 3.15)
project(gadget LANGUAGES C)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Choose the type of build" FORCE)
endif()
set(SUPPORTED_BUILD_TYPES Debug Release RelWithDebInfo MinSizeRel)
if(NOT CMAKE_BUILD_TYPE IN_LIST SUPPORTED_BUILD_TYPES)
  message(FATAL_ERROR "Bad CMAKE_BUILD_TYPE. Expected one of ${SUPPORTED_BUILD_TYPES}")
endif()
enable_testing()
add_executable(gadget_test test/gadget_test.c)
add_test(NAME gadget_test COMMAND gadget_test)
"""


def test_a_project_that_validates_its_build_type_is_configured_with_one_it_accepts(tmp_path, images):
    # the class: CMake projects that refuse a CMAKE_BUILD_TYPE outside their list (None is "Bad
    # CMAKE_BUILD_TYPE" there); the others keep None, the cheapest compile
    from agents.ecosystems.cfamily.c_builds import build_type

    tree = make_tree(tmp_path / "g", {"CMakeLists.txt": GATED_TOP, "test/gadget_test.c": "int main(void){return 0;}\n"})
    b = analyze(tree, ["test/gadget_test.c"], project="gadget")
    assert b.build_type == "Debug"
    plan = ECOSYSTEM.plan(tree, instance(tree), ["test/gadget_test.c"], ImageConfig())
    assert any("cmake -S /testbed -B /opt/build -DCMAKE_BUILD_TYPE=Debug " in c for c in plan.setup_commands)
    assert build_type(GATED_TOP.replace("Debug Release", "Release")) == "Release"
    assert build_type(GATED_TOP.replace("Debug Release", "None Debug Release")) is None
    assert build_type('if (NOT "${CMAKE_BUILD_TYPE}" IN_LIST ALLOWED)\n') == "Debug"
    plain = make_tree(tmp_path / "p", {"CMakeLists.txt": CMAKE_TOP, "test/CMakeLists.txt": CMAKE_TEST,
                                       "test/widget-test.cc": "TEST(Widget, Works) {}\n"})
    assert analyze(plain, ["test/widget-test.cc"], project="widget").build_type == "None"


def test_an_autotools_build_with_an_empty_googletest_submodule_fills_it_from_debians_source(tmp_path, images):
    """S14 (genset A tesseract-4599: ``make check`` compiles
    ``unittest/third_party/googletest/googletest/src/gtest-all.cc`` from a git submodule the mirror
    leaves empty): the folder is filled from the upstream tarball of Debian's ``googletest`` source
    package (googletest/ and googlemock/ at its top), the Debian libraries the fallback."""
    gm = ('[submodule "unittest/third_party/googletest"]\n\tpath = unittest/third_party/googletest\n'
          '\turl = https://example.org/google/googletest.git\n')
    tree = make_tree(tmp_path, {"configure.ac": "AC_INIT([calc], [1.0])\nAM_INIT_AUTOMAKE\n", ".gitmodules": gm,
                                "Makefile.am": "SUBDIRS = . unittest\n", "src/calc.c": "int calc(void){return 1;}\n",
                                "unittest/Makefile.am": "check_PROGRAMS = calc_test\nTESTS = calc_test\n"
                                "libgtest_la_SOURCES = third_party/googletest/googletest/src/gtest-all.cc\n",
                                "unittest/calc_test.cc": "TEST(Calc, One) {}\n"})
    b = analyze(tree, ["unittest/calc_test.cc"])
    assert b.system == "autotools"
    assert b.sources == {"unittest/third_party/googletest": "googletest"}
    assert {"libgtest-dev", "libgmock-dev"} <= set(b.packages)
    plan = ECOSYSTEM.plan(tree, instance(tree, created_at="2026-06-01 00:00:00"), ["unittest/calc_test.cc"],
                          ImageConfig())
    fetch = [c for c in plan.setup_commands if "apt-get source" in c]
    assert len(fetch) == 1 and "apt-get source --download-only --tar-only -qq googletest" in fetch[0]
    assert "-C /testbed/unittest/third_party/googletest --strip-components=1" in fetch[0]


TERM_READER = '#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\nint main(void) {\n' \
              '  /* an old bug of the kind: no NULL check */\n  return strcmp(getenv("TERM"), "") == 0;\n}\n'


def test_c_plans_give_the_tests_a_terminal_type(tmp_path, images):
    """Class T (genset A the_silver_searcher-1350/-1384/-1387: the base binary read a NULL
    ``TERM`` and crashed in every cram file, so the touched test failed before *and* after): a
    C/C++ plan's environment (the image's ENV, the test runs') has ``TERM=dumb``. The program is
    one the test writes: it crashes without TERM and exits 0 with the plan's environment."""
    import os
    import shutil
    import subprocess

    tree = make_tree(tmp_path / "repo", {"configure.ac": JQ_CONFIGURE, "tests/shtest": "#!/bin/sh\n"})
    plan = ECOSYSTEM.plan(tree, instance(tree, created_at="2020-12-28 21:21:22"), ["tests/shtest"], ImageConfig())
    assert plan.env["TERM"] == "dumb"
    if shutil.which("gcc") is None:
        return
    src = tmp_path / "term.c"
    src.write_text(TERM_READER)
    subprocess.run(["gcc", "-o", str(tmp_path / "term"), str(src)], check=True)
    bare = {k: v for k, v in os.environ.items() if k != "TERM"}
    assert subprocess.run([str(tmp_path / "term")], env=bare).returncode < 0  # SIGSEGV
    assert subprocess.run([str(tmp_path / "term")], env={**bare, **plan.env}).returncode == 0


def test_a_link_failing_on_variables_defined_in_headers_is_rebuilt_with_fcommon(tmp_path):
    """S27 (genset A the_silver_searcher-1330/-1383, 2020 code on GCC 10: ``src/log.o:/testbed/src/
    util.h:54: multiple definition of `stats'; src/ignore.o:/testbed/src/util.h:54: first defined
    here``): the configure runs again with -fcommon and the build from clean. The project is one
    the test writes (two objects including a header that defines a variable): the host's gcc
    links it only with -fcommon; other link errors are not repaired."""
    import shutil
    import subprocess

    from agents.ecosystems.base import PolyPlan

    out = ("/usr/bin/ld: src/log.o:/testbed/src/util.h:54: multiple definition of `stats'; "
           "src/ignore.o:/testbed/src/util.h:54: first defined here\ncollect2: error: ld returned 1 exit status\n")
    auto = PolyPlan(ecosystem="cfamily", toolchain="gcc 10", image="i", build="autotools", parser="automake_log",
                    setup_commands=["autoreconf -fi", "./configure --disable-docs", "make -j2"], test_command="make check")
    assert ECOSYSTEM.repair(auto, "make -j2", out, set()) == [
        "export CFLAGS='-g -O2 -fcommon'; ./configure --disable-docs && make clean"]
    cm = auto.model_copy(update={"build": "cmake", "setup_commands": ["cmake -S /testbed -B /opt/build -DBUILD_TESTING=ON"]})
    assert ECOSYSTEM.repair(cm, "x", out, set()) == ["cmake -S /testbed -B /opt/build -DBUILD_TESTING=ON -DCMAKE_C_FLAGS=-fcommon"]
    other = "/usr/bin/ld: a.o: in function `main': a.c:(.text+0x5): undefined reference to `stats'\n"
    assert not (ECOSYSTEM.repair(auto, "make -j2", other, set()) or [""])[0].startswith("export CFLAGS")
    if shutil.which("gcc") is None:
        return
    (tmp_path / "util.h").write_text("int stats;\n")
    (tmp_path / "a.c").write_text('#include "util.h"\nint main(void) { return stats; }\n')
    (tmp_path / "b.c").write_text('#include "util.h"\nint other(void) { return stats; }\n')
    from agents.ecosystems.cfamily import _HEADER_MULTIDEF

    cmd = ["gcc", "-fno-common", "-o", "p", "a.c", "b.c"]  # GCC >= 10's default, said explicitly
    for debug in ([], ["-g"]):
        r = subprocess.run([*cmd, *debug], cwd=tmp_path, capture_output=True, text=True)
        assert r.returncode != 0 and _HEADER_MULTIDEF.search(r.stderr), r.stderr
    assert subprocess.run([*cmd, "-fcommon"], cwd=tmp_path).returncode == 0
