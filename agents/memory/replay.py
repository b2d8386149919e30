"""Lessons of the loop's moves (issue 30: an experience that changes outcomes): what made a row
verify in round >= 2 is stored, and replayed before the first build of a later instance.

The loop's generic next moves (`agents.moves`: ci_setup, test_option, status_units, ...), the
plan's next test configuration, an amended image and a replan with Debian packages or on another
toolchain are what turn a failing round into a verified one. Each later instance of the same
repository used to pay the same failing first build and the same rounds (genset A: faiss x8,
the_silver_searcher x6, timescaledb x3), because none of them was stored.

- **Learn.** The loop records each change that shapes a round (`ShapeLog.shape`: round,
  candidate, `MoveAction` -- the move's kind and its data: the plan request's change, the stall
  class a retest move answered, an amend's packages, the evidence). When a row verifies in round
  >= 2, the changes of the verified candidate (the last retest move only, the one whose test
  configuration verified) become a `lesson:moves` step; the driver's learning makes it an entry
  keyed by repository and build context (`agents.memory.learn.move_lessons`).
- **Retrieve.** Before the first build, `Retriever.move_lessons` finds the lessons for the plan's
  candidate: of the same repository, or of another whose context matches exactly (language,
  candidate, build systems; then only once proven beyond the run that taught it: reliability
  at `memory.before_plan_reliability` and two scored uses). The retrieval report (stage
  `moves`: query, entries, scores, why chosen) is a trajectory step.
- **Act.** `replay_moves` applies the best lesson to round 1's plan: requests merged (one
  replan), amends as the request's Debian packages / installer / the CI's PyPI tools (read again
  from this tree), retest moves offered again by the ecosystem for this instance's tree and plan
  and their test configuration run first. A move that cannot be replayed up front, or that
  installs the project's own package (`RepoContext.own`), is skipped with a step saying so.
  Under `llm` nothing is applied: the lesson goes first into the prompts.
- **Evaluate.** The replay is a `before-plan` use (`agents.memory.uses`), scored by round 1:
  verified raises the entry's counters, anything else lowers them; below `memory.floor` (after
  `memory.min_uses` uses) the entry is dropped and no longer replayed.
"""

from __future__ import annotations

import json
import re

from pydantic import ValidationError

from agents.ecosystems.base import PlanRequest
from agents.memory.actions import own_refusals
from agents.memory.before import candidate_of, retrieval_report
from agents.memory.experience import REPLAY_REQUEST_KEYS, InstallAction, MoveAction
from agents.memory.learn import LESSON_RULE, MovesLesson
from agents.models import StepRecord

STALLS: tuple[str, ...] = ("setup failed", "no test ran", "tests the test_patch adds never ran")
"""The stall classes the ecosystems' `next_moves` read (`MoveContext.why` starts with one)."""
MOVES_K = 5
"""Lessons of the loop's moves retrieved per plan (`Retriever.move_lessons`; the report's `k`)."""


def request_data(request: PlanRequest | None) -> dict:
    """The replayable part of a plan request's change (`REPLAY_REQUEST_KEYS`: no commands)."""
    if request is None:
        return {}
    return request.model_dump(exclude_defaults=True, include=set(REPLAY_REQUEST_KEYS))


def stall_class(why: str) -> str:
    """The class of a stall (`STALLS`), or its text before the first ':' / '(' (an attribution's
    own words), at most 80 characters: what a retest move answered, without the run's output."""
    for s in STALLS:
        if why.startswith(s):
            return s
    return re.split(r"[:(]", why, maxsplit=1)[0].strip()[:80]


