"""S35 end to end: a small Meson C project, written by the test, minted in Docker with the C/C++
ecosystem. A library with a bug; three tests registered with ``test()`` behind a ``tests``
option that is off by default (the setup switches it on); one test program uses a pkg-config
dependency (zlib, installed from Debian at setup); the test_patch changes one test, adds one
(registered in tests/meson.build, using the fix's new function: its program does not build
before the fix: a stub fails in its place) and touches the zlib test. Graded from
``meson-logs/testlog.json`` with meson's own ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.ecosystems import cfamily

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TOP = """project('calc', 'c', version : '0.1', meson_version : '>= 0.56.0')
zdep = dependency('zlib')
inc = include_directories('src')
lib = static_library('calc', 'src/calc.c', include_directories : inc)
if get_option('tests')
  subdir('tests')
endif
"""
OPTIONS = "option('tests', type : 'boolean', value : false, description : 'Build the tests')\n"
TESTS = """t_add = executable('test_add', 'test_add.c', link_with : lib, include_directories : inc)
test('add', t_add, suite : 'unit')
t_zlib = executable('test_zlib', 'test_zlib.c', link_with : lib, include_directories : inc, dependencies : zdep)
test('zcheck', t_zlib)
"""
TESTS_NEW = TESTS + """t_sub = executable('test_sub', 'test_sub.c', link_with : lib, include_directories : inc)
test('sub', t_sub, suite : 'unit')
"""
CALC_H = "int calc_add(int a, int b);\nint calc_mul(int a, int b);\n"
CALC_BUG = '#include "calc.h"\nint calc_add(int a, int b) { return a - b; }\nint calc_mul(int a, int b) { return a * b; }\n'
CALC_FIX = ('#include "calc.h"\nint calc_add(int a, int b) { return a + b; }\n'
            'int calc_mul(int a, int b) { return a * b; }\nint calc_sub(int a, int b) { return a - b; }\n')
TEST_ADD = '#include "calc.h"\nint main(void) { return calc_add(1, 0) == 1 ? 0 : 1; }\n'
TEST_ADD_NEW = '#include "calc.h"\nint main(void) { return calc_add(2, 3) == 5 ? 0 : 1; }\n'
TEST_ZLIB = """#include <string.h>
#include <zlib.h>
#include "calc.h"
int main(void) {
  unsigned long c = crc32(0L, (const unsigned char *)"abc", 3);
  return (c == 0x352441c2UL && calc_mul(2, 3) == 6) ? 0 : 1;
}
"""
TEST_SUB = '#include "calc.h"\nint calc_sub(int a, int b);\nint main(void) { return calc_sub(5, 3) == 2 ? 0 : 1; }\n'


def test_meson_project_minted_end_to_end(mint_with):
    files = {"meson.build": TOP, "meson_options.txt": OPTIONS, "src/calc.h": CALC_H, "src/calc.c": CALC_BUG,
             "tests/meson.build": TESTS, "tests/test_add.c": TEST_ADD, "tests/test_zlib.c": TEST_ZLIB}
    tests = {"tests/meson.build": TESTS_NEW, "tests/test_add.c": TEST_ADD_NEW, "tests/test_sub.c": TEST_SUB,
             "tests/test_zlib.c": TEST_ZLIB.replace("int main(void) {", "int main(void) { /* crc and mul */")}
    res = mint_with(cfamily.ECOSYSTEM, files, "meson", language="c", created_at="2024-01-10 10:00:00", tests=tests,
                    fix={"src/calc.c": CALC_FIX, "src/calc.h": CALC_H + "int calc_sub(int a, int b);\n"})
    assert res.outcome == "verified", res.reason
    # bookworm's meson 1.0.1 names tests <project>[:<suite>] / <name>
    assert sorted(res.FAIL_TO_PASS) == ["calc:unit / add", "calc:unit / sub"]
    assert res.PASS_TO_PASS == ["calc / zcheck"]
    assert res.parser == "meson_testlog" and res.interpreter.startswith("gcc 12")
    assert "meson setup /opt/build /testbed -Dwerror=false -Dtests=true" in res.setup_script
    assert "zlib1g-dev" in res.setup_script
    log = Path(res.log_path).read_text()
    assert "swemint-meson-tests: targets owning the touched files:" in log
    assert "tests whose program did not build (run as a stub that fails): unit - calc:sub" in log
    assert "swemint-meson-tests: unbuilt test_sub" in log
