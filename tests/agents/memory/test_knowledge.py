"""Issue 30: one knowledge store (rules that are data, seeds and lessons are entries of one kind),
retrieval specific to the project (no lesson reaches another repository by a shared word), and
every use scored so that a bad entry falls below the floor."""

from __future__ import annotations

import json

import pytest

from agents.diagnosis import DROPPED, diagnose, load_rules
from agents.memory.api import ExperienceMemory, MemoryConfig
from agents.memory.before import proactive
from agents.memory.repo_context import RepoContext
from agents.memory.knowledge import diagnosis_entry, rule_entries, rule_entry_id, rule_for_fix
from agents.memory.learn import distil
from agents.memory.experience import Experience, RuleAction
from agents.memory.retrieve import eligible
from agents.memory.experience_store import hand_written
from agents.memory.uses import UseLedger
from agents.models import StepRecord


def lesson(eid: str, repo: str, **kw) -> Experience:
    base = dict(id=eid, ecosystem="java", problem="tests fail: widget-core WidgetFactory missing at runtime",
                solution="repair: install widget-core", actions=[{"kind": "install", "packages": ["widget-core"]}],
                error_signature="WidgetFactory missing", tags=["learned", "feedback"], times_applied=1,
                times_worked=1, provenance={"source": "learned", "instance_ids": [f"{repo.replace('/', '__')}-1"]},
                context={"repos": [repo], "build_systems": ["maven"], "dependencies": ["widget-core"]})
    base.update(kw)
    return Experience(**base)


def ctx(repo: str, deps=("widget-core",), builds=("maven",)) -> RepoContext:
    return RepoContext(ecosystem="java", toolchain="17", era=2022, repo=repo, build_systems=list(builds),
                       declared={d: "" for d in deps}, files=["pom.xml"], frameworks=["junit"])


def memory_with(*entries: Experience, seeds: bool = False) -> ExperienceMemory:
    mem = ExperienceMemory.open(MemoryConfig(path=None, seed_dir=None))
    if seeds:
        mem.store.load_seed()
    mem.store.add_many(entries, keep_counters=False)
    return mem


# -- 1. one knowledge store ------------------------------------------------------------------
def test_every_diagnosis_rule_is_an_entry_of_the_one_kind():
    rules = load_rules().rules
    entries = {e.id: e for e in rule_entries()}
    for r in rules:
        e = entries[rule_entry_id("diagnosis", r.id)]
        assert e.provenance.source == "rule" and e.provenance.file.endswith("diagnosis.yaml")
        assert e.actions == [RuleAction(engine="diagnosis", rule=r.id)] and e.error_signature == r.pattern
    go = [e for e in entries.values() if e.id.startswith("rule-go-repair-")]
    assert go and all(a.kind == "shell" for e in go for a in e.actions)
    assert rule_for_fix("go", [a.command for a in go[0].actions]) == go[0].id
    assert any(e.id == "rule-node-peer-deps" for e in entries.values())


def test_hand_written_entries_start_trusted_and_learned_ones_earn_it():
    entries = hand_written()
    assert {e.provenance.source for e in entries} == {"seed", "rule"}
    assert all(e.reliability == pytest.approx(0.75) for e in entries)  # fresh, trusted (prior 2)
    fresh = lesson("learned-x", "acme/a", times_applied=0, times_worked=0)
    assert fresh.reliability == pytest.approx(0.5)
    pinned = next(e for e in entries if any(a.kind == "pin" for a in e.actions))
    assert pinned.context.dependencies and pinned.context.derived  # read off its actions


def test_seeds_keep_acting_after_failures_only_unless_their_author_declares_a_context():
    """A seed found for an old project declaring its dependency is reported, not applied unasked;
    the same entry with a context its author declared changes the plan."""
    old = RepoContext(ecosystem="python", toolchain="3.11", era=2019, repo="a/b", build_systems=["pip"],
                      declared={"markupsafe": "", "jinja2": "<3"}, files=["setup.py"], frameworks=["pytest"])
    mem = memory_with(seeds=True)
    hits = mem.retrieve(old, k=10)
    soft = next(h for h in hits if h.experience.id == "py-markupsafe-soft-unicode")
    assert "context: dependency markupsafe" in soft.why and not proactive(soft, 0.66)
    declared = soft.experience.model_copy(update={"context": soft.experience.context.model_copy(
        update={"derived": False})})
    assert proactive(soft.model_copy(update={"experience": declared}), 0.66)