class ShapeLog:
    """The changes that shaped the rounds of one instance, in order (module docstring)."""

    def __init__(self) -> None:
        self.events: list[tuple[int, str, MoveAction]] = []

    def shape(self, round_no: int, candidate: str, action: MoveAction) -> None:
        """Record that `action` shapes round `round_no` of a plan of `candidate`."""
        self.events.append((round_no, candidate, action))

    def lesson(self, verified_round: int, candidate: str, test: str, build_systems: list[str]) -> MovesLesson | None:
        """The lesson of a row verified in round `verified_round` >= 2 on `candidate` with the test
        configuration named `test`: the changes of that candidate up to that round, the last
        retest move only when its configuration is the one that verified. None when round 1
        verified or nothing replayable shaped the rounds."""
        if verified_round < 2:
            return None
        mine = [a for r, c, a in self.events if r <= verified_round and c == candidate]
        retests = [a for a in mine if a.stall or a.test]
        last = retests[-1] if retests and retests[-1].test == test else None
        actions = [a for a in mine if not (a.stall or a.test) or a is last]
        if not actions:
            return None
        return MovesLesson(candidate=candidate, round=verified_round, build_systems=list(build_systems),
                           actions=actions)


def lesson_step(lesson: MovesLesson) -> StepRecord:
    """The trajectory step the driver's learning reads (`agents.memory.learn.move_lessons`)."""
    return StepRecord(agent="memory", rule=LESSON_RULE, note=lesson.model_dump_json())


def _replayable(hit, gate: float) -> bool:
    """A lesson of the same repository is replayed until it falls below the floor (the retriever
    leaves dropped entries out); another repository's (an exact context) once proven: reliability
    at `gate` and at least two scored uses."""
    if hit.why.startswith("same repository"):
        return True
    e = hit.experience
    return e.reliability >= gate and e.times_applied >= 2


def replay_moves(planner, uses) -> str | None:
    """Apply the best lesson of the loop's moves to round 1's plan (module docstring). `planner`:
    the instance's `agents.planner.Planner` (its run, request, plan, ecosystem, tests and shape
    log); `uses`: its `agents.memory.uses.UseLedger`. Returns the entry id replayed, or None.
    Never raises (a memory problem is a trajectory step)."""
    run = planner.run
    cfg, helper = run.config, run.helper
    memory = getattr(helper, "memory", None)
    ctx = getattr(helper, "context", None)
    if memory is None or ctx is None or not cfg.memory.before_plan or planner.plan is None:
        return None
    try:
        ctx = ctx.model_copy(update={"candidate": candidate_of(planner.plan)})
        hits = memory.retriever.move_lessons(ctx, k=MOVES_K)
    except Exception as e:  # noqa: BLE001 - the memory never fails a build
        run.traj(StepRecord(agent="memory", rule="moves:error", note=f"{type(e).__name__}: {e}"))
        return None
    gate = cfg.memory.before_plan_reliability
    chosen = next((h for h in hits if _replayable(h, gate)), None)
    query = (f"lessons of moves: repository {ctx.repo}; candidate {ctx.candidate}; language {ctx.ecosystem}; "
             f"build systems {', '.join(sorted(set(ctx.build_systems))) or 'none'}")
    report = json.loads(retrieval_report("moves", ctx, hits, query=query, k=MOVES_K))
    report["chosen"] = chosen.experience.id if chosen else ""
    report["why_chosen"] = (f"{chosen.why}; reliability {chosen.experience.reliability:.3f} "
                            f"({chosen.experience.times_worked}/{chosen.experience.times_applied})") if chosen else \
        ("no lesson for this repository and candidate" if not hits else
         "another repository's lesson not proven yet (reliability or uses below the gate)")
    run.traj(StepRecord(agent="memory", rule="retrieval", note=json.dumps(report)[:4000]))
    if chosen is None:
        return None
    helper.context_hits = [chosen] + [h for h in helper.context_hits if h.experience.id != chosen.experience.id]
    eid = chosen.experience.id
    if not getattr(helper, "use_memory_actions", True):
        run.traj(StepRecord(agent="memory", rule=f"replay:{eid}", note="policy llm: not applied; first in the "
                                                                        "LLM's prompts"))
        return None
    return _apply_lesson(planner, uses, eid, [a for a in chosen.experience.actions if isinstance(a, MoveAction)])


