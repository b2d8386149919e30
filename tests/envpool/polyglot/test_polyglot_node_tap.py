"""`node_tap`: Node's built-in test runner, one ``node --test --test-reporter=tap`` run per file
behind the node ecosystem's marker lines, on output recorded from Node 18.20 and 20.9
(tests/data/polyglot/regenerate_node_tap.sh)."""

from __future__ import annotations

import pytest

from envpool.testrun.polyglot.node_tap import MARKER
from envpool.testrun.registry import PARSERS

P = PARSERS["node_tap"]

EXPECTED = {
    "tests/a.test.js > adds": "PASSED",
    "tests/a.test.js > group > inner ok": "PASSED",
    "tests/a.test.js > group > inner bad": "FAILED",
    "tests/a.test.js > group > skipped": "SKIPPED",
    "tests/a.test.js > group > deeper # hash > leaf": "PASSED",
    "tests/a.test.js > sub parent > child one": "PASSED",
    "tests/a.test.js > top fails": "FAILED",
    "tests/b.test.js > adds": "PASSED",
    "pkg/test/m.test.js > esm": "PASSED",
}


@pytest.mark.parametrize("name", ["node_tap_18.log", "node_tap_20.log"])
def test_leaves_per_file_suites_and_todos_left_out_a_file_that_cannot_load_is_a_unit_error(golden, name):
    out = golden(name)
    known = ["tests/c.test.js > never", "tests/b.test.js > adds"]
    r = P(out, known_tests=known)
    got = {k: v.value for k, v in r.statuses.items()}
    assert got == {**EXPECTED, "tests/c.test.js": "FAILED", "tests/c.test.js > never": "ERROR"}
    assert r.collection_errors == ["tests/c.test.js"]
    assert P.check(out) == [] and r.tests_ran


def test_a_run_cut_short_a_wrong_count_or_tap_before_a_marker_is_an_anomaly(golden):
    out = golden("node_tap_20.log").decode()
    cut = out.split(f"{MARKER}tests/b.test.js")[0].rsplit("1..4", 1)[0]
    assert any("no TAP plan" in a for a in P.check(cut))
    assert not P(cut).tests_ran
    wrong = out.replace("# tests 9", "# tests 10")
    assert any("reports 10, 9 parsed" in a for a in P.check(wrong))
    assert any("before the first file" in a for a in P.check("TAP version 13\nok 1 - x\n1..1\n" + out))


def test_a_node_that_refuses_the_command_is_no_run():
    out = f"{MARKER}tests/a.test.js\nnode: bad option: --test-reporter=tap\n"
    r = P(out)
    assert not r.tests_ran and r.statuses == {}
    assert P.check(out) == ["node --test tests/a.test.js: no TAP plan (1..N): the run was cut short or node refused it"]


def test_a_yaml_block_holding_tap_like_lines_is_not_read_as_results():
    out = (f"{MARKER}t/x.test.js\nTAP version 13\n# Subtest: prints\nnot ok 1 - prints\n  ---\n"
           "  error: |-\n    ok 7 - not a result\n    1..3\n  ...\n1..1\n# tests 1\n")
    r = P(out)
    assert {k: v.value for k, v in r.statuses.items()} == {"t/x.test.js > prints": "FAILED"}
    assert P.check(out) == []


def test_a_file_of_plain_asserts_is_one_test_graded_by_its_exit_status():
    """Node 22 names such a file as given (a relative path); a passing one is PASSED, a failing
    one FAILED (and a unit error, so tests known from the other side get ERROR)."""
    ok = f"{MARKER}tests/ok.test.js\nTAP version 13\n# hello\n# Subtest: tests/ok.test.js\nok 1 - tests/ok.test.js\n" \
         "  ---\n  duration_ms: 1\n  type: 'test'\n  ...\n1..1\n# tests 1\n"
    bad = ok.replace("ok 1 - tests/ok.test.js", "not ok 1 - tests/ok.test.js")
    assert {k: v.value for k, v in P(ok).statuses.items()} == {"tests/ok.test.js": "PASSED"}
    r = P(bad, known_tests=["tests/ok.test.js > later"])
    assert {k: v.value for k, v in r.statuses.items()} == {"tests/ok.test.js": "FAILED",
                                                           "tests/ok.test.js > later": "ERROR"}
    assert r.collection_errors == ["tests/ok.test.js"] and P.check(ok) == P.check(bad) == []