def test_the_store_loads_seeds_and_rules_together_and_keeps_their_counters():
    mem = memory_with(seeds=True)
    rid = rule_entry_id("diagnosis", "missing-header")
    assert mem.store.get(rid) is not None and mem.store.get("py-setuptools58-use2to3") is not None
    mem.record_outcome(rid, worked=False, instance_id="i-1")
    mem.store.load_seed()
    assert mem.store.get(rid).times_applied == 1


def test_a_rule_below_the_floor_is_no_longer_consulted():
    text = "calc.go:3:2: package io/fs is not in GOROOT (/usr/local/go/src/io/fs)"
    assert diagnose(text, "go", "go 1.15").rule == "go-std-package-missing"
    mem = memory_with(seeds=True)
    rid = rule_entry_id("diagnosis", "go-std-package-missing")
    for n in range(3):
        mem.record_outcome(rid, worked=False, instance_id=f"i-{n}")
    assert not mem.store.get(rid).dropped(0.34, 4) and "go-std-package-missing" not in mem.dropped_rules()
    for n in range(3, 6):
        mem.record_outcome(rid, worked=False, instance_id=f"i-{n}")
    assert mem.store.get(rid).dropped(0.34, 4)  # (0 + 3) / (6 + 4) = 0.3
    dropped = mem.dropped_rules()
    assert "go-std-package-missing" in dropped
    token = DROPPED.set(dropped)
    try:
        d = diagnose(text, "go", "go 1.15")
        assert d is None or d.rule != "go-std-package-missing"
    finally:
        DROPPED.reset(token)
    assert rid not in {h.experience.id for h in mem.retrieve_for_error(text, "go", k=50)}


def test_diagnoses_name_their_entries():
    d = diagnose("fatal error: zlib.h: No such file or directory", "c", None)
    assert diagnosis_entry(d) == rule_entry_id("diagnosis", "missing-header")
    d.rule, d.detail = "memory", "experience learned-c-123: use gcc 12"
    assert diagnosis_entry(d) == "learned-c-123"


# -- 2. specific retrieval -----------------------------------------------------------------------
def test_a_lesson_never_reaches_another_repository_by_a_shared_word():
    """The leak of issue 30: `feedback <owner> <name>` matched every loop lesson."""
    mem = memory_with(lesson("learned-java-a", "acme/a", context={"repos": ["acme/a"]}))
    hits = mem.retrieve(ctx("other/b"), k=10, extra_queries=["feedback other b"])
    assert hits == []
    same = mem.retrieve(ctx("acme/a"), k=10)
    assert [h.experience.id for h in same] == ["learned-java-a"] and same[0].why.startswith("same repository")


def test_another_repositorys_lesson_needs_a_matching_context_and_earned_trust():
    e = lesson("learned-java-a", "acme/a")
    assert eligible(e, ctx("other/b", deps=("guava",))) is None  # no shared dependency
    assert eligible(e, ctx("other/b", builds=("gradle",))) is None  # another build system
    why = eligible(e, ctx("other/b"))
    assert why == "context: build system maven; dependency widget-core"
    mem = memory_with(e)
    hit = mem.retrieve(ctx("other/b"), k=5)[0]
    assert hit.why == why and not proactive(hit, 0.66)  # taught once, never scored elsewhere
    mem.record_outcome("learned-java-a", worked=True, instance_id="acme__a-2", repo="acme/a")
    hit = mem.retrieve(ctx("other/b"), k=5)[0]
    assert proactive(hit, 0.66)
    assert mem.retrieve_for_error("WidgetFactory missing", "java", ctx=ctx("x/y", deps=("guava",))) == []


def test_queries_come_from_the_projects_profile():
    deps_a = {"id": "seed-java-widget", "ecosystem": "java", "problem": "widget-core 1.x crashes on JDK 17",
              "solution": "pin widget-core 2", "error_signature": "WidgetCrash", "tags": ["widget-core"]}
    deps_b = {"id": "seed-java-gizmo", "ecosystem": "java", "problem": "gizmo-api needs a system gizmo library",
              "solution": "apt libgizmo-dev", "error_signature": "GizmoLoadError", "tags": ["gizmo-api"]}
    mem = memory_with(Experience(**deps_a), Experience(**deps_b))
    top_a = [h.experience.id for h in mem.retrieve(ctx("acme/a", deps=("widget-core",)), k=1)]
    top_b = [h.experience.id for h in mem.retrieve(ctx("acme/b", deps=("gizmo-api",)), k=1)]
    assert top_a == ["seed-java-widget"] and top_b == ["seed-java-gizmo"]
    report = mem.retrieve(ctx("acme/a", deps=("widget-core",)), k=1)[0].report()
    assert report["id"] == "seed-java-widget" and "profile" in report["queries"] and report["why"]


