"""Class S37 (a C/C++ build that fails only in its documentation), its pure parts: make's own
failures read from sample outputs (a parent's report of a failed sub-make dropped; a negative
case where a non-documentation folder fails too), a failed configure read as the
documentation's, the project's documentation switch found for autotools, CMake and Meson, the
``docs_off`` moves and the ``make -k`` route's plan, whose tolerance check runs here on the
host against a stand-in make. The Docker twin is test_cfamily_docs_docker.py."""

from __future__ import annotations

import os
import subprocess
import sys
from functools import partial

import pytest

from agents.ecosystems.base import PlanRequest
from agents.ecosystems.cfamily import ECOSYSTEM, c_docs, make_failures
from agents.ecosystems.move_types import MoveContext
from envpool.images import ImageConfig
from tests.agents.ecosystems.conftest import make_instance, make_tree
from tests.agents.ecosystems.test_cfamily import images  # noqa: F401 (a fixture)

instance = partial(make_instance, language="c", instance_id="acme__calc-1", repo="acme/calc")
NAMES = {"doc", "docs", "man", "manual", "documentation"}

DOC_ONLY = """make  all-recursive
make[1]: Entering directory '/testbed'
Making all in lib
make[2]: Entering directory '/testbed/lib'
gcc -DHAVE_CONFIG_H -I. -g -O2 -c -o calc.o calc.c
make[2]: Leaving directory '/testbed/lib'
Making all in doc
make[2]: Entering directory '/testbed/doc'
c2man -I../lib ../lib/calc.h
/bin/bash: line 1: c2man: command not found
make[2]: *** [Makefile:412: calc.3] Error 127
make[2]: Leaving directory '/testbed/doc'
make[1]: *** [Makefile:371: all-recursive] Error 1
make[1]: Leaving directory '/testbed'
make: *** [Makefile:303: all] Error 2
"""
LIB_TOO = """make  all-recursive
make[1]: Entering directory '/testbed'
Making all in lib
make[2]: Entering directory '/testbed/lib'
calc.c:1:1: error: unknown type name 'nt'
make[2]: *** [Makefile:350: calc.o] Error 1
make[2]: Leaving directory '/testbed/lib'
Making all in doc
make[2]: Entering directory '/testbed/doc'
/bin/bash: line 1: c2man: command not found
make[2]: *** [Makefile:412: calc.3] Error 127
make[2]: Leaving directory '/testbed/doc'
make[1]: *** [Makefile:371: all-recursive] Error 1
make[1]: Leaving directory '/testbed'
make: *** [Makefile:303: all] Error 2
"""
HANDWRITTEN_K = """make -C doc
make[1]: Entering directory '/testbed/doc'
make[1]: *** [Makefile:2: calc.1] Error 127
make[1]: Leaving directory '/testbed/doc'
make: *** [Makefile:3: docs] Error 2
cc -c prog.c
make: *** [Makefile:5: prog.o] Error 1
make: Target 'all' not remade because of errors.
"""
DEEP_NO_RULE = """make[2]: Entering directory '/testbed/docs'
make[3]: Entering directory '/testbed/docs/reference/api'
make[3]: *** No rule to make target 'calc-sections.txt', needed by 'html-build.stamp'.  Stop.
make[3]: Leaving directory '/testbed/docs/reference/api'
make[2]: *** [Makefile:500: all-recursive] Error 1
make[2]: Leaving directory '/testbed/docs'
"""


def test_make_failures_keep_the_failure_where_it_happened_and_drop_the_parents_reports():
    found = make_failures.failures(DOC_ONLY)
    assert found == [make_failures.MakeFailure(2, "doc", "calc.3", "make[2]: *** [Makefile:412: calc.3] Error 127")]
    assert make_failures.is_docs(found[0], NAMES)
    deep = make_failures.failures(DEEP_NO_RULE)
    assert [(f.folder, f.target) for f in deep] == [("docs/reference/api", "calc-sections.txt")]
    assert make_failures.docs_folder("docs/reference/api", NAMES) and not make_failures.docs_folder("src", NAMES)


