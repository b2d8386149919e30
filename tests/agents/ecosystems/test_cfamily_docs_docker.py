"""Class S37 minted end to end in Docker: a small autotools project (SUBDIRS = lib doc tests)
whose man page needs a program the image lacks and that has no switch for its documentation.
Round 1's build fails in doc/ only; the ``docs_off`` move builds with ``make -k`` (the failure in
doc/ tolerated, checked from make's output in the container), and the tests verify."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.ecosystems import cfamily
from agents.models import StepRecord

pytestmark = [pytest.mark.docker, pytest.mark.slow]

WHEN = "2025-10-01 10:00:00"  # trixie's gcc 14
CONFIGURE_AC = """AC_INIT([calc], [1.0])
AM_INIT_AUTOMAKE([foreign])
AC_PROG_CC
AM_PROG_AR
AC_PROG_RANLIB
AC_CONFIG_FILES([Makefile lib/Makefile doc/Makefile tests/Makefile])
AC_OUTPUT
"""
DOC_MAKEFILE_AM = """man_MANS = calc.3
calc.3: $(top_srcdir)/lib/calc.c
\tc2man -o $@ $(top_srcdir)/lib/calc.c
"""
TESTS_MAKEFILE_AM = """check_PROGRAMS = calc_test other_test
calc_test_SOURCES = calc_test.c
calc_test_LDADD = ../lib/libcalc.a
other_test_SOURCES = other_test.c
other_test_LDADD = ../lib/libcalc.a
TESTS = calc_test other_test
"""
CALC_BUG = "int calc(int a, int b) { return a - b; }\n"
CALC_FIXED = "int calc(int a, int b) { return a + b; }\n"
CALC_TEST = "int calc(int a, int b);\nint main(void) { return calc(1, 0) != 1; }\n"
CALC_TEST_NEW = "int calc(int a, int b);\nint main(void) { return calc(2, 3) != 5; }\n"
OTHER_TEST = "int calc(int a, int b);\nint main(void) { return calc(0, 0) != 0; }\n"


def test_a_build_failing_only_in_its_man_pages_verifies_with_make_k(mint_with):
    """No Debian package for the man page's tool is asked for (the index is off here, as when it
    names none): Execution has no repair, so the loop's S37 move is next."""
    files = {"configure.ac": CONFIGURE_AC, "Makefile.am": "SUBDIRS = lib doc tests\n",
             "lib/Makefile.am": "noinst_LIBRARIES = libcalc.a\nlibcalc_a_SOURCES = calc.c\n",
             "lib/calc.c": CALC_BUG, "doc/Makefile.am": DOC_MAKEFILE_AM, "tests/Makefile.am": TESTS_MAKEFILE_AM,
             "tests/calc_test.c": CALC_TEST, "tests/other_test.c": OTHER_TEST}
    res = mint_with(cfamily.ECOSYSTEM, files, "docs", language="c", created_at=WHEN,
                    tests={"tests/calc_test.c": CALC_TEST_NEW}, fix={"lib/calc.c": CALC_FIXED},
                    mint={"repair": {"debian_index": False}})
    assert res.outcome == "verified", res.reason
    assert res.rounds[0].outcome == "replan" and res.rounds[0].feedback == "replan: move docs_off"
    assert res.rounds[1].move == "docs_off"
    assert "make failed only in the documentation (doc/)" in res.rounds[1].evidence
    assert "no documentation switch" in res.rounds[1].evidence and "c2man" in res.rounds[1].evidence
    assert "make -k -j2 > /tmp/swemint-make.log" in res.setup_script
    assert res.FAIL_TO_PASS == ["calc_test"] and res.PASS_TO_PASS == ["other_test"]
    steps = [StepRecord.model_validate_json(x) for x in Path(res.trajectory_path).read_text().splitlines()]
    assert any(s.agent == "flow" and s.rule == "move" and "-> docs_off" in s.note for s in steps)
    assert [(s.rule, s.exit_code) for s in steps if s.rule.startswith("move:")] == [("move:docs_off", 0)]
    # the container's checker passed the make -k build: only doc/ failed
    assert any(s.exit_code == 0 and "swemint-docs: only the documentation failed (doc)" in s.output_excerpt
               for s in steps if s.agent == "execution")
