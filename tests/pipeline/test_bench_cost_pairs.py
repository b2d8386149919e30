"""scripts/bench_cost.py's pairs ledger (issue 26's benchmark across machines: a bench folder is
lost with its machine, the pair lines kept in git are not): `report --save-pairs` writes one line
per pair with numbers, outcomes and list-equality counts only (no test ids); `report
--pairs-ledger` adds the ledger's pairs of ids the work directories do not have and sums over
both, per language and phase; `run --pairs-ledger` runs only the ids not paired yet."""

from __future__ import annotations

import json

from agents.models import CostRecord, InstanceResult
from scripts import bench_cost
from tests.pipeline.test_measure_scripts import _store


def _row(iid: str, outcome: str, cpu: float, f2p=("t1",)) -> InstanceResult:
    return InstanceResult(instance_id=iid, repo="o/a", outcome=outcome, FAIL_TO_PASS=list(f2p),
                          PASS_TO_PASS=["p1"], timings={"total": cpu * 2},
                          cost=CostRecord(cpu_s=cpu, phase_cpu_s={"setup": cpu / 2, "before": cpu / 2},
                                          process_cpu_s=0.0))


def _instances(tmp_path, ids):
    src = tmp_path / "dev.jsonl"
    src.write_text("".join(json.dumps({"instance_id": i, "repo": "o/a", "base_commit": "a" * 40,
                                       "patch": "", "test_patch": "", "problem_statement": "x",
                                       "language": "go" if i.startswith("g") else "python"}) + "\n"
                           for i in ids))
    idf = tmp_path / "ids.txt"
    idf.write_text("".join(i + "\n" for i in ids))
    return src, idf


def _report(src, idf, out, *extra):
    assert bench_cost.main(["report", "-i", str(src), "-o", str(out), "--ids-file", str(idf), *extra]) == 0
    return json.loads((out / "report.json").read_text())


def test_pairs_saved_on_one_machine_are_summed_with_the_next_machines(tmp_path, monkeypatch):
    src, idf = _instances(tmp_path, ["p__a-1", "g__b-2", "p__a-3"])
    one = tmp_path / "one"
    _store(one / "today-s1", _row("p__a-1", "verified", 100.0))
    _store(one / "new-s1", _row("p__a-1", "verified", 40.0, f2p=("t1", "t2")))
    _store(one / "today-s1", _row("g__b-2", "verified", 50.0))  # new arm never finished it: no pair
    ledger = tmp_path / "pairs.jsonl"
    rep = _report(src, idf, one, "--save-pairs", str(ledger))
    assert rep["pairs"]["s1"]["paired"] == 1
    [line] = [json.loads(x) for x in ledger.read_text().splitlines()]
    assert line["instance_id"] == "p__a-1" and line["suffix"] == "s1" and line["code"] and line["recorded"]
    assert line["lists"]["FAIL_TO_PASS"] == {"equal": False, "only_today": 0, "only_new": 1,
                                             "explained_by_flaky": 0, "unexplained": 1}  # a count, no test id
    assert "t2" not in ledger.read_text()
    # the next machine: the folder is gone; the run skips the paired id, the report adds it
    two = tmp_path / "two"
    two.mkdir()
    calls = []
    monkeypatch.setattr(bench_cost, "run_arms", lambda a, jobs, out, key: calls.append(jobs))  # no swemint here
    assert bench_cost.main(["run", "-i", str(src), "-o", str(two), "--ids-file", str(idf), "-m", str(tmp_path),
                            "--pairs-ledger", str(ledger)]) == 0
    cmd = calls[0]["today"]
    assert (two / "ids-todo-s1.txt").read_text().split() == ["g__b-2", "p__a-3"] and \
        cmd[cmd.index("--ids-file") + 1] == str(two / "ids-todo-s1.txt")
    _store(two / "today-s1", _row("g__b-2", "verified", 60.0))
    _store(two / "new-s1", _row("g__b-2", "verified", 30.0))
    rep = _report(src, idf, two, "--pairs-ledger", str(ledger))
    p = rep["pairs"]["s1"]
    assert p["paired"] == 2 and p["from_ledger"] == 1
    assert p["cpu_per_verified_today_s"] == 80.0 and p["cpu_per_verified_new_s"] == 35.0
    assert [x["instance_id"] for x in p["instances"]] == ["p__a-1", "g__b-2"]  # the list's order
    assert p["by_language"]["python"]["ratio_per_verified"] == 0.4
    assert p["by_language"]["all"]["phase_per_verified_new_s"]["setup"] == 17.5  # (20 + 15) / 2
    assert [x["instance_id"] for x in p["list_differences"]] == ["p__a-1"]
    assert "pair(s) from the pairs ledger" in (two / "report.md").read_text()


