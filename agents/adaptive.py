"""Which test runs a verification makes, and on which tests: the schedule of `verify.policy`.

`fixed` (the policy before issue 26): `before_runs` full runs of the before side, then
`after_runs` of the after side, whatever they show.

`adaptive` (design sketch 3, "verification that spends CPU where the answer is"): before#1 and
after#1 run in full first. When both can be graded and no test is a FAIL_TO_PASS candidate, the
instance is decided at once (`no_fail_to_pass` after two runs). Otherwise the reruns confirm
what matters: `targets` = the candidate FAIL_TO_PASS tests and every test whose pass/no-pass
status differs between before#1 and after#1. The before side's other runs and the after side's
other runs but the last are *targeted* at them (the ecosystem's `targeted_plan` hook; a runner
without one reruns in full); the after side's last run stays full, so a PASS_TO_PASS test that
flakes is still seen twice after the patch. With `verify.full_before_rerun` (the default) the
before side's first rerun, before#2, is full too, so a PASS_TO_PASS test is seen twice before the
patch as under `fixed` (a full run observes the targets too: it is their confirmation as well).
A candidate is thus seen as often as under `fixed` (2 before, 3 after by default); a
PASS_TO_PASS test twice before and twice after (once before without `full_before_rerun`), where
`fixed` sees it 2 + 3 times. Full runs of an instance with a candidate, before + after: 2 + 2
(1 + 2 without `full_before_rerun`; `fixed`: 2 + 3). For a test failing at random with
probability p per run that makes it flagged flaky with probability 0.34 at p = 0.1 (0.26
without, `fixed` 0.40: `scripts/flaky_sim.py`, docs/cost.md). When before#1 or after#1 cannot
be graded (an anomaly, a timeout), the remaining runs are full, as `fixed`.
So they are when before#1 or after#1 was *cut short* (`cut_short`), candidate or not: a unit of
it stopped early (its test binary panicked, exited or was killed: Go's ``<pkg> [stopped early:
panic]``, Catch2's ``[Catch2 run stopped early]``, `envpool.grading.STOPPED_EARLY`), or it lacks
at least `TRUNCATED_SHARE` of the tests the other first run reported (not counting ids under one
of its failed units, nor tests whose name the patch or the test_patch adds or removes). Such a
run is still graded (a test its binary never reached is not observed there,
`envpool.grading.observed`), but its absences decide nothing: prometheus-15142's after#1 reported
84 of before#1's 1,599 tests, the gold FAIL_TO_PASS tests among the missing, and "no candidate"
would have ended it as `no_fail_to_pass` after two runs; nor do targets drawn from it cover what
it did not report.
Targeting is skipped (full reruns) when the targets are more than `MAX_TARGETS` ids or at least
`MAX_TARGET_SHARE` of the tests after#1 reported: a selection that large saves little and is a
long command line.
"""

from __future__ import annotations

from envpool.grading import grade, in_failed_collector, passes_in, stopped_units, test_name
from envpool.testrun.status import TestRunReport

MAX_TARGETS = 200
"""Ids a targeted rerun may name at most (else the rerun is full)."""
MAX_TARGET_SHARE = 0.5
"""A targeted rerun is full instead when its targets are at least this share of after#1's tests."""
TRUNCATED_SHARE = 0.1
"""A first run lacking at least this share of the other first run's tests (unexplained) was cut short."""


def cut_short(run: TestRunReport, other: TestRunReport, changed_names: set[str] = frozenset()) -> str | None:
    """Why a first run (before#1 or after#1) must not decide at once, else None: a unit of it
    stopped early (`envpool.grading.stopped_units`), or it lacks at least `TRUNCATED_SHARE` of
    the ids `other` (the other side's first run) reported -- not counting ids under one of its
    failed units (a collection error: a file that failed to load, ``<unit> [build failed]``)
    nor ids whose `test_name` is in `changed_names` (the names the patch and the test_patch add
    or remove: a test the fix deletes or renames is absent for a reason)."""
    stopped = stopped_units(run.collection_errors)
    if stopped:
        return f"{len(stopped)} unit(s) stopped early: {', '.join(stopped[:3])}"
    units = [c.rsplit(" [", 1)[0] for c in run.collection_errors if c.strip()]
    missing = [t for t in other.statuses if t not in run.statuses and not in_failed_collector(t, run.collection_errors)
               and not any(t.startswith(u + "::") for u in units) and test_name(t) not in changed_names]
    if missing and len(missing) >= TRUNCATED_SHARE * len(other.statuses):
        return (f"{len(run.statuses)} tests, lacking {len(missing)} of the other side's {len(other.statuses)} "
                f"(e.g. {sorted(missing)[0]})")
    return None


def candidates(before: TestRunReport, after: TestRunReport,
               absent_scope: set[str] | None = None) -> tuple[list[str], list[str]]:
    """(FAIL_TO_PASS candidates, ids whose status differs) of one before and one after run: the
    candidates as `envpool.grading.grade` lists them from these two runs alone; the differing ids
    are the after run's ids that pass on one side and not on the other (failing -> passing and
    passing -> failing). Both sorted."""
    g = grade([before], [after], None, absent_scope)
    differ = sorted(t for t in after.statuses if passes_in(before, t) != passes_in(after, t))
    return g.FAIL_TO_PASS, differ


def targets_of(cands: list[str], differ: list[str], after: TestRunReport) -> list[str] | None:
    """The ids targeted reruns run (candidates and differing ids, sorted), or None when they
    should run in full (more than `MAX_TARGETS`, or `MAX_TARGET_SHARE` of after's tests)."""
    out = sorted(set(cands) | set(differ))
    if not out or len(out) > MAX_TARGETS or len(out) >= MAX_TARGET_SHARE * max(1, len(after.statuses)):
        return None
    return out


def reruns(before_runs: int, after_runs: int, targets: list[str] | None,
           full_before_rerun: bool = False) -> list[tuple[str, list[str] | None]]:
    """The adaptive reruns after before#1 and after#1: (side, targets or None for a full run),
    in order -- the before side's `before_runs - 1` runs, then the after side's `after_runs - 1`,
    every one targeted but the after side's last (full, for PASS_TO_PASS stability) and, with
    `full_before_rerun`, the before side's first (before#2: a PASS_TO_PASS test seen twice before
    the patch; the targets are in it)."""
    out: list[tuple[str, list[str] | None]] = [
        ("before", None if full_before_rerun and k == 0 else targets) for k in range(before_runs - 1)]
    n = after_runs - 1
    out += [("after", targets if k < n - 1 else None) for k in range(n)]
    return out


def fixed(before_runs: int, after_runs: int) -> list[tuple[str, list[str] | None]]:
    """The `fixed` schedule: every run full, the before side first."""
    return [("before", None)] * before_runs + [("after", None)] * after_runs
