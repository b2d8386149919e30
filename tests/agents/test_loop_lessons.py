"""Issue 30 / docs/results.md "Why the memory has never changed an outcome": the loop's moves that
made a row verify in round >= 2 are stored as a lesson keyed by repository and build context,
replayed before the first build of a later instance of that context, and scored by the round
they shape (fake sandbox, toy ecosystem: a build that needs its CI's option -- genset A faiss's
ci_setup -- and a test configuration that runs nothing until the units move -- the_silver_
searcher's status_units)."""

from __future__ import annotations

import json

from agents.ecosystems.base import PlanRequest, TestSpec
from agents.ecosystems.move_types import Move
from agents.memory.experience import Experience
from agents.memory.experience_store import ExperienceStore
from agents.minter import mint_instance
from agents.mint_config import MintConfig
from envpool.fake import FakeSandboxFactory
from pipeline.driver import MemoryWriter
from tests.agents.ecosystems.conftest import force_ecosystem, make_instance, make_repo
from tests.agents.test_loop import PATCH, TEST_PATCH, Toy, events, patched, steps


class CiToy(Toy):
    """A Go-like toy whose build needs its CI's option (`ci_setup`) and whose first test
    configuration runs nothing until the units move (`status_units`)."""

    def plan(self, tree, instance, touched, images, request=None):
        plan = super().plan(tree, instance, touched, images, request)
        ci = bool((request or PlanRequest()).options.get("ci"))
        return plan.model_copy(update={"setup_commands": ["fetch-deps --ci" if ci else "fetch-deps"]})

    def next_moves(self, ctx):
        if ctx.why.startswith("setup failed"):
            return [Move(kind="ci_setup", serves="a build that needs what the project's CI provides",
                         evidence="the CI configures with GPU off", request=PlanRequest(options={"ci": True}))]
        if ctx.why.startswith("no test ran"):
            return [Move(kind="status_units", serves="suites with no per-test report", evidence="calc_test.go: units",
                         test=TestSpec(name="units", test_command="go test -json -run Units ./...",
                                       parser="go_test_json", test_files=list(ctx.touched)))]
        return []


