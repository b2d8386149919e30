"""The DuckDB environment pool: round trips, reuse order, one writer."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import duckdb
import pytest

from agents.models import EnvRecord
from envpool.pool import EnvPool

T0 = datetime(2022, 6, 1, tzinfo=timezone.utc)


def rec(iid: str, days: float | None, version: str | None = "1.0", repo: str = "octo/proj") -> EnvRecord:
    return EnvRecord(instance_id=iid, repo=repo, version=version, base_commit=f"c-{iid}",
                     commit_time=T0 + timedelta(days=days) if days is not None else None,
                     image_tag=f"swemint/env:{iid}", image_id=f"sha256:{iid}", size_bytes=3 * 1024**3,
                     interpreter="3.11", setup_script="pip install -e .", test_command="pytest -rA",
                     parser="pytest", route="debootstrap", installed_packages="a==1\nb==2")


def test_roundtrip_upsert_remove(tmp_path):
    pool = EnvPool(tmp_path / "pool.duckdb")
    r = rec("a", 0)
    pool.add(r)
    assert pool.get("a") == r  # every field, aware UTC time and big size included
    pool.add(r.model_copy(update={"image_tag": "swemint/env:new"}))
    assert [x.image_tag for x in pool.list()] == ["swemint/env:new"]
    pool.add(rec("b", None, version=None, repo="other/lib"))
    assert pool.get("b").commit_time is None and pool.get("b").version is None
    assert [x.instance_id for x in pool.list("other/lib")] == ["b"]
    assert pool.remove("a") and not pool.remove("a") and pool.get("a") is None


def test_find_orders_same_version_then_nearest_newer_then_rest(tmp_path):
    pool = EnvPool(tmp_path / "pool.duckdb")
    for r in [rec("old_far", -30, "0.9"), rec("old_near", -2, "0.9"), rec("new_far", 40, "2.0"),
              rec("new_near", 3, "2.0"), rec("same_v_old", -1, "1.0"), rec("same_v_new", 10, "1.0"),
              rec("no_time", None, "0.8"), rec("self", 0, "1.0"), rec("elsewhere", 1, "1.0", repo="x/y")]:
        pool.add(r)
    got = pool.find("octo/proj", "1.0", T0, exclude="self")
    assert [m.record.instance_id for m in got] == ["same_v_new", "same_v_old", "new_near", "new_far",
                                                   "old_near", "old_far", "no_time"]
    assert [m.tier for m in got][:4] == ["same_version", "same_version", "newer_commit", "newer_commit"]
    assert got[2].distance_s == 3 * 86400
    assert [m.record.instance_id for m in pool.find("octo/proj", commit_time=T0, limit=2)] == ["self", "new_near"]
    # bounds drop rows without a commit time; `before` is exclusive, `after` inclusive
    bounded = pool.find("octo/proj", after=T0 - timedelta(days=2), before=T0 + timedelta(days=10))
    assert {m.record.instance_id for m in bounded} == {"old_near", "same_v_old", "self", "new_near"}
    assert pool.find("nobody/here") == []


def test_naive_datetimes_are_utc(tmp_path):
    pool = EnvPool(tmp_path / "pool.duckdb")
    pool.add(rec("a", 1))
    got = pool.find("octo/proj", commit_time=datetime(2022, 6, 1))  # naive = UTC
    assert got[0].tier == "newer_commit" and got[0].distance_s == 86400


def test_read_only_never_writes(tmp_path):
    path = tmp_path / "pool.duckdb"
    assert EnvPool(path, read_only=True).list() == [] and not path.exists()  # no file created
    EnvPool(path).add(rec("a", 0))
    ro = EnvPool(path, read_only=True)
    assert [r.instance_id for r in ro.list()] == ["a"] and ro.get("a") is not None
    with pytest.raises(PermissionError, match="only the pipeline driver"):
        ro.add(rec("b", 0))
    with pytest.raises(PermissionError):
        ro.remove("a")


def test_older_table_gains_new_columns(tmp_path):
    path = tmp_path / "pool.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE environments (instance_id VARCHAR PRIMARY KEY, repo VARCHAR, version VARCHAR, "
                "base_commit VARCHAR, image_tag VARCHAR, added_at TIMESTAMPTZ)")
    con.close()
    pool = EnvPool(path)
    pool.add(rec("a", 0))
    assert pool.get("a").installed_packages == "a==1\nb==2"


def test_reader_waits_for_a_writer_in_another_process(tmp_path):
    import subprocess
    import sys
    import time

    path = tmp_path / "pool.duckdb"
    EnvPool(path).add(rec("a", 0))
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(path)!r}); "
                               "print('held', flush=True); time.sleep(1.5); c.close()"], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        with pytest.raises(duckdb.IOException):
            EnvPool(path, read_only=True, lock_wait=0.2).list()
        assert [r.instance_id for r in EnvPool(path, read_only=True, lock_wait=10).list()] == ["a"]
        assert time.monotonic() - t0 > 0.5  # it had to wait for the writer to let go
    finally:
        holder.wait(timeout=10)


class FakeImages:
    """Just enough of docker's `client.images` / `client.api` for push and pull: `tags` maps a
    reference to an image id; `registry` maps pushed `repo@digest` (and `repo:tag`) to image
    ids; `fail` makes push/pull report; `auths` records the auth_config of every call."""

    def __init__(self, tags: dict[str, str], registry: dict[str, str] | None = None, fail: str | None = None):
        self.tags, self.registry, self.fail, self.calls = dict(tags), dict(registry or {}), fail, []
        self.auths: list = []
        self.images, self.api = self, self

    def get(self, ref: str):
        if ref not in self.tags:
            raise LookupError(f"no such image: {ref}")
        owner = self

        class Image:
            id = owner.tags[ref]
            attrs: dict = {}

            def tag(self, repo: str, tag: str):
                owner.tags[f"{repo}:{tag}"] = owner.tags[ref]

        return Image()

    def remove(self, ref: str, force: bool = False):
        self.tags.pop(ref)

    def push(self, repo: str, tag: str, stream: bool, decode: bool, auth_config=None):
        self.calls.append(("push", f"{repo}:{tag}"))
        self.auths.append(auth_config)
        if self.fail:
            return iter([{"status": "Preparing"}, {"error": self.fail}])
        image_id = self.tags[f"{repo}:{tag}"]
        digest = "sha256:" + image_id.split(":")[-1].ljust(64, "0")[:64]
        self.registry[f"{repo}@{digest}"] = self.registry[f"{repo}:{tag}"] = image_id
        return iter([{"status": "Pushed"}, {"aux": {"Tag": tag, "Digest": digest, "Size": 1}}])

    def pull(self, repo: str, tag: str, stream: bool, decode: bool, auth_config=None):
        sep = "@" if tag.startswith("sha256:") else ":"
        self.calls.append(("pull", f"{repo}{sep}{tag}"))
        self.auths.append(auth_config)
        if self.fail or f"{repo}{sep}{tag}" not in self.registry:
            return iter([{"error": self.fail or "manifest unknown"}])
        self.tags[f"{repo}{sep}{tag}"] = self.registry[f"{repo}{sep}{tag}"]
        return iter([{"status": "Downloaded newer image"}])


def test_references_keep_the_registry_port_apart_from_the_tag():
    from envpool.pool import registry_reference, split_reference

    ref = registry_reference("127.0.0.1:5000/", "swemint/env:a__b-1-abc")
    assert ref == "127.0.0.1:5000/swemint/env:a__b-1-abc"
    assert split_reference(ref) == ("127.0.0.1:5000/swemint/env", "a__b-1-abc")
    assert split_reference("127.0.0.1:5000/swemint/env") == ("127.0.0.1:5000/swemint/env", "latest")


def test_publish_then_pull_on_a_node_without_the_image(tmp_path):
    from envpool.pool import ensure_local, publish_image

    builder = FakeImages({"swemint/env:a": "sha256:built"})
    auth = {"username": "u", "password": "p"}
    loc = publish_image("swemint/env:a", "127.0.0.1:5000", client=builder, auth=auth)
    assert loc.startswith("127.0.0.1:5000/swemint/env@sha256:") and loc in builder.registry  # by digest
    assert builder.tags == {"swemint/env:a": "sha256:built"}  # the push alias is dropped again
    assert builder.auths == [auth]
    pool = EnvPool(tmp_path / "pool.duckdb")
    pool.add(rec("a", 0).model_copy(update={"image_tag": "swemint/env:a", "location": loc,
                                            "image_id": "sha256:built"}))
    record = pool.get("a")
    assert record.location == loc  # the pool records where the image lives
    other_node = FakeImages({}, registry=builder.registry)
    assert ensure_local(record, client=other_node, auth=auth) is True
    assert other_node.tags == {"swemint/env:a": "sha256:built"} and other_node.calls == [("pull", loc)]
    assert other_node.auths == [auth]
    assert ensure_local(record, client=other_node) is False  # present now: no second pull
    assert other_node.calls == [("pull", loc)]


def test_a_pulled_image_that_is_not_the_pools_is_refused():
    from envpool.errors import InfraError
    from envpool.pool import ensure_local

    loc = "127.0.0.1:5000/swemint/env@sha256:" + "1" * 64
    node = FakeImages({}, registry={loc: "sha256:replaced"})
    record = rec("a", 0).model_copy(update={"image_tag": "swemint/env:a", "location": loc, "image_id": "sha256:ours"})
    with pytest.raises(InfraError, match="not the pool's"):
        ensure_local(record, client=node)
    assert node.tags == {}  # the pulled copy is gone again


def test_registry_credentials_come_from_named_variables_and_are_never_echoed(monkeypatch):
    from envpool.errors import InfraError
    from envpool.pool import registry_credentials

    assert registry_credentials(None, None) is None
    monkeypatch.setenv("REG_U", "alice")
    monkeypatch.setenv("REG_P", "hunter2")
    assert registry_credentials("REG_U", "REG_P") == {"username": "alice", "password": "hunter2"}
    monkeypatch.delenv("REG_P")
    with pytest.raises(InfraError, match="REG_P is not set") as e:
        registry_credentials("REG_U", "REG_P")
    assert "alice" not in str(e.value)


def test_registry_failures_are_infra_errors():
    from envpool.errors import InfraError
    from envpool.pool import ensure_local, publish_image

    with pytest.raises(InfraError, match="connection refused"):
        publish_image("swemint/env:a", "127.0.0.1:5000", client=FakeImages({"swemint/env:a": "x"},
                                                                           fail="connection refused"))
    with pytest.raises(InfraError, match="pushing swemint/env:gone"):
        publish_image("swemint/env:gone", "127.0.0.1:5000", client=FakeImages({}))
    local_only = rec("a", 0).model_copy(update={"image_tag": "swemint/env:a"})
    with pytest.raises(InfraError, match="not on this node"):
        ensure_local(local_only, client=FakeImages({}))
    with pytest.raises(InfraError, match="manifest unknown"):
        ensure_local(local_only.model_copy(update={"location": "127.0.0.1:5000/swemint/env:a"}),
                     client=FakeImages({}))


@pytest.fixture
def registry(tmp_path):
    """Debian's docker-registry on a free loopback port with htpasswd auth (user swemint /
    s3cret); yields "127.0.0.1:PORT"; stopped by its pid."""
    import crypt
    import shutil
    import signal
    import socket
    import subprocess
    import time
    import urllib.error
    import urllib.request

    binary = shutil.which("docker-registry")
    if binary is None:
        pytest.skip("docker-registry is not installed (apt-get install docker-registry)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "htpasswd").write_text(f"swemint:{crypt.crypt('s3cret', crypt.mksalt(crypt.METHOD_BLOWFISH))}\n")
    (tmp_path / "reg.yml").write_text(
        f"version: 0.1\nstorage: {{filesystem: {{rootdirectory: {tmp_path}/data}}, delete: {{enabled: true}}}}\n"
        f"http: {{addr: 127.0.0.1:{port}}}\nauth: {{htpasswd: {{realm: swemint, path: {tmp_path}/htpasswd}}}}\n")
    proc = subprocess.Popen([binary, "serve", str(tmp_path / "reg.yml")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(50):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1)
            except urllib.error.HTTPError:
                break  # 401: up
            except OSError:
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        os_kill = __import__("os").killpg
        os_kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


@pytest.mark.docker
def test_registry_push_with_credentials_pull_by_digest_and_refuse_a_replaced_image(registry, docker_client,
                                                                                   debian_image):
    """Issue 11: images were pushed without credentials and pulled back by tag with no check of
    the pool's image id, so whoever could push to the registry could replace an environment."""
    import uuid

    from envpool.errors import InfraError
    from envpool.pool import ensure_local, publish_image

    auth = {"username": "swemint", "password": "s3cret"}
    name = f"swemint-test/reg-{uuid.uuid4().hex[:8]}"
    made = []

    def image(tag: str, marker: str) -> str:
        c = docker_client.containers.run(debian_image, ["sh", "-c", f"echo {marker} > /marker"], detach=True,
                                         labels={"swemint.run": "test-registry"})
        c.wait()
        img = c.commit(repository=name, tag=tag)
        c.remove()
        made.append(img.id)
        return img.id

    try:
        ours = image("a", "ours")
        with pytest.raises(InfraError):  # anonymous pushes are refused by this registry
            publish_image(f"{name}:a", registry, client=docker_client)
        loc = publish_image(f"{name}:a", registry, client=docker_client, auth=auth)
        assert "@sha256:" in loc
        record = EnvRecord(instance_id="a", repo="o/r", base_commit="c", image_tag=f"{name}:a", image_id=ours,
                           location=loc)
        docker_client.images.remove(f"{name}:a")
        assert ensure_local(record, client=docker_client, auth=auth) is True
        assert docker_client.images.get(f"{name}:a").id == ours
        # someone replaces the tag in the registry with other content
        other = image("evil", "evil")
        docker_client.images.get(f"{name}:evil").tag(f"{registry}/{name}", "a")
        docker_client.images.push(f"{registry}/{name}", tag="a", auth_config=auth)
        docker_client.images.remove(f"{registry}/{name}:a")
        docker_client.images.remove(f"{name}:a")
        assert ensure_local(record, client=docker_client, auth=auth) is True  # by digest: still ours
        assert docker_client.images.get(f"{name}:a").id == ours
        by_tag = record.model_copy(update={"location": f"{registry}/{name}:a"})  # a pool of the old kind
        docker_client.images.remove(f"{name}:a")
        with pytest.raises(InfraError, match="not the pool's"):
            ensure_local(by_tag, client=docker_client, auth=auth)
        assert other != ours
    finally:
        for ref in [i for img in docker_client.images.list(name=name) for i in img.tags] + \
                   [i for img in docker_client.images.list(name=f"{registry}/{name}") for i in img.tags]:
            docker_client.images.remove(ref, force=True)
        for img_id in made:
            try:
                docker_client.images.remove(img_id, force=True)
            except Exception:
                pass
