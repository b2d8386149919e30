"""scripts/bench_memory.py (issue 30's ablation): the id rule is deterministic and keeps out the
excluded ids and repositories without a mirror; arm c's memory holds the hand-written entries and
the ledgers' lessons keyed by repository; the report pairs arms on the ids all finished and
counts the uses of memory with their scores."""

from __future__ import annotations

import json

import pytest

from agents.memory.experience_store import ExperienceStore
from agents.models import InstanceResult, RoundRecord, StepRecord
from scripts.bench_memory import distil_ledgers, main, report, select
from tests.pipeline.test_measure_scripts import _store


def test_the_id_rule_takes_the_largest_mirrored_repositories_per_language(tmp_path):
    rows = [{"instance_id": f"o__{r}-{n}", "repo": f"o/{r}", "language": lang}
            for r, lang, k in (("big", "go", 5), ("mid", "go", 4), ("small", "go", 3), ("nomirror", "go", 9),
                               ("few", "php", 2), ("p", "php", 3)) for n in range(k)]
    src = tmp_path / "dev.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    excl = tmp_path / "x.txt"
    excl.write_text("o__big-0\no__big-1\no__big-2\n")
    mirrors = tmp_path / "m"
    for r in ("big", "mid", "small", "few", "p"):
        (mirrors / f"o+{r}").mkdir(parents=True)
    ids = select(src, [excl], mirrors, languages=("go", "php"), repos=2, per=3)
    assert {i.rsplit("-", 1)[0] for i in ids} == {"o__mid", "o__small", "o__p"}  # big has 2 left, few 2
    assert len(ids) == 9 and not set(ids) & {"o__big-0", "o__big-1", "o__big-2"}
    assert select(src, [excl], mirrors, languages=("go", "php")) == ids


def test_arm_c_starts_from_the_ledgers_lessons_keyed_by_repository(tmp_path):
    led = tmp_path / "l.jsonl"
    led.write_text(json.dumps({"instance_id": "o__a-1", "repo": "o/a", "language": "go", "outcome": "env_failed",
                               "reason": "go: module example.com/x requires go >= 1.99 (running go 1.22)"}) + "\n"
                   + json.dumps({"instance_id": "o__a-2", "repo": "o/a", "language": "go", "outcome": "verified",
                                 "reason": "1 FAIL_TO_PASS"}) + "\n")
    assert distil_ledgers([led], tmp_path / "m.duckdb") == 1
    with ExperienceStore(tmp_path / "m.duckdb", read_only=True) as s:
        [e] = [e for e in s.all() if e.provenance.source == "learned"]
        assert e.negative and e.context.repos == ["o/a"] and any(x.provenance.source == "rule" for x in s.all())


def test_the_report_pairs_the_arms_and_scores_the_uses(tmp_path):
    use = StepRecord(agent="memory", rule="use:rule-diag-missing-header", note=json.dumps({"stage": "setup"}))
    score = StepRecord(agent="memory", rule="score:rule-diag-missing-header", exit_code=0,
                       note=json.dumps({"stage": "setup"}))
    for arm, outcome in (("a", "env_failed"), ("b", "verified"), ("c", "verified")):
        _store(tmp_path / f"{arm}-pass1", InstanceResult(instance_id="o__a-1", repo="o/a", outcome=outcome,
                                                         rounds=[RoundRecord(round=1)]),
               steps=[use, score] if arm != "a" else [])
    _store(tmp_path / "b-pass1", InstanceResult(instance_id="o__a-2", repo="o/a", outcome="verified"))
    rep = report(tmp_path, None)["pass1"]
    assert rep["finished_by_every_arm"] == 1 and rep["b"]["all"]["finished"] == 2
    assert rep["b"]["common"]["verified"] == 1 and rep["a"]["common"]["verified"] == 0
    assert rep["b"]["common"]["scores_by_stage_source"] == {"setup/rule": "1/1"}
    assert rep["differences"] == [{"instance_id": "o__a-1", "a": "env_failed", "b": "verified", "c": "verified"}]


def test_the_report_counts_each_memory_file_and_every_commit_the_arms_ran_at(tmp_path):
    distil_ledgers([], tmp_path / "memory-c.duckdb")
    (tmp_path / "commit.txt").write_text("abc1234 first_pass=1 t\nabc1234+dirty first_pass=2 t\n")
    rep = report(tmp_path, None)
    assert rep["commit"] == ["abc1234", "abc1234+dirty"]  # two commits: said, not hidden
    m = rep["memory"]["memory-c"]
    assert m["by_source"].get("learned", 0) == 0 and m["entries"] > 0 and m["applied"] == 0