def test_a_tail_without_the_entering_line_and_the_reason_repeating_it_read_the_same():
    """The loop's output: the failed step's tail (its first lines cut) and Execution's reason,
    which repeats the last lines of it."""
    tail = DOC_ONLY.split("c2man -I", 1)[1]
    output = tail + "\ncfamily setup step failed (exit 2): make -j2 :: " + DOC_ONLY[-220:]
    found = make_failures.failures(output)
    assert {(f.folder, f.target) for f in found} == {("doc", "calc.3")}
    assert c_docs.docs_failure(output) is not None
    cut = LIB_TOO.split("unknown type name", 1)[1]
    assert c_docs.docs_failure(cut + "\n" + LIB_TOO[-200:]) is None


def test_a_failure_outside_the_documentation_is_kept_so_it_is_never_tolerated():
    both = make_failures.failures(LIB_TOO)
    assert [(f.folder, f.target) for f in both] == [("lib", "calc.o"), ("doc", "calc.3")]
    # a Makefile's own compile failing after its docs sub-make failed (make -k): the sub-make's
    # report (`docs`) is dropped, the compile is not
    mine = make_failures.failures(HANDWRITTEN_K)
    assert [(f.level, f.folder, f.target) for f in mine] == [(1, "doc", "calc.1"), (0, "", "prog.o")]
    assert not all(make_failures.is_docs(f, NAMES) for f in mine)


IGNORED_DOCS = """make -C doc
cc -c prog.c
make[1]: Entering directory '/testbed/doc'
c2man calc.h
make[1]: c2man: No such file or directory
make[1]: *** [Makefile:3: calc.1] Error 127
make[1]: Target 'all' not remade because of errors.
make[1]: Leaving directory '/testbed/doc'
make: [Makefile:3: docs] Error 2 (ignored)
prog.c:1:11: error: expected declaration specifiers or '...' before '{' token
make: *** [Makefile:5: prog.o] Error 1
make: Target 'all' not remade because of errors.
"""


def test_a_sub_make_whose_failure_its_parent_ignores_does_not_hide_a_later_failure():
    """GNU make 4.3's output of ``make -k -j2`` on ``all: docs prog.o`` / ``docs: ; -$(MAKE) -C doc``
    with prog.c broken: the parent's report of the failed docs sub-make is the ``(ignored)``
    line, so the compile's failure is no report of it and is never tolerated."""
    found = make_failures.failures(IGNORED_DOCS)
    assert [(f.level, f.folder, f.target) for f in found] == [(1, "doc", "calc.1"), (0, "", "prog.o")]
    assert c_docs.docs_failure(IGNORED_DOCS) is None


LOOP_NO_REPORT = """for d in doc; do make -C $d; done; true
make[1]: Entering directory '/testbed/doc'
make[1]: *** [Makefile:3: calc.1] Error 127
make[1]: Target 'all' not remade because of errors.
make[1]: Leaving directory '/testbed/doc'
cc -c nothere.c -o prog.o
make: *** [Makefile:5: prog.o] Error 1
make: Target 'all' not remade because of errors.
"""
CODE_IN_LIB_MAN = """make -C lib/man
make[1]: Entering directory '/testbed/lib/man'
cc1: fatal error: nothere.c: No such file or directory
make[1]: *** [Makefile:3: parse.o] Error 1
make[1]: Target 'all' not remade because of errors.
make[1]: Leaving directory '/testbed/lib/man'
make: *** [Makefile:2: all] Error 2
"""


