"""Script- and target-driven suites as tests (agents.ecosystems.cfamily.units, issue 25 item 2) on small
trees the tests write: the units of the touched files, their siblings, and the command that runs
them graded by exit status (run with the host's bash and make, parsed by `script_status_log`)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from agents.ecosystems.cfamily.units import Unit, find_units, makefile_rules, is_test_target, units_command
from envpool.testrun.registry import PARSERS
from tests.agents.ecosystems.conftest import make_tree

TESTS_MAKEFILE = """CC ?= cc
all: fullbench datagen

fullbench: fullbench.c util.o
\t$(CC) -o $@ $^

datagen: datagen.c
\t$(CC) -o $@ $<

%.o: %.c
\t$(CC) -c $<

.PHONY: test test-fullbench test-datagen test-zip
test: test-fullbench test-datagen test-zip

test-fullbench: fullbench
\t./fullbench -i1

test-datagen: datagen
\t./datagen > /dev/null

test-zip: ; ./zip-tests.sh

clean:
\trm -f fullbench datagen
"""


def test_makefile_rules_and_test_target_names():
    rules = makefile_rules(TESTS_MAKEFILE)
    assert rules["fullbench"].prereqs == ["fullbench.c", "util.o"]
    assert rules["test-fullbench"].recipe == ["./fullbench -i1"]
    assert rules["test-zip"].recipe == ["./zip-tests.sh"]
    assert rules["test"].prereqs == ["test-fullbench", "test-datagen", "test-zip"]
    assert "%.o" not in rules and ".PHONY" not in rules and "CC" not in rules
    assert [t for t in rules if is_test_target(t)] == ["test", "test-fullbench", "test-datagen", "test-zip"]
    assert is_test_target("unit_test") and is_test_target("check") and not is_test_target("testdata.o")


def test_a_touched_test_program_belongs_to_the_test_target_that_builds_and_runs_it(tmp_path):
    ci = "jobs:\n  t:\n    steps:\n      - run: make -C tests test-fullbench\n"
    tree = make_tree(tmp_path, {"Makefile": "all:\n\t$(MAKE) -C lib\n", "tests/Makefile": TESTS_MAKEFILE,
                                "tests/fullbench.c": "", "tests/datagen.c": "", ".github/workflows/ci.yml": ci})
    suite = find_units(tree, ["tests/fullbench.c"])
    assert [(u.id, u.argv) for u in suite.touched] == [("tests/test-fullbench",
                                                        ["make", "-C", "tests", "test-fullbench"])]
    assert "names fullbench" in suite.touched[0].evidence or "runs fullbench" in suite.touched[0].evidence
    assert "CI .github/workflows/ci.yml runs it" in suite.touched[0].evidence
    assert [u.id for u in suite.siblings] == ["tests/test-datagen", "tests/test-zip"]


def test_a_touched_test_script_is_a_unit_named_from_its_suite_folder(tmp_path):
    tree = make_tree(tmp_path, {"tests/cli-tests/run.py": "", "tests/cli-tests/decompression/pass-through.sh":
                                "#!/bin/sh\nexit 0\n", "tests/cli-tests/decompression/golden.sh": "exit 0\n",
                                "tests/cli-tests/decompression/data.bin": ""})
    suite = find_units(tree, ["tests/cli-tests/decompression/pass-through.sh"])
    assert [u.id for u in suite.touched] == ["decompression/pass-through.sh"]
    assert suite.touched[0].argv == ["bash", "-c", "cd tests/cli-tests/decompression && sh ./pass-through.sh"]
    assert [u.id for u in suite.siblings] == ["decompression/golden.sh"]


def test_data_nothing_names_gives_no_unit(tmp_path):
    tree = make_tree(tmp_path, {"tests/Makefile": TESTS_MAKEFILE, "README": ""})
    assert find_units(tree, ["docs/guide.md"]).touched == []


@pytest.mark.skipif(not (shutil.which("bash") and shutil.which("make") and shutil.which("timeout")),
                    reason="bash, make and timeout needed on the host")
def test_the_units_command_grades_each_unit_by_its_exit_status(tmp_path):
    """The command as the test run gives it: a unit that fails, one that passes, a script that
    prints a line shaped like a result (behind `| `, never read as one)."""
    work = tmp_path / "testbed"
    (work / "tests").mkdir(parents=True)
    (work / "tests" / "Makefile").write_text("test-ok:\n\ttrue\ntest-bad:\n\tfalse\n")
    (work / "tests" / "liar.sh").write_text("echo 'pass  tests/test-bad'\nexit 3\n")
    tree = make_tree(tmp_path / "t", {"tests/Makefile": "test-ok:\n\ttrue\ntest-bad:\n\tfalse\n",
                                      "tests/liar.sh": "exit 3\n"})
    units = find_units(tree, ["tests/liar.sh"]).touched + [Unit(id=f"tests/{t}", argv=["make", "-C", "tests", t],
                                                                evidence="") for t in ("test-ok", "test-bad")]
    cmd = units_command(units, seconds=60)
    out = subprocess.run(["bash", "-c", cmd], cwd=work, capture_output=True, text=True, timeout=120).stdout
    res = PARSERS["script_status_log"](out)
    assert {k: v.value for k, v in res.statuses.items()} == {"liar.sh": "FAILED", "tests/test-ok": "PASSED",
                                                            "tests/test-bad": "FAILED"}, out


def test_the_program_built_from_a_touched_file_is_not_its_test_target(tmp_path):
    """``calc_test: calc_test.c`` builds the program; ``test-calc: calc_test`` runs it: the unit
    is the runner. With no runner, the program itself is built and run."""
    mk = "calc_test: calc_test.c\n\t$(CC) -o $@ $^\ntest-calc: calc_test\n\t./calc_test\n"
    tree = make_tree(tmp_path / "a", {"tests/Makefile": mk})
    assert [u.id for u in find_units(tree, ["tests/calc_test.c"]).touched] == ["tests/test-calc"]
    tree = make_tree(tmp_path / "b", {"tests/Makefile": "calc_test: calc_test.c\n\t$(CC) -o $@ $^\n"})
    units = find_units(tree, ["tests/calc_test.c"]).touched
    assert [(u.id, u.argv) for u in units] == [("tests/calc_test",
                                               ["bash", "-c", "make -C tests calc_test && cd tests && ./calc_test"])]


CRAM_MAKEFILE_AM = """bin_PROGRAMS = prog
prog_SOURCES = src/main.c

