"""A hand-written rule's repair teaches a lesson bound to its rule (`Provenance.rule`, fix of rv86's
test_rule_package_lesson.py): (a) it serves the repository that taught it only -- the rule itself
serves the others; (b) it is neither served nor acted on once its rule is dropped below the
floor or leaves the data; (c) it is scored like any lesson, and the rule keeps its own count."""

from __future__ import annotations

import json

from agents.memory.api import ExperienceMemory, MemoryConfig
from agents.memory.before import proactive
from agents.memory.experience import Provenance
from agents.memory.knowledge import rule_entry_id
from agents.memory.repo_context import RepoContext
from agents.models import StepRecord

OUT = "src/x.c:3:10: fatal error: frobnic.h: No such file or directory\ncompilation terminated."
RULE = rule_entry_id("diagnosis", "missing-header")


def _ctx(repo: str, **kw) -> RepoContext:
    return RepoContext(ecosystem="c", toolchain="12", era=2022, repo=repo, build_systems=["make"], files=["Makefile"],
                       commands=["make"], **kw)


def _traj(repo: str, rule: str = "diagnosis:missing-header") -> list[StepRecord]:
    return [StepRecord(agent="memory", rule="context", note=_ctx(repo).model_dump_json()),
            StepRecord(agent="execution", rule="recipe:c:0", command="make", exit_code=1, output_excerpt=OUT),
            StepRecord(agent="execution", rule=rule, command="fix", exit_code=0,
                       note="repair: " + json.dumps([{"kind": "apt", "packages": ["libfrobnic-dev"]}])),
            StepRecord(agent="execution", rule="recipe:c:0", command="make", exit_code=0)]


def _bound(mem: ExperienceMemory) -> list:
    return [e for e in mem.store.all("c") if e.provenance.rule]


def _served(mem: ExperienceMemory, ctx: RepoContext | None) -> set[str]:
    """The ids of the rule-bound lessons any consultation hands out for `ctx`."""
    ids = {e.id for e in _bound(mem)}
    got = set()
    if ctx is not None:
        got |= {h.experience.id for h in mem.retrieve(ctx, k=50)}
        got |= {h.experience.id for h in mem.retriever.move_lessons(ctx)}
    got |= {h.experience.id for h in mem.retrieve_for_error(OUT, "c", k=50, ctx=ctx)}
    got |= {p.experience_id for p in mem.actions_for(OUT, "c", k=10, signature_only=False, ctx=ctx)}
    return got & ids


def test_the_rule_is_scored_once_and_the_lesson_is_bound_to_rule_and_repository():
    mem = ExperienceMemory.open(MemoryConfig(path=None))
    mem.learn(_traj("a/b"), "c", "a__b-1", repo="a/b")
    [lesson] = _bound(mem)
    assert lesson.provenance.rule == RULE and lesson.context.repos == ["a/b"] and lesson.provenance.source == "learned"
    assert (lesson.times_applied, lesson.times_worked) == (1, 1)
    assert [a.model_dump() for a in lesson.actions] == [{"kind": "apt", "packages": ["libfrobnic-dev"]}]
    assert [e for e in mem.store.all("c") if e.provenance.source == "learned" and not e.provenance.rule] == []
    rule = mem.store.get(RULE)
    assert (rule.times_applied, rule.times_worked) == (1, 1)
    # served to a/b: before planning (proactive at 1/1, same repository) and after the failure
    hits = {h.experience.id: h for h in mem.retrieve(_ctx("a/b"), k=50)}
    assert lesson.id in hits and proactive(hits[lesson.id], 0.66)
    assert _served(mem, _ctx("a/b")) == {lesson.id}


def test_a_rule_bound_lesson_is_never_served_to_another_repository():
    """(a): not even to one that declares the very package and builds with the same system (an
    unbound lesson would match on that dependency: `retrieve.learned_match`), nor to a caller
    that knows only the error; another repository's own repair teaches it its own lesson."""
    mem = ExperienceMemory.open(MemoryConfig(path=None))
    mem.learn(_traj("a/b"), "c", "a__b-1", repo="a/b")
    [lesson] = _bound(mem)
    other = _ctx("c/d", declared={"libfrobnic-dev": "", "frobnic": ""})
    assert _served(mem, other) == set()
    assert _served(mem, None) == set()
    # a use scored from another repository's run does not make it serve that repository
    mem.record_outcome(lesson.id, True, "c__d-9", repo="c/d")
    assert mem.store.get(lesson.id).context.repos == ["a/b"]
    assert _served(mem, other) == set()
    # c/d's own repair by the rule: its own lesson, a/b's untouched
    mem.learn(_traj("c/d"), "c", "c__d-1", repo="c/d")
    mine = {tuple(e.context.repos): e for e in _bound(mem)}
    assert set(mine) == {("a/b",), ("c/d",)}
    assert mine[("a/b",)].times_applied == 2  # the record_outcome above only
    assert _served(mem, other) == {mine[("c/d",)].id}
    assert _served(mem, _ctx("a/b")) == {lesson.id}
    assert mem.store.get(RULE).times_applied == 2  # the rule: once per instance that used it