def test_a_compile_is_never_a_sub_makes_report_nor_documentation():
    """GNU make 4.3 outputs: a recursion loop whose exit status hides the failed docs sub-make
    (its parent prints no report), then the top Makefile's own compile fails -- that compile is
    not the missing report; and a compile failing in a code folder named like documentation
    (``lib/man``) is no documentation failure."""
    loop = make_failures.failures(LOOP_NO_REPORT)
    assert [(f.level, f.folder, f.target) for f in loop] == [(1, "doc", "calc.1"), (0, "", "prog.o")]
    assert c_docs.docs_failure(LOOP_NO_REPORT) is None
    lib_man = make_failures.failures(CODE_IN_LIB_MAN)
    assert [(f.folder, f.target) for f in lib_man] == [("lib/man", "parse.o")]
    assert not make_failures.is_docs(lib_man[0], NAMES) and c_docs.docs_failure(CODE_IN_LIB_MAN) is None
    assert not make_failures.is_docs(make_failures.MakeFailure(1, "src", "man/libcalc.la", ""), NAMES)


SILENT_SUB_MAKE = """make --no-print-directory -C src
cc -o test-calc nothere.c
make[1]: *** [Makefile:3: test-calc] Error 1
make[1]: Target 'all' not remade because of errors.
make: [Makefile:4: src] Error 2 (ignored)
make -C doc
make[1]: Entering directory '/testbed/doc'
make[1]: *** [Makefile:3: calc.1] Error 127
make[1]: Target 'all' not remade because of errors.
make[1]: Leaving directory '/testbed/doc'
make: *** [Makefile:6: doc] Error 2
make: Target 'all' not remade because of errors.
"""


def test_an_error_of_a_silent_sub_make_is_not_given_the_folder_of_the_next_one():
    """GNU make 4.3: ``-$(MAKE) --no-print-directory -C src`` (a test program's link fails, no
    Entering / Leaving lines), then ``$(MAKE) -C doc`` fails: the link's error is no error of
    ``doc`` (another sub-make entered before any Leaving) -- only a tail's cut Entering is
    recovered from the Leaving line."""
    found = make_failures.failures(SILENT_SUB_MAKE)
    assert [(f.folder, f.target) for f in found] == [(make_failures.UNKNOWN, "test-calc"), ("doc", "calc.1")]
    assert c_docs.docs_failure(SILENT_SUB_MAKE) is None


def test_a_configure_error_outside_the_documentation_is_no_s37_even_when_a_docs_tool_is_missing():
    """CMake's optional ``find_package(Doxygen)`` prints ``Could NOT find Doxygen`` as a status
    line; the configure failed in ``src/CMakeLists.txt`` (a library the code needs)."""
    out = ("-- Could NOT find Doxygen (missing: DOXYGEN_EXECUTABLE)\n"
           "CMake Error at src/CMakeLists.txt:12 (find_package):\n  Could not find a package configuration file "
           "provided by \"Foo\"\n-- Configuring incomplete, errors occurred!\n")
    assert c_docs.missing_tools(out) == ["doxygen"]
    assert c_docs.docs_failure(out) is None
    meson = "Message: help2man is missing: no man pages\nsrc/meson.build:3:6: ERROR: Dependency \"foo\" not found\n"
    assert c_docs.missing_tools(meson) == ["help2man"] and c_docs.docs_failure(meson) is None


@pytest.mark.parametrize("target,docs", [("calc.1", True), ("calc.3pm", True), ("api/html/index.html", True),
                                         ("calc.info", True), ("refman.pdf", True), ("doxygen-doc", True),
                                         ("html-build.stamp", True), ("install-man", True),
                                         ("libcalc.so.1", False), ("calc.o", False), ("all-recursive", False),
                                         ("calc", False), ("", False)])
def test_documentation_targets(target, docs):
    assert make_failures.docs_target(target) is docs


def test_the_checker_script_says_tolerated_only_when_every_failure_is_the_documentations():
    script = make_failures.__file__

    def run(text: str) -> int:
        return subprocess.run([sys.executable, script, "--root", "/testbed", "--dirs", "doc,docs"], input=text,
                              capture_output=True, text=True).returncode

    assert run(DOC_ONLY) == 0 and run(DEEP_NO_RULE) == 0
    assert run(LIB_TOO) == 1 and run(HANDWRITTEN_K) == 1
    assert run("gcc: fatal error: killed\n") == 2  # no failure make named: nothing to tolerate


