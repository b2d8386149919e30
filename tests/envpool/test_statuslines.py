"""Status lines: our verdicts in the form swebench's `parse_log_gotest` reads, and the in-image tool."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from envpool.testrun import parsers
from envpool.testrun.outcome import TestStatus
from envpool.testrun.polyglot import POLYGLOT_PARSERS
from envpool.testrun.statuslines import FORMAT, TESTS_ERRORED, build_zipapp, read_status_lines, render

DATA = Path(__file__).resolve().parents[1] / "data"

# swebench 5.0.2 harness/log_parsers/go.py: parse_log_gotest, verbatim (the harness is not a
# dependency of swemint; this copy pins the contract the eval scripts rely on)
_SWEBENCH_GOTEST = r"^--- (PASS|FAIL|SKIP): (.+) \((.+)\)$"


def swebench_parse_log_gotest(log: str) -> dict[str, str]:
    out = {}
    for line in log.split("\n"):
        m = re.match(_SWEBENCH_GOTEST, line.strip())
        if m:
            status, name, _ = m.groups()
            out[name] = {"PASS": "PASSED", "FAIL": "FAILED", "SKIP": "SKIPPED"}[status]
    return out


AWKWARD_IDS = ["tests/test_x.py::test_param[a b]", "tests/test_x.py::test_p[(1, 2)]", "Suite > does a (thing)",
               "pkg::TestA/sub_(x)", "com.example.CalcTest$Inner#testInner", "tests/t.py::test[ - ]",
               "unicode::tëst[ü]"]


def test_every_awkward_id_survives_swebench_parser_exactly():
    statuses = {tid: TestStatus.PASSED for tid in AWKWARD_IDS}
    parsed = swebench_parse_log_gotest(render(statuses))
    assert parsed == {tid: "PASSED" for tid in AWKWARD_IDS}


def test_status_mapping_follows_our_grading_not_swebench_xfail():
    st = {"a": TestStatus.PASSED, "b": TestStatus.XPASS, "c": TestStatus.FAILED, "d": TestStatus.ERROR,
          "e": TestStatus.XFAIL, "f": TestStatus.SKIPPED}
    assert swebench_parse_log_gotest(render(st)) == {"a": "PASSED", "b": "PASSED", "c": "FAILED", "d": "FAILED",
                                                     "e": "FAILED", "f": "SKIPPED"}


def test_absent_known_ids_and_collection_errors_are_failures():
    out = render({"t::a": TestStatus.PASSED}, collection_errors=["tests/test_b.py"], known=["t::a", "t::gone"])
    assert swebench_parse_log_gotest(out) == {"t::a": "PASSED", "tests/test_b.py": "FAILED", "t::gone": "FAILED"}
    assert out.startswith(f"{FORMAT} begin") and f"{FORMAT} end tests=3" in out


def test_a_forged_line_before_the_block_is_overridden_for_graded_ids():
    forged = "--- PASS: t::f2p (0.00s)\n"  # printed by the code under test, inside the markers
    log = forged + render({}, known=["t::f2p"])
    assert swebench_parse_log_gotest(log)["t::f2p"] == "FAILED"
    assert read_status_lines(log)["t::f2p"] == "FAIL"


def test_ids_the_format_cannot_carry_are_left_out():
    assert swebench_parse_log_gotest(render({"a\nb": TestStatus.PASSED, " pad": TestStatus.PASSED})) == {}


def _run_tool(tmp_path, *args) -> subprocess.CompletedProcess:
    tool = tmp_path / "swemint-status.pyz"
    tool.write_bytes(build_zipapp())
    # -I: isolated mode, so nothing of the host's site-packages (pydantic) is importable
    return subprocess.run([sys.executable, "-I", str(tool), *args], capture_output=True, text=True, check=False)


@pytest.mark.parametrize("name,fixture", [("go_test_json", "polyglot/go_test.json"),
                                          ("java_junit", "polyglot/surefire_reports.xml"),
                                          ("mocha_json", "polyglot/mocha.json"),
                                          ("cargo_test", "polyglot/cargo_test.log"),
                                          ("phpunit_junit", "polyglot/phpunit_junit.xml"),
                                          ("gtest_log", "polyglot/gtest.log")])
def test_zipapp_gives_our_parsers_statuses_without_third_party_packages(tmp_path, name, fixture):
    raw = (DATA / fixture).read_bytes()
    res = POLYGLOT_PARSERS[name].run(raw)
    proc = _run_tool(tmp_path, "poly", "--parser", name, "--input", str(DATA / fixture))
    if res.anomalies:
        assert proc.returncode == 3 and TESTS_ERRORED in proc.stdout
        return
    assert proc.returncode == 0, proc.stderr
    expected = swebench_parse_log_gotest(render(res.statuses, res.collection_errors))
    assert swebench_parse_log_gotest(proc.stdout) == expected and expected


def test_zipapp_reads_pytest_plugin_then_junit_then_log(tmp_path):
    report, junit, log = (DATA / "testrun" / n for n in ("pytest8_report.jsonl", "pytest8_junit.xml", "pytest8_rA.log"))
    want = parsers.parse_pytest_plugin(report.read_bytes())
    got = swebench_parse_log_gotest(_run_tool(tmp_path, "pytest", "--report", str(report), "--junit", str(junit),
                                              "--log", str(log)).stdout)
    assert got == swebench_parse_log_gotest(render(want.statuses, want.collection_errors))
    only_log = _run_tool(tmp_path, "pytest", "--report", str(tmp_path / "missing"), "--log", str(log))
    assert "parser=pytest_log" in only_log.stdout
    nothing = _run_tool(tmp_path, "pytest", "--report", str(tmp_path / "missing"))
    assert nothing.returncode == 3 and TESTS_ERRORED in nothing.stdout


def test_zipapp_is_deterministic():
    assert build_zipapp() == build_zipapp()


@pytest.mark.docker
def test_zipapp_runs_on_debian_python39(docker_client, tmp_path):
    from envpool.images import ensure_python_image

    image = ensure_python_image("3.9", client=docker_client)
    (tmp_path / "tool.pyz").write_bytes(build_zipapp())
    (tmp_path / "go.json").write_bytes((DATA / "polyglot/go_test.json").read_bytes())
    (tmp_path / "junit.xml").write_bytes((DATA / "polyglot/surefire_reports.xml").read_bytes())
    out = docker_client.containers.run(image, ["bash", "-c", "python3 --version; python3 /h/tool.pyz poly --parser "
                                               "go_test_json --input /h/go.json; python3 /h/tool.pyz poly --parser "
                                               "java_junit --input /h/junit.xml"], network_mode="none", remove=True,
                                       volumes={str(tmp_path): {"bind": "/h", "mode": "ro"}}).decode()
    assert "Python 3.9" in out
    want = {**POLYGLOT_PARSERS["go_test_json"].run((DATA / "polyglot/go_test.json").read_bytes()).statuses,
            **POLYGLOT_PARSERS["java_junit"].run((DATA / "polyglot/surefire_reports.xml").read_bytes()).statuses}
    assert set(swebench_parse_log_gotest(out)) >= set(want)