def _apply_lesson(planner, uses, eid: str, actions: list[MoveAction]) -> str | None:
    from agents.moves import merged_request

    run = planner.run
    new = planner.request.model_copy(deep=True)
    applied: list[MoveAction] = []
    skipped: list[str] = []
    retests: list[MoveAction] = []
    own = list(getattr(getattr(run.helper, "context", None), "own", None) or [])
    for a in actions:
        refused = own_refusals([a], own)[1]
        if refused:  # installs the project's own package: the checkout is it
            skipped.append(f"{a.move}: {refused[0]}")
            continue
        if a.stall or a.test:
            retests.append(a)
            continue
        if a.request:
            try:
                change = PlanRequest.model_validate(a.request)
            except ValidationError as e:
                skipped.append(f"{a.move}: its request does not validate ({e.errors()[0]['msg']})")
                continue
            new = merged_request(new, change, f"lesson {eid}: {a.move}")
            applied.append(a)
        elif a.packages and a.install == "system":
            new.apt += [p for p in a.packages if p not in new.apt]
            applied.append(a)
        elif a.packages and a.install == "module" and planner.eco is not None and \
                planner.eco.request_action(new, InstallAction(packages=a.packages)):
            applied.append(a)
        elif a.packages and a.install == "ci_pip" and (cmds := _ci_pip(run.tree, a.packages)):
            new.post += [c for c in cmds if c not in new.post]
            applied.append(a)
        else:
            skipped.append(f"{a.move}: nothing this plan can take before a build")
    if new != planner.request:
        if not planner.replan(new, f"lesson {eid}"):
            run.traj(StepRecord(agent="memory", rule=f"replay:{eid}", note="not replayed: the lesson's requests do "
                                                                            "not plan"))
            return None
    for a in retests[-1:]:
        if _retest(planner, a):
            applied.append(a)
        else:
            skipped.append(f"{a.move}: the ecosystem offers no such test configuration before a run")
    skipped += [f"{a.move}: an earlier retest move (the last one is replayed)" for a in retests[:-1]]
    for why in skipped:
        run.traj(StepRecord(agent="memory", rule=f"replay:{eid}:skipped", note=f"not replayable up front: {why}"))
    if not applied:
        return None
    for a in applied:
        planner.shapes.shape(1, candidate_of(planner.plan), a)
    detail = ", ".join(a.move for a in applied)
    run.traj(StepRecord(agent="memory", rule=f"replay:{eid}", note=json.dumps(
        {"applied": [a.model_dump(exclude_defaults=True) for a in applied], "skipped": skipped})[:4000]))
    uses.use(eid, "before-plan", f"replayed moves: {detail}")
    return eid


def _ci_pip(tree, names: list[str]) -> list[str]:
    from agents.ecosystems.ci import pip_tool_commands

    try:
        return pip_tool_commands(tree, names)[1]
    except Exception:  # noqa: BLE001 - an unreadable CI offers nothing
        return []


def _retest(planner, a: MoveAction) -> bool:
    """Put the retest move's test configuration first in round 1's: the plan's own configuration
    named `a.test` (`test_config`), or the move of kind `a.move` the ecosystem offers for this
    instance's tree and plan on a stall of class `a.stall`."""
    from agents.moves import MoveContext, candidates

    run = planner.run
    if a.move == "test_config":
        spec = next((t for t in planner.tests if t.name == a.test), None)
    else:
        ctx = MoveContext(tree=run.tree, instance=run.instance, plan=planner.plan, touched=list(run.touched),
                          why=f"{a.stall}: replayed before the first build", outcome="tests_not_run")
        try:
            offered = [m for m in candidates(planner.eco, ctx, planner.moves_tried) if m.kind == a.move and m.test]
        except Exception:  # noqa: BLE001 - an ecosystem's hook that fails offers nothing
            offered = []
        spec = offered[0].test if offered else None
        if offered:
            planner.moves_tried.add(offered[0].ident())
    if spec is None:
        return False
    planner.tests = [spec] + [t for t in planner.tests if t != spec]
    planner.ti = 0
    return True
