"""The DuckDB experience store: round trip, persistence, counters, filters."""

from __future__ import annotations

import pytest

from agents.memory.api import ExperienceMemory, MemoryConfig
from agents.memory.experience import Experience, Provenance
from agents.memory.experience_store import DuplicateExperience, ExperienceStore, UnknownExperience


def entry(id: str, eco: str = "python", negative: bool = False) -> Experience:
    return Experience(id=id, problem=f"problem text of {id}", solution="a fix", ecosystem=eco,
                      error_signature=r"BoomError", negative=negative,
                      actions=[{"kind": "uv_lift", "package": "numpy"}, {"kind": "env", "name": "A", "value": "1"}],
                      provenance=Provenance(source="learned", instance_ids=["i-1"]))


def test_round_trip_through_a_file(tmp_path):
    path = tmp_path / "sub" / "mem.duckdb"
    with ExperienceStore(path) as store:
        store.add(entry("a"))
        store.add(entry("b", "javascript"))
        assert store.get("a") == entry("a")
        assert store.get("missing") is None
    with ExperienceStore(path, read_only=True) as store:
        assert store.get("a") == entry("a") and len(store) == 2
        assert [e.id for e in store.all()] == ["a", "b"]


def test_add_refuses_duplicates_and_upsert_replaces():
    store = ExperienceStore()
    store.add(entry("a"))
    with pytest.raises(DuplicateExperience):
        store.add(entry("a"))
    changed = entry("a").model_copy(update={"solution": "another fix"})
    store.upsert(changed)
    assert store.get("a").solution == "another fix" and len(store) == 1


def test_record_outcome_counts_and_remembers_instances():
    store = ExperienceStore()
    store.add(entry("a"))
    store.record_outcome("a", worked=True, instance_id="i-2")
    e = store.record_outcome("a", worked=False, instance_id="i-2")
    assert (e.times_applied, e.times_worked) == (2, 1) and e.provenance.instance_ids == ["i-1", "i-2"]
    assert store.get("a") == e
    assert e.reliability == pytest.approx((1 + 1) / (2 + 2))
    with pytest.raises(UnknownExperience):
        store.record_outcome("nope", worked=True)


def test_reloading_seeds_keeps_counters(seeds):
    from agents.memory.knowledge import rule_entries

    store = ExperienceStore()
    assert store.load_seed() == len(seeds) + len(rule_entries())
    store.record_outcome(seeds[0].id, worked=True, instance_id="x")
    store.load_seed()
    e = store.get(seeds[0].id)
    assert (e.times_applied, e.times_worked, e.provenance.instance_ids) == (1, 1, ["x"])
    assert len(store) == len(seeds) + len(rule_entries())


def test_filters_by_family_and_negative():
    store = ExperienceStore()
    store.add_many([entry("p"), entry("j", "javascript"), entry("t", "typescript"), entry("x", "any"),
                    entry("n", negative=True), entry("c", "cpp")])
    assert [e.id for e in store.all("typescript")] == ["j", "t", "x"]
    assert [e.id for e in store.all("python", include_negative=False)] == ["p", "x"]
    assert [e.id for e in store.all("c")] == ["c", "x"]
    assert store.counts() == {"any": 1, "cpp": 1, "javascript": 1, "python": 2, "typescript": 1}


def test_counters_must_be_consistent():
    with pytest.raises(ValueError):
        entry("a").model_copy(update={}).model_validate(entry("a").model_dump() | {"times_worked": 3})


def test_memory_persists_learned_entries_across_opens(tmp_path):
    cfg = MemoryConfig(path=tmp_path / "m.duckdb")
    mem = ExperienceMemory.open(cfg)
    n = len(mem.store)
    mem.store.add(entry("learned-python-abc"))
    mem.close()
    mem = ExperienceMemory.open(cfg)
    try:
        assert len(mem.store) == n + 1 and mem.store.get("learned-python-abc") is not None
    finally:
        mem.close()