def test_a_rule_bound_lesson_stops_when_its_rule_is_dropped_below_the_floor():
    """(b): the rule's failures drop it (floor 0.34 after 4 uses); the lesson bound to it is then
    neither retrieved, proactive, nor a plan after the failure, and is listed as dropped (the
    loop's `helper.dropped`), though its own counters are perfect."""
    mem = ExperienceMemory.open(MemoryConfig(path=None))
    mem.learn(_traj("a/b"), "c", "a__b-1", repo="a/b")
    [lesson] = _bound(mem)
    ctx = _ctx("a/b")
    assert _served(mem, ctx) == {lesson.id}
    _ = mem.retriever  # built now: the rule's scores update it in place (`Retriever.replace`)
    for n in range(8):  # 1/1 from a/b's repair, then 8 failures: (1 + 1 + 2) / (9 + 2 + 2) < 0.34
        mem.record_outcome(RULE, False, f"x__y-{n}", repo="x/y")
    assert mem.store.get(RULE).dropped(0.34, 4)
    assert mem.store.get(lesson.id).reliability >= 0.66
    assert _served(mem, ctx) == set()
    assert not [h for h in mem.retrieve(ctx, k=50) if proactive(h, 0.66) and h.experience.id == lesson.id]
    assert lesson.id in {e.id for e in mem.dropped_entries()}
    assert mem.dropped_rules() == frozenset({"missing-header"})
    # the same in a retriever built afresh from the store
    mem.store.add(mem.store.get(lesson.id).model_copy(update={"id": "learned-c-copy-of-bound"}))
    assert _served(mem, ctx) == set()


def test_a_rule_bound_lesson_stops_when_its_rule_left_the_data():
    mem = ExperienceMemory.open(MemoryConfig(path=None))
    mem.learn(_traj("a/b"), "c", "a__b-1", repo="a/b")
    [lesson] = _bound(mem)
    orphan = lesson.model_copy(update={"id": "learned-c-orphan",
                                       "provenance": Provenance(source="learned", rule="rule-diag-no-such-rule")})
    mem.store.add(orphan)
    assert _served(mem, _ctx("a/b")) == {lesson.id}
    assert "learned-c-orphan" in {e.id for e in mem.dropped_entries()}


def test_a_rule_bound_lesson_is_scored_like_any_lesson():
    """(c): its use before planning is scored on it (a failed round counts against it), the
    rule's counters are untouched by that use; its own failures drop it while the rule stays."""
    mem = ExperienceMemory.open(MemoryConfig(path=None))
    mem.learn(_traj("a/b"), "c", "a__b-1", repo="a/b")
    [lesson] = _bound(mem)
    rule_before = mem.store.get(RULE)
    for n in range(3):
        score = StepRecord(agent="memory", rule=f"score:{lesson.id}", exit_code=1,
                           note=json.dumps({"stage": "before-plan", "round": 1, "outcome": "failed"}))
        mem.learn([score], "c", f"a__b-{n + 2}", repo="a/b")
    e = mem.store.get(lesson.id)
    assert (e.times_applied, e.times_worked) == (4, 1) and e.dropped(0.34, 4)
    assert _served(mem, _ctx("a/b")) == set()
    rule = mem.store.get(RULE)
    assert (rule.times_applied, rule.times_worked) == (rule_before.times_applied, rule_before.times_worked)
    assert not rule.dropped(0.34, 4)


def test_no_lesson_bound_to_a_rule_without_a_repository():
    mem = ExperienceMemory.open(MemoryConfig(path=None))
    mem.learn(_traj("a/b"), "c", "a__b-1", repo="")
    assert _bound(mem) == []
    assert mem.store.get(RULE).times_applied == 1
