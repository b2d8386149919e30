"""`scripts/scaling.py`: the efficiency figure a user reads after the same list ran on 1 and N nodes."""

from __future__ import annotations

import json

from scripts.scaling import main


def _run(workdir, wall_s, cpu_s, verified, total, ids, nodes=None):
    (workdir / "instances").mkdir(parents=True)
    for i in ids:
        (workdir / "instances" / i).mkdir()
        (workdir / "instances" / i / "DONE").write_text("")
    run = {"wall_s": wall_s, "cpu_s": cpu_s, "nodes": nodes or {},
           "minted": {"outcomes": {"verified": verified}, "total": total, "verified": verified}}
    (workdir / "report.json").write_text(json.dumps({"run": run}))


def test_efficiency_is_the_speedup_over_the_node_count(tmp_path, capsys):
    ids = [f"o__r-{i}" for i in range(8)]
    _run(tmp_path / "one", 3600, 7200, 6, 8, ids)
    _run(tmp_path / "many", 600, 9000, 6, 8, ids, {"n0": {"verified": 3}, "n1": {"verified": 3}})
    assert main(["--one", str(tmp_path / "one"), "--many", str(tmp_path / "many"), "--nodes", "8"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["speedup"] == 6.0 and out["efficiency"] == 0.75
    assert out["cpu_cost_ratio"] == 1.25 and "warning" not in out
    _run(tmp_path / "other", 600, 900, 1, 1, ids[:1])
    assert main(["--one", str(tmp_path / "one"), "--many", str(tmp_path / "other"), "--nodes", "2"]) == 0
    assert "different instances" in json.loads(capsys.readouterr().out)["warning"]
    assert main(["--one", str(tmp_path / "none"), "--many", str(tmp_path / "many"), "--nodes", "2"]) == 2
