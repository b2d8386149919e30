"""Independent review of issue 30 (experience memory): each test reproduces one finding.

1. with `memory.before_plan: false` the helper never learns the project's context, so another
   repository's lesson acts at test time by its signature alone;
2. a learned lesson with no dependency, taught twice by repository A, changes the plan of another
   project that shares only a build system (`pip`);
3. a use recorded by the last round's feedback is never scored;
4. a data repair rule's use is copied into a learned lesson, which keeps acting once the rule is dropped;
5. one instance that reports missing headers one at a time drops the hand-written missing-header rule;
6. under `llm` the planning prompt is built before the context retrieval: the project's own lesson is not in it.
"""

from agents.execution import rule_entry_of
from agents.memory.api import ExperienceMemory, MemoryConfig
from agents.memory.before import proactive
from agents.memory.experience import Experience
from agents.memory.knowledge import go_repair_entries
from agents.memory.knowledge import rule_entry_id
from agents.memory.learn import distil
from agents.memory.repo_context import RepoContext
from agents.mint_config import MintConfig
from agents.minter import mint_instance
from agents.models import StepRecord
from envpool.fake import FakeSandboxFactory
from tests.agents.ecosystems.conftest import force_ecosystem
from tests.agents.test_loop import Toy, instance_on, steps
from tests.agents.test_loop import ToyWithToolchain, events, instance_on, patched
from tests.agents.test_loop_memory import RULE, iofs_factory, store_at
from tests.agents.test_loop_memory import iofs_factory, store_at
from tests.agents.test_loop_memory import other_repo_widget_lesson, store_at
import json


def test_another_repositorys_lesson_is_not_consulted_when_before_plan_is_off(tmp_path, monkeypatch):
    force_ecosystem(monkeypatch, Toy(versions=("1.19",)))
    cfg = MintConfig(workdir=tmp_path / "w", run_id="t",
                     memory={"path": tmp_path / "mem.duckdb", "before_plan": False})
    entry = other_repo_widget_lesson()
    store_at(cfg, entry)
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, cfg, factory=iofs_factory(widget=True))
    leaked = [s.rule for s in steps(res) if s.rule.endswith("learned-go-widget")]
    assert not leaked, f"other/repo's lesson acted on toy/calc: {leaked}; outcome {res.outcome}"


def test_a_build_system_alone_is_not_a_context_match():
    a = RepoContext(ecosystem="python", toolchain="3.11", era=2022, repo="astropy/astropy", build_systems=["pip"],
                    declared={"numpy": "", "pyerfa": ""}, files=["setup.py"])
    b = RepoContext(ecosystem="python", toolchain="3.11", era=2022, repo="sympy/sympy", build_systems=["pip"],
                    declared={"mpmath": ""}, files=["setup.py"])
    traj = lambda: [StepRecord(agent="memory", rule="context", note=a.model_dump_json()),
                    StepRecord(agent="execution", rule="recipe:python:0", command="pip install -e .", exit_code=1,
                               output_excerpt="error: Microsoft Visual C++ 14.0 is required to build the frobnicator"),
                    StepRecord(agent="execution", rule="memory:x", command="export X=1", exit_code=0,
                               note="repair: env FROB_NO_EXT=1"),
                    StepRecord(agent="execution", rule="recipe:python:0", command="pip install -e .", exit_code=0)]
    mem = ExperienceMemory.open(MemoryConfig(path=None, seed_dir=None))
    mem.store.load_seed()
    distil(traj(), "python", "astropy__astropy-1", store=mem.store, repo="astropy/astropy")
    distil(traj(), "python", "astropy__astropy-2", store=mem.store, repo="astropy/astropy")
    [e] = [e for e in mem.store.all() if not e.negative and e.provenance.source == "learned"]
    print(e.id, e.context, e.times_worked, e.times_applied)
    hits = [h for h in mem.retrieve(b, k=10) if h.experience.id == e.id]
    assert not (hits and proactive(hits[0], 0.66)), \
        f"astropy's lesson changes sympy's plan before anything failed: {hits[0].why!r}"


def test_a_use_in_the_last_rounds_feedback_is_scored(tmp_path, monkeypatch):
    force_ecosystem(monkeypatch, Toy())
    cfg = MintConfig(workdir=tmp_path / "w", run_id="t", memory={"path": tmp_path / "mem.duckdb"},
                     loop={"max_rounds": 1})
    store_at(cfg)
    inst, git_dir = instance_on(tmp_path)
    res = mint_instance(inst, git_dir, cfg, factory=iofs_factory())
    st = steps(res)
    uses = [s for s in st if s.rule == f"use:{RULE}"]
    scores = [s for s in st if s.rule == f"score:{RULE}"]
    print(res.outcome, [r.feedback for r in res.rounds])
    assert uses, "precondition: the rule was used"
    assert scores, f"use of {RULE} recorded ({uses[0].note}) but never scored"


def test_a_go_repair_rule_is_scored_not_copied():
    rule = go_repair_entries()[0]
    fix = [a.command for a in rule.actions]
    out = "go: updates to go.mod needed; to update it:\n\tgo mod tidy"
    import re
    assert re.search(rule.error_signature, out, re.I) or True
    source = "repair:go"
    entry = rule_entry_of("go", source, fix)
    assert entry == rule.id
    traj = [StepRecord(agent="execution", rule="recipe:go:0", command="go build ./...", exit_code=1, output_excerpt=out),
            StepRecord(agent="execution", rule=source, command=" && ".join(fix), exit_code=0,
                       note="repair: " + json.dumps([{"kind": "shell", "command": f} for f in fix])),
            StepRecord(agent="execution", rule="recipe:go:0", command="go build ./...", exit_code=0),
            StepRecord(agent="memory", rule=f"score:{entry}", exit_code=0, note="{}")]
    mem = ExperienceMemory.open(MemoryConfig(path=None))
    got = mem.learn(traj, "go", "g-1", repo="a/b")
    learned = [e.id for e in got if e.provenance.source == "learned"]
    print(fix, [e.id for e in got])
    assert mem.store.get(rule.id).times_applied == 1
    assert not learned, f"the rule {rule.id} was copied into {learned}"


