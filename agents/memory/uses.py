"""The Evaluate step of Learn -> Retrieve -> Act -> Evaluate (issue 30; EnvPilot scores the
experience it applies): every use of a knowledge-store entry that shapes a round of the loop is
scored against that round's outcome.

A use is recorded when the loop acts on an entry: before planning (`before-plan`: a proven entry
changed the plan), after a setup failure (`setup`: a diagnosis rule or a memory entry sent the
loop to another plan), on Verification's attribution (`attribution`: a diagnosis rule's answer
amended the environment or changed the toolchain) and at test time (`test`: the memory's entry
for the test run's output). The round that follows is the one the use shaped; when it is
recorded, each pending use gets a trajectory step `score:<entry id>` (agent `memory`): exit code
0 when it worked -- the round verified, or for a `setup` use, the round built its environment --
else 1. The driver's learning (`agents.memory.learn.scores`) counts each on its entry, so a bad
entry loses standing and, below the floor, is no longer retrieved or consulted.

A use that no recorded round follows -- recorded by the last round's feedback when the loop ends
at its round budget or on a final verdict, or pending when the loop raises -- gets a `score:<id>`
step without an exit code when the loop ends (`UseLedger.close`, outcome "no round"): it is in
the trajectory, but `agents.memory.learn.scores` counts it neither as a success nor as a failure.

Setup-step repairs are not uses of this ledger: an entry's (`repair: experience <id>` notes) is
scored by the retried step itself (`agents.memory.learn`), a hand-written rule's by Execution's
`score:<id>` step (stage `setup-step`: worked when the retry no longer shows the error the rule
matched; without an exit code, no score, when the retry was killed by its time limit). Learning counts an instance's uses of an entry once: worked when its successes are at
least its failures (`agents.memory.learn.net_outcomes`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agents.models import StepRecord

Stage = Literal["before-plan", "setup", "attribution", "test"]


class Use(BaseModel):
    """One use of entry `entry` at `stage` (`detail`: what it changed), pending its score."""

    model_config = ConfigDict(extra="forbid")
    entry: str
    stage: Stage
    detail: str = ""


class UseLedger:
    """Pending uses of one instance and their scores (module docstring).

    Args:
        traj: the trajectory's step sink (`StepRecord -> None`).
    """

    def __init__(self, traj: Callable[[StepRecord], None]):
        self.traj = traj
        self.pending: list[Use] = []
        """Uses recorded since the current round started: they shape the next round."""
        self.shaping: list[Use] = []
        """Uses that shape the current round."""
        self.scored: list[tuple[Use, bool, int]] = []
        """(use, worked, round) of every scored use, in order."""

    def start_round(self) -> None:
        """A round starts: the uses recorded so far shape it."""
        self.shaping += self.pending
        self.pending = []

    def use(self, entry: str, stage: Stage, detail: str = "") -> None:
        """Record that `entry` shapes the next round (a `use:<id>` step; once per entry and round)."""
        if any(u.entry == entry for u in self.pending):
            return
        u = Use(entry=entry, stage=stage, detail=detail[:300])
        self.pending.append(u)
        self.traj(StepRecord(agent="memory", rule=f"use:{entry}", note=u.model_dump_json()))

    def score(self, round_no: int, outcome: str, built: bool) -> list[tuple[Use, bool]]:
        """Score the uses that shaped round `round_no` (`outcome`: the round's outcome; `built`: it
        had an environment) and clear them. Returns (use, worked) pairs."""
        out = []
        for u in self.shaping:
            worked = outcome == "verified" or (u.stage == "setup" and built)
            self.traj(StepRecord(agent="memory", rule=f"score:{u.entry}", exit_code=0 if worked else 1,
                                 note=json.dumps({"stage": u.stage, "round": round_no, "outcome": outcome,
                                                  "built": built, "detail": u.detail})))
            self.scored.append((u, worked, round_no))
            out.append((u, worked))
        self.shaping = []
        return out

    def close(self, round_no: int, why: str) -> list[Use]:
        """The loop ended in round `round_no` (0 before the first): each use no recorded round
        scored -- those shaping round `round_no`, which never ended, and the pending ones, which
        would have shaped round `round_no` + 1 -- gets a `score:<id>` step without an exit code,
        outcome "no round" and `why` in its note (not counted by `learn.scores`). Returns those
        uses and clears them."""
        left = [(u, round_no) for u in self.shaping] + [(u, round_no + 1) for u in self.pending]
        for u, n in left:
            self.traj(StepRecord(agent="memory", rule=f"score:{u.entry}", exit_code=None,
                                 note=json.dumps({"stage": u.stage, "round": n, "outcome": "no round",
                                                  "built": None, "detail": u.detail, "why": why[:300]})))
        self.shaping, self.pending = [], []
        return [u for u, _ in left]
