"""`scripts/ledger.py`: a measurement's scored rows kept as a ledger survive the loss of the work
directory (a new machine) — the report from the ledger alone gives the same numbers as from the
work directory, `remaining` names what is left to run, memory arms read from ledgers; no Docker."""

from __future__ import annotations

import json
import shutil

import pytest

from agents.models import InstanceResult, RoundRecord
from scripts.ledger import main as ledger_main
from scripts.ledger import read_ledger, record, remaining
from scripts.measure_report import build_report
from scripts.measure_report import main as report_main
from tests.pipeline.test_measure_report import DF, _inst, _world, _write

SECTIONS = ("repositories", "languages", "failures", "zero_repositories", "p2p", "times")


def test_a_report_from_the_ledger_alone_equals_the_report_from_the_work_directories(tmp_path):
    inst_file, workdirs, ids, net = _world(tmp_path)
    want = build_report(inst_file, workdirs, ids, network_file=net, df=DF)
    ledger = tmp_path / "results" / "gen.jsonl"
    for w in workdirs:
        record(inst_file, w, ledger, code="c0ffee", df=DF)
    lines = read_ledger(ledger)
    assert sorted(lines) == ["go-1", "go-2", "net-1", "py-1", "py-2", "rs-1"]  # py-3 never finished
    assert lines["py-1"]["code"] == "c0ffee" and lines["py-1"]["image_bytes"] == 600
    assert "FAIL_TO_PASS" not in lines["py-1"] and "patch" not in lines["py-1"]  # numbers, not the repository
    for w in workdirs:
        shutil.rmtree(w)  # the machine is gone
    got = build_report(inst_file, [], ids, network_file=net, df=DF, ledgers=[ledger])
    for section in SECTIONS:
        assert got[section] == want[section], section
    assert got["from_ledger"] == 6
    # disk: measured at record time (rs-1's image through the pool of its work directory)
    assert got["disk"] == want["disk"]
    # a new machine without an engine: the disk numbers are the ones the ledger recorded
    bare = build_report(inst_file, [], ids, network_file=net, df=None, df_note="docker unavailable: x",
                        ledgers=[ledger])["disk"]
    assert bare["languages"] == want["disk"]["languages"] and "recorded image bytes" in bare["note"]


def test_a_later_record_replaces_the_line_and_a_work_directory_row_wins_over_the_ledger(tmp_path):
    inst_file, workdirs, ids, net = _world(tmp_path)
    ledger = tmp_path / "gen.jsonl"
    record(inst_file, workdirs[0], ledger, code="old")
    w3 = tmp_path / "w3"
    go1 = _inst("go-1", "o/go", "Go", ["TestA"])
    _write(w3, go1, InstanceResult(instance_id="go-1", repo="o/go", outcome="verified", FAIL_TO_PASS=["TestA"],
                                   timings={"total": 9.0}))
    rep = build_report(inst_file, [w3], ids, network_file=net, ledgers=[ledger])
    by = {r["instance_id"]: r for r in rep["rows"]}
    assert by["go-1"]["outcome"] == "verified" and not by["go-1"].get("from_ledger")
    assert by["go-2"]["outcome"] == "env_failed" and by["go-2"]["from_ledger"]
    n, total = record(inst_file, w3, ledger, code="new")
    assert (n, total) == (1, 5)
    assert read_ledger(ledger)["go-1"]["outcome"] == "verified" and read_ledger(ledger)["go-1"]["code"] == "new"
    assert read_ledger(ledger)["go-2"]["code"] == "old"


def test_remaining_names_the_ids_no_ledger_has_in_order(tmp_path, capsys):
    inst_file, workdirs, ids, _ = _world(tmp_path)
    ledger = tmp_path / "gen.jsonl"
    assert ledger_main(["record", "-i", str(inst_file), "--workdir", str(workdirs[1]), "--ledger", str(ledger),
                        "--no-docker", "--code", "abc"]) == 0
    assert "1 line(s) recorded, 1 in all" in capsys.readouterr().out
    assert remaining(["py-1", "rs-1", "go-1"], [ledger]) == ["py-1", "go-1"]
    assert ledger_main(["remaining", "--ids-file", str(ids), "--ledger", str(ledger)]) == 0
    assert capsys.readouterr().out.split() == ["py-1", "py-2", "py-3", "go-1", "go-2", "net-1"]