def test_docs_failure_reads_make_and_configure_outputs():
    f = c_docs.docs_failure(DOC_ONLY)
    assert f is not None and f.folders == ["doc"] and f.tools == ["c2man"]
    assert "doc/" in f.evidence() and "c2man" in f.evidence()
    assert c_docs.docs_failure(LIB_TOO) is None and c_docs.docs_failure(HANDWRITTEN_K) is None
    top_man = "make[1]: Entering directory '/testbed'\nmake[1]: *** [Makefile:90: calc.1] Error 127\n" \
              "make[1]: Leaving directory '/testbed'\n"
    got = c_docs.docs_failure(top_man)
    assert got is not None and got.targets == ["calc.1"] and got.folders == []
    cmake = ("CMake Error at /usr/share/cmake-3.31/Modules/FindPackageHandleStandardArgs.cmake:233 (message):\n"
             "  Could NOT find Doxygen (missing: DOXYGEN_EXECUTABLE)\nCall Stack (most recent call first):\n"
             "  docs/CMakeLists.txt:3 (find_package)\n")
    assert c_docs.docs_failure(cmake).tools == ["doxygen"]
    meson = "docs/meson.build:4:10: ERROR: Program 'sphinx-build' not found or not executable\n"
    got = c_docs.docs_failure(meson)
    assert got.tools == ["sphinx-build"] and got.files == ["docs/meson.build"]
    assert c_docs.docs_failure("doc/meson.build:2:0: ERROR: Unknown variable \"x\".\n").files == ["doc/meson.build"]
    other = "CMake Error at CMakeLists.txt:10 (find_package):\n  Could not find a package configuration file " \
            "provided by \"Foo\"\n"
    assert c_docs.docs_failure(other) is None
    assert c_docs.missing_tools("WARNING: 'makeinfo' is missing on your system.\nmake: help2man: No such file "
                                "or directory\n") == ["help2man", "makeinfo"]
    assert c_docs.missing_tools("checking for doxygen... doxygen\ncalc.c:3: error: 'x' undeclared\n") == []


CONFIGURE_AC = """AC_INIT([calc], [1.0])
AM_INIT_AUTOMAKE([foreign])
AC_ARG_ENABLE([man], [AS_HELP_STRING([--disable-man], [no man pages])])
AC_ARG_WITH([doxygen], [AS_HELP_STRING([--with-doxygen], [API docs])])
AC_ARG_ENABLE([doc-tests], [AS_HELP_STRING([--enable-doc-tests], [run the examples of the docs])])
AC_ARG_ENABLE([shared-libs])
GTK_DOC_CHECK([1.14])
AC_OUTPUT
"""


def test_autotools_switches_from_configure_ac_and_a_committed_configure(tmp_path):
    tree = make_tree(tmp_path / "a", {"configure.ac": CONFIGURE_AC})
    assert [f for f, _ in c_docs.autotools_switches(tree)] == ["--disable-man", "--without-doxygen",
                                                               "--disable-gtk-doc"]
    assert [f for f, _ in c_docs.autotools_switches(tree, "./configure --disable-man")] == [
        "--without-doxygen", "--disable-gtk-doc"]
    committed = make_tree(tmp_path / "b", {"configure": "#!/bin/sh\ncat <<EOF\nOptional Features:\n"
                                                        "  --disable-manpages      do not build the man pages\n"
                                                        "  --enable-debug          debug build\nEOF\n"})
    got = c_docs.autotools_switches(committed)
    assert got == [("--disable-manpages", "./configure --help lists --disable-manpages")]
    assert c_docs.autotools_switches(make_tree(tmp_path / "c", {"configure.ac": "AC_INIT([x],[1])\n"})) == []