def factory() -> FakeSandboxFactory:
    f = FakeSandboxFactory(run_id="t")
    f.on(r"^fetch-deps$", (1, "Failed to find nvcc.\n"))
    f.on(r"^fetch-deps --ci", (0, "ok"))
    f.on(r"go test -json \./", (0, events({})))  # the plan's own configuration selects no test
    f.on(r"go test -json -run Units", lambda cmd, sb: (0, events({"TestAdd": "pass"})) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    return f


def cfg_at(tmp_path, **kw) -> MintConfig:
    return MintConfig(workdir=tmp_path / "w", run_id="t", memory={"path": tmp_path / "mem.duckdb"}, **kw)


def instance(tmp_path, repo: str, n: int, extra: dict[str, str] | None = None):
    files = {"calc.go": "package calc // bug\n", "calc_test.go": "package calc // old\n", "go.mod": "module calc\n",
             **(extra or {})}
    git_dir, sha = make_repo(tmp_path / f"{repo.replace('/', '_')}-{n}", files)
    return make_instance(sha, "go", "2021-06-01T00:00:00Z", instance_id=f"{repo.replace('/', '__')}-{n}", repo=repo,
                         patch=PATCH, test_patch=TEST_PATCH), git_dir


def mint(tmp_path, cfg, repo: str, n: int, extra=None, llm=None):
    inst, git_dir = instance(tmp_path, repo, n, extra)
    res = mint_instance(inst, git_dir, cfg, factory=factory(), llm=llm)
    MemoryWriter(cfg.memory_path()).learn(res)  # the driver learns after each instance
    return res


def reports(res, stage: str = "moves") -> list[dict]:
    out = [json.loads(s.note) for s in steps(res) if s.agent == "memory" and s.rule == "retrieval"]
    return [r for r in out if r["stage"] == stage]


def lessons(cfg) -> list[Experience]:
    with ExperienceStore(cfg.memory_path(), read_only=True) as s:
        return [e for e in s.all() if e.moves]


def test_the_moves_of_a_row_verified_in_round_3_verify_the_next_instance_of_the_repository_in_round_1(
        tmp_path, monkeypatch):
    force_ecosystem(monkeypatch, CiToy())
    cfg = cfg_at(tmp_path)
    first = mint(tmp_path, cfg, "toy/calc", 1)
    assert first.outcome == "verified" and first.round == 3, first.reason
    assert [r.move for r in first.rounds] == ["", "ci_setup", "status_units"]
    [lesson] = lessons(cfg)
    assert [(a.move, a.request, a.stall) for a in lesson.actions] == [
        ("ci_setup", {"options": {"ci": True}}, ""), ("status_units", {}, "no test ran")]
    assert lesson.context.repos == ["toy/calc"] and lesson.context.candidates == ["go:go"]
    assert lesson.context.build_systems == ["go-modules"] and (lesson.times_applied, lesson.times_worked) == (1, 1)
    assert not any(a.kind == "shell" for a in lesson.actions)  # data, not a command

    second = mint(tmp_path, cfg, "toy/calc", 2)  # the same repository: the lesson shapes round 1
    assert second.outcome == "verified" and second.round == 1, second.reason
    assert second.test_command.endswith("go test -json -run Units ./...") and second.rounds[0].test == "units"
    [report] = reports(second)
    assert report["chosen"] == lesson.id and report["hits"][0]["why"].startswith("same repository toy/calc")
    assert "candidate go:go" in report["query"] and "reliability" in report["why_chosen"]
    st = steps(second)
    assert any(s.rule == f"use:{lesson.id}" and json.loads(s.note)["stage"] == "before-plan" for s in st)
    assert [(s.exit_code, json.loads(s.note)["round"]) for s in st if s.rule == f"score:{lesson.id}"] == [(0, 1)]
    [again] = lessons(cfg)
    assert (again.id, again.times_applied, again.times_worked) == (lesson.id, 2, 2)  # raised by the round

    other = mint(tmp_path, cfg, "toy/other", 1, extra={"Makefile": "all:\n"})  # another repository and context
    assert other.outcome == "verified" and other.round == 3
    assert reports(other) and reports(other)[0]["hits"] == [] and reports(other)[0]["chosen"] == ""
    assert not any(s.rule.startswith(("replay:", f"use:{lesson.id}")) for s in steps(other))

    same = mint(tmp_path, cfg, "toy/twin", 1)  # another repository, the exact context, the lesson proven (2/2)
    assert same.outcome == "verified" and same.round == 1
    assert reports(same)[0]["hits"][0]["why"].startswith("context: exact")


def test_a_lesson_whose_replay_fails_loses_standing_and_is_dropped_below_the_floor(tmp_path, monkeypatch):
    force_ecosystem(monkeypatch, CiToy())
    cfg = cfg_at(tmp_path)
    bad = Experience(id="learned-moves-go-bad", ecosystem="go", problem="toy/calc verified only in round 2",
                     solution="replay before the first build: ci_setup", error_signature="(?!)",
                     actions=[{"kind": "move", "move": "ci_setup", "request": {"options": {"gpu": True}}}],
                     provenance={"source": "learned"}, times_applied=3, times_worked=1,
                     context={"repos": ["toy/calc"], "build_systems": ["go-modules"], "candidates": ["go:go"]})
    with ExperienceStore(cfg.memory_path()) as s:
        s.load_seed()
        s.add(bad)
    res = mint(tmp_path, cfg, "toy/calc", 1)
    assert reports(res)[0]["chosen"] == bad.id
    assert [s.exit_code for s in steps(res) if s.rule == f"score:{bad.id}"] == [1]  # round 1 failed
    assert res.rounds[0].outcome == "replan"
    with ExperienceStore(cfg.memory_path(), read_only=True) as s:
        e = s.get(bad.id)
    assert (e.times_applied, e.times_worked) == (4, 1) and e.dropped(cfg.memory.floor, cfg.memory.min_uses)
    later = mint(tmp_path, cfg, "toy/calc", 2)
    assert bad.id not in [h["id"] for r in reports(later) for h in r["hits"]]
    assert not any(s.rule.startswith(f"replay:{bad.id}") for s in steps(later))


def test_a_move_that_cannot_be_replayed_up_front_is_skipped_with_a_step(tmp_path, monkeypatch):
    force_ecosystem(monkeypatch, CiToy())
    cfg = cfg_at(tmp_path)
    entry = Experience(id="learned-moves-go-half", ecosystem="go", problem="toy/calc verified only in round 3",
                       solution="replay before the first build: ci_setup; rediscover", error_signature="(?!)",
                       actions=[{"kind": "move", "move": "ci_setup", "request": {"options": {"ci": True}}},
                                {"kind": "move", "move": "rediscover", "stall": "tests the test_patch adds never ran",
                                 "test": "rediscover"}],
                       provenance={"source": "learned"}, times_applied=1, times_worked=1,
                       context={"repos": ["toy/calc"], "build_systems": ["go-modules"], "candidates": ["go:go"]})
    with ExperienceStore(cfg.memory_path()) as s:
        s.load_seed()
        s.add(entry)
    res = mint(tmp_path, cfg, "toy/calc", 1)
    st = steps(res)
    [skip] = [s for s in st if s.rule == f"replay:{entry.id}:skipped"]
    assert skip.note.startswith("not replayable up front: rediscover")
    assert res.rounds[0].outcome != "replan"  # the ci_setup part was replayed: round 1 built
    assert res.outcome == "verified" and res.round == 2


def test_under_llm_the_lesson_is_not_applied_and_goes_first_into_the_prompts(tmp_path, monkeypatch):
    from agents.llm import FakeLLM, LLMConfig

    force_ecosystem(monkeypatch, CiToy())
    cfg = cfg_at(tmp_path)
    assert mint(tmp_path, cfg, "toy/calc", 1).round == 3
    [lesson] = lessons(cfg)
    llm_cfg = cfg_at(tmp_path, policy="llm", llm=LLMConfig(model="fake/x", api_key_env=None))
    llm = FakeLLM(["{}"] * 30)  # answers that do not validate: every prompt is still recorded
    inst, git_dir = instance(tmp_path, "toy/calc", 2)
    res = mint_instance(inst, git_dir, llm_cfg, factory=factory(), llm=llm)
    st = steps(res)
    assert any(s.rule == f"replay:{lesson.id}" and "not applied" in s.note for s in st)
    assert not any(s.rule == f"use:{lesson.id}" for s in st) and res.rounds[0].outcome == "replan"
    prompts = [str(m.get("content")) for msgs, _ in llm.requests for m in msgs if m.get("role") == "user"]
    assert any(lesson.id in p and "Experience from earlier builds" in p for p in prompts), prompts
