"""scripts/yield_local.py: passes over growing windows of a mirror, the per-repository table with
an explanation of every no_fail_to_pass row, and a background run that survives kill -9 and
continues without minting anything twice (the build stage is the fake of flow_support)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.pipeline.flow_support import bare_mirror, git, make_repo

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "yield_local.py"
FAKE = ["--set", "mint_function=tests.pipeline.flow_support:fake_mint", "--set", "mint.memory.enabled=false"]


@pytest.fixture
def mirror(tmp_path):
    units = make_repo(tmp_path / "src" / "lib", 4, no_f2p=(104,))  # #102 #104 #106 #108 on top of the root
    bare_mirror(tmp_path / "src" / "lib", tmp_path / "mirrors", "acme/lib")
    return tmp_path / "mirrors", units


def script(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


def results(work: Path) -> dict[str, dict]:
    out = {}
    for p in (work / "instances").glob("*/result.json"):
        r = json.loads(p.read_text())
        out[r["instance_id"]] = r
    return out


def test_passes_table_and_explanations_then_a_rerun_mints_nothing(tmp_path, mirror):
    mirrors, _ = mirror
    work = tmp_path / "y"
    args = ["--workdir", str(work), "--mirrors", str(mirrors), "--repos", "acme/lib", "--passes", "2,5", *FAKE]
    got = script(*args)
    assert got.returncode == 0, got.stdout + got.stderr
    table = json.loads((work / "yield.json").read_text())
    assert table["passes_done"] == [2, 5]
    lib = table["repositories"][0]
    assert (lib["repo"], lib["mined"], lib["accepted"], lib["minted"]) == ("acme/lib", 4, 4, 4)
    assert (lib["verified"], lib["no_fail_to_pass"], lib["yield"]) == (3, 1, 0.75)
    assert lib["s_per_verified"] == pytest.approx(0.4 / 3, abs=0.05)
    [why] = table["explained"]
    assert why["instance_id"] == "acme__lib-104" and why["title"].startswith("Fix case 2")
    assert "fix: src/lib/mod2.py" in why["explanation"] and "adds 0 test definition(s)" in why["explanation"]
    assert "minter: no test fails before the patch" in why["explanation"]
    assert "| acme__lib-104 | no_fail_to_pass |" in got.stdout  # printed, and in yield.md
    # the first pass saw only the newest 2 commits; the second added the older ones
    assert "max_commits: 2" in (work / "yield-2.yaml").read_text()
    first = results(work)
    again = script(*args)
    assert again.returncode == 0, again.stdout + again.stderr
    assert results(work) == first  # nothing minted again
    run = json.loads((work / "report.json").read_text())["run"]
    assert run["units"]["seen"] == 0 and run["minted"]["total"] == 0


def test_a_ledger_carries_the_measurement_to_a_new_machine(tmp_path, mirror):
    """Units recorded in the ledger by one work directory are not minted again in a fresh one
    (they are `excluded` rejects there), and its table counts them from the ledger: the same
    numbers as on the first machine."""
    mirrors, _ = mirror
    src = tmp_path / "src" / "lib"  # a docs-only squash on top: a rejected unit, no instance id
    (src / "README.md").write_text("lib, documented\n")
    git(src, "commit", "-q", "-am", "Document lib (#200)", date="2024-03-01T00:00:00Z")
    bare_mirror(src, mirrors, "acme/lib")
    ledger = tmp_path / "results" / "yield.jsonl"
    common = ["--mirrors", str(mirrors), "--repos", "acme/lib", *FAKE, "--ledger", str(ledger)]
    first = script("--workdir", str(tmp_path / "a"), "--last", "4", *common)
    assert first.returncode == 0, first.stdout + first.stderr
    lines = [json.loads(x) for x in ledger.read_text().splitlines()]
    assert sorted((ln["instance_id"], ln["outcome"]) for ln in lines if ln["outcome"]) == [
        ("acme__lib-104", "no_fail_to_pass"), ("acme__lib-106", "verified"), ("acme__lib-108", "verified")]
    assert all(ln["code"] and ln["recorded"] for ln in lines) and "patch" not in lines[0]
    assert [ln["reason"] for ln in lines if ln["status"] == "rejected"] == ["no_test_change"]
    why = next(ln for ln in lines if ln["outcome"] == "no_fail_to_pass")
    assert "minter: no test fails before the patch" in why["explanation"]
    want = json.loads((tmp_path / "a" / "yield.json").read_text())["repositories"]
    # a new machine: the first work directory is gone, the ledger (in git) is not
    again = script("--workdir", str(tmp_path / "a"), "--table-only", *common)  # reads the ledger it wrote
    assert again.returncode == 0, again.stdout + again.stderr
    second = script("--workdir", str(tmp_path / "b"), "--last", "6", *common)
    assert second.returncode == 0, second.stdout + second.stderr
    assert sorted(results(tmp_path / "b")) == ["acme__lib-102"]  # only the unit the ledger did not have
    got = json.loads((tmp_path / "b" / "yield.json").read_text())
    lib = got["repositories"][0]
    assert (lib["mined"], lib["accepted"], lib["minted"], lib["verified"], lib["no_fail_to_pass"]) == (5, 4, 4, 3, 1)
    assert lib["rejected"] == {"no_test_change": 1} and want[0]["minted"] == 3
    assert [e["instance_id"] for e in got["explained"]] == ["acme__lib-104"]
    assert "acme__lib-104" in (tmp_path / "b" / "ledger-excluded.txt").read_text().split()


def _wait(pred, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.2)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").is_dir() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


@pytest.mark.slow
def test_background_run_survives_kill_9_and_the_same_command_continues(tmp_path, mirror):
    mirrors, _ = mirror
    work = tmp_path / "y"
    args = ["--workdir", str(work), "--mirrors", str(mirrors), "--repos", "acme/lib", "--last", "5", *FAKE,
            "--background"]
    slow = {"SWEMINT_FAKE_MINT_S": "2"}
    started = script(*args, env=slow)
    assert started.returncode == 0 and "started pid" in started.stdout, started.stdout + started.stderr
    pid = int((work / "yield.pid").read_text())
    _wait(lambda: len(results(work)) >= 1)
    status = script(*args, env=slow)
    assert f"running (pid {pid}" in status.stdout  # the same command again: the table so far, nothing started
    assert int((work / "yield.pid").read_text()) == pid
    os.killpg(pid, signal.SIGKILL)  # the script and its swemint run
    _wait(lambda: not _alive(pid))
    before = results(work)
    assert 1 <= len(before) < 4
    resumed = script(*args)
    assert resumed.returncode == 0 and "started pid" in resumed.stdout, resumed.stdout + resumed.stderr
    pid2 = int((work / "yield.pid").read_text())
    _wait(lambda: not _alive(pid2))
    after = results(work)
    assert sorted(after) == ["acme__lib-102", "acme__lib-104", "acme__lib-106", "acme__lib-108"]
    for iid, row in before.items():  # finished before the kill: not minted again
        assert after[iid]["finished_at"] == row["finished_at"]
    table = json.loads((work / "yield.json").read_text())
    assert table["passes_done"] == [5] and table["repositories"][0]["minted"] == 4


def test_the_table_reads_the_crawl_state_while_a_pass_holds_its_lock(tmp_path):
    """`--table-only` during a pass: the running `swemint run` holds DuckDB's write lock on the
    crawl state; the table reads a copy instead of failing with a lock error."""
    import importlib.util

    import duckdb

    state = tmp_path / "crawl" / "state.duckdb"
    state.parent.mkdir()
    with duckdb.connect(str(state)) as db:
        db.execute("CREATE TABLE outcomes (key TEXT, repo TEXT, kind TEXT, status TEXT, reason TEXT, row_json TEXT)")
        db.execute("INSERT INTO outcomes VALUES ('k1', 'acme/lib', 'commit', 'accepted', NULL, NULL), "
                   "('k2', 'acme/lib', 'commit', 'rejected', 'not_pr_like', NULL), "
                   "('acme/lib', 'acme/lib', 'repo', 'done', NULL, NULL)")
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
                               "print('locked', flush=True); time.sleep(60)", str(state)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(duckdb.IOException):  # what the table met before
            duckdb.connect(str(state), read_only=True)
        spec = importlib.util.spec_from_file_location("yield_local", SCRIPT)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        assert sorted(mod._units(state), key=str) == sorted(
            [("k1", "acme/lib", "accepted", None, None), ("k2", "acme/lib", "rejected", "not_pr_like", None)], key=str)
    finally:
        holder.kill()
        holder.wait()
