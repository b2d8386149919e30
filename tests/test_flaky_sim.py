"""`scripts/flaky_sim.py`: the detection probabilities docs/cost.md gives for a randomly flaky
PASS_TO_PASS test under `fixed`, `adaptive` and `adaptive` + `verify.full_before_rerun`, from the
real schedule code (exact enumeration, and a short seeded simulation near it)."""

from __future__ import annotations

import pytest

from agents.mint_config import VerifyConfig
from scripts.flaky_sim import SCHEDULES, exact, simulate


@pytest.mark.parametrize("name, both, before_only", [("fixed", 0.401, 0.180), ("adaptive", 0.262, 0.090),
                                                     ("adaptive+full_before_rerun", 0.336, 0.180)])
def test_exact_detection_at_p_0_1(name, both, before_only):
    verify = VerifyConfig(**SCHEDULES[name])
    assert exact(verify, 0.1, "both") == pytest.approx(both, abs=5e-4)
    assert exact(verify, 0.1, "before") == pytest.approx(before_only, abs=5e-4)
    p = 0.1
    if name == "fixed":  # the closed formula
        assert exact(verify, p, "both") == pytest.approx(1 - ((1 - p) ** 2 + p ** 2) * ((1 - p) ** 3 + p ** 3))


def test_simulation_runs_the_documented_full_runs_and_lands_near_the_exact_value():
    for name, full in (("fixed", {"before": 2, "after": 3}), ("adaptive", {"before": 1, "after": 2}),
                       ("adaptive+full_before_rerun", {"before": 2, "after": 2})):
        verify = VerifyConfig(**SCHEDULES[name])
        frac, got = simulate(verify, 0.2, 400, 1, "both")
        assert got == full, name
        assert abs(frac - exact(verify, 0.2, "both")) < 0.08, name
