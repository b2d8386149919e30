"""Issue 30 in the loop (fake sandbox): every use of the knowledge store that shapes a round is
scored by that round, learning counts the scores, a rule that fell below the floor is no longer
consulted, the memory is consulted at test time, and the LLM's prompts carry the entries."""

from __future__ import annotations

import json

from agents.mint_config import MintConfig
from agents.memory.knowledge import rule_entry_id
from agents.memory.experience_store import ExperienceStore
from agents.minter import mint_instance
from agents.memory.experience import Experience
from envpool.fake import FakeSandboxFactory
from pipeline.driver import MemoryWriter
from tests.agents.ecosystems.conftest import force_ecosystem
from tests.agents.test_loop import Toy, events, instance_on, patched, steps

IOFS = "calc.go:3:2: package io/fs is not in GOROOT (/usr/local/go/src/io/fs)"
RULE = rule_entry_id("diagnosis", "go-std-package-missing")


def mem_config(tmp_path, **memory) -> MintConfig:
    return MintConfig(workdir=tmp_path / "w", run_id="t", memory={"path": tmp_path / "mem.duckdb", **memory})


def store_at(cfg: MintConfig, *entries: Experience) -> None:
    with ExperienceStore(cfg.memory_path()) as s:
        s.load_seed()
        s.add_many(entries, keep_counters=False)


def iofs_factory(widget: bool = False):
    f = FakeSandboxFactory(run_id="t")
    state = {"widget": False}

    def fetch(cmd, sb):
        sb.put_file("/opt/go-version", sb.spec.image.split(":")[1])
        return 0, "ok"

    def tests(cmd, sb):
        if not patched(sb):
            return 1, events({"TestAdd": "fail", "TestOld": "pass"})
        if widget and not state["widget"]:
            return 1, events({}, "calc.go:9: E_WIDGET_SOCKET: the widget daemon socket is absent")
        if sb.files.get("/opt/go-version") == b"1.15":
            return 1, events({}, IOFS)
        return 0, events({"TestAdd": "pass", "TestOld": "pass"})

    f.on(r"^fetch-deps", fetch)
    f.on(r"go test -json", tests)
    f.on(r"apt-get install.*widgetd", lambda c, sb: state.update(widget=True) or (0, ""))
    return f


def test_an_attribution_by_a_diagnosis_rule_is_a_use_scored_by_the_next_round_and_learned(tmp_path, monkeypatch):
    force_ecosystem(monkeypatch, Toy())
    cfg = mem_config(tmp_path)
    store_at(cfg)
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, cfg, factory=iofs_factory())
    assert res.outcome == "verified" and res.round == 2, res.reason
    st = steps(res)
    assert any(s.rule == f"use:{RULE}" and json.loads(s.note)["stage"] == "attribution" for s in st)
    [score] = [s for s in st if s.rule == f"score:{RULE}"]
    assert score.exit_code == 0 and json.loads(score.note)["round"] == 2
    report = next(s for s in st if s.agent == "memory" and s.rule == "retrieval")
    assert json.loads(report.note)["repo"] == "toy/calc"  # the retrieval report is in the trajectory
    MemoryWriter(cfg.memory_path()).learn(res)
    with ExperienceStore(cfg.memory_path(), read_only=True) as s:
        e = s.get(RULE)
    assert (e.times_applied, e.times_worked) == (1, 1)


def test_a_rule_that_fell_below_the_floor_no_longer_sends_the_loop_to_another_toolchain(tmp_path, monkeypatch):
    force_ecosystem(monkeypatch, Toy())
    cfg = mem_config(tmp_path)
    store_at(cfg)
    with ExperienceStore(cfg.memory_path()) as s:
        for n in range(6):
            s.record_outcome(RULE, worked=False, instance_id=f"x-{n}")
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, cfg, factory=iofs_factory())
    assert res.outcome != "verified"
    st = steps(res)
    assert any(s.rule == "dropped" and "go-std-package-missing" in s.note for s in st)
    assert not any(s.rule == f"use:{RULE}" for s in st) and res.rounds[0].feedback != "replan"


