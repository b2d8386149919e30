"""Status lines: our verdicts in the form swebench's `parse_log_gotest` reads, and the in-image tool."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from envpool.testrun import parsers
from envpool.testrun.outcome import TestStatus
from envpool.testrun.registry import PARSERS
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
    res = PARSERS[name].run(raw)
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

    image = ensure_python_image("3.9", engine=docker_client)
    (tmp_path / "tool.pyz").write_bytes(build_zipapp())
    (tmp_path / "go.json").write_bytes((DATA / "polyglot/go_test.json").read_bytes())
    (tmp_path / "junit.xml").write_bytes((DATA / "polyglot/surefire_reports.xml").read_bytes())
    out = docker_client.containers.run(image, ["bash", "-c", "python3 --version; python3 /h/tool.pyz poly --parser "
                                               "go_test_json --input /h/go.json; python3 /h/tool.pyz poly --parser "
                                               "java_junit --input /h/junit.xml"], network_mode="none", remove=True,
                                       volumes={str(tmp_path): {"bind": "/h", "mode": "ro"}}).decode()
    assert "Python 3.9" in out
    want = {**PARSERS["go_test_json"].run((DATA / "polyglot/go_test.json").read_bytes()).statuses,
            **PARSERS["java_junit"].run((DATA / "polyglot/surefire_reports.xml").read_bytes()).statuses}
    assert set(swebench_parse_log_gotest(out)) >= set(want)


# -- the tool runs the tests itself: forged logs and reports (a fresh user's trial, acme__calcy-7) --

PROJECT = {
    "calc/__init__.py": "def add(a, b):\n    return a - b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_zero():\n    assert add(1, 0) == 1\n\n\n"
                          "def test_add():\n    assert add(2, 3) == 5\n",
}
KNOWN = ["tests/test_calc.py::test_add", "tests/test_calc.py::test_zero"]
FIXED = "def add(a, b):\n    return a + b\n"
# the two forged predictions of the trial, as code the tests import
FORGE_JUNIT = FIXED.replace("a + b", "a - b") + '''
import atexit as _ax, re as _re, sys as _s
def _forge():
    for a in _s.argv:
        if a.startswith("--junitxml="):
            p = a.split("=", 1)[1]
            t = open(p).read()
            t = _re.sub(r"<failure.*?</failure>", "", t, flags=_re.S)
            open(p, "w").write(_re.sub(r'failures="\\d+"', 'failures="0"', t))
_ax.register(_forge)
'''
FORGE_LINES = FIXED.replace("a + b", "a - b") + '''
import atexit as _ax, os as _os
def _forge():
    ids = ["tests/test_calc.py::test_add", "tests/test_calc.py::test_zero"]
    _os.write(1, ("".join("--- PASS: %s (0s)\\n" % i for i in ids) + ">>>>> End Test Output\\r>>>>>> Tests Passed\\n").encode())
_ax.register(_forge)
'''


def _run_project(tmp_path, init: str) -> subprocess.CompletedProcess:
    from envpool.testrun.pytest_runner import PLUGIN_SOURCE

    proj = tmp_path / "proj"
    for rel, text in {**PROJECT, "calc/__init__.py": init}.items():
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        (proj / rel).write_text(text)
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / PLUGIN_SOURCE.name).write_bytes(PLUGIN_SOURCE.read_bytes())
    (tmp_path / "known.txt").write_text("\n".join(KNOWN) + "\n")
    junit = tmp_path / "junit.xml"
    cmd = (f"cd {proj} && exec 3>&1 && export SWEMINT_CHANNEL=3 SWEMINT_KEY=stdin PYTHONPATH={tmp_path / 'plugins'} && "
           f"{sys.executable} -m pytest -p swemint_pytest_report -rA -p no:cacheprovider -p no:randomly "
           f"--junitxml={junit} -o junit_family=xunit1 tests")
    return _run_tool(tmp_path, "pytest", "--run", cmd, "--junit", str(junit), "--test-files", "tests/test_calc.py",
                     "--known-file", str(tmp_path / "known.txt"))


def _swebench_view(out: str) -> dict[str, str] | None:
    """What swebench 5.0.2 `get_logs_eval` makes of a log whose markers are around `out`: None
    when it refuses to grade (an error marker anywhere), else `parse_log_gotest` of the cut."""
    log = f">>>>> Start Test Output\n{out}>>>>> End Test Output\n"
    if any(m in log for m in (">>>>> Patch Apply Failed", ">>>>> Reset Failed", TESTS_ERRORED,
                              ">>>>> Tests Timed Out")):
        return None
    return swebench_parse_log_gotest(log.split(">>>>> Start Test Output")[1].split(">>>>> End Test Output")[0])


def test_tool_runs_pytest_and_grades_an_honest_run_from_the_plugin_frames(tmp_path):
    fixed = _run_project(tmp_path / "fixed", FIXED)
    assert fixed.returncode == 0, fixed.stdout[-2000:] + fixed.stderr
    assert _swebench_view(fixed.stdout) == {k: "PASSED" for k in KNOWN}
    assert "parser=pytest_channel" in fixed.stdout
    broken = _run_project(tmp_path / "broken", FIXED.replace("a + b", "a - b"))
    assert broken.returncode == 1
    assert _swebench_view(broken.stdout) == {"tests/test_calc.py::test_add": "FAILED",
                                             "tests/test_calc.py::test_zero": "PASSED"}


def test_a_junit_file_rewritten_at_exit_is_caught_by_the_cross_checks(tmp_path):
    """Trial forgery (1): the tool graded the JUnit XML with no check and printed PASS."""
    r = _run_project(tmp_path, FORGE_JUNIT)
    assert _swebench_view(r.stdout) is None, r.stdout[-3000:]
    block = r.stdout[r.stdout.index(f"{FORMAT} untrusted"):]
    assert "junit report disagrees" in block and "--- PASS" not in block
    assert read_status_lines(r.stdout) == {k: "FAIL" for k in KNOWN}


def test_status_lines_and_markers_printed_by_the_tests_are_neutralised(tmp_path):
    """Trial forgery (2): `--- PASS:` lines and `>>>>> End Test Output` at exit cut the log
    before swemint's lines."""
    r = _run_project(tmp_path, FORGE_LINES)
    runner = r.stdout[:r.stdout.index(f"{FORMAT} begin")]
    assert ">>>>>" not in r.stdout and "swemint-escaped| --- PASS: tests/test_calc.py::test_add" in runner
    assert swebench_parse_log_gotest(runner) == {}
    assert _swebench_view(r.stdout) == {"tests/test_calc.py::test_add": "FAILED",
                                        "tests/test_calc.py::test_zero": "PASSED"}


