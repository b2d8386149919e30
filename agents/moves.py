"""Generic next moves of the loop (issue 25): what the loop tries when a round ends without a
usable signal -- no test ran, no report, nothing selected, a touched test that never ran, a test
the test_patch adds that no run reached -- in every ecosystem.

MEnvAgent's loop exists so that Execution's and Verification's diagnoses change the plan; with a
repertoire of per-ecosystem rules the loop mostly had no next move. Here the *mechanism* is
shared and the ecosystems feed it *data*. A move is one of these kinds (`MOVE_KINDS`), each
serving a class of failure seen on repositories nobody tuned for:

| kind           | the class it serves                                              | cost    |
|----------------|------------------------------------------------------------------|---------|
| owner_build    | the wrong project: the build that owns the touched path (nearest ancestor build file); a cgo package's library the repository builds itself (the build owning the path its ``#cgo LDFLAGS`` name, S31) | rebuild |
| ci_command     | the runner called bare: the command and options the project's CI or own script uses | either |
| ci_setup       | a setup that fails for what the project's CI provides: its apt packages, its configure options (``cmake -D``, ``./configure --enable/--disable``) | rebuild |
| docs_off       | a build that fails only in its documentation (S37): the project's docs switch off, else ``make -k`` with only the docs' failures tolerated | rebuild |
| test_option    | tests behind a project option (configure output, ``cmake -LH``, build properties, features, tags) | rebuild |
| whole_suite    | touched files no finer selection owns: the suite in full         | retest  |
| rediscover     | tests discovered at build time: discovery again after the test_patch | retest  |
| status_units   | suites with no per-test report: scripts / make targets graded by exit status | retest |

A `Move` carries its evidence (the line of the tree or of the run's output that says so) and
either a test configuration (`test`: a retest in the environment already built) or a plan
request (`request`: merged into the loop's current request, then a rebuild). The ecosystem
offers moves through one optional hook (a documented method with a default, as every hook of
`agents.ecosystems.base`):

    next_moves(ctx: MoveContext) -> list[Move]      # default: no move

The loop asks at two points: when a round's verification stalled (`stalled`), and when a
build failed and Execution's diagnosis and the other candidate routes are used up
(`agents.planner.Planner.setup_move`: a `MoveContext` whose `why` starts ``setup failed``; only
rebuild moves apply there).

`candidates` orders what the ecosystem offers by cost (retests before rebuilds, the ecosystem's
order within one cost) and drops moves already tried. The loop (`agents.flow.Loop`) asks when a
round is `stalled` and the plan's own test configurations are used up; the round a move shapes
carries `move` and `evidence` in its `RoundRecord`, and a trajectory step ``move:<kind>`` (agent
`flow`, exit code 0 when that round verified, 1 otherwise) says whether it worked, so the memory
can learn which move serves which repository context.
"""

from __future__ import annotations

import re

from agents.ecosystems.base import PlanRequest
from agents.ecosystems.move_types import MOVE_KINDS, Move, MoveContext

__all__ = ["MOVE_KINDS", "Move", "MoveContext", "candidates", "merged_request", "never_ran", "stalled"]

STALL_RULES = ("no-tests", "no-touched-tests")
"""Verification's attribution rules that say the configuration reached none of the touched tests."""


def never_ran(eco, test_patch: str, ran: list[str], output: str) -> list[str]:
    """The tests the test_patch adds (the ecosystem's `added_tests(test_patch)` hook: names such
    as a googletest ``Suite.Name``; default none) that no graded id ends with or contains and
    that the runs' output never names: tests no run reached (registered too early, filtered
    out by a stale list). [] without the hook or when every one ran."""
    if not test_patch:
        return []
    out = []
    for name in eco.added_tests(test_patch) or []:
        if any(name in t for t in ran) or re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", output or ""):
            continue
        out.append(name)
    return out


def stalled(verdict, eco, test_patch: str) -> str:
    """Why the round gave the loop nothing to grade, or "": the runs reported no test, the
    attribution says none of the touched tests ran (`STALL_RULES`), or a test the test_patch
    adds never ran (`never_ran`). `verdict`: an `agents.verification.Verdict`."""
    if verdict.outcome == "verified" or verdict.outcome == "timeout":
        return ""
    att = verdict.attribution
    if verdict.outcome == "tests_not_run" and att.rule not in ("tampered", "untrusted"):
        return f"no test ran: {verdict.reason[:200]}"
    if att.rule in STALL_RULES:
        return f"{att.detail} ({verdict.reason[:160]})"
    missing = never_ran(eco, test_patch, verdict.FAIL_TO_PASS + verdict.PASS_TO_PASS + verdict.flaky,
                        getattr(verdict, "output_tail", ""))
    if missing:
        return f"tests the test_patch adds never ran: {', '.join(missing[:5])}"
    return ""


def candidates(eco, ctx: MoveContext, tried: set[str]) -> list[Move]:
    """The ecosystem's moves for `ctx` (its `next_moves` hook; none without it) not yet `tried`
    (`Move.ident`), retests before rebuilds, the ecosystem's order within one cost. A hook that
    raises offers nothing (logged by the caller as no move)."""
    moves = [m for m in (eco.next_moves(ctx) or []) if m.ident() not in tried]
    return sorted(moves, key=lambda m: m.cost)


def merged_request(current: PlanRequest, change: PlanRequest, why: str) -> PlanRequest:
    """`current` with `change` added: lists extended (no duplicates), dicts merged (options whose
    values are lists are extended), scalars replaced when `change` sets them; `why` joins the
    reasons."""
    out = current.model_copy(deep=True)
    for name in ("avoid", "apt", "pre", "post", "test_args"):
        old = getattr(out, name)
        setattr(out, name, old + [x for x in getattr(change, name) if x not in old])
    out.env = {**out.env, **change.env}
    for k, v in change.options.items():
        old = out.options.get(k)
        out.options[k] = (list(old) + [x for x in v if x not in old]) if isinstance(old, list) and \
            isinstance(v, list) else v
    if change.route is not None:
        out.route = change.route
    if change.toolchain is not None:
        out.toolchain = change.toolchain
    out.reasons = out.reasons + [why[:200]]
    return out