def test_a_reverify_folder_counts_only_the_rows_redone_after_its_copy(tmp_path):
    src, idf = _instances(tmp_path, ["p__a-1", "p__a-3"])
    out = tmp_path / "b"
    for arm in ("today", "new"):
        _store(out / f"{arm}-s1", _row("p__a-1", "verified", 10.0).model_copy(
            update={"finished_at": "2026-01-01T00:00:00+00:00"}))
        _store(out / f"{arm}-s1-reverify", _row("p__a-1", "verified", 10.0).model_copy(
            update={"finished_at": "2026-01-01T00:00:00+00:00"}))  # copied, not redone yet
        _store(out / f"{arm}-s1-reverify", _row("p__a-3", "verified", 5.0).model_copy(
            update={"finished_at": "2026-01-02T00:00:00+00:00"}))  # redone after the copy
    (out / bench_cost.STATE).write_text(json.dumps({"reverify_copied": {
        "today-s1-reverify": "2026-01-01T12:00:00+00:00", "new-s1-reverify": "2026-01-01T12:00:00+00:00"}}))
    rep = _report(src, idf, out)
    assert [x["instance_id"] for x in rep["pairs"]["s1-reverify"]["instances"]] == ["p__a-3"]
    assert [x["instance_id"] for x in rep["pairs"]["s1"]["instances"]] == ["p__a-1"]


def test_a_report_over_a_few_ids_keeps_the_ledgers_other_lines_and_the_runs_commit(tmp_path, monkeypatch):
    """`report --ids-file <two ids> --pairs-ledger L --save-pairs L2` writes L's lines of other ids
    again (it once wrote only the reported pairs: saving over the ledger lost the rest), and a pair
    carries the commit `run` recorded for its pass, not the report's HEAD."""
    src, idf = _instances(tmp_path, ["p__a-1", "g__b-2"])
    one = tmp_path / "one"
    _store(one / "today-s1", _row("p__a-1", "verified", 100.0))
    _store(one / "new-s1", _row("p__a-1", "verified", 40.0))
    (one / bench_cost.STATE).write_text(json.dumps({"passes": {
        "s1:new": [{"ended": "x", "wall_s": 1.0, "rc": 0, "code": "abc1234"}]}}))
    ledger = tmp_path / "pairs.jsonl"
    other = {"instance_id": "z__z-9", "suffix": "s1", "code": "old0000", "cpu_today_s": 1.0, "cpu_new_s": 1.0}
    ledger.write_text(json.dumps(other) + "\n")
    out = tmp_path / "saved.jsonl"
    _report(src, idf, one, "--pairs-ledger", str(ledger), "--save-pairs", str(out))
    lines = {x["instance_id"]: x for x in map(json.loads, out.read_text().splitlines())}
    assert set(lines) == {"p__a-1", "z__z-9"}
    assert lines["p__a-1"]["code"] == "abc1234" and lines["z__z-9"]["code"] == "old0000"


def _store_before_schema_3(workdir, res: InstanceResult) -> None:
    """A row as a swemint before `cost.image_cpu_s` wrote it (result_schema 2, no such field)."""
    _store(workdir, res)
    p = workdir / "instances" / res.instance_id / "result.json"
    data = json.loads(p.read_text())
    del data["cost"]["image_cpu_s"]
    p.write_text(json.dumps(data | {"result_schema": 2}))


