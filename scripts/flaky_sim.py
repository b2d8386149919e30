"""How often a verification flags a randomly flaky PASS_TO_PASS test, per `verify` schedule
(issue 26: adaptive verification must catch what the fixed 2 + 3 full runs catch).

    .venv/bin/python scripts/flaky_sim.py                       # p = 0.05 0.1 0.2, 5000 trials each, seed 26
    .venv/bin/python scripts/flaky_sim.py --p 0.1 --trials 2000 --seed 1 --sides before

The runs are fake, the schedule is the real one: `agents.verification._Sides.schedule` (which
calls `agents.adaptive`) decides every run, full or targeted, of a row with one FAIL_TO_PASS
candidate (`t.py::test_fix`: fails before, passes after), 20 stable passing tests and one test
(`t.py::test_flaky`) that fails at random with probability p in every run of the sides named by
`--sides` (both: a test flaky on either code; before / after: one that flakes only on that
side) and passes otherwise. A targeted run reports only its targets (`selected` set, as the real
one); the trusted runs are graded by `agents.verification.judge` as `verify` grades them, and
the trial counts as caught when `test_flaky` is in the grade's `flaky`.

Schedules (`mint.verify`, before_runs 2, after_runs 3): `fixed` (policy fixed: 2 + 3 full runs,
the policy before issue 26), `adaptive` (full_before_rerun false: before#2 and after#2 targeted,
after#3 full), `adaptive+full_before_rerun` (the default: before#2 full). Printed per p: the
simulated fraction caught (with a 95% interval), the exact probability (every outcome of the five
runs enumerated through the same schedule code), the closed formula of `fixed`
(1 - ((1-p)^2 + p^2)((1-p)^3 + p^3), for --sides both) and the full runs per side.
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.ecosystems.runs import TestRun  # noqa: E402
from agents.mint_config import VerifyConfig  # noqa: E402
from agents.verification import _Sides, judge, trusted  # noqa: E402
from envpool.testrun.status import TestRunReport, TestStatus  # noqa: E402

FLAKY, FIX = "t.py::test_flaky", "t.py::test_fix"
STABLE = [f"t.py::test_p{i}" for i in range(20)]
SCHEDULES = {
    "fixed": {"policy": "fixed"},
    "adaptive": {"policy": "adaptive", "full_before_rerun": False},
    "adaptive+full_before_rerun": {"policy": "adaptive", "full_before_rerun": True},
}


class FakeSides(_Sides):
    """`_Sides` whose runs are scripted: `fails(side, i)` says whether `FLAKY` fails in run i of
    `side`; `schedule` is inherited unchanged."""

    def __init__(self, verify: VerifyConfig, fails):
        self.config = SimpleNamespace(verify=verify)
        self.plan = SimpleNamespace(state={}, parser="pytest_channel")
        self.instance = SimpleNamespace(test_patch="", patch="")
        self.traj = lambda step: None
        self.runs = {"before": [], "after": []}
        self.tampered = None
        self.fails = fails
        self.full = {"before": 0, "after": 0}

    def run(self, side: str, targets: list[str] | None) -> TestRun:
        i = len(self.runs[side]) + 1
        statuses = {t: TestStatus.PASSED for t in STABLE}
        statuses[FIX] = TestStatus.FAILED if side == "before" else TestStatus.PASSED
        statuses[FLAKY] = TestStatus.FAILED if self.fails(side, i) else TestStatus.PASSED
        if targets is not None:
            statuses = {t: s for t, s in statuses.items() if t in targets}
        else:
            self.full[side] += 1
        failed = any(s == TestStatus.FAILED for s in statuses.values())
        run = TestRun(report=TestRunReport(statuses=statuses, tests_ran=True, exit_code=int(failed), source="plugin",
                                           selected=list(targets) if targets is not None else None))
        self.runs[side].append(run)
        return run


def trial(verify: VerifyConfig, fails) -> tuple[bool, dict[str, int]]:
    """(whether `FLAKY` was flagged flaky, full runs per side) of one verification."""
    s = FakeSides(verify, fails)
    s.schedule()
    before = [r.report for r in s.runs["before"] if trusted(r)]
    after = [r.report for r in s.runs["after"] if trusted(r)]
    _, _, g = judge(before, after)
    return g is not None and FLAKY in g.flaky, s.full


def flaky_on(sides: str, side: str) -> bool:
    return sides == "both" or sides == side


def exact(verify: VerifyConfig, p: float, sides: str) -> float:
    """The probability `FLAKY` is flagged: every outcome of the before_runs + after_runs draws."""
    keys = [("before", i) for i in range(1, verify.before_runs + 1)] + \
           [("after", i) for i in range(1, verify.after_runs + 1)]
    keys = [k for k in keys if flaky_on(sides, k[0])]
    total = 0.0
    for bits in itertools.product((False, True), repeat=len(keys)):
        draw = dict(zip(keys, bits))
        caught, _ = trial(verify, lambda side, i, draw=draw: draw.get((side, i), False))
        if caught:
            total += math.prod(p if b else 1 - p for b in bits)
    return total


def simulate(verify: VerifyConfig, p: float, trials: int, seed: int, sides: str) -> tuple[float, dict[str, int]]:
    rng = random.Random(seed)
    caught, full = 0, {}
    for _ in range(trials):
        hit, full = trial(verify, lambda side, i: flaky_on(sides, side) and rng.random() < p)
        caught += hit
    return caught / trials, full


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--p", type=float, nargs="+", default=[0.05, 0.1, 0.2])
    ap.add_argument("--trials", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--sides", choices=("both", "before", "after"), default="both")
    args = ap.parse_args(argv)
    print(f"sides={args.sides} trials={args.trials} seed={args.seed}")
    print("| p | schedule | full runs before + after | flagged (simulated, 95% interval) | exact | formula |")
    print("|---|---|---|---|---|---|")
    for p in args.p:
        for name, kw in SCHEDULES.items():
            verify = VerifyConfig(**kw)
            frac, full = simulate(verify, p, args.trials, args.seed, args.sides)
            half = 1.96 * math.sqrt(frac * (1 - frac) / args.trials)
            formula = ""
            if name == "fixed" and args.sides == "both":
                formula = f"{1 - ((1 - p) ** 2 + p ** 2) * ((1 - p) ** 3 + p ** 3):.3f}"
            print(f"| {p} | {name} | {full['before']} + {full['after']} | {frac:.3f} ± {half:.3f} | "
                  f"{exact(verify, p, args.sides):.3f} | {formula} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
