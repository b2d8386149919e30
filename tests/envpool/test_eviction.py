"""A pool that fits its disk (issue 27, item 4): bytes counted by layer (unique vs shared), the
least recently used environments evicted first, images in use or named by published rows kept,
every eviction recorded so that a later reuse builds instead."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from envpool.diskuse import EMPTY_LAYER, chain_ids, freed_by, layers_from_history, usage
from envpool.eviction import evict_engine, plan_registry_evictions, registry_bytes, remove_run_images
from envpool.pool import EnvPool
from envpool.records import EnvRecord
from envpool.registry_http import Manifest

MB = 1_000_000


def test_chain_ids_identify_a_layer_by_its_content_and_everything_below_it():
    a, b = chain_ids(["sha256:a", "sha256:b"]), chain_ids(["sha256:x", "sha256:b"])
    assert a[0] == "sha256:a" and a[1] != b[1]  # the same diff on another parent is another layer
    assert chain_ids(["sha256:a", "sha256:b", "sha256:c"])[:2] == a


def test_layers_from_history_skip_empty_layers_and_give_up_when_they_do_not_line_up():
    diff = ["sha256:base", EMPTY_LAYER, "sha256:top"]
    hist = [{"Size": 30}, {"Size": 0}, {"Size": 0}, {"Size": 200}]  # newest first; a LABEL entry of 0 bytes
    got = layers_from_history(diff, hist)
    assert [n for _, n in got] == [200, 0, 30] and [c for c, _ in got] == chain_ids(diff)
    assert layers_from_history(["sha256:a", "sha256:b"], [{"Size": 5}]) is None


def test_usage_counts_each_layer_once_and_splits_unique_from_shared():
    base, py = ("L-base", 200 * MB), ("L-py", 800 * MB)
    images = {"tool": [base, py], "a1": [base, py, ("L-a1", 10 * MB)], "a2": [base, py, ("L-a1", 10 * MB), ("L-a2", 5 * MB)],
              "b1": [base, py, ("L-b1", 30 * MB)]}
    got = usage(images, {"a1": "o/a", "a2": "o/a", "b1": "o/b"})
    assert got["o/a"] == {"images": 2, "bytes": 1015 * MB, "unique": 15 * MB, "shared": 1000 * MB}
    assert got["o/b"]["unique"] == 30 * MB and got["other"]["unique"] == 0  # the toolchain is shared by all
    assert got["*"]["bytes"] == 1045 * MB  # every byte once
    assert freed_by(images, ["a1"]) == 0  # a2 is built on a1's layer
    assert freed_by(images, ["a1", "a2"]) == 15 * MB


class _Img:
    def __init__(self, iid, diff, tags):
        self.id, self.tags = iid, tags
        self.attrs = {"RootFS": {"Layers": diff}, "Size": 0}


class FakeEngine:
    """Images by tag with layer stacks; `df()` adds every distinct layer once; `busy` tags are
    used by a container (removal refused)."""

    def __init__(self, stacks: dict[str, list[tuple[str, int]]], busy=(), vanish=(), labels=None):
        self.stacks, self.busy, self.removed = dict(stacks), set(busy), []
        self.vanish = set(vanish)  # removed by another process right after the listing
        self.labels = labels or {}
        self.images = self
        self.api = _Api(self)

    def info(self):
        return {"Labels": ["swemint.node=n1"]}

    def df(self):
        return {"LayersSize": sum(dict(lay for s in self.stacks.values() for lay in s).values())}

    def get(self, ref):
        if ref not in self.stacks:
            raise LookupError(ref)
        return _Img(f"id-{ref}", [d for d, _ in self.stacks[ref]], [ref])

    def list(self):
        return [self.get(t) for t in self.stacks]

    def history(self, iid):
        ref = iid[3:]
        return [{"Size": n} for _, n in reversed(self.stacks[ref])]

    def remove(self, ref, force=False):
        ref = ref[3:] if ref.startswith("id-") else ref
        if ref in self.busy:
            raise RuntimeError("conflict: image is being used by running container")
        if ref in self.vanish or ref not in self.stacks:
            raise _NotFound(f"404 Client Error: Not Found (\"No such image: {ref}\")")
        del self.stacks[ref]
        self.removed.append(ref)


class _NotFound(Exception):
    class response:  # noqa: N801 - docker.errors.ImageNotFound's shape: e.response.status_code
        status_code = 404


class _Api:
    """The low-level client: `images()` lists without inspecting; `history`."""

    def __init__(self, eng):
        self.eng = eng

    def images(self, filters=None):
        want = (filters or {}).get("label")
        out = []
        for n, t in enumerate(self.eng.stacks):
            labels = self.eng.labels.get(t, {})
            if want and labels.get(want.split("=")[0]) != want.split("=", 1)[1]:
                continue
            out.append({"Id": f"id-{t}", "RepoTags": [t], "Size": sum(b for _, b in self.eng.stacks[t]), "Created": n})
        return out

    def history(self, iid):
        return self.eng.history(iid)


def _stacks():
    base = [("sha256:base", 500 * MB)]
    return {"tool": base, **{f"env:{k}": [*base, (f"sha256:{k}", n * MB)] for k, n in
                             (("a", 100), ("b", 100), ("c", 100), ("d", 100))}}


def _cands(*keys):
    return [{"instance_id": k, "image_tag": f"env:{k}", "image_id": f"id-env:{k}"} for k in keys]


def test_the_engine_evicts_least_recently_used_first_until_it_fits():
    eng = FakeEngine(_stacks())
    assert eng.df()["LayersSize"] == 900 * MB
    got = evict_engine(_cands("c", "a", "b", "d"), budget=720 * MB, client=eng)
    assert [e["instance_id"] for e in got["evicted"]] == ["c", "a"] and eng.removed == ["env:c", "env:a"]
    assert all(e["bytes"] == 100 * MB for e in got["evicted"])
    assert got["node"] == "n1" and got["before"] == 900 * MB and got["after"] == 700 * MB


def test_images_in_use_protected_or_not_the_pools_stay():
    eng = FakeEngine(_stacks(), busy={"env:c"})
    cands = _cands("c", "a", "b", "d")
    cands[2]["image_id"] = "id-of-another-image"  # the tag now names something the pool did not record
    got = evict_engine(cands, budget=780 * MB, protect={"id-env:a"}, client=eng)
    assert [e["instance_id"] for e in got["evicted"]] == ["d"]  # still over budget: nothing else may go
    assert "env:c" in eng.stacks and "env:a" in eng.stacks and "env:b" in eng.stacks
    under = evict_engine(_cands("a"), budget=10**12, client=FakeEngine(_stacks()))
    assert under["evicted"] == []  # under budget: nothing happens


def test_a_dry_run_lists_what_a_real_run_evicts_and_a_budget_of_zero_evicts_all_it_may():
    eng = FakeEngine(_stacks())
    plan = evict_engine(_cands("c", "a", "b", "d"), budget=720 * MB, client=eng, dry_run=True)
    assert eng.removed == [] and plan["dry_run"] and plan["after"] == 700 * MB
    real = evict_engine(_cands("c", "a", "b", "d"), budget=720 * MB, client=eng)
    assert [e["instance_id"] for e in plan["evicted"]] == [e["instance_id"] for e in real["evicted"]] == ["c", "a"]
    zero = evict_engine(_cands("b", "d"), budget=0, client=FakeEngine(_stacks()), dry_run=True)
    assert [e["instance_id"] for e in zero["evicted"]] == ["b", "d"]  # 0 is a budget, not "none"


def test_an_image_removed_by_another_process_meanwhile_is_skipped_and_the_rest_goes():
    eng = FakeEngine(_stacks(), vanish={"env:c"})
    got = evict_engine(_cands("c", "a", "b"), budget=650 * MB, client=eng)
    assert [e["instance_id"] for e in got["evicted"]] == ["a", "b"] and eng.removed == ["env:a", "env:b"]


def test_a_runs_images_are_removed_and_no_other_runs():
    labels = {"env:a": {"swemint.run": "wd-1"}, "env:b": {"swemint.run": "wd-1"}, "env:c": {"swemint.run": "wd-2"},
              "env:d": {"swemint.run": "wd-1"}}
    eng = FakeEngine(_stacks(), vanish={"env:d"}, busy={"env:b"}, labels=labels)
    plan = remove_run_images("wd-1", dry_run=True, client=eng)
    assert eng.removed == [] and sorted(t for i in plan["removed"] for t in i["tags"]) == ["env:a", "env:b", "env:d"]
    got = remove_run_images("wd-1", client=eng)
    assert eng.removed == ["env:a"] and [i["tags"] for i in got["removed"]] == [["env:a"]]
    assert [i["tags"] for i in got["kept"]] == [["env:b"]] and "being used" in got["kept"][0]["why"]  # d: gone meanwhile
    assert "env:c" in eng.stacks and "tool" in eng.stacks  # another run's image, a toolchain (no label)


def _m(repo, digest, *blobs):
    return Manifest(repo=repo, digest=digest, config="cfg-" + digest, layers=list(blobs))


def test_the_registry_keeps_what_published_rows_name_unless_told():
    base = ("blob-base", 400)
    ms = [_m("swemint/python", "d-tool", base), _m("swemint/env", "d-old", base, ("b-old", 50)),
          _m("swemint/env", "d-a", base, ("b-a", 60)), _m("swemint/env", "d-b", base, ("b-b", 70))]
    assert registry_bytes(ms) == 580
    named = {"d-a": "o__r-1", "d-b": "o__r-2"}
    plan = plan_registry_evictions(ms, {"swemint/env"}, named, ["d-b", "d-a"], budget=450)
    assert [(m.digest, n) for m, n in plan] == [("d-old", 50)]  # only the manifest no row names
    plan = plan_registry_evictions(ms, {"swemint/env"}, named, ["d-b", "d-a"], budget=460, evict_published=True)
    assert [(m.digest, n) for m, n in plan] == [("d-old", 50), ("d-b", 70)]  # then least recently used
    assert plan_registry_evictions(ms, {"swemint/env"}, named, [], budget=10_000) == []
    # a toolchain (not an environment repository) is never a candidate
    assert all(m.repo == "swemint/env" for m, _ in plan_registry_evictions(ms, {"swemint/env"}, {}, [], budget=0))


def _rec(iid, location="local"):
    return EnvRecord(instance_id=iid, repo="o/r", base_commit="a" * 40, image_tag=f"swemint/env:{iid}",
                     image_id=f"sha256:{iid}", location=location)


def test_pool_usage_orders_by_last_use_and_eviction_is_recorded(tmp_path):
    pool = EnvPool(tmp_path / "pool.duckdb")
    for iid in ("o__r-1", "o__r-2", "o__r-3"):
        pool.add(_rec(iid, "127.0.0.1:5000/swemint/env@sha256:" + iid[-1] * 64 if iid == "o__r-3" else "local"))
    t0 = datetime.now(timezone.utc)
    pool.touch("o__r-1", t0 + timedelta(hours=1))  # reused later than the others were added
    assert [r.instance_id for r, _ in pool.lru()] == ["o__r-2", "o__r-3", "o__r-1"]
    # a local-only environment evicted: it leaves the pool, so reuse builds instead
    pool.record_eviction(pool.get("o__r-2"), "engine:n1", 123, "engine over budget", kept_in_pool=False)
    assert pool.get("o__r-2") is None and [m.record.instance_id for m in pool.find("o/r")] == ["o__r-1", "o__r-3"]
    # a registry copy stays pullable: the row stays, the eviction is recorded all the same
    pool.record_eviction(pool.get("o__r-3"), "engine:n1", 456, "engine over budget", kept_in_pool=True)
    assert pool.get("o__r-3") is not None
    ev = pool.evictions()
    assert [(e["instance_id"], e["place"], e["bytes"], e["kept_in_pool"]) for e in ev] == [
        ("o__r-2", "engine:n1", 123, False), ("o__r-3", "engine:n1", 456, True)]
    assert EnvPool(tmp_path / "pool.duckdb", read_only=True).evictions()[0]["image_tag"] == "swemint/env:o__r-2"