test: prog
\tcram -v tests/*.t

test_big: prog
\tcram -v $(srcdir)/tests/big/*.t

clean-local:
\trm -f *
"""


def test_a_touched_data_test_file_belongs_to_the_target_whose_recipe_globs_it(tmp_path):
    # the class: suites whose test files are data a tool reads (cram transcripts, TAP scripts run by
    # prove, bats files) and whose test target runs the tool over a glob of them
    ci = "script:\n  - ./build.sh && make test\n"
    tree = make_tree(tmp_path, {"Makefile.am": CRAM_MAKEFILE_AM, "tests/empty.t": "  $ prog\n",
                                "tests/big/huge.t": "", "src/main.c": "", ".travis.yml": ci})
    suite = find_units(tree, ["tests/empty.t"])
    assert [(u.id, u.argv) for u in suite.touched] == [("test", ["make", "test"])]
    assert "runs tests/*.t, which matches empty.t" in suite.touched[0].evidence
    # a glob one folder down does not match; a bare wildcard names nothing
    big = find_units(tree, ["tests/big/huge.t"])
    assert [u.id for u in big.touched] == ["test_big"]
    assert find_units(tree, ["notes.txt"]).touched == []


def test_glob_words_of_a_rule():
    from agents.ecosystems.cfamily.units import glob_names

    rules = makefile_rules(CRAM_MAKEFILE_AM)
    assert rules["test"].globs() == ["tests/*.t"]
    assert rules["test_big"].globs() == ["tests/big/*.t"]
    assert rules["clean-local"].globs() == []
    assert glob_names("tests/*.t", "tests/a.t") and not glob_names("tests/*.t", "tests/big/a.t")
    assert glob_names("t/??-*.sh", "t/01-basic.sh") and not glob_names("t/*.sh", "t/a.t")


@pytest.mark.skipif(not (shutil.which("bash") and shutil.which("make") and shutil.which("prove")),
                    reason="bash, make and prove needed on the host")
def test_a_target_whose_tool_reports_each_file_is_graded_per_file(tmp_path):
    """S13: `make test` runs prove over t/*.t; one file fails (unrelated), one passes, one is the
    touched file. By exit status `test` is one FAILED unit; `unit_report_log` reads prove's line
    per file instead. A unit printing no per-file report keeps its exit status."""
    work = tmp_path / "testbed"
    (work / "t").mkdir(parents=True)
    (work / "t" / "touched.t").write_text('print "1..1\\nok 1 - adds\\n";\n')
    (work / "t" / "other.t").write_text('print "1..1\\nok 1 - fine\\n";\n')
    (work / "t" / "broken.t").write_text('print "1..1\\nnot ok 1 - unrelated\\n";\n')
    (work / "Makefile").write_text("test:\n\tprove t/*.t\nlint:\n\ttrue\n")
    cmd = units_command([Unit(id="test", argv=["make", "test"], evidence=""),
                         Unit(id="lint", argv=["make", "lint"], evidence="")], seconds=60)
    out = subprocess.run(["bash", "-c", cmd], cwd=work, capture_output=True, text=True, timeout=120).stdout
    res = PARSERS["unit_report_log"](out)
    assert {k: v.value for k, v in res.statuses.items()} == {
        "t/touched.t": "PASSED", "t/other.t": "PASSED", "t/broken.t": "FAILED", "lint": "PASSED"}, out
    assert res.tests_ran
    # the same output read by exit status: one FAILED unit
    assert PARSERS["script_status_log"](out).statuses["test"].value == "FAILED"
