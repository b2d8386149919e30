"""Build containers not as host root (issue 11, item 3): an engine that remaps user namespaces.

Fast tests read `docker info` shapes and hand host folders over. The Docker test starts a second
dockerd of its own (`--userns-remap=default`, its own data root, exec root, pid file, socket and
bridge, no iptables of its own: the main engine at /var/run/docker.sock is left alone), loads
the Python base image into it and proves that root in its containers is a subordinate uid on the
host, that swemint's cache mount works there, and that a small setup and test run succeed.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from agents.mint_config import MintConfig
from agents.envimage import cache_mounts, release_cache
from envpool.docker_sandbox import DockerSandboxFactory, remapped_root
from envpool.errors import InfraError
from envpool.hostfs import hand_over
from envpool.sandbox import SandboxSpec
from tests.session import SESSION

ROOT = Path(__file__).resolve().parents[2]
USERNS_INFO = {"SecurityOptions": ["name=seccomp,profile=default", "name=userns"],
               "DockerRootDir": "/var/lib/docker/165536.165536"}


# -- fast: what the engine says, and folders handed over ----------------------------------------

def test_remapped_root_reads_the_data_root_suffix_or_the_dockremap_ids(tmp_path):
    assert remapped_root({"SecurityOptions": ["name=seccomp,profile=default"], "DockerRootDir": "/x/1.1"}) is None
    assert remapped_root(USERNS_INFO) == (165536, 165536)
    (tmp_path / "subuid").write_text("alice:100000:65536\ndockremap:231072:65536\n")
    (tmp_path / "subgid").write_text("dockremap:300000:65536\n")
    info = {"SecurityOptions": ["name=userns"], "DockerRootDir": "/var/lib/docker"}
    assert remapped_root(info, tmp_path / "subuid", tmp_path / "subgid") == (231072, 300000)
    with pytest.raises(InfraError, match="remaps user namespaces"):
        remapped_root(info, tmp_path / "none", tmp_path / "none")


class _Client:
    """A docker client double: `info()` only (the factory reads nothing else here)."""

    def __init__(self, info: dict, url: str):
        self._info, self.api = info, type("Api", (), {"base_url": url})()

    def info(self) -> dict:
        return self._info


def test_isolation_and_the_one_warning_of_an_engine_without_remapping(caplog):
    plain = {"SecurityOptions": ["name=seccomp,profile=default"], "DockerRootDir": "/var/lib/docker",
             "Driver": "overlay2"}
    url = f"http+docker://test-{uuid.uuid4().hex}"
    with caplog.at_level(logging.WARNING, logger="envpool.docker_sandbox"):
        for _ in range(2):
            f = DockerSandboxFactory(client=_Client(plain, url))
            assert f.host_mount_owner() is None
    warned = [r.getMessage() for r in caplog.records if "user namespaces" in r.getMessage()]
    assert len(warned) == 1 and "root in containers is root on the host" in warned[0] and "SWEMINT_USERNS=1 bash scripts/setup.sh" in warned[0]
    assert "userns-remap" in warned[0] and "SWEMINT_USERNS=1" in warned[0]
    assert f.isolation()["user_namespaces"] is False and f.isolation()["root_uid"] == 0
    caplog.clear()
    remapped = DockerSandboxFactory(client=_Client(USERNS_INFO, url + "-remapped"))
    with caplog.at_level(logging.WARNING, logger="envpool.docker_sandbox"):
        assert remapped.host_mount_owner() == (165536, 165536)
    assert not caplog.records
    assert remapped.isolation() == {"user_namespaces": True, "root_uid": 165536, "disk_quota": False,
                                    "security_options": USERNS_INFO["SecurityOptions"]}


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
def test_hand_over_reowns_the_tree_but_never_follows_links(tmp_path):
    d = tmp_path / "cache"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "f").write_text("x")
    outside = tmp_path / "outside"
    outside.write_text("host file")
    os.symlink(outside, d / "link")
    assert hand_over(d, 231072, 231073) == 4  # cache, sub, f, link
    assert all((os.lstat(p).st_uid, os.lstat(p).st_gid) == (231072, 231073)
               for p in (d, d / "sub", d / "sub" / "f", d / "link"))
    assert os.stat(outside).st_uid == 0  # the link's target is not the container's
    assert hand_over(d, 231072, 231073) == 0


def test_rows_record_the_engines_isolation(tmp_path, monkeypatch):
    import agents.minter as minter
    from envpool.fake import FakeSandboxFactory
    from pipeline.demo import make_demo
    from pipeline.export import make_row, userns_line
    from pipeline.instances import load_instances

    mirrors, instances = make_demo(tmp_path / "demo")
    inst = load_instances(instances).instances[0]
    iso = {"user_namespaces": True, "root_uid": 165536, "disk_quota": False, "security_options": ["name=userns"]}
    cfg = MintConfig(workdir=tmp_path / "w", run_id="t")
    res = minter.mint_instance(inst, mirrors / inst.repo.replace("/", "+") / "repo", cfg,
                               factory=FakeSandboxFactory(run_id="t", isolation=iso))
    assert res.isolation == iso
    row = make_row(res, inst, cfg.workdir)
    assert row["isolation"] and '"user_namespaces": true' in row["isolation"]
    assert userns_line([iso, {"user_namespaces": False}, {}]) == (
        "Built with user namespaces (root in build containers is not root on the host): 1 of 3 rows; "
        "1 on an engine without them; unknown for 1.")


# -- a real engine that remaps user namespaces -------------------------------------------------

def _refused() -> str | None:
    """Why the kernel or this host cannot give a dockerd user namespaces here, None if it can."""
    mx = Path("/proc/sys/user/max_user_namespaces")
    if mx.exists() and mx.read_text().strip() == "0":
        return "the kernel refuses user namespaces (/proc/sys/user/max_user_namespaces is 0)"
    clone = Path("/proc/sys/kernel/unprivileged_userns_clone")
    if os.geteuid() != 0:
        if clone.exists() and clone.read_text().strip() == "0":
            return "not root and the kernel refuses unprivileged user namespaces"
        return "starting a second dockerd needs root"
    if not shutil.which("dockerd") or not shutil.which("ip"):
        return "dockerd or ip is not installed"
    return None


def _mounts_under(path: str) -> list[str]:
    with open("/proc/self/mounts") as f:
        return [line.split()[1] for line in f if line.split()[1].startswith(path)]


@pytest.fixture(scope="module")
def userns_engine(docker_client, python_image):
    """(client, (uid, gid) from scripts/dockremap_ids.sh, image) of a second dockerd with
    --userns-remap=default; stopped (its pid only) and its folders, mounts and bridge removed."""
    import docker

    reason = _refused()
    if reason:
        pytest.skip(reason)
    out = subprocess.run(["bash", str(ROOT / "scripts" / "dockremap_ids.sh")], capture_output=True, text=True,
                         check=True).stdout.split()
    ids = (int(out[0]), int(out[1]))
    tag = uuid.uuid4().hex[:6]
    base = tempfile.mkdtemp(prefix=f"swm-uns-{tag}-", dir="/tmp")
    os.chmod(base, 0o711)  # the remapped root must be able to pass through to its data root
    sock, bridge = f"{base}/docker.sock", f"swmuns{tag}"
    subnet = f"10.{200 + int(tag[:2], 16) % 50}.{int(tag[2:4], 16)}"
    subprocess.run(["ip", "link", "add", "name", bridge, "type", "bridge"], check=True)
    proc = None
    try:
        subprocess.run(["ip", "addr", "add", f"{subnet}.1/24", "dev", bridge], check=True)
        subprocess.run(["ip", "link", "set", bridge, "up"], check=True)
        log = open(f"{base}/dockerd.log", "w")  # noqa: SIM115 - closed with the engine
        proc = subprocess.Popen(
            ["dockerd", "--userns-remap=default", f"--data-root={base}/data", f"--exec-root={base}/exec",
             f"--pidfile={base}/docker.pid", f"-H=unix://{sock}", f"--bridge={bridge}", "--iptables=false",
             "--ip-masq=false", "--containerd-namespace=swemint-userns", "--containerd-plugins-namespace="
             "swemint-userns-plugins", "--storage-driver=overlay2"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        client = None
        for _ in range(90):
            if proc.poll() is not None:
                break
            try:
                client = docker.DockerClient(base_url=f"unix://{sock}", timeout=600)
                client.ping()
                break
            except Exception:  # noqa: BLE001 - not up yet
                client = None
                time.sleep(1)
        if client is None:
            pytest.fail(f"the userns dockerd did not come up: {Path(base, 'dockerd.log').read_text()[-2000:]}")
        t0 = time.monotonic()
        load = subprocess.run(f"docker save {python_image} | docker -H unix://{sock} load -q", shell=True,
                              capture_output=True, text=True)
        assert load.returncode == 0, load.stderr
        print(f"\nloaded {python_image} into the userns engine in {time.monotonic() - t0:.0f}s")
        yield client, ids, python_image
    finally:
        if proc is not None:
            try:
                for c in docker.DockerClient(base_url=f"unix://{sock}").containers.list(all=True):
                    c.remove(force=True)
            except Exception:  # noqa: BLE001 - the engine is gone already
                pass
            proc.send_signal(signal.SIGTERM)  # only the pid started here
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        for m in sorted(_mounts_under(base), key=len, reverse=True):
            subprocess.run(["umount", "-l", m], check=False)
        subprocess.run(["ip", "link", "del", bridge], check=False)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.docker
@pytest.mark.slow
def test_root_in_a_remapped_container_is_a_subordinate_uid_on_the_host(userns_engine, tmp_path):
    client, (uid, gid), image = userns_engine
    factory = DockerSandboxFactory(run_id=f"test-userns-{SESSION}", client=client)
    iso = factory.isolation()
    assert iso["user_namespaces"] is True and iso["root_uid"] == uid != 0
    cfg = MintConfig(workdir=tmp_path / "w", cache={"scope": "repository"})
    mounts = cache_mounts(cfg, "o__r-1", "o/r")
    host = Path(next(iter(mounts)))
    with factory.sandbox(SandboxSpec(image=image, network="none", cache_mounts=mounts, run_id=f"test-userns-{SESSION}")) as sb:
        r = sb.exec("id -u && touch /root/.cache/uv/made-here && cp /bin/sh /root/.cache/uv/sh && "
                    "chmod 4755 /root/.cache/uv/sh && cat /proc/self/uid_map")
        assert r.ok, r.output
        assert r.output.split()[0] == "0"  # root inside
        assert f"0 {uid} 65536" in " ".join(r.output.split())
    made = os.stat(host / "made-here")
    assert (made.st_uid, made.st_gid) == (uid, gid) and made.st_uid != 0  # not host root
    assert os.stat(host / "sh").st_uid == uid  # a setuid file it leaves is setuid to nobody's uid
    assert stat.S_IMODE(os.stat(host).st_mode) == 0o700
    cache_root = os.stat(cfg.workdir / "cache")  # the way there stays host root's, private
    assert cache_root.st_uid == 0 and stat.S_IMODE(cache_root.st_mode) == 0o700
    release_cache(cfg, "o__r-1", "o/r")
    assert not os.stat(host / "sh").st_mode & stat.S_ISUID


CALC = "def add(a, b):\n    return a + b\n"
TESTS = ("import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
         "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
         "    def test_zero(self):\n        self.assertEqual(add(1, 0), 1)\n")
PYPROJECT = ('[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n\n'
             '[project]\nname = "calc"\nversion = "0.1"\n')
BACKEND = r'''"""A PEP 517 backend of a few lines: the image has no wheel package and there is no network."""
import base64, hashlib, os, zipfile

DIST = "calc-0.1.dist-info"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {"calc.py": open("calc.py", "rb").read(),
             DIST + "/METADATA": b"Metadata-Version: 2.1\nName: calc\nVersion: 0.1\n",
             DIST + "/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    name = "calc-0.1-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        z.writestr(DIST + "/RECORD", "\n".join(record + [DIST + "/RECORD,,"]) + "\n")
    return name
'''


@pytest.mark.docker
@pytest.mark.slow
def test_setup_and_test_run_with_the_cache_mount_on_a_remapped_engine(userns_engine, tmp_path):
    """The swemint path on that engine: the instance's uv cache mounted (handed to the remapped
    root), the repository laid out, a venv built and the package built and installed through uv
    (offline, in an isolated build environment; the repository's own build backend), the image
    committed, the tests run in a fresh container
    without network."""
    from agents.envimage import lay_out_repository
    from agents.gitrepo import GitTree

    client, (uid, _), image = userns_engine
    factory = DockerSandboxFactory(run_id=f"test-userns-{SESSION}", client=client)
    cfg = MintConfig(workdir=tmp_path / "w")  # scope: instance (the default)
    mounts = cache_mounts(cfg, "acme__calc-1", "acme/calc")
    host = Path(next(iter(mounts)))
    repo = tmp_path / "calc"
    repo.mkdir()
    for name, text in {"calc.py": CALC, "pyproject.toml": PYPROJECT, "backend.py": BACKEND, "test_calc.py": TESTS}.items():
        (repo / name).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    tree = GitTree(repo / ".git", sha, instance_id="acme__calc-1")
    spec = SandboxSpec(image=image, network="none", cache_mounts=mounts, run_id=f"test-userns-{SESSION}",
                       instance_id="acme__calc-1")
    with factory.sandbox(spec) as sb:
        lay_out_repository(sb, tree, sha)
        r = sb.exec("python3 -m venv /opt/venv && UV_CACHE_DIR=/root/.cache/uv uv pip install --offline "
                    "--python /opt/venv/bin/python /testbed", timeout=300)
        assert r.ok, r.output
        ref = sb.commit("swemint-test/userns", "calc")
    owners = {os.lstat(os.path.join(d, n)).st_uid for d, ds, fs in os.walk(host) for n in ds + fs}
    assert owners == {uid}  # uv wrote its cache as the remapped root, nothing as host root
    with factory.sandbox(SandboxSpec(image=ref, network="none", run_id=f"test-userns-{SESSION}")) as sb:
        r = sb.exec("cd / && /opt/venv/bin/python -c 'import calc; print(calc.__file__)' && "
                    "cd /testbed && /opt/venv/bin/python -m unittest -v test_calc 2>&1")
    assert r.ok, r.output
    assert "site-packages/calc.py" in r.output
    assert "test_add (test_calc.T" in r.output and "Ran 2 tests" in r.output and "OK" in r.output
    release_cache(cfg, "acme__calc-1", "acme/calc")
    assert not host.exists()