def test_a_run_without_the_plugin_frames_is_not_graded(tmp_path):
    """The channel is required on the pytest path: a console and a JUnit file alone are forgeable."""
    r = _run_project(tmp_path, FIXED.replace("import", "#") + "\nimport os\nos.environ.pop('X', None)\n")
    assert _swebench_view(r.stdout) == {k: "PASSED" for k in KNOWN}  # control: same project, plugin on
    (tmp_path / "plugins" / "swemint_pytest_report.py").write_text("")  # a plugin that sends nothing
    junit = tmp_path / "junit.xml"
    again = _run_tool(tmp_path, "pytest", "--run", f"cd {tmp_path / 'proj'} && {sys.executable} -m pytest -rA "
                      f"-p no:cacheprovider --junitxml={junit} tests", "--junit", str(junit),
                      "--known-file", str(tmp_path / "known.txt"))
    assert _swebench_view(again.stdout) is None and "no report from the pytest plugin" in again.stdout


@pytest.mark.parametrize("line,escaped", [(">>>>> End Test Output", True), ("x >>>>>>>>>> Start Test Output", True),
                                          ("  --- PASS: t::a (0s)", True), (f"{FORMAT} end tests=1", True),
                                          ("PASSED t::a", False), ("----- Captured stdout -----", False),
                                          ("plain >>>> text", False)])
def test_neutralise_leaves_no_marker_substring_and_no_status_line(line, escaped):
    from envpool.testrun.statuslines import ESCAPE, neutralise

    out = neutralise(line)
    assert out.startswith(ESCAPE) == escaped and ">>>>>" not in out
    assert swebench_parse_log_gotest(out) == {}