def test_the_report_can_be_written_elsewhere_and_says_what_it_covers(tmp_path, capsys):
    """`report --write-to DIR` leaves OUT as it was; image-build CPU is `-` (null) when no row of
    the arm recorded it and carried into pair lines when they did; a ledger line a work dir's pair
    replaced is named, each pair shows the commit it ran at; the headline's CPU new/today and the
    `all` row's come from the same unrounded totals; no Python None in the Markdown; the ids
    default to the file `run` recorded."""
    src, idf = _instances(tmp_path, ["p__a-1", "g__b-2", "p__a-3"])
    two = tmp_path / "ids-two.txt"
    two.write_text("p__a-1\ng__b-2\n")
    out = tmp_path / "b"
    _store_before_schema_3(out / "today-s1", _row("p__a-1", "verified", 100.04))
    _store_before_schema_3(out / "new-s1", _row("p__a-1", "verified", 84.36))
    _store(out / "today-s1", _row("g__b-2", "verified", 10.0).model_copy(
        update={"cost": CostRecord(cpu_s=10.0, image_cpu_s=31.5)}))
    _store_before_schema_3(out / "new-s1", _row("g__b-2", "verified", 10.0))
    (out / bench_cost.STATE).write_text(json.dumps({"ids_file": str(two), "passes": {
        "s1:new": [{"ended": "x", "wall_s": 1.0, "rc": 0, "code": "abc1234"}]}}))
    ledger = tmp_path / "pairs.jsonl"
    ledger.write_text("".join(json.dumps(x) + "\n" for x in (
        {"instance_id": "p__a-1", "suffix": "s1", "code": "old0000", "language": "python", "today": "verified",
         "new": "verified", "cpu_today_s": 706.5, "cpu_new_s": 640.3, "wall_today_s": 1.0, "wall_new_s": 1.0,
         "runs_today": 5, "runs_new": 5},
        {"instance_id": "p__a-1", "suffix": "s2", "code": "old0000", "language": "python", "today": "verified",
         "new": "verified", "cpu_today_s": 7.0, "cpu_new_s": 6.0, "wall_today_s": None, "wall_new_s": 1.0,
         "runs_today": 5, "runs_new": 5})))
    before = sorted(p.name for p in out.iterdir())
    dest = tmp_path / "rep"
    assert bench_cost.main(["report", "-i", str(src), "-o", str(out), "--pairs-ledger", str(ledger),
                            "--write-to", str(dest)]) == 0
    assert sorted(p.name for p in out.iterdir()) == before  # OUT untouched
    rep = json.loads((dest / "report.json").read_text())
    md = (dest / "report.md").read_text()
    assert "None" not in md and "Legend" in md
    # ids: the run's file (two ids), not data/bench_cost_ids.txt
    assert [x["instance_id"] for x in rep["pairs"]["s1"]["instances"]] == ["p__a-1", "g__b-2"]
    # image builds: today recorded 31.5 on g__b-2; new never recorded any
    assert rep["arms"]["today-s1"]["all"]["image_cpu_total_s"] == 31.5
    assert rep["arms"]["new-s1"]["all"]["image_cpu_total_s"] is None
    assert rep["arms"]["new-s1"]["all"]["cpu_total_s"] == 94.4  # the other numbers as before
    g = rep["pairs"]["s1"]["instances"][1]
    assert g["image_cpu_today_s"] == 31.5 and "image_cpu_new_s" not in g
    assert "| all | 2 | 2 | 47.2 | 47.2 |" in md and md.count("| - |") >= 1
    # the ledger's p__a-1 (s1) was replaced by the work dirs' pair, at the commit the run recorded
    s1 = rep["pairs"]["s1"]
    assert s1["ledger_replaced"] == ["p__a-1"] and s1["from_ledger"] == 0
    assert s1["instances"][0]["cpu_today_s"] == 100.04 and s1["instances"][0]["code"] == "abc1234"
    assert "1 ledger line(s) replaced by the work directories' pairs (p__a-1)" in md
    assert "| p__a-1 | python | abc1234 | verified |" in md
    assert "| p__a-1 | python | old0000 | verified | verified | 7.0 | 6.0 | - | 1.0 |" in md  # s2: ledger only
    # one ratio from the same unrounded totals: 94.36 / 110.04, not 47.2 / 55.0 (0.858)
    assert s1["cpu_ratio_new_today"] == s1["by_language"]["all"]["ratio_per_verified"] == 0.858
    assert rep["pairs"]["s1"]["by_language"]["python"]["ratio_per_verified"] == 0.843  # 84.4 / 100.0 gave 0.844
    assert "no_fail_to_pass none on this list" in md
    assert "work directory `new-s1` only" in md and "Pairs of the pairs ledger only" in md
    assert "Per work directory only" in md
    # and a user who names another list gets it
    assert bench_cost.main(["report", "-i", str(src), "-o", str(out), "--ids-file", str(idf),
                            "--write-to", str(dest)]) == 0
    assert not (out / "report.json").exists()
    capsys.readouterr()


def test_report_help_says_where_it_writes(capsys):
    import pytest
    with pytest.raises(SystemExit):
        bench_cost.main(["report", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "OUT/report.json and OUT/report.md" in text and "--write-to DIR" in text


def test_run_records_its_ids_file_for_the_report(tmp_path, monkeypatch):
    src, idf = _instances(tmp_path, ["p__a-1"])
    monkeypatch.setattr(bench_cost, "run_arms", lambda a, jobs, out, key: None)
    assert bench_cost.main(["run", "-i", str(src), "-o", str(tmp_path / "b"), "--ids-file", str(idf),
                            "-m", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "b" / bench_cost.STATE).read_text())["ids_file"] == str(idf.resolve())
