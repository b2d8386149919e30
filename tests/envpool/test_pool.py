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
    reference to an image id; `registry` holds pushed references; `fail` makes push/pull report."""

    def __init__(self, tags: dict[str, str], registry: set[str] | None = None, fail: str | None = None):
        self.tags, self.registry, self.fail, self.calls = dict(tags), set(registry or ()), fail, []
        self.images, self.api = self, self

    def get(self, ref: str):
        if ref not in self.tags:
            raise LookupError(f"no such image: {ref}")
        owner = self

        class Image:
            def tag(self, repo: str, tag: str):
                owner.tags[f"{repo}:{tag}"] = owner.tags[ref]

        return Image()

    def remove(self, ref: str):
        self.tags.pop(ref)

    def push(self, repo: str, tag: str, stream: bool, decode: bool):
        self.calls.append(("push", f"{repo}:{tag}"))
        if self.fail:
            return iter([{"status": "Preparing"}, {"error": self.fail}])
        self.registry.add(f"{repo}:{tag}")
        return iter([{"status": "Pushed"}])

    def pull(self, repo: str, tag: str, stream: bool, decode: bool):
        self.calls.append(("pull", f"{repo}:{tag}"))
        if self.fail or f"{repo}:{tag}" not in self.registry:
            return iter([{"error": self.fail or "manifest unknown"}])
        self.tags[f"{repo}:{tag}"] = "sha256:pulled"
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
    loc = publish_image("swemint/env:a", "127.0.0.1:5000", client=builder)
    assert loc == "127.0.0.1:5000/swemint/env:a" and builder.registry == {loc}
    assert builder.tags == {"swemint/env:a": "sha256:built"}  # the push alias is dropped again
    pool = EnvPool(tmp_path / "pool.duckdb")
    pool.add(rec("a", 0).model_copy(update={"image_tag": "swemint/env:a", "location": loc}))
    record = pool.get("a")
    assert record.location == loc  # the pool records where the image lives
    other_node = FakeImages({}, registry=builder.registry)
    assert ensure_local(record, client=other_node) is True
    assert other_node.tags == {"swemint/env:a": "sha256:pulled"} and other_node.calls == [("pull", loc)]
    assert ensure_local(record, client=other_node) is False  # present now: no second pull
    assert other_node.calls == [("pull", loc)]


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
