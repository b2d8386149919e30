"""The report channel and the trust rule (issue 11, item 2), without Docker: signed frames,
what tampering looks like on the channel, the cross-checks every runner's report goes through,
the test-infrastructure flag, and the published command that resets test files."""

from __future__ import annotations

import os
import subprocess

import pytest

from envpool.fake import pytest_session
from envpool.testrun import statuslines, trust
from envpool.testrun.channel import PREFIX, encode_frames, new_key, read_channel, record_mac
from envpool.testrun.parsers import parse_pytest_channel, parse_pytest_records
from envpool.testrun.published import reset_and_apply
from envpool.testrun.status import TestRunReport, TestStatus

RECORDS = pytest_session({"t.py::test_a": "passed", "t.py::test_b": "failed"})


def test_signed_frames_round_trip_and_seal():
    key = new_key()
    rep = read_channel(encode_frames(RECORDS, key), key)
    assert rep.records == RECORDS and rep.sealed and rep.authenticated and rep.tampered == []
    graded = parse_pytest_records(rep.records)
    assert graded.statuses == {"t.py::test_a": TestStatus.PASSED, "t.py::test_b": TestStatus.FAILED}


@pytest.mark.parametrize("attack", ["wrong_key", "unsigned", "after_seal", "dropped", "reordered", "junk",
                                    "other_pid", "rewritten"])
def test_every_kind_of_tampering_is_found(attack):
    key = new_key()
    raw = encode_frames(RECORDS, key)
    frames = raw.splitlines(keepends=True)
    if attack == "wrong_key":
        raw = encode_frames(RECORDS, new_key())
    elif attack == "unsigned":
        raw = encode_frames([*RECORDS[:-1], {**RECORDS[-1], "exitstatus": 0}], None)
    elif attack == "after_seal":  # even with the key (stolen from memory), nothing may follow the seal
        forged = encode_frames([*RECORDS, {"kind": "test", "nodeid": "t.py::test_b", "when": "call",
                                           "outcome": "passed", "pid": 4242}], key).splitlines(keepends=True)[-1]
        raw += forged
    elif attack == "dropped":
        raw = b"".join(f for i, f in enumerate(frames) if i != 4)
    elif attack == "reordered":
        raw = b"".join([frames[0], frames[2], frames[1], *frames[3:]])
    elif attack == "junk":
        raw = raw + b"PASSED t.py::test_b\n"
    elif attack == "other_pid":
        raw = encode_frames([*RECORDS[:2], {**RECORDS[2], "pid": 1}, *RECORDS[3:]], key)
    elif attack == "rewritten":  # a frame's record changed in place, its MAC kept
        import base64

        seq, mac, payload = frames[5][len(PREFIX):].split(b" ")
        body = base64.b64decode(payload).replace(b'"failed"', b'"passed"')
        assert body != base64.b64decode(payload)
        frames[5] = PREFIX + b" ".join([seq, mac, base64.b64encode(body)]) + b"\n"
        raw = b"".join(frames)
    rep = read_channel(raw, key)
    assert rep.tampered, attack


def test_a_cut_stream_is_unfinished_not_tampered():
    key = new_key()
    raw = encode_frames(RECORDS, key)
    rep = read_channel(raw[: len(raw) - 30], key, truncated=True)
    assert not rep.sealed and rep.tampered == []
    ev = trust.RunEvidence(report=parse_pytest_records(rep.records), session_finished=rep.sealed,
                           report_too_large=True)
    found = trust.anomalies(ev)
    assert {a.code for a in found} >= {"too_large", "unfinished"} and not trust.tampering(found)


def test_frames_mixed_into_a_console_stream_are_read_with_the_key():
    key = new_key()
    console = b"tests/t.py .F" + encode_frames(RECORDS, key) + b"\n=== 1 failed, 1 passed ===\n"
    rep = parse_pytest_channel(console, key.hex())
    assert rep.tests_ran and rep.statuses["t.py::test_b"] == TestStatus.FAILED
    forged = console + encode_frames([{"kind": "session_start", "pid": 1}], None)
    assert parse_pytest_channel(forged, key.hex()).tests_ran is False
    assert parse_pytest_channel(encode_frames(RECORDS, None)).tests_ran  # unauthenticated, by choice
    assert record_mac(key, 0, b"", b"{}") != record_mac(new_key(), 0, b"", b"{}")
    assert PREFIX.startswith(b"\x1e")


def _report(statuses: dict[str, TestStatus], exit_code: int | None = 1) -> TestRunReport:
    return TestRunReport(statuses=statuses, exit_code=exit_code, tests_ran=True, source="plugin")


