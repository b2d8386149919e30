"""The pure parsers, pinned by golden outputs of real runs (tests/data/testrun/).

The golden files come from one repository run with pytest 8.4.2 / Python 3.11 and pytest 4.6.11
/ Python 3.9 (plugin JSON lines, JUnit XML, console logs plain, coloured and with `-s`). The
repository has ids with spaces, quotes, ' - ', '::', brackets and non-ASCII, xfail/xpass, setup
and teardown errors, a module failing at import, a test stopped by the per-test timeout, a test
printing fake PASSED lines and a fake summary, and non-UTF-8 output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envpool.testrun.parsers import (
    PARSERS,
    junit_case_id,
    parse_pytest_junit,
    parse_pytest_log,
    parse_pytest_plugin,
    plugin_exit_status,
    plugin_records,
    plugin_timeouts,
    split_summary_id,
    strip_ansi,
    summary_lines,
)
from envpool.testrun.status import TestStatus

DATA = Path(__file__).resolve().parents[1] / "data" / "testrun"
P, F, E, S = TestStatus.PASSED, TestStatus.FAILED, TestStatus.ERROR, TestStatus.SKIPPED
XF, XP = TestStatus.XFAIL, TestStatus.XPASS

C, FG, ID = "tests/test_cases.py::", "tests/test_forge.py::", "tests/test_ids.py::"
EXPECTED = {
    C + "test_param[a b]": P, C + "test_param[a - b]": P, C + "test_param[[x]]": P,
    C + "test_param[\\xe9]": P, C + "test_xfail": XF, C + "test_xpass": XP,
    C + "test_setup_error": E, C + "test_fails": F, C + "test_skipped": S,
    C + "test_teardown_error": E, C + "test_xpass_strict": F,
    C + "TestKlass::test_method[x y]": P, C + "TestKlass::test_method[p - q]": F,
    C + "TestKlass::test_method[a] - b]": P, C + "test_hangs": F,
    FG + "test_real_failure": F, FG + "test_forger": F, FG + "test_binary_output": F,
    FG + "test_ok": P,
    ID + "test_param[a b]": P, ID + "test_param[it's \"q\"]": P, ID + "test_param[f(x)]": P,
    ID + "test_param[a - b]": P, ID + "test_param[a::b]": P, ID + "test_param[[x]]": P,
    ID + "test_param[x]]": P, ID + "test_param[\\xe9 \\xfc]": P,
    ID + "test_param[\\u65e5\\u672c]": P, ID + "test_explicit[one - two [x]]": P,
    ID + "test_explicit[na\\xefve (b) :: c]": P, ID + "TestKlass::test_method[x y]": P,
    ID + "TestKlass::test_method[p - q]": P,
}
VERSIONS = ["pytest8", "pytest46"]


def golden(name: str) -> bytes:
    return (DATA / name).read_bytes()


# -- plugin ------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
def test_plugin_report_gives_exact_statuses(version):
    rep = parse_pytest_plugin(golden(f"{version}_report.jsonl"))
    assert rep.statuses == EXPECTED
    assert rep.collection_errors == ["tests/test_new.py"]
    assert rep.source == "plugin" and rep.tests_ran and rep.exit_code == 1


@pytest.mark.parametrize("version", VERSIONS)
def test_plugin_report_records_timeouts_and_exit_status(version):
    raw = golden(f"{version}_report.jsonl")
    assert plugin_timeouts(raw) == [C + "test_hangs"]
    assert plugin_exit_status(raw) == 1


def test_killed_run_keeps_written_results_and_ignores_a_cut_last_line():
    lines = golden("pytest8_report.jsonl").splitlines(keepends=True)
    cut = next(i for i, ln in enumerate(lines) if b"test_hangs" in ln and b'"call"' in ln)
    partial = b"".join(lines[:cut]) + lines[cut][:40]  # killed while writing
    rep = parse_pytest_plugin(partial)
    assert rep.tests_ran and rep.exit_code is None and plugin_exit_status(partial) is None
    assert C + "test_hangs" not in rep.statuses  # setup only: no status
    assert rep.statuses[C + "test_fails"] == F


def test_records_from_another_process_are_ignored():
    raw = golden("pytest8_report.jsonl")
    pid = plugin_records(raw)[0]["pid"]
    forged = raw + (b'{"kind": "test", "nodeid": "tests/test_forge.py::test_real_failure", '
                    b'"when": "call", "outcome": "passed", "pid": %d}\n' % (pid + 1))
    assert parse_pytest_plugin(forged).statuses[FG + "test_real_failure"] == F


def test_plugin_phase_mapping_xfail_setup_skip_and_teardown_error():
    def rec(nodeid, when, outcome, **kw):
        import json
        return json.dumps({"kind": "test", "nodeid": nodeid, "when": when, "outcome": outcome, **kw})

    text = "\n".join([
        rec("t.py::a", "setup", "skipped"),
        rec("t.py::b", "setup", "skipped", wasxfail="run=False"),
        rec("t.py::c", "call", "passed"), rec("t.py::c", "teardown", "failed"),
        rec("t.py::d", "call", "failed"), rec("t.py::d", "teardown", "failed"),
        rec("t.py::e", "call", "passed", wasxfail=""),
        '{"kind": "collect", "nodeid": "t2.py::TestX", "fspath": "t2.py", "outcome": "failed"}',
        '{"kind": "collect", "nodeid": "t3.py", "fspath": "t3.py", "outcome": "skipped"}',
    ])
    rep = parse_pytest_plugin(text)
    assert rep.statuses == {"t.py::a": S, "t.py::b": XF, "t.py::c": E, "t.py::d": E, "t.py::e": XP}
    assert rep.collection_errors == ["t2.py::TestX"]


def test_empty_or_garbage_plugin_report_is_not_tests_ran():
    for raw in (b"", b"not json\n\xff\xfe\n", b'{"kind": "session_start", "pid": 1}\n'):
        rep = parse_pytest_plugin(raw)
        assert rep.tests_ran is False and rep.statuses == {}


# -- junit -------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
def test_junit_matches_plugin_except_xpass(version):
    rep = parse_pytest_junit(golden(f"{version}_junit.xml"))
    expected = {**EXPECTED, C + "test_xpass": P}  # JUnit shows a non-strict XPASS as a pass
    assert rep.statuses == expected
    assert rep.collection_errors == ["tests/test_new.py"] and rep.source == "junit"


def test_junit_without_file_attribute_guesses_or_uses_known_files():
    assert junit_case_id("tests.test_x.TestA", "test_m[a b]") == "tests/test_x.py::TestA::test_m[a b]"
    assert junit_case_id("tests.test_x", "test_f") == "tests/test_x.py::test_f"
    assert junit_case_id("a.b.test_x.Outer.Inner", "t", known_files=["a.b/test_x.py"]) == \
        "a.b/test_x.py::Outer::Inner::t"
    assert junit_case_id("tests.test_x.TestA", "t", file="tests/test_x.py") == "tests/test_x.py::TestA::t"


def test_broken_junit_is_not_tests_ran():
    assert parse_pytest_junit(b"<testsuite><testcase").tests_ran is False
    assert parse_pytest_junit("").tests_ran is False


# -- log ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["pytest8_rA.log", "pytest46_rA.log", "pytest8_color_rA.log",
                                  "pytest8_capture_no_rA.log"])
def test_log_summary_matches_plugin_except_skips(name):
    rep = parse_pytest_log(golden(name))
    expected = {k: v for k, v in EXPECTED.items() if v != S}  # `SKIPPED [1] file:line` has no id
    assert rep.statuses == expected
    assert rep.collection_errors == ["tests/test_new.py"] and rep.source == "log"


def test_collection_error_that_interrupts_the_run_parses_as_not_tests_ran():
    # pytest without --continue-on-collection-errors: exit 2, `ERROR tests/test_new.py`, no test ran
    rep = parse_pytest_log(golden("pytest8_collection_error_rA.log"))
    assert rep.collection_errors == ["tests/test_new.py"]
    assert rep.statuses == {} and rep.tests_ran is False


def test_fake_passed_lines_printed_by_a_test_are_ignored():
    # the forger prints `PASSED tests/test_forge.py::test_real_failure` and a fake summary
    for name in ("pytest8_rA.log", "pytest8_capture_no_rA.log"):
        raw = golden(name)
        assert raw.count(b"PASSED tests/test_forge.py::test_real_failure") >= 3
        assert parse_pytest_log(raw).statuses[FG + "test_real_failure"] == F


def test_non_utf8_bytes_in_log_parse_fine():
    raw = golden("pytest8_capture_no_rA.log")
    assert b"\xff" in raw  # `-s`: the test's raw bytes reach the console
    injected = raw.replace(b"PASSED tests/test_forge.py::test_ok", b"PASSED tests/test_forge.py::test_ok\n\xc3(\xff")
    assert parse_pytest_log(injected).statuses[FG + "test_ok"] == P
    assert parse_pytest_log(raw.decode("latin-1")).tests_ran


def test_ansi_colours_are_stripped():
    assert b"\x1b[" in golden("pytest8_color_rA.log")
    assert strip_ansi("\x1b[32mPASSED\x1b[0m x.py::t\x1b[1m") == "PASSED x.py::t"


def test_log_without_summary_is_not_tests_ran():
    text = golden("pytest8_rA.log").split(b"short test summary info")[0]
    rep = parse_pytest_log(text.rsplit(b"\n", 1)[0])
    assert rep.tests_ran is False and rep.statuses == {}
    assert summary_lines("collected 0 items\n") == []


def test_summary_ids_with_dash_and_brackets_are_split_right():
    assert split_summary_id("t.py::f[a - b]", has_message=False) == "t.py::f[a - b]"
    assert split_summary_id("t.py::f[a] - b]", has_message=False) == "t.py::f[a] - b]"
    assert split_summary_id("t.py::f[a - b] - AssertionError: x - y") == "t.py::f[a - b]"
    assert split_summary_id("t.py::f[x] - assert [1] - [2]") == "t.py::f[x]"
    assert split_summary_id("t.py::f - ValueError: [x] - y") == "t.py::f"
    assert split_summary_id("t.py::f[[x]] - E") == "t.py::f[[x]]"
    assert split_summary_id("t.py::test_xp reason text") == "t.py::test_xp"  # pytest 4 XPASS
    assert split_summary_id("t.py::f[a] - b] - msg", known_ids={"t.py::f[a] - b]"}) == "t.py::f[a] - b]"


def test_registry_resolves_names():
    from envpool.testrun.registry import get_parser

    assert set(PARSERS) == {"pytest_channel", "pytest_plugin", "pytest_junit", "pytest_log"}
    assert get_parser("pytest_log") is parse_pytest_log
    with pytest.raises(KeyError, match="pytest_plugin"):
        get_parser("nope")


def test_old_pytest_instance_marker_is_dropped_from_node_ids():
    # regression: pytest 3.x wrote `path::Class::()::test`; gold (SWE-bench) ids never have `()`
    from envpool.testrun.parsers import normalise_nodeid, parse_pytest_plugin

    data = ('{"kind": "test", "nodeid": "t/test_a.py::TestA::()::test_x[a::()::b]", "when": "call", '
            '"outcome": "passed"}\n')
    assert list(parse_pytest_plugin(data).statuses) == ["t/test_a.py::TestA::test_x[a::()::b]"]
    assert normalise_nodeid("t/test_a.py::TestA::()") == "t/test_a.py::TestA"
