"""Review rv86: the driver's MemoryWriter must not quarantine the knowledge store when another
process holds it read-only (a worker copying it, `swemint memory list/show`): DuckDB's lock
conflict is an IOException, not a torn file."""

from __future__ import annotations

import subprocess
import sys

from agents.memory.experience_store import ExperienceStore
from agents.models import InstanceResult, StepRecord
from pipeline.driver import MemoryWriter

SEED = "py-setuptools-scm-no-version"


def test_a_reader_holding_the_store_does_not_make_the_driver_quarantine_it(tmp_path, monkeypatch):
    path = tmp_path / "memory" / "experiences.duckdb"
    writer = MemoryWriter(path)
    traj = tmp_path / "t.jsonl"
    traj.write_text(StepRecord(agent="memory", rule=f"score:{SEED}", exit_code=0, note="{}").model_dump_json() + "\n")
    res = InstanceResult(instance_id="o__r-1", repo="o/r", outcome="verified", trajectory_path=str(traj))
    assert writer.learn(res) == 1  # seeds loaded, the use counted
    monkeypatch.setattr("pipeline.driver.LOCK_WAIT_S", 0.2, raising=False)
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; "
                               f"c = duckdb.connect({str(path)!r}, read_only=True); print('held', flush=True); "
                               "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        writer.learn(res)  # the file is locked by the reader: this use may be lost, the store must not be
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert path.is_file(), sorted(p.name for p in path.parent.iterdir())
    assert not [p for p in path.parent.iterdir() if ".corrupt-" in p.name]
    with ExperienceStore(path, read_only=True) as s:
        assert s.get(SEED).times_applied >= 1  # what was learned before is still there