def test_a_torn_ledger_line_is_an_error_naming_file_and_line(tmp_path):
    bad = tmp_path / "l.jsonl"
    bad.write_text('{"instance_id": "a"}\n{"instance_id": \n')
    with pytest.raises(ValueError, match=r"l\.jsonl:2: not JSON"):
        read_ledger(bad)
    units = tmp_path / "y.jsonl"  # the yield ledger: keyed by unit, rejected units have no instance id
    units.write_text('{"key": "o__r-abc1234", "instance_id": null, "status": "rejected"}\n')
    assert read_ledger(units, key="key")["o__r-abc1234"]["status"] == "rejected"
    with pytest.raises(ValueError, match="non-empty 'instance_id'"):
        read_ledger(units)


def test_memory_arms_from_ledgers_match_arms_from_work_directories(tmp_path):
    (tmp_path / "i.jsonl").write_text("".join(_inst(f"x-{n}", "o/x", "go", ["TestA"]).model_dump_json() + "\n"
                                              for n in (1, 2)))
    ids = tmp_path / "ids.txt"
    ids.write_text("x-1\nx-2\n")
    late = [RoundRecord(round=1, outcome="tests_not_run", attribution="toolchain: io/fs", feedback="replan: go 1.16"),
            RoundRecord(round=2, outcome="verified")]
    one = [RoundRecord(round=1, outcome="verified")]
    for name, rounds in (("both", late), ("off", one)):
        for iid in ("x-1", "x-2"):
            _write(tmp_path / name, _inst(iid, "o/x", "go", ["TestA"]),
                   InstanceResult(instance_id=iid, repo="o/x", outcome="verified", FAIL_TO_PASS=["TestA"],
                                  round=len(rounds), rounds=rounds))
        record(tmp_path / "i.jsonl", tmp_path / name, tmp_path / f"{name}.jsonl")

    def arms(sources: dict[str, str]) -> list[dict]:
        out = tmp_path / "r.json"
        argv = ["-i", str(tmp_path / "i.jsonl"), "--ids-file", str(ids), "--json", str(out)]
        for name, src in sources.items():
            argv += ["--arm", f"{name}={src}"]
        assert report_main(argv) == 0
        return [{k: v for k, v in a.items() if k != "workdir"} for a in json.loads(out.read_text())["arms"]["arms"]]

    from_dirs = arms({"both": tmp_path / "both", "off": tmp_path / "off"})
    from_ledgers = arms({"both": tmp_path / "both.jsonl", "off": tmp_path / "off.jsonl"})
    assert from_dirs == from_ledgers
    assert from_ledgers[0]["by_feedback"] == {"replan (toolchain)": 2} and from_ledgers[1]["verified_round_ge2"] == 0


def test_a_ledger_line_records_the_rows_cost(tmp_path):
    """Issue 26: phase timings, CPU-seconds (containers by phase, engine, process, host), the
    floor, load, cores, slots, runs by kind and the policy travel into the ledger line."""
    from agents.models import CostRecord, RunCost

    inst_file, workdirs, ids, net = _world(tmp_path)
    w = tmp_path / "wc"
    cost = CostRecord(phase_cpu_s={"setup": 30.0, "before": 5.0, "after": 6.0, "reruns": 4.0}, container_cpu_s=45.0,
                      engine_cpu_s=1.5, process_cpu_s=2.0, cpu_s=48.5, host_cpu_s=120.0, load_start=[3.0, 2.5, 2.0],
                      load_end=[4.0, 3.0, 2.1], cores=2, slots=1, floor_cpu_s=41.0,
                      runs=[RunCost(label="before#1", cpu_s=5.0), RunCost(label="after#1", cpu_s=6.0),
                            RunCost(label="before#2", kind="targeted", cpu_s=1.0)],
                      policy={"verify.policy": "adaptive"})
    _write(w, _inst("go-1", "o/go", "Go", ["TestA"]),
           InstanceResult(instance_id="go-1", repo="o/go", outcome="verified", FAIL_TO_PASS=["TestA"],
                          timings={"total": 60.0, "setup": 40.0, "before": 5.0, "after": 6.0, "reruns": 4.0}, cost=cost))
    ledger = tmp_path / "cost.jsonl"
    record(inst_file, w, ledger, code="c0ffee")
    line = read_ledger(ledger)["go-1"]
    assert line["cpu_s"] == 48.5 and line["phase_cpu_s"]["reruns"] == 4.0 and line["floor_cpu_s"] == 41.0
    assert line["phase_s"]["reruns"] == 4.0 and line["host_cpu_s"] == 120.0 and line["load_end"] == [4.0, 3.0, 2.1]
    assert line["cores"] == 2 and line["slots"] == 1 and line["runs"] == {"full": 2, "targeted": 1}
    assert line["policy"] == {"verify.policy": "adaptive"}