def test_trust_rule_on_every_runner():
    P, F = TestStatus.PASSED, TestStatus.FAILED
    ok = trust.RunEvidence(report=_report({"a": P, "b": F}), exit_code=1, runner_exit=1, session_finished=True,
                           collected=2, pytest_codes=True, others={"junit": _report({"a": P, "b": F})})
    assert trust.anomalies(ok) == []
    forged_junit = ok.model_copy(update={"others": {"junit": _report({"b": P})}})
    [a] = trust.anomalies(forged_junit)
    assert a.tamper and a.code == "sources" and "junit" in a.message
    nothing_failing = ok.model_copy(update={"report": _report({"a": P})})
    assert any("no failed or errored test" in str(a) for a in trust.anomalies(nothing_failing))
    zero = ok.model_copy(update={"exit_code": 0, "runner_exit": 0})
    assert any("exit code 0 but" in str(a) for a in trust.anomalies(zero))
    status = ok.model_copy(update={"runner_exit": 0})
    assert any("status 0 but the process exited 1" in str(a) for a in trust.anomalies(status))
    short = ok.model_copy(update={"collected": 5})
    assert any("5 tests collected" in str(a) for a in trust.anomalies(short))
    # a runner whose exit code is no verdict (a polyglot test command): parser findings only
    poly = trust.RunEvidence(report=_report({"a": P}, exit_code=0), parser_anomalies=["Tests: runner 3, parsed 1"])
    assert [a.code for a in trust.anomalies(poly)] == ["parser"]


def test_test_infrastructure_files_are_flagged():
    def diff(path: str, added: str) -> str:
        return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1,2 @@\n x\n+{added}\n"

    patch = (diff("tests/conftest.py", "y") + diff("src/pkg/sitecustomize.py", "y") + diff("lib/x.pth", "y")
             + diff("web/jest.config.js", "y") + diff("setup.cfg", "addopts = -p evil") + diff("tox.ini", "deps = x")
             + diff("src/pkg/core.py", "y"))
    assert trust.infra_files(patch) == ["lib/x.pth", "setup.cfg", "src/pkg/sitecustomize.py", "tests/conftest.py",
                                        "web/jest.config.js"]
    assert trust.infrastructure_flags(diff("src/a.py", "y"), diff("tests/conftest.py", "z")) == \
        ["test_patch:tests/conftest.py"]


def _git(cwd, *args):
    return subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


def test_the_published_command_resets_tests_and_infrastructure_then_applies_the_test_patch(tmp_path):
    repo = tmp_path / "testbed"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_x.py").write_text("def test_x():\n    assert False\n")
    (repo / "setup.cfg").write_text("[tool:pytest]\naddopts = -q\n")
    (repo / "src.py").write_text("X = 1\n")
    (repo / ".gitignore").write_text("ignored/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    test_patch = ("diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n"
                  "@@ -1,2 +1,2 @@\n def test_x():\n-    assert False\n+    assert True\n")
    # what a model's patch might have done: edit the test, add conftest files (one in an ignored
    # folder), change the pytest config, and fix the code
    (repo / "tests" / "test_x.py").write_text("def test_x():\n    pass  # rewritten by the model\n")
    (repo / "conftest.py").write_text("import evil\n")
    (repo / "ignored").mkdir()
    (repo / "ignored" / "conftest.py").write_text("import evil\n")
    (repo / "setup.cfg").write_text("[tool:pytest]\naddopts = -p evil\n")
    (repo / "src.py").write_text("X = 2\n")
    (repo / "keep").mkdir()
    (repo / "keep" / "conftest.py").write_text("# the fix's own conftest\n")
    # what the environment's install left (untracked): a package's own files stay
    (repo / "vendor" / "symfony" / "polyfill").mkdir(parents=True)
    (repo / "vendor" / "symfony" / "polyfill" / "bootstrap.php").write_text("<?php\n")
    (repo / "web" / "node_modules" / "pkg").mkdir(parents=True)
    (repo / "web" / "node_modules" / "pkg" / "jest.config.js").write_text("module.exports = {}\n")
    tool = tmp_path / "swemint-status.pyz"  # the status tool, as every image carries it
    tool.write_bytes(statuslines.build_zipapp())
    script = reset_and_apply(test_patch, keep=["keep/conftest.py", "src.py"], tool=str(tool))
    r = subprocess.run(["bash", "-c", script], cwd=repo, capture_output=True, text=True, env={**os.environ})
    assert r.returncode == 0, r.stderr
    assert (repo / "tests" / "test_x.py").read_text() == "def test_x():\n    assert True\n"
    assert not (repo / "conftest.py").exists() and not (repo / "ignored" / "conftest.py").exists()
    assert (repo / "setup.cfg").read_text() == "[tool:pytest]\naddopts = -q\n"
    assert (repo / "src.py").read_text() == "X = 2\n" and (repo / "keep" / "conftest.py").exists()
    assert (repo / "vendor" / "symfony" / "polyfill" / "bootstrap.php").exists()
    assert (repo / "web" / "node_modules" / "pkg" / "jest.config.js").exists()
    assert "\n" not in script  # one line: fits a row's test_command
