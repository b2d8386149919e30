"""The measurement scripts read two work directories without writing into them: `diff_runs`
names every difference of outcome and lists with its cause, `loop_stats` counts what the loop
and the memory did."""

from __future__ import annotations

import json

from agents.models import InstanceResult, RoundRecord, StepRecord
from scripts.diff_runs import compare, quantile, rows_of, times, totals
from scripts.loop_stats import stats


def _store(workdir, res: InstanceResult, steps: list[StepRecord] = (), extra: dict | None = None) -> None:
    d = workdir / "instances" / res.instance_id
    d.mkdir(parents=True)
    if steps:
        (d / "trajectory.jsonl").write_text("".join(s.model_dump_json() + "\n" for s in steps))
        res = res.model_copy(update={"trajectory_path": str(d / "trajectory.jsonl")})
    (d / "result.json").write_text(json.dumps({**json.loads(res.model_dump_json()), **(extra or {})}))
    (d / "DONE").write_text("")


def test_every_difference_is_listed_with_its_cause_and_nothing_is_written(tmp_path):
    before, after = tmp_path / "before", tmp_path / "after"
    _store(before, InstanceResult(instance_id="a-1", repo="o/a", outcome="verified", FAIL_TO_PASS=["t1"],
                                  PASS_TO_PASS=["p1", "p2"], reason="1 F2P"),
           extra={"field_of_an_older_model": 1})  # an older row shape is read, not quarantined
    _store(after, InstanceResult(instance_id="a-1", repo="o/a", outcome="verified", FAIL_TO_PASS=["t1"],
                                 PASS_TO_PASS=["p1"], reason="1 F2P, 1 flaky"))
    _store(before, InstanceResult(instance_id="b-1", repo="o/b", outcome="verified", FAIL_TO_PASS=["x"]))
    _store(after, InstanceResult(instance_id="b-1", repo="o/b", outcome="tests_not_run", reason="no report",
                                 rounds=[RoundRecord(round=1, source="built", outcome="tests_not_run",
                                                     attribution="test_config: nothing ran", feedback="retest")]))
    _store(before, InstanceResult(instance_id="c-1", repo="o/c", outcome="verified", FAIL_TO_PASS=["y"]))
    _store(after, InstanceResult(instance_id="c-1", repo="o/c", outcome="verified", FAIL_TO_PASS=["y"]))
    files = sorted(p for p in before.rglob("*"))
    rows = {r["instance_id"]: r for r in compare(rows_of(before), rows_of(after), ["a-1", "b-1", "c-1", "d-1"])}
    assert sorted(before.rglob("*")) == files  # read only
    assert rows["a-1"]["p2p_only_before"] == ["p2"] and rows["a-1"]["after"] == "verified"
    assert rows["b-1"]["f2p_only_before"] == ["x"] and "r1 built tests_not_run" in rows["b-1"]["cause"]["after_rounds"]
    assert not rows["c-1"]["changed"] and rows["d-1"]["before"] == "missing"
    t = totals(list(rows.values()))
    assert (t["verified_before"], t["verified_after"], t["lost"], t["same_outcome_lists_differ"]) == (3, 2, 1, 1)


def test_loop_stats_counts_late_verifications_by_feedback_and_the_repairs(tmp_path):
    w = tmp_path / "w"
    rounds = [RoundRecord(round=1, source="built", outcome="no_fail_to_pass", attribution="toolchain: io/fs",
                          feedback="replan"),
              RoundRecord(round=2, source="built", outcome="verified")]
    _store(w, InstanceResult(instance_id="a-1", repo="o/a", outcome="verified", round=2, rounds=rounds),
           steps=[StepRecord(agent="execution", rule="memory:e1", command="apt-get install -y tcl", note="repair: x"),
                  StepRecord(agent="execution", rule="repair:go", command="go mod tidy", note="repair: y"),
                  StepRecord(agent="memory", rule="before-plan", note="3 entries retrieved (e1); applied: ['e1: pin']")])
    _store(w, InstanceResult(instance_id="b-1", repo="o/b", outcome="verified", round=1,
                             rounds=[RoundRecord(round=1, source="reused", outcome="verified")], reused_from="b-0"))
    s = stats(w, None)
    assert (s["verified"], s["verified_round_ge2"], s["by_feedback"]) == (2, 1, {"replan (toolchain)": 1})
    assert (s["repairs_total"], s["repairs_by_memory"], s["plans_changed_before_planning"], s["reused"]) == (2, 1, 1, 1)
    assert stats(w, {"b-1"})["verified_round_ge2"] == 0


def test_times_pair_only_instances_both_sides_finished(tmp_path):
    before, after = tmp_path / "before", tmp_path / "after"
    for iid, b, a in (("a-1", 100.0, 150.0), ("b-1", 200.0, 200.0), ("c-1", 300.0, 330.0)):
        _store(before, InstanceResult(instance_id=iid, repo="o/x", outcome="verified", timings={"total": b}))
        _store(after, InstanceResult(instance_id=iid, repo="o/x", outcome="verified", timings={"total": a}))
    _store(before, InstanceResult(instance_id="d-1", repo="o/x", outcome="verified", timings={"total": 9.0}))
    _store(after, InstanceResult(instance_id="e-1", repo="o/x", outcome="verified"))  # no time
    tm = times(rows_of(before), rows_of(after), ["a-1", "b-1", "c-1", "d-1", "e-1"])
    assert tm["pairs"] == 3 and [p[0] for p in tm["per_instance"]] == ["a-1", "b-1", "c-1"]
    assert tm["before"]["median"] == 200.0 and tm["after"]["median"] == 200.0
    assert tm["ratio_of_medians"] == 1.0 and tm["median_of_ratios"] == 1.1  # 1.5, 1.0, 1.1
    assert tm["before"]["p90"] == 300.0
    assert times(rows_of(before), rows_of(after), ["d-1"]) == {"pairs": 0}


def test_quantile_is_nearest_rank():
    assert quantile(list(range(1, 11)), 0.9) == 9 and quantile(list(range(1, 21)), 0.9) == 18
    assert quantile([5.0], 0.9) == 5.0 and quantile([1, 2, 3], 0.5) == 2