def test_cmake_switches_are_the_documentation_options_not_off_already(tmp_path):
    tree = make_tree(tmp_path, {"CMakeLists.txt": 'option(BUILD_DOCS "Build the docs" ON)\n'
                                                  'option(BUILD_SHARED_LIBS "shared" ON)\n'
                                                  'option(WITH_DOXYGEN "API docs" OFF)\n'
                                                  'option(BUILD_DOC_TESTS "doc examples as tests" ON)\n',
                                "cmake/opts.cmake": 'cmake_dependent_option(CALC_BUILD_MANPAGES "man pages" ON '
                                                    '"UNIX" OFF)\n'})
    assert sorted(f for f, _ in c_docs.cmake_switches(tree)) == ["-DBUILD_DOCS=OFF", "-DCALC_BUILD_MANPAGES=OFF"]
    # an option the setup switched on is switched off again; one the setup set OFF is not offered
    assert "-DWITH_DOXYGEN=OFF" in [f for f, _ in c_docs.cmake_switches(tree, "cmake -DWITH_DOXYGEN=ON")]
    assert "-DBUILD_DOCS=OFF" not in [f for f, _ in c_docs.cmake_switches(tree, "cmake -DBUILD_DOCS=OFF")]


def test_meson_switches_are_boolean_and_feature_documentation_options(tmp_path):
    tree = make_tree(tmp_path, {"meson.build": "project('calc', 'c')\n",
                                "meson_options.txt": "option('docs', type: 'boolean', value: true)\n"
                                                     "option('man', type: 'feature', value: 'auto')\n"
                                                     "option('gtk_doc', type: 'boolean', value: false)\n"
                                                     "option('tests', type: 'boolean', value: true)\n"
                                                     "option('docdir', type: 'string', value: 'x')\n"})
    assert [f for f, _ in c_docs.meson_switches(tree)] == ["-Ddocs=false", "-Dman=disabled"]
    assert [f for f, _ in c_docs.meson_switches(tree, setup="meson setup -Dgtk_doc=true")] == [
        "-Ddocs=false", "-Dman=disabled", "-Dgtk_doc=false"]


AUTOTOOLS = {"configure.ac": "AC_INIT([calc], [1.0])\nAM_INIT_AUTOMAKE([foreign])\nAC_PROG_CC\nAC_OUTPUT\n",
             "Makefile.am": "SUBDIRS = lib doc tests\n", "lib/calc.c": "int calc(void) { return 1; }\n",
             "tests/calc_test.c": "int main(void) { return 0; }\n"}


def _ctx(tree, plan, output: str) -> MoveContext:
    return MoveContext(tree=tree, instance=None, plan=plan, touched=["tests/calc_test.c"],
                       why=f"setup failed: cfamily setup step failed (exit 2): make -j2 :: {output[-200:]}",
                       outcome="env_failed", output=output)


def test_a_docs_only_failure_without_a_switch_gets_the_make_k_route(tmp_path, images):
    tree = make_tree(tmp_path, AUTOTOOLS)
    inst = instance(tree, created_at="2025-10-01 10:00:00")
    plan = ECOSYSTEM.plan(tree, inst, ["tests/calc_test.c"], ImageConfig())
    moves = ECOSYSTEM.next_moves(_ctx(tree, plan, DOC_ONLY))
    assert [m.kind for m in moves][:1] == ["docs_off"] and moves[0].request.options == {c_docs.KEEP_GOING: True}
    assert "doc/" in moves[0].evidence and "no documentation switch" in moves[0].evidence
    assert ECOSYSTEM.next_moves(_ctx(tree, plan, LIB_TOO)) == []  # a library failing too: no move
    kept = ECOSYSTEM.plan(tree, inst, ["tests/calc_test.c"], ImageConfig(), PlanRequest(options=moves[0].request.options))
    steps = [c for c in kept.setup_commands if c.startswith("make ")]
    assert [s.split(" > ")[0] for s in steps] == ["make -k -j2", "make -k -j2 check TESTS="]
    assert any(c.endswith(f"base64 -d > {c_docs.CHECKER}") for c in kept.setup_commands)
    assert kept.test_command == "make -j2 -k check"
    # after it, the same docs failure offers nothing new (the route is in the setup)
    assert [m for m in ECOSYSTEM.next_moves(_ctx(tree, kept, DOC_ONLY)) if m.kind == "docs_off"] == []


