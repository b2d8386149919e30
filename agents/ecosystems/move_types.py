"""The data of the loop's generic next moves (`agents.moves`, issue 25): a `Move` an ecosystem
offers through its `next_moves(ctx)` hook and the `MoveContext` it sees. Here, below the
agents, so the ecosystems can build moves without importing the loop's module; the mechanism
(when a round stalled, which move is next, how the round records it) is `agents.moves`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agents.ecosystems.plans import Plan, PlanRequest, TestSpec

__all__ = ["MOVE_KINDS", "Move", "MoveContext"]

MOVE_KINDS: tuple[str, ...] = ("owner_build", "ci_command", "ci_setup", "docs_off", "test_option", "whole_suite",
                               "rediscover", "status_units")
"""The kinds of generic move, in the issue's order of cost (see the module docstring)."""

class Move(BaseModel):
    """One next move: its `kind` (one of `MOVE_KINDS`), the failure class it serves (`serves`,
    one line), its `evidence` (what in the tree or the runs' output says so) and what it changes:
    `test` (a test configuration run in the environment already built) or `request` (a plan
    request: the loop merges it into its current one and builds again). `key` identifies the
    move among those tried (default: kind + test command or request)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["owner_build", "ci_command", "ci_setup", "docs_off", "test_option", "whole_suite", "rediscover",
                  "status_units"]
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