# -- 3. learn, act, evaluate ---------------------------------------------------------------------
def test_distilled_lessons_are_keyed_by_context_not_by_the_repositorys_name():
    c = ctx("acme/a", deps=("widget-core", "junit"))
    traj = [StepRecord(agent="memory", rule="context", note=c.model_dump_json()),
            StepRecord(agent="verification", rule="feedback:acme/a", command="attribution environment", exit_code=1,
                       output_excerpt="java.lang.NoClassDefFoundError: WidgetFactory missing from widget-core"),
            StepRecord(agent="verification", rule="feedback:acme/a", command="attribution environment", exit_code=0,
                       note="repair: " + json.dumps([{"kind": "install", "packages": ["widget-core"]}]))]
    [e] = distil(traj, "java", "acme__a-1", repo="acme/a")
    assert "acme" not in " ".join(e.tags) and e.context.repos == ["acme/a"]
    assert e.context.build_systems == ["maven"] and e.context.dependencies == ["widget-core"]


def test_every_use_is_scored_against_the_round_it_shaped_and_counted_by_learning():
    steps: list[StepRecord] = []
    ledger = UseLedger(steps.append)
    ledger.use("rule-diag-missing-header", "setup", "replan: apt zlib1g-dev")
    ledger.use("learned-java-a", "before-plan")
    ledger.use("learned-java-a", "before-plan")  # once per round
    ledger.start_round()
    ledger.use("learned-java-b", "test")  # shapes round 2
    scored = ledger.score(1, "no_fail_to_pass", built=True)
    assert [(u.entry, w) for u, w in scored] == [("rule-diag-missing-header", True), ("learned-java-a", False)]
    assert [u.entry for u in ledger.pending] == ["learned-java-b"]
    ledger.start_round()
    assert [(u.entry, w) for u, w in ledger.score(2, "verified", built=True)] == [("learned-java-b", True)]
    mem = memory_with(lesson("learned-java-a", "acme/a"), seeds=True)
    distil(steps, "java", "acme__a-2", store=mem.store, repo="acme/a")
    assert (mem.store.get("learned-java-a").times_applied, mem.store.get("learned-java-a").times_worked) == (2, 1)
    assert mem.store.get("rule-diag-missing-header").times_worked == 1
    assert mem.store.get("learned-java-b") is None  # an unknown id is skipped


def test_a_use_no_round_followed_gets_a_no_round_step_that_learning_does_not_count():
    steps: list[StepRecord] = []
    ledger = UseLedger(steps.append)
    ledger.start_round()
    ledger.use("learned-java-a", "attribution", "amend")  # the last round's feedback
    assert [u.entry for u in ledger.close(1, "round budget")] == ["learned-java-a"]
    [score] = [s for s in steps if s.rule == "score:learned-java-a"]
    assert score.exit_code is None and json.loads(score.note)["outcome"] == "no round"
    assert json.loads(score.note)["round"] == 2 and ledger.close(1, "again") == []
    mem = memory_with(lesson("learned-java-a", "acme/a"))
    distil(steps, "java", "acme__a-2", store=mem.store, repo="acme/a")
    assert (mem.store.get("learned-java-a").times_applied, mem.store.get("learned-java-a").times_worked) == (1, 1)


def test_a_project_gets_no_entry_about_packages_it_names_nowhere_before_a_failure():
    """Issue 30: a C project got ncurses, pcre and Qt5 entries."""
    c = RepoContext(ecosystem="c", toolchain="12", era=2023, repo="acme/tool", build_systems=["autotools"],
                    files=["configure.ac"], commands=["apt-get install -y libonig-dev", "./configure && make"])
    mem = memory_with(seeds=True)
    ids = [h.experience.id for h in mem.retrieve(c, k=10)]
    assert ids and not {"c-ncurses-header", "c-pcre-header"} & set(ids)
    with_curses = c.model_copy(update={"commands": c.commands + ["apt-get install -y libncurses-dev"]})
    assert "c-ncurses-header" in [h.experience.id for h in mem.retrieve(with_curses, k=30)]
    out = "src/x.c:3:10: fatal error: curses.h: No such file or directory"
    assert "c-ncurses-header" in [h.experience.id for h in mem.retrieve_for_error(out, "c", ctx=c)]
