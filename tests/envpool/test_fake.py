"""FakeSandbox / FakeSandboxFactory: the Docker-free double must behave like the protocol says."""

from __future__ import annotations

import pytest

from envpool.errors import InfraError
from envpool.fake import FakeSandbox, FakeSandboxFactory
from envpool.sandbox import ExecResult, Sandbox, SandboxSpec


def spec(**kw) -> SandboxSpec:
    return SandboxSpec(image="img:1", **kw)


def test_satisfies_the_sandbox_protocol():
    sb = FakeSandbox(spec())
    assert isinstance(sb, Sandbox)


def test_queue_replies_in_order_then_default_and_records_commands():
    sb = FakeSandbox(spec()).script(ExecResult(command="x", exit_code=3, output="boom"), "hello", 7,
                                    (2, "two"))
    r1 = sb.exec("make")
    r2 = sb.exec("echo hello")
    r3 = sb.exec("false")
    r4 = sb.exec("pair")
    r5 = sb.exec("anything else")
    assert (r1.command, r1.exit_code, r1.output) == ("make", 3, "boom")
    assert (r2.exit_code, r2.output) == (0, "hello")
    assert r3.exit_code == 7 and not r3.ok
    assert (r4.exit_code, r4.output) == (2, "two")
    assert r5.ok and r5.output == ""
    assert sb.commands == ["make", "echo hello", "false", "pair", "anything else"]


def test_handlers_match_by_regex_before_the_queue_and_first_added_wins():
    seen = []

    def pytest_handler(command, box):
        seen.append((command, box))
        return (1, "1 failed")

    sb = FakeSandbox(spec()).on(r"^pytest\b", pytest_handler).on(r"pytest", 99).script("queued")
    r = sb.exec("pytest -rA tests/x.py")
    assert (r.exit_code, r.output) == (1, "1 failed")
    assert seen == [("pytest -rA tests/x.py", sb)]
    assert sb.exec("python -m pytest").exit_code == 99  # second handler, not anchored
    assert sb.exec("ls").output == "queued"           # no handler: the queue
    assert sb.exec("ls").output == ""                 # queue empty: default


def test_callable_in_queue_can_touch_files():
    sb = FakeSandbox(spec())
    sb.script(lambda cmd, box: box.put_file("/testbed/out.txt", cmd) or 0)
    sb.exec("write it")
    assert sb.get_file("/testbed/out.txt") == b"write it"


def test_strict_raises_for_unscripted_commands():
    sb = FakeSandbox(spec(), strict=True).on("ok", 0)
    assert sb.exec("ok").ok
    with pytest.raises(LookupError, match="no scripted reply"):
        sb.exec("rm -rf /")


def test_reply_longer_than_timeout_becomes_a_timeout():
    sb = FakeSandbox(spec()).script(ExecResult(command="", exit_code=0, duration=30.0))
    r = sb.exec("sleep 30", timeout=5)
    assert r.timed_out and r.exit_code == 124 and r.duration == 5.0 and not r.ok


def test_exec_records_arguments_and_result():
    sb = FakeSandbox(spec(workdir="/repo"))
    r = sb.exec("env", timeout=12, env={"A": "1"}, log_label="probe")
    call = sb.calls[0]
    assert (call.timeout, call.env, call.workdir, call.log_label) == (12, {"A": "1"}, "/repo", "probe")
    assert call.result == r
    sb.exec("pwd", workdir="/tmp")
    assert sb.calls[1].workdir == "/tmp"


def test_output_is_capped_and_logged(tmp_path):
    log = tmp_path / "logs" / "i.log"
    sb = FakeSandbox(spec(), log, output_cap=100).script("a" * 1000)
    r = sb.exec("big", log_label="lbl")
    assert r.truncated and len(r.output) < 200 and "bytes cut" in r.output
    text = log.read_text()
    assert "$ [lbl] big" in text and "bytes cut by swemint" in text and "[exit 0," in text
    assert len(text) < 250  # the log is capped like the result, as DockerSandbox's


