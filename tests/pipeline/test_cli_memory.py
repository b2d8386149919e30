"""`swemint memory list` / `show` (issue 30's fresh-user trial: no way to inspect the knowledge
store): a small store written in tmp_path, read back through the CLI, read-only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agents.memory.experience import Experience
from agents.memory.experience_store import ExperienceStore
from pipeline.cli import app

runner = CliRunner()


def _entry(eid: str, source: str, eco: str = "python", applied: int = 0, worked: int = 0, **kw) -> Experience:
    return Experience(id=eid, ecosystem=eco, problem=f"problem of {eid}: something failed",
                      solution=f"fix of {eid}", error_signature=f"{eid} failed",
                      actions=[{"kind": "env", "name": "FOO", "value": "1"}],
                      provenance={"source": source, "instance_ids": ["octo__proj-1"] if source == "learned" else []},
                      times_applied=applied, times_worked=worked, **kw)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    path = work / "memory" / "experiences.duckdb"
    with ExperienceStore(path) as s:
        s.add_many([_entry("py-seed-a", "seed"), _entry("rule-diag-b", "rule", eco="any", applied=1),
                    _entry("learned-py-c", "learned", applied=1, worked=1,
                           context={"repos": ["octo/proj"], "dependencies": ["widget"]}),
                    _entry("learned-go-d", "learned", eco="go", applied=5, worked=0),
                    _entry("learned-py-e", "learned", negative=True)], keep_counters=False)
    (work / "pool.duckdb").write_bytes(b"")  # a work directory marker
    return path


def _list(*args: str) -> dict:
    r = runner.invoke(app, ["--json", "memory", "list", *args])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_list_shows_every_entry_with_the_reliability_the_code_uses(store):
    got = _list("-w", str(store.parents[1]))
    rows = {r["id"]: r for r in got["entries"]}
    assert set(rows) == {"py-seed-a", "rule-diag-b", "learned-py-c", "learned-go-d", "learned-py-e"}
    assert rows["py-seed-a"] == {"id": "py-seed-a", "ecosystem": "python", "source": "seed", "reliability": 0.75,
                                 "applied": 0, "worked": 0, "dropped": False, "negative": False}
    assert rows["rule-diag-b"]["reliability"] == 0.6  # (0 + 1 + 2) / (1 + 2 + 2)
    assert rows["learned-py-c"]["reliability"] == 0.667  # (1 + 1) / (1 + 2): no trust prior
    assert rows["learned-go-d"]["dropped"] and rows["learned-go-d"]["reliability"] == 0.143  # 1/7 < 0.34
    assert rows["learned-py-e"]["negative"] and got["floor"] == 0.34 and got["min_uses"] == 4
    r = runner.invoke(app, ["memory", "list", "--path", str(store)], terminal_width=200)
    assert r.exit_code == 0 and "learned-go-d" in r.stdout and "5 entries" in r.stdout
    for col in ("ecosystem", "source", "reliability", "applied", "worked", "dropped", "negative"):
        assert col in r.stdout


def test_list_filters(store):
    ids = lambda *a: [r["id"] for r in _list("--path", str(store), *a)["entries"]]  # noqa: E731
    assert ids("--ecosystem", "go") == ["learned-go-d"]
    assert ids("--source", "learned") == ["learned-go-d", "learned-py-c", "learned-py-e"]
    assert ids("--source", "rule") == ["rule-diag-b"]
    assert ids("--dropped") == ["learned-go-d"]
    assert "learned-go-d" not in ids("--kept")
    assert ids("--source", "learned", "--ecosystem", "python", "--kept") == ["learned-py-c", "learned-py-e"]
    r = runner.invoke(app, ["memory", "list", "--path", str(store), "--source", "taught"])
    assert r.exit_code == 2 and "not one of seed, rule, learned" in r.stderr
    # the floor comes from the configuration
    assert ids("--set", "mint.memory.floor=0.7", "--dropped") == ["learned-go-d"]
    assert "rule-diag-b" not in ids("--set", "mint.memory.min_uses=1", "--set", "mint.memory.floor=0.7", "--kept")


def test_show_gives_the_whole_entry_and_the_formulas_inputs(store):
    r = runner.invoke(app, ["--json", "memory", "show", "learned-py-c", "--path", str(store)])
    assert r.exit_code == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["entry"]["problem"].startswith("problem of learned-py-c")
    assert got["entry"]["context"]["dependencies"] == ["widget"]
    assert got["entry"]["provenance"]["instance_ids"] == ["octo__proj-1"]
    assert got["entry"]["actions"] == [{"kind": "env", "name": "FOO", "value": "1"}]
    assert got["reliability"] == {"times_worked": 1, "times_applied": 1, "prior": 0, "formula": "(1 + 1 + 0) / (1 + 2 + 0)",
                                  "reliability": 0.6667}
    assert got["dropped"] is False
    r = runner.invoke(app, ["memory", "show", "py-seed-a", "-w", str(store.parents[1])], terminal_width=200)
    assert r.exit_code == 0, r.stderr
    for needle in ("problem of py-seed-a", "fix of py-seed-a", '"kind": "env"', "provenance", "applied 0, worked 0",
                   "(0 + 1 + 2) / (0 + 2 + 2)", "prior 2 (hand-written)", "dropped: no"):
        assert needle in r.stdout, (needle, r.stdout)


def test_one_line_errors_and_the_store_is_never_written(store, tmp_path):
    before = store.read_bytes()
    r = runner.invoke(app, ["memory", "show", "nope", "--path", str(store)])
    assert r.exit_code == 1 and "no entry 'nope'" in r.stderr and "Traceback" not in r.stderr
    r = runner.invoke(app, ["memory", "list", "--path", str(tmp_path / "absent.duckdb")])
    assert r.exit_code == 2 and "no knowledge store at" in r.stderr
    r = runner.invoke(app, ["memory", "list", "-w", str(tmp_path / "not-a-workdir")])
    assert r.exit_code == 2 and "work directory not found" in r.stderr
    assert store.read_bytes() == before
    assert not (tmp_path / "absent.duckdb").exists()


def test_a_lesson_bound_to_a_dropped_rule_is_listed_and_shown_as_dropped(tmp_path):
    """`memory list/show` use the retriever's one drop rule (`retrieve.dropped_flags`): a lesson
    bound to a hand-written rule that fell below the floor is dropped with it, whatever its own
    counters say."""
    from agents.memory.knowledge import rule_entries

    rule = next(e for e in rule_entries() if e.id == "rule-diag-missing-header")
    path = tmp_path / "m.duckdb"
    with ExperienceStore(path) as s:
        s.add_many([rule.model_copy(update={"times_applied": 6, "times_worked": 0}),
                    _entry("learned-c-bound", "learned", eco="c", applied=1, worked=1,
                           context={"repos": ["octo/proj"]}).model_copy(
                        update={"provenance": rule.provenance.model_copy(
                            update={"source": "learned", "rule": rule.id, "file": ""})})], keep_counters=True)
    rows = {r["id"]: r for r in _list("--path", str(path))["entries"]}
    assert rows["rule-diag-missing-header"]["dropped"] and rows["learned-c-bound"]["dropped"]
    assert rows["learned-c-bound"]["reliability"] == 0.667  # its own counters are fine
    r = runner.invoke(app, ["memory", "show", "learned-c-bound", "--path", str(path)], terminal_width=200)
    assert r.exit_code == 0 and "dropped: yes" in r.stdout and "bound to rule rule-diag-missing-header" in r.stdout