def test_the_report_prints_one_json_object_and_json_writes_the_same_and_its_help_says_so(tmp_path, capsys):
    """Issue 30 trial: `report --help` said nothing of its output or of `all` / `common`, `ids:
    null`, `rows_without_cost`."""
    with pytest.raises(SystemExit) as done:
        main(["report", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert done.value.code == 0
    for said in ("Prints one JSON object on stdout", "--json FILE writes the same object", "all over every row",
                 "common over the ids every arm of the pass finished", "null without --ids-file",
                 "rows_without_cost (in both) rows with no `cost.cpu_s`"):
        assert said in text, said
    _store(tmp_path / "a-pass1", InstanceResult(instance_id="o__a-1", repo="o/a", outcome="infra_error"))
    assert main(["report", "--out", str(tmp_path), "--json", str(tmp_path / "r.json")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((tmp_path / "r.json").read_text())
    assert printed["pass1"]["ids"] is None and printed["pass1"]["a"]["all"]["rows_without_cost"] == 1


def test_a_first_pass_outside_the_passes_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="--first-pass 3"):
        main(["run", "-i", str(tmp_path / "x.jsonl"), "-m", str(tmp_path), "--ids-file", str(tmp_path / "i.txt"),
              "--out", str(tmp_path / "o"), "--passes", "2", "--first-pass", "3"])


def test_a_setup_step_score_counts_as_a_use_and_the_ids_file_bounds_every_total(tmp_path):
    score = StepRecord(agent="memory", rule="score:rule-diag-missing-header", exit_code=1,
                       note=json.dumps({"stage": "setup-step"}))
    for arm in ("a", "b", "c"):
        _store(tmp_path / f"{arm}-pass1", InstanceResult(instance_id="o__a-1", repo="o/a", outcome="verified"),
               steps=[score] if arm == "b" else [])
        _store(tmp_path / f"{arm}-pass1", InstanceResult(instance_id="o__a-9", repo="o/a", outcome="verified"))
    ids = tmp_path / "ids.txt"
    ids.write_text("o__a-1\n")
    rep = report(tmp_path, ids)["pass1"]
    assert rep["b"]["all"]["finished"] == 1  # o__a-9 is not on the list
    assert rep["b"]["common"]["uses_by_stage"] == {"setup-step": 1}
    assert rep["b"]["common"]["scores_by_stage_source"] == {"setup-step/rule": "0/1"}
    assert rep["b"]["common"]["rows_without_cost"] == 1


def test_each_pass_s_images_are_removed_once_every_arm_finished_it(tmp_path, monkeypatch):
    """Three arms' images of one pass filled ~40 GB of the host's disk and pass 2 ended
    infra_error on the free-disk guard: a finished pass's images go before the next pass starts
    (`--keep-images` keeps them)."""
    import scripts.bench_memory as bm

    events: list[str] = []

    class Done:
        def wait(self):
            return 0

    monkeypatch.setattr(bm, "_bench", lambda arm, n, a: events.append(f"bench {arm}{n}") or Done())
    monkeypatch.setattr(bm, "_prune", lambda work: events.append(f"prune {work.name}"))
    (tmp_path / "c.duckdb").write_bytes(b"")
    monkeypatch.setattr(bm, "memory_counts", lambda p: {})
    args = ["run", "-i", str(tmp_path / "x.jsonl"), "-m", str(tmp_path), "--ids-file", str(tmp_path / "i.txt"),
            "--c-memory", str(tmp_path / "c.duckdb")]
    bm.main(args + ["--out", str(tmp_path / "o")])
    assert events == ["bench a1", "bench b1", "bench c1", "prune a-pass1", "prune b-pass1", "prune c-pass1",
                      "bench a2", "bench b2", "bench c2", "prune a-pass2", "prune b-pass2", "prune c-pass2"]
    events.clear()
    bm.main(args + ["--out", str(tmp_path / "k"), "--keep-images"])
    assert not [e for e in events if e.startswith("prune")] and len(events) == 6


def test_the_report_reads_every_pass_run_wrote_and_an_empty_ids_file_counts_zero(tmp_path):
    """Review: `report` read passes 1 and 2 only (a `run --passes 3` pass was left out silently),
    and an empty --ids-file reported `ids: null` while bounding every total to nothing."""
    for n in (1, 2, 3):
        for arm in ("a", "b", "c"):
            _store(tmp_path / f"{arm}-pass{n}", InstanceResult(instance_id="o__a-1", repo="o/a", outcome="verified"))
    assert [k for k in report(tmp_path, None) if k.startswith("pass")] == ["pass1", "pass2", "pass3"]
    empty = tmp_path / "ids.txt"
    empty.write_text("")
    rep = report(tmp_path, empty)["pass3"]
    assert rep["ids"] == 0 and rep["a"]["all"]["finished"] == 0