def test_a_docs_only_failure_with_a_switch_uses_it_first(tmp_path, images):
    tree = make_tree(tmp_path, {**AUTOTOOLS, "configure.ac": CONFIGURE_AC})
    inst = instance(tree, created_at="2025-10-01 10:00:00")
    plan = ECOSYSTEM.plan(tree, inst, ["tests/calc_test.c"], ImageConfig())
    moves = [m for m in ECOSYSTEM.next_moves(_ctx(tree, plan, DOC_ONLY)) if m.kind == "docs_off"]
    assert moves[0].request.options == {"configure_flags": ["--disable-man", "--without-doxygen",
                                                            "--disable-gtk-doc"]}
    assert "AC_ARG_ENABLE(man)" in moves[0].evidence and moves[1].key == "make -k"
    off = ECOSYSTEM.plan(tree, inst, ["tests/calc_test.c"], ImageConfig(), moves[0].request)
    assert any("./configure --disable-man --without-doxygen --disable-gtk-doc" in c for c in off.setup_commands)


def test_cmake_and_meson_plans_get_their_switches(tmp_path, images):
    cm = make_tree(tmp_path / "cm", {"CMakeLists.txt": "cmake_minimum_required(VERSION 3.16)\nproject(p C)\n"
                                                       "enable_testing()\noption(CALC_DOCS \"docs\" ON)\n",
                                     "calc_test.c": "int main(void){return 0;}\n"})
    plan = ECOSYSTEM.plan(cm, instance(cm, created_at="2025-10-01 10:00:00"), ["calc_test.c"], ImageConfig())
    out = "CMake Error at /usr/share/cmake-3.31/Modules/FindPackageHandleStandardArgs.cmake:233 (message):\n" \
          "  Could NOT find Doxygen (missing: DOXYGEN_EXECUTABLE)\n"
    moves = ECOSYSTEM.next_moves(_ctx(cm, plan, out))
    assert moves[0].kind == "docs_off" and moves[0].request.options == {"cmake_flags": ["-DCALC_DOCS=OFF"]}
    assert len([m for m in moves if m.kind == "docs_off"]) == 1  # no make -k route for CMake
    ms = make_tree(tmp_path / "ms", {"meson.build": "project('calc', 'c')\ntest('t', executable('t', 't.c'))\n",
                                     "meson_options.txt": "option('man', type: 'boolean', value: true)\n",
                                     "t.c": "int main(void){return 0;}\n"})
    plan = ECOSYSTEM.plan(ms, instance(ms, created_at="2025-10-01 10:00:00"), ["t.c"], ImageConfig())
    moves = ECOSYSTEM.next_moves(_ctx(ms, plan, "man/meson.build:1:0: ERROR: Program 'scdoc' not found\n"))
    assert moves[0].request.options == {"meson_flags": ["-Dman=false"]}
    again = ECOSYSTEM.plan(ms, instance(ms, created_at="2025-10-01 10:00:00"), ["t.c"], ImageConfig(),
                           moves[0].request)
    assert any(" -Dman=false" in c for c in again.setup_commands)


def test_the_tolerant_make_step_keeps_the_exit_status_of_a_failure_outside_the_docs(tmp_path):
    """The ``make -k`` step as the plan writes it, run by sh with a stand-in make printing a
    sample output and failing, and the checker at its real path."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    sample = tmp_path / "out.txt"
    (bin_ / "make").write_text(f"#!/bin/sh\ncat {sample}\nexit 2\n")
    (bin_ / "make").chmod(0o755)
    (bin_ / "python3").symlink_to(sys.executable)
    cmd = c_docs._tolerant("make -j2").replace(c_docs.CHECKER, make_failures.__file__) \
        .replace(c_docs.LOG, str(tmp_path / "make.log"))
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}"}

    def run(text: str) -> subprocess.CompletedProcess:
        sample.write_text(text)
        return subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, env=env)

    ok = run(DOC_ONLY)
    assert ok.returncode == 0 and "only the documentation failed (doc)" in ok.stdout
    bad = run(LIB_TOO)
    assert bad.returncode == 2 and "a failure outside the documentation (lib)" in bad.stdout