def test_the_memory_is_consulted_at_test_time_and_its_use_scored(tmp_path, monkeypatch):
    force_ecosystem(monkeypatch, Toy(versions=("1.19",)))
    cfg = mem_config(tmp_path)
    entry = Experience(id="learned-go-widget", ecosystem="go", problem="E_WIDGET_SOCKET: the widget daemon socket",
                       solution="repair: apt widgetd", actions=[{"kind": "apt", "packages": ["widgetd"]}],
                       error_signature="E_WIDGET_SOCKET", provenance={"source": "learned"},
                       context={"repos": ["toy/calc"]})  # never scored: below the before-plan gate
    store_at(cfg, entry)
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, cfg, factory=iofs_factory(widget=True))
    assert res.outcome == "verified" and res.round == 2, res.reason
    assert res.rounds[0].feedback == "amend"
    st = steps(res)
    assert any(s.rule == "use:learned-go-widget" and json.loads(s.note)["stage"] == "test" for s in st)
    assert [s.exit_code for s in st if s.rule == "score:learned-go-widget"] == [0]


def other_repo_widget_lesson() -> Experience:
    """A proven learned lesson of another repository (other/repo) whose signature the toy
    project's widget failure matches: it must never act on toy/calc."""
    return Experience(id="learned-go-widget", ecosystem="go", problem="E_WIDGET_SOCKET: the widget daemon socket",
                      solution="repair: apt widgetd", actions=[{"kind": "apt", "packages": ["widgetd"]}],
                      error_signature="E_WIDGET_SOCKET", provenance={"source": "learned"},
                      context={"repos": ["other/repo"]}, times_applied=3, times_worked=3)


def test_another_repositorys_lesson_is_not_consulted_at_test_time(tmp_path, monkeypatch):
    force_ecosystem(monkeypatch, Toy(versions=("1.19",)))
    cfg = mem_config(tmp_path)
    entry = other_repo_widget_lesson()
    store_at(cfg, entry)
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, cfg, factory=iofs_factory(widget=True))
    assert res.outcome != "verified"
    assert not any(s.rule.endswith("learned-go-widget") for s in steps(res))


def test_under_hybrid_the_llms_prompts_carry_the_memorys_entries(tmp_path, monkeypatch):
    from agents.llm import FakeLLM, LLMConfig

    force_ecosystem(monkeypatch, Toy(versions=("1.19",)))
    cfg = MintConfig(workdir=tmp_path / "w", run_id="t", memory={"path": tmp_path / "mem.duckdb"}, policy="hybrid",
                     llm=LLMConfig(model="fake/x", api_key_env=None))
    entry = Experience(id="learned-go-widget", ecosystem="go", problem="E_WIDGET_SOCKET: the widget daemon socket",
                       solution="repair: start widgetd", actions=[{"kind": "shell", "command": "widgetd --start"}],
                       error_signature="E_WIDGET_SOCKET", provenance={"source": "learned"},
                       context={"repos": ["toy/calc"]}, times_applied=1, times_worked=1)
    store_at(cfg, entry)
    llm = FakeLLM(["{}"] * 12)  # answers that do not validate: every prompt is still recorded
    inst, git_dir = instance_on(tmp_path)
    mint_instance(inst, git_dir, cfg, factory=iofs_factory(widget=True), llm=llm)
    prompts = [str(m.get("content")) for msgs, _ in llm.requests for m in msgs if m.get("role") == "user"]
    assert any("learned-go-widget" in p and "Experience from earlier builds" in p for p in prompts), prompts


def test_a_lesson_that_changes_the_plan_before_planning_is_a_use_scored_by_round_1_and_learned(tmp_path, monkeypatch):
    """Found on issue 30's ablation (arm c, sphinx-7975): a proven lesson changed the plan before
    anything failed, but the loop compared the request after `replan` had already taken it, so
    no `use:` step was written and the use was never scored."""
    force_ecosystem(monkeypatch, Toy())
    cfg = mem_config(tmp_path)
    lesson = Experience(id="learned-go-iofs", ecosystem="go", problem=f"{IOFS} on the after side",
                        solution="repair: a newer Go", actions=[{"kind": "toolchain", "tool": "go", "version": ">=1.16"}],
                        error_signature="package io/fs is not in GOROOT", provenance={"source": "learned"},
                        context={"repos": ["toy/calc"]}, times_applied=1, times_worked=1)
    store_at(cfg, lesson)
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, cfg, factory=iofs_factory())
    assert res.outcome == "verified" and res.round == 1, res.reason  # round 1 already on the newer Go
    st = steps(res)
    assert [json.loads(s.note)["stage"] for s in st if s.rule == "use:learned-go-iofs"] == ["before-plan"]
    assert [(s.exit_code, json.loads(s.note)["round"]) for s in st if s.rule == "score:learned-go-iofs"] == [(0, 1)]
    MemoryWriter(cfg.memory_path()).learn(res)
    with ExperienceStore(cfg.memory_path(), read_only=True) as s:
        e = s.get("learned-go-iofs")
    assert (e.times_applied, e.times_worked) == (2, 2)
