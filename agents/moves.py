"""Generic next moves of the loop (issue 25): what the loop tries when a round ends without a
usable signal -- no test ran, no report, nothing selected, a touched test that never ran, a test
the test_patch adds that no run reached -- in every ecosystem.

MEnvAgent's loop exists so that Execution's and Verification's diagnoses change the plan; with a
repertoire of per-ecosystem rules the loop mostly had no next move. Here the *mechanism* is
shared and the ecosystems feed it *data*. A move is one of these kinds (`MOVE_KINDS`), each
serving a class of failure seen on repositories nobody tuned for:

| kind           | the class it serves                                              | cost    |
|----------------|------------------------------------------------------------------|---------|
| owner_build    | the wrong project: the build that owns the touched path (nearest ancestor build file) | rebuild |
| ci_command     | the runner called bare: the command and options the project's CI or own script uses | either |
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

`candidates` orders what the ecosystem offers by cost (retests before rebuilds, the ecosystem's
order within one cost) and drops moves already tried. The loop (`agents.flow.Loop`) asks when a
round is `stalled` and the plan's own test configurations are used up; the round a move shapes
carries `move` and `evidence` in its `RoundRecord`, and a trajectory step ``move:<kind>`` (agent
`flow`, exit code 0 when that round verified, 1 otherwise) says whether it worked, so the memory
can learn which move serves which repository context.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agents.ecosystems.base import Plan, PlanRequest, TestSpec, hook

__all__ = ["MOVE_KINDS", "Move", "MoveContext", "candidates", "merged_request", "never_ran", "stalled"]

MOVE_KINDS: tuple[str, ...] = ("owner_build", "ci_command", "test_option", "whole_suite", "rediscover",
                               "status_units")
"""The kinds of generic move, in the issue's order of cost (see the module docstring)."""

STALL_RULES = ("no-tests", "no-touched-tests")
"""Verification's attribution rules that say the configuration reached none of the touched tests."""


class Move(BaseModel):
    """One next move: its `kind` (one of `MOVE_KINDS`), the failure class it serves (`serves`,
    one line), its `evidence` (what in the tree or the runs' output says so) and what it changes:
    `test` (a test configuration run in the environment already built) or `request` (a plan
    request: the loop merges it into its current one and builds again). `key` identifies the
    move among those tried (default: kind + test command or request)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["owner_build", "ci_command", "test_option", "whole_suite", "rediscover", "status_units"]
    serves: str
    evidence: str
    test: TestSpec | None = None
    request: PlanRequest | None = None
    key: str = ""

    @property
    def cost(self) -> int:
        """0 for a retest in the built environment, 1 for a rebuild."""
        return 0 if self.request is None else 1

    def ident(self) -> str:
        """The move's identity among those tried: `key`, else kind + what it changes."""
        if self.key:
            return f"{self.kind}:{self.key}"
        what = self.test.test_command if self.test is not None else \
            (self.request.model_dump_json() if self.request is not None else "")
        return f"{self.kind}:{what}"


@dataclass
class MoveContext:
    """What an ecosystem sees when it proposes moves: the tree at base_commit, the instance, the
    plan of the round (with its test configuration inline), the test configurations tried, the
    paths the test_patch touches, why the round stalled (`stalled`), the round's outcome and
    reason, its attribution (``kind: detail``), the tail of its runs' console output (after runs
    first) and the ids it graded (FAIL_TO_PASS + PASS_TO_PASS)."""

    tree: object
    instance: object
    plan: Plan
    touched: list[str]
    why: str
    outcome: str = ""
    reason: str = ""
    attribution: str = ""
    output: str = ""
    ran: list[str] = field(default_factory=list)
    tried: list[TestSpec] = field(default_factory=list)


def never_ran(eco, test_patch: str, ran: list[str], output: str) -> list[str]:
    """The tests the test_patch adds (the ecosystem's `added_tests(test_patch)` hook: names such
    as a googletest ``Suite.Name``; default none) that no graded id ends with or contains and
    that the runs' output never names: tests no run reached (registered too early, filtered
    out by a stale list). [] without the hook or when every one ran."""
    fn = hook(eco, "added_tests")
    if fn is None or not test_patch:
        return []
    out = []
    for name in fn(test_patch) or []:
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
    fn = hook(eco, "next_moves")
    if fn is None:
        return []
    moves = [m for m in (fn(ctx) or []) if m.ident() not in tried]
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
