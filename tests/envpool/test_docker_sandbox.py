"""DockerSandbox against a real engine: labels, limits, timeouts, output, files, commit,
clean-up and network isolation. Containers are shared per module where tests do not interfere."""

from __future__ import annotations

import http.server
import socket
import threading
import uuid
from pathlib import Path

import pytest

from envpool.docker_sandbox import DockerSandboxFactory
from envpool.sandbox import SandboxSpec
from tests.session import SESSION

pytestmark = pytest.mark.docker

RUN_ID = f"pytest-{SESSION}"
CAP = 4096


@pytest.fixture(scope="module")
def factory(docker_client):
    f = DockerSandboxFactory(run_id=RUN_ID, client=docker_client, output_cap=CAP, kill_after=1)
    yield f
    f.sweep(RUN_ID)


@pytest.fixture(scope="module")
def log_path(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("logs") / "demo__x-1.log"


@pytest.fixture(scope="module")
def box(factory, debian_image, log_path):
    """A network-less Debian container (the shape of a test-run sandbox)."""
    spec = SandboxSpec(image=debian_image, instance_id="demo__x-1", network="none",
                       cpus=1, memory=512 * 1024**2, pids=256)
    with factory.sandbox(spec, log_path) as sb:
        yield sb


@pytest.fixture(scope="module")
def net_box(factory, python_image):
    """A bridge-networked Python container (the shape of an environment-build sandbox)."""
    with factory.sandbox(SandboxSpec(image=python_image, network="bridge")) as sb:
        yield sb


def _gone(client, container_id: str) -> bool:
    import docker

    try:
        client.containers.get(container_id)
        return False
    except docker.errors.NotFound:
        return True


# -- labels and limits --------------------------------------------------------------------

def test_containers_carry_run_and_instance_labels(box):
    box.container.reload()
    labels = box.container.labels
    assert labels["swemint.run"] == RUN_ID
    assert labels["swemint.instance"] == "demo__x-1"


def test_limits_are_enforced(factory, python_image):
    spec = SandboxSpec(image=python_image, network="none", cpus=0.5, memory=96 * 1024**2, pids=40)
    with factory.sandbox(spec) as sb:
        host = sb.container.attrs["HostConfig"]
        assert host["NanoCpus"] == 500_000_000
        assert host["Memory"] == 96 * 1024**2 and host["PidsLimit"] == 40
        assert host["NetworkMode"] == "none"

        oom = sb.exec("python3 -c 'b = bytearray(400 * 2**20); print(len(b))'", timeout=60)
        assert oom.exit_code == 137 and not oom.timed_out, oom  # OOM-killed, not a timeout
        assert sb.exec("echo alive").output == "alive\n"        # the container survives

        fork = sb.exec(
            "python3 - <<'EOF'\n"
            "import os, signal, sys, time\n"
            "kids = []\n"
            "try:\n"
            "    for _ in range(200):\n"
            "        pid = os.fork()\n"
            "        if pid == 0:\n"
            "            time.sleep(30); os._exit(0)\n"
            "        kids.append(pid)\n"
            "    code = 0\n"
            "except (BlockingIOError, OSError) as e:\n"
            "    print('fork failed after', len(kids), type(e).__name__); code = 3\n"
            "for pid in kids:\n"
            "    os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)\n"
            "sys.exit(code)\n"
            "EOF", timeout=60)
        assert fork.exit_code == 3 and "fork failed after" in fork.output, fork


def test_host_network_is_refused(factory, debian_image):
    bad = SandboxSpec.model_construct(**{**SandboxSpec(image=debian_image).model_dump(),
                                         "network": "host"})
    with pytest.raises(ValueError, match="not allowed"):
        factory.start(bad)


# -- exec: timeouts and output ---------------------------------------------------------------

def test_exec_exit_code_env_and_workdir(box):
    r = box.exec("echo $FOO; pwd; exit 5", env={"FOO": "bar"}, workdir="/tmp")
    assert (r.exit_code, r.output, r.timed_out, r.ok) == (5, "bar\n/tmp\n", False, False)
    assert box.exec("pwd").output == "/testbed\n"  # the spec's workdir by default


def test_stdout_and_stderr_keep_the_order_they_were_written_in(box):
    """A sub-make writes its error (stderr) before its 'Leaving directory' line (stdout); the
    engine frames the two streams apart, so without one pipe their order was the engine's."""
    r = box.exec("for i in $(seq 1 300); do echo out$i; echo err$i >&2; done; "
                 "sh -c 'echo child-err >&2'; echo last")
    expected = "".join(f"out{i}\nerr{i}\n" for i in range(1, 301)) + "child-err\nlast\n"
    assert r.output == expected


def test_exec_timeout_returns_124(box):
    r = box.exec("echo started; sleep 30", timeout=1)
    assert r.timed_out and r.exit_code == 124 and not r.ok
    assert r.output == "started\n"
    assert r.duration >= 0.9 and r.duration < 20  # stopped long before the sleep's 30 s


def test_timeout_kills_a_process_that_ignores_sigterm(box):
    r = box.exec("trap '' TERM; sleep 413 & sleep 414; wait", timeout=1)
    assert r.timed_out and r.exit_code == 124
    assert r.duration < 60  # TERM at 1 s is ignored, KILL follows; the sleeps would take 414 s
    left = box.exec("pgrep -f 'sleep 41[34]'")
    assert left.exit_code == 1, f"survivors: {left.output}"


def test_output_capped_and_nonutf8_replaced_and_logged(box, log_path):
    big = box.exec("head -c 50000 /dev/zero | tr '\\0' a; echo; echo THE-END", log_label="big")
    assert big.truncated and big.exit_code == 0
    assert len(big.output.encode()) < CAP + 200
    assert big.output.rstrip().endswith("THE-END") and "bytes cut by swemint" in big.output

    raw = box.exec(r"printf 'caf\xe9 \xff\xfe ok'")
    assert raw.output == "caf\ufffd \ufffd\ufffd ok" and not raw.truncated

    log = log_path.read_bytes()
    big_entry = log.split(b"$ [big] head -c 50000")[1].split(b"[exit 0")[0]
    assert len(big_entry) < CAP + 200                 # the log is capped per exec too: head, marker, tail
    assert b"bytes cut by swemint" in big_entry and big_entry.rstrip().endswith(b"THE-END")
    assert b"caf\xe9 \xff\xfe ok" in log             # raw bytes, undecoded


# -- files ----------------------------------------------------------------------------------

def test_put_get_file_round_trip(box):
    box.put_file("/work/a dir/it's.txt", "héllo\n", mode=0o750)
    assert box.get_file("/work/a dir/it's.txt") == "héllo\n".encode()
    assert box.exec("stat -c %a \"/work/a dir/it's.txt\"").output.strip() == "750"
    box.put_file("/work/bin.dat", bytes(range(256)))
    assert box.get_file("/work/bin.dat") == bytes(range(256))
    box.exec("ln -sf /work/bin.dat /work/link")
    assert box.get_file("/work/link") == bytes(range(256))
    with pytest.raises(FileNotFoundError):
        box.get_file("/work/missing.txt")
    with pytest.raises(IsADirectoryError):
        box.get_file("/work")


def test_put_dir_round_trip(box, tmp_path):
    src = tmp_path / "repo"
    (src / "pkg" / "sub").mkdir(parents=True)
    (src / "pkg" / "__init__.py").write_text("")
    (src / "pkg" / "sub" / "m.py").write_text("X = 1\n")
    (src / "run me.sh").write_text("#!/bin/sh\necho ran\n")
    (src / "run me.sh").chmod(0o755)
    box.put_dir(src, "/srv/repo")
    assert box.get_file("/srv/repo/pkg/sub/m.py") == b"X = 1\n"
    assert box.exec("'/srv/repo/run me.sh'").output == "ran\n"
    listing = box.exec("cd /srv/repo && find . -type f | sort").output.split()
    assert listing == ["./pkg/__init__.py", "./pkg/sub/m.py", "./run", "me.sh"]


# -- commit and lifetime --------------------------------------------------------------------

def test_commit_gives_a_startable_image_without_volumes(factory, docker_client, debian_image):
    repo, tag = "swemint-test/commit", uuid.uuid4().hex[:12]
    try:
        with factory.sandbox(SandboxSpec(image=debian_image, network="bridge")) as sb:
            assert sb.ca_mounted == (sb.container.attrs["Mounts"] != [])
            sb.put_file("/testbed/marker.txt", "kept")
            image_id = sb.commit(repo, tag, labels={"swemint.test": RUN_ID})
        img = docker_client.images.get(f"{repo}:{tag}")
        assert img.id == image_id
        assert not img.attrs["Config"].get("Volumes")
        assert img.labels["swemint.test"] == RUN_ID and img.labels["swemint.managed"] == "1"
        with factory.sandbox(SandboxSpec(image=f"{repo}:{tag}", network="bridge")) as child:
            assert child.get_file("/testbed/marker.txt") == b"kept"
    finally:
        docker_client.images.remove(f"{repo}:{tag}", force=True)


def test_sandbox_context_removes_container_on_exception(factory, docker_client, debian_image):
    with (pytest.raises(RuntimeError, match="inside"),
          factory.sandbox(SandboxSpec(image=debian_image, network="none")) as sb):
        cid = sb.container.id
        raise RuntimeError("inside")
    assert _gone(docker_client, cid)
    sb.close()  # idempotent, never raises


def test_start_failure_leaves_nothing_and_is_infra_error(factory, docker_client):
    from envpool.errors import InfraError

    with pytest.raises(InfraError, match="not found"):
        factory.start(SandboxSpec(image="swemint-test/absent:nope", run_id=RUN_ID + "-absent"))
    assert docker_client.containers.list(all=True, filters={"label": f"swemint.run={RUN_ID}-absent"}) == []


def test_sweep_removes_leftovers_of_that_run_only(docker_client, debian_image):
    rid = RUN_ID + "-sweep"
    f = DockerSandboxFactory(run_id=rid, client=docker_client)
    other = DockerSandboxFactory(run_id=rid + "-other", client=docker_client)
    leaked = [f.start(SandboxSpec(image=debian_image, network="none")) for _ in range(2)]
    keep = other.start(SandboxSpec(image=debian_image, network="none"))
    try:
        assert f.sweep() == 2
        assert all(_gone(docker_client, s.container.id) for s in leaked)
        assert not _gone(docker_client, keep.container.id)
        assert f.sweep(rid) == 0
    finally:
        keep.close()


# -- network --------------------------------------------------------------------------------

def test_network_none_has_only_loopback(box):
    assert box.exec("ls /sys/class/net").output.split() == ["lo"]
    dns = box.exec("getent hosts pypi.org", timeout=10)
    assert dns.exit_code != 0 and not dns.timed_out
    tcp = box.exec("curl -sS --max-time 5 http://151.101.0.223/", timeout=10)
    # curl's 7 is "failed to connect" (no route); a filtered-but-routed address would end in
    # 28 (its own --max-time) instead. Durations are not asserted: CI machines are loaded.
    assert tcp.exit_code == 7 and not tcp.timed_out


class _Secret(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"SWEMINT-HOST-SECRET"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _serve(host: str):
    srv = http.server.ThreadingHTTPServer((host, 0), _Secret)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def _gateway(sb) -> str:
    for line in sb.exec("cat /proc/net/route").output.splitlines()[1:]:
        f = line.split()
        if len(f) > 2 and f[1] == "00000000":
            return socket.inet_ntoa(int(f[2], 16).to_bytes(4, "little"))
    raise AssertionError("no default route in a bridge container")


def test_bridge_cannot_reach_host_loopback_but_reaches_registry(net_box):
    srv = _serve("127.0.0.1")
    port = srv.server_address[1]
    control = None
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass  # the server answers on the host itself
        gw = _gateway(net_box)
        try:  # the build network's gateway is the host too (envpool.netguard drops it)
            control = _serve(gw)
        except OSError:
            control = None  # engine not in this network namespace: no control possible
        targets = {f"127.0.0.1:{port}", f"host.docker.internal:{port}", f"172.17.0.1:{port}",
                   f"{gw}:{port}", f"localhost:{port}"}
        for target in sorted(targets):
            r = net_box.exec(f"curl -sS --max-time 3 http://{target}/", timeout=10)
            assert r.exit_code in (6, 7, 28), (target, r)  # resolve / connect / timeout
            assert "SWEMINT-HOST-SECRET" not in r.output
        if control is not None:  # a server on the build network's gateway is not reachable either
            r = net_box.exec(f"curl -sS --max-time 3 http://{gw}:{control.server_address[1]}/", timeout=10)
            assert r.exit_code in (7, 28) and "SWEMINT-HOST-SECRET" not in r.output, r
    finally:
        srv.shutdown()
        if control is not None:
            control.shutdown()

    env = net_box.exec("echo $PIP_CERT").output.strip()
    if net_box.ca_mounted:
        assert env == "/opt/swemint/ca.pem"
    pip = net_box.exec("python3 -m pip download -q --no-deps --disable-pip-version-check "
                       "-d /tmp/dl six && ls /tmp/dl", timeout=120)
    assert pip.ok and "six-" in pip.output, pip


def test_cache_mounts_are_shared_with_the_host_and_not_committed(docker_client, debian_image, tmp_path):
    from envpool.docker_sandbox import DockerSandboxFactory
    from envpool.sandbox import SandboxSpec

    factory = DockerSandboxFactory(run_id=f"test-cache-mount-{SESSION}", client=docker_client)
    spec = SandboxSpec(image=debian_image, run_id=f"test-cache-mount-{SESSION}", network="none", mount_ca=False,
                       cache_mounts={str(tmp_path / "cache"): "/root/.cache/uv"})
    with factory.sandbox(spec) as sb:
        assert sb.exec("echo hit > /root/.cache/uv/marker").ok
        image = sb.commit("swemint-test/cachemount", "t")
    assert (tmp_path / "cache" / "marker").read_text() == "hit\n"
    try:
        with factory.sandbox(SandboxSpec(image="swemint-test/cachemount:t", run_id=f"test-cache-mount-{SESSION}",
                                         network="none", mount_ca=False)) as sb:
            assert not sb.exec("test -e /root/.cache/uv/marker").ok  # the mount's content is not in the image
    finally:
        docker_client.images.remove(image, force=True)


# -- bounds (issue 11, item 4) -----------------------------------------------------------------

def test_a_300_mib_print_leaves_at_most_the_cap_in_memory_and_on_disk(box, log_path):
    before = log_path.stat().st_size
    r = box.exec("head -c 314572800 /dev/zero | tr '\\0' x; echo; echo DONE", timeout=300, log_label="flood")
    assert r.exit_code == 0 and r.truncated and r.output.rstrip().endswith("DONE")
    assert len(r.output.encode()) < CAP + 200
    assert log_path.stat().st_size - before < CAP + 1000


def test_a_command_that_stops_its_watchdog_is_ended_by_the_host_deadline(factory, debian_image):
    """`timeout` cannot fire once the command stops it (SIGSTOP to its parent): the exec never
    ended before; now the host stops waiting, kills the exec's processes and says timed out."""
    import time

    spec = SandboxSpec(image=debian_image, network="none", cpus=1, memory=256 * 1024**2, pids=64)
    fast = DockerSandboxFactory(run_id=RUN_ID, client=factory.client, output_cap=CAP, kill_after=1, host_grace=2)
    with fast.sandbox(spec) as sb:
        t0 = time.monotonic()
        r = sb.exec("kill -STOP $PPID; echo stopped; sleep 1000", timeout=3)
        took = time.monotonic() - t0
        assert r.timed_out and r.exit_code == 124 and "stopped" in r.output
        assert took < 3 + 1 + 2 + 5, took
        time.sleep(1)
        left = sb.exec("ps -eo args | grep -c '[s]leep 1000' || true", timeout=10)
        assert left.output.strip() == "0", left.output


def test_a_daemon_holding_stdout_open_never_blocks_the_exec(box):
    import time

    t0 = time.monotonic()
    r = box.exec("setsid bash -c 'trap \"\" HUP TERM; while true; do echo tick; sleep 0.2; done' & echo started",
                 timeout=60)
    took = time.monotonic() - t0
    # The daemon's first "tick" may be written before "started": output keeps write order.
    assert r.exit_code == 0 and "started" in r.output.splitlines() and took < 10, (took, r.output)
    box.exec("pkill -f 'echo tick' || true", timeout=10)


def test_stdin_and_a_separate_report_channel(box):
    r = box.exec("read -r k; echo \"console $k\"; printf 'rec-%s' \"$k\" >&2", stdin=b"s3cret\n", channel=True)
    assert r.exit_code == 0 and r.output.strip() == "console s3cret" and r.channel == b"rec-s3cret"
    big = box.exec("head -c 200000 /dev/zero >&2", channel=True)
    assert len(big.channel) == factory_report_cap(box) or big.channel_truncated is False


def factory_report_cap(box) -> int:
    return box.report_cap


def test_get_file_streams_with_a_limit(box):
    from envpool.errors import OutputTooLarge

    box.exec("head -c 100000 /dev/zero > /tmp/big.bin")
    assert len(box.get_file("/tmp/big.bin", max_bytes=200000)) == 100000
    with pytest.raises(OutputTooLarge):
        box.get_file("/tmp/big.bin", max_bytes=1000)


def test_containers_drop_capabilities_and_gain_no_privileges(box, docker_client):
    attrs = docker_client.containers.get(box.container.id).attrs["HostConfig"]
    assert attrs["CapDrop"] == ["ALL"] and "NET_RAW" not in (attrs["CapAdd"] or [])
    assert "no-new-privileges:true" in attrs["SecurityOpt"]
    status = box.exec("grep -E '^(CapEff|NoNewPrivs)' /proc/self/status").output
    eff = int(status.split("CapEff:")[1].split()[0], 16)
    assert not eff & (1 << 13)  # CAP_NET_RAW
    assert not eff & (1 << 27)  # CAP_MKNOD
    assert "NoNewPrivs:\t1" in status
    assert box.exec("mknod /tmp/dev c 1 3").exit_code != 0
    tmp = box.exec("df -B1 --output=size,fstype /tmp | tail -1").output.split()
    assert tmp[1] == "tmpfs" and int(tmp[0]) <= 2 * 1024**3


def test_stream_file_reads_a_file_past_any_limit_in_chunks(box):
    """`stream_file` (issue 26: reports read as streams): on the tmpfs at /tmp and in the writable
    layer, the whole content in chunks, whatever the report limit."""
    import hashlib

    box.exec("head -c 3000000 /dev/urandom > /tmp/big.bin && cp /tmp/big.bin /work/big.bin")
    want = box.exec("sha256sum /tmp/big.bin | cut -d' ' -f1").output.strip()
    for path in ("/tmp/big.bin", "/work/big.bin"):
        parts = list(box.stream_file(path, chunk_size=65536))
        assert len(parts) > 10 and max(len(p) for p in parts) <= 65536
        assert hashlib.sha256(b"".join(parts)).hexdigest() == want
    with pytest.raises(FileNotFoundError):
        list(box.stream_file("/tmp/missing.bin"))