def test_a_dropped_go_repair_rule_keeps_acting_through_its_copy():
    from agents.memory.repo_context import RepoContext
    rule = go_repair_entries()[0]
    fix = [a.command for a in rule.actions]
    out = "go: updates to go.mod needed; to update it:\n\tgo mod tidy"
    traj = [StepRecord(agent="execution", rule="recipe:go:0", command="go build ./...", exit_code=1, output_excerpt=out),
            StepRecord(agent="execution", rule="repair:go", command=" && ".join(fix), exit_code=0,
                       note="repair: " + json.dumps([{"kind": "shell", "command": f} for f in fix])),
            StepRecord(agent="execution", rule="recipe:go:0", command="go build ./...", exit_code=0),
            StepRecord(agent="memory", rule=f"score:{rule.id}", exit_code=0, note="{}")]
    mem = ExperienceMemory.open(MemoryConfig(path=None))
    mem.learn(traj, "go", "g-1", repo="a/b")
    for n in range(8):
        mem.record_outcome(rule.id, worked=False, instance_id=f"x-{n}")
    assert rule.id in {e.id for e in mem.dropped_entries()}
    ctx = RepoContext(ecosystem="go", repo="a/b", build_systems=["go"])
    plans = mem.actions_for(out, "go", ctx=ctx)
    acting = [(p.experience_id, [getattr(a, "command", a.kind) for a in p.actions]) for p in plans]
    assert not any([c for c in cmds] == fix for _, cmds in acting), f"dropped rule still acts via {acting}"


RID = rule_entry_id("diagnosis", "missing-header")
HEADERS = ["zlib.h", "png.h", "jpeg.h", "tiff.h", "webp.h", "gif_lib.h", "lcms2.h", "openjpeg.h", "raqm.h", "xcb.h"]


def err(h):
    return f"src/x.c:3:10: fatal error: {h}: No such file or directory\ncompilation terminated."


def test_one_instance_cannot_drop_a_rule_that_fixed_each_error_it_matched():
    traj, hi = [], 0
    for rnd in range(1, 4):  # max_builds = 3 builds, repair.rounds = 2 per step
        if rnd > 1:  # the `setup` use of the previous round's diagnosis: that round's build failed again
            traj.append(StepRecord(agent="memory", rule=f"score:{RID}", exit_code=1,
                                   note=json.dumps({"stage": "setup", "round": rnd, "built": False})))
        traj.append(StepRecord(agent="execution", rule="recipe:c:0", command="./configure && make", exit_code=1,
                               output_excerpt=err(HEADERS[hi])))
        for _ in range(2):
            hi += 1  # the rule's apt install fixed that header; the retry stops at the next one
            traj.append(StepRecord(agent="execution", rule="diagnosis:missing-header", command="apt-get install ...",
                                   exit_code=0, note="repair: " + json.dumps([{"kind": "apt", "packages": ["x"]}])))
            traj.append(StepRecord(agent="execution", rule="recipe:c:0", command="./configure && make", exit_code=1,
                                   output_excerpt=err(HEADERS[hi])))
            traj.append(StepRecord(agent="memory", rule=f"score:{RID}", exit_code=1,
                                   note=json.dumps({"stage": "setup-step", "step": "recipe:c:0"})))
    mem = ExperienceMemory.open(MemoryConfig(path=None))
    mem.learn(traj, "c", "acme__img-1", repo="acme/img")
    e = mem.store.get(RID)
    print(e.times_worked, e.times_applied, round(e.reliability, 3))
    assert RID not in {x.id for x in mem.dropped_entries()}, \
        f"{RID} dropped after one instance: {e.times_worked}/{e.times_applied}, reliability {e.reliability:.3f}"


def lesson(eid, repo):
    return Experience(id=eid, ecosystem="go", problem="the calc tests need the widget daemon socket present",
                      solution="repair: apt widgetd", actions=[{"kind": "apt", "packages": ["widgetd"]}],
                      error_signature="E_WIDGET_SOCKET", provenance={"source": "learned"},
                      context={"repos": [repo], "build_systems": ["go"]}, times_applied=3, times_worked=3)


def test_the_llm_planning_prompt_carries_the_projects_context_entries(tmp_path, monkeypatch):
    from agents.llm import FakeLLM, LLMConfig

    force_ecosystem(monkeypatch, ToyWithToolchain(versions=("1.15", "1.19")))
    f = FakeSandboxFactory(run_id="t")
    f.on(r"go test -json", lambda cmd, sb: (0, events({"TestAdd": "pass"})) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    cfg = MintConfig(workdir=tmp_path / "w", run_id="t", memory={"path": tmp_path / "mem.duckdb"}, policy="llm",
                     llm=LLMConfig(model="fake/x", api_key_env=None))
    store_at(cfg, lesson("learned-go-mine", "toy/calc"))
    llm = FakeLLM(["{}"] * 12)
    inst, git_dir = instance_on(tmp_path)
    mint_instance(inst, git_dir, cfg, factory=f, llm=llm)
    plan_prompts = [json.dumps(msgs) for msgs, _ in llm.requests if "The rules' plan" in json.dumps(msgs)]
    assert plan_prompts, "no planning prompt"
    assert "learned-go-mine" in plan_prompts[0], "the project's own lesson is not in the LLM's planning prompt"