def test_stdin_is_recorded_and_the_channel_is_bounded():
    from envpool.errors import OutputTooLarge
    from envpool.sandbox import ExecResult

    sb = FakeSandbox(spec(), report_cap=10)
    sb.on("rep", lambda cmd, box: ExecResult(command=cmd, exit_code=0, output="console", channel=b"x" * 50))
    r = sb.exec("rep", stdin=b"key\n", channel=True)
    assert sb.calls[-1].stdin == b"key\n" and r.channel == b"x" * 10 and r.channel_truncated
    assert sb.exec("rep").channel == b""  # no channel asked: the stream is not kept apart
    sb.put_file("/r.json", b"y" * 11)
    with pytest.raises(OutputTooLarge):
        sb.get_file("/r.json")
    assert sb.get_file("/r.json", max_bytes=11) == b"y" * 11


def test_files_round_trip_and_missing_file(tmp_path):
    sb = FakeSandbox(spec())
    sb.put_file("/a/b/../c.txt", "héllo", mode=0o755)
    assert sb.get_file("/a/c.txt") == "héllo".encode()
    assert sb.modes["/a/c.txt"] == 0o755
    with pytest.raises(FileNotFoundError):
        sb.get_file("/nope")
    with pytest.raises(ValueError):
        sb.put_file("relative.txt", b"")

    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "m.py").write_text("x = 1\n")
    (src / "run.sh").write_text("#!/bin/sh\n")
    (src / "run.sh").chmod(0o755)
    sb.put_dir(src, "/testbed")
    assert sb.get_file("/testbed/pkg/m.py") == b"x = 1\n"
    assert sb.modes["/testbed/run.sh"] == 0o755
    with pytest.raises(FileNotFoundError):
        sb.put_dir(tmp_path / "absent", "/x")


def test_commit_returns_distinct_ids_and_records_image():
    f = FakeSandboxFactory()
    sb = f.start(spec())
    sb.put_file("/testbed/f", b"1")
    id1 = sb.commit("swemint/env", "a", labels={"k": "v"})
    id2 = sb.commit("swemint/env", "b")
    assert id1.startswith("sha256:") and id1 != id2
    assert [c.ref for c in sb.commits] == ["swemint/env:a", "swemint/env:b"]
    assert f.images["swemint/env:a"].labels == {"swemint.managed": "1", "k": "v"}
    # a sandbox started from the committed image sees its files, but later writes stay apart
    sb.put_file("/testbed/g", b"2")
    child = f.start(SandboxSpec(image="swemint/env:a"))
    assert child.get_file("/testbed/f") == b"1"
    with pytest.raises(FileNotFoundError):
        child.get_file("/testbed/g")


def test_close_is_idempotent_and_exec_after_close_is_infra_error():
    sb = FakeSandbox(spec())
    sb.close()
    sb.close()
    assert sb.closed and sb.close_count == 2
    with pytest.raises(InfraError):
        sb.exec("true")


def test_factory_records_specs_and_closes_on_exception():
    f = FakeSandboxFactory(run_id="r1")
    with pytest.raises(RuntimeError), f.sandbox(spec(instance_id="a__b-1"), None) as sb:
        raise RuntimeError("inside")
    assert sb.closed
    assert [s.instance_id for s in f.specs] == ["a__b-1"]
    assert f.specs[0].run_id == "r1"                      # default run id filled in
    assert f.start(spec(run_id="other")).spec.run_id == "other"  # explicit one kept


def test_factory_level_script_serves_every_sandbox():
    f = FakeSandboxFactory().on("uv pip install", (0, "Installed 3 packages")).script(5)
    a, b = f.start(spec()), f.start(spec())
    b.script(6)
    assert a.exec("uv pip install -e .").output == "Installed 3 packages"
    assert b.exec("x").exit_code == 6   # own queue first
    assert b.exec("y").exit_code == 5   # then the factory's
    assert a.exec("z").exit_code == 0


def test_factory_sweep_closes_only_that_run():
    f = FakeSandboxFactory(run_id="r1")
    a = f.start(spec())
    b = f.start(spec(run_id="r2"))
    assert f.open_sandboxes == [a, b]
    assert f.sweep() == 1 and a.closed and not b.closed
    assert f.sweep("r2") == 1 and b.closed
    assert f.sweep("r2") == 0


def test_factory_simulates_missing_images_and_dead_engine():
    f = FakeSandboxFactory(known_images={"img:1"})
    f.start(spec())
    with pytest.raises(InfraError, match="not found"):
        f.start(SandboxSpec(image="missing:1"))
    dead = FakeSandboxFactory(start_error=InfraError("daemon down"))
    with pytest.raises(InfraError, match="daemon down"):
        dead.start(spec())
    assert dead.specs == []
