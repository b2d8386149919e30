"""Version skew and read-only readers of the result store (pipeline.store).

A row written by a newer swemint (a field this version's model forbids, or a higher
`result_schema` stamp) is never moved or deleted: every reader, the driver included, stops with
one line naming the work directory, the instance and the cause. A torn result.json is moved aside
only by the driver (it holds the work directory's lock); `swemint eval`, `report`, `export` and
the Python API leave it in place. Each case mints a small work directory with a fake minter
(`tests.pipeline.test_cli`'s set-up: a one-file repository the test writes) and edits its rows.

Before the change, `eval -w`/`report`/`export` on a row with an unknown field renamed result.json
to `result.json.corrupt-*` and removed DONE, and the next `mint` minted the instance again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import types
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

import swemint
from agents.models import OUTCOMES, RESULT_SCHEMA, InstanceResult
from pipeline.cli import app
from pipeline.store import DONE, NewerRow, ReadOnlyStore, ResultStore, driver_lock, holds_driver_lock
from tests.pipeline.test_cli import calls, mint_args, setup  # noqa: F401 - `setup` is a fixture

VERIFIED = "octo__proj-1"

SHAPES = {2: "779028e8c2fbcb688243f82aea23caaab92d68029b7343907b838de9dfc5a69a",
          3: "37d5f0579163f0f5a51416e92670af8fbb556bd3f2dfb13e225563e3d4f9d641"}
"""sha256 of `shape()` for each RESULT_SCHEMA (see test_the_schema_number_follows_the_row_shape)."""


def shape() -> str:
    """sha256 of InstanceResult's dotted field names (nested records included) and OUTCOMES."""
    names: set[str] = set()

    def models(tp) -> list[type[BaseModel]]:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return [tp]
        return [m for a in typing.get_args(tp) for m in models(a)]

    def walk(model: type[BaseModel], prefix: str, seen: tuple) -> None:
        for name, f in model.model_fields.items():
            names.add(prefix + name)
            for sub in models(f.annotation):
                if sub not in seen:
                    walk(sub, f"{prefix}{name}.", (*seen, sub))

    walk(InstanceResult, "", (InstanceResult,))
    text = "\n".join(sorted(names)) + "\noutcomes:" + ",".join(OUTCOMES)
    return hashlib.sha256(text.encode()).hexdigest()


def test_the_schema_number_follows_the_row_shape():
    assert SHAPES.get(RESULT_SCHEMA) == shape(), (
        "InstanceResult's fields or OUTCOMES changed: bump agents.models.RESULT_SCHEMA and add "
        f"{{{RESULT_SCHEMA + 1}: {shape()!r}}} to SHAPES, so that older swemints refuse the new rows")


def snapshot(work: Path) -> dict[str, bytes]:
    """Every file under WORKDIR/instances, by relative path, with its bytes."""
    return {str(p.relative_to(work)): p.read_bytes() for p in sorted((work / "instances").rglob("*")) if p.is_file()}


def row_path(work: Path, iid: str = VERIFIED) -> Path:
    return ResultStore(work).dir(iid) / "result.json"


def edit_row(work: Path, iid: str = VERIFIED, **fields) -> None:
    path = row_path(work, iid)
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}, indent=1))


def mint(d: Path) -> list[str]:
    """`swemint mint` of the set-up (without reuse: the fake minter takes no candidates)."""
    return mint_args(d, "--set", "mint.reuse.enabled=false")


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


@pytest.fixture()
def minted(setup):  # noqa: F811 - the imported fixture
    """The set-up's work directory after one `swemint mint`: octo__proj-1 verified, -2
    no_fail_to_pass, -3 infra_error."""
    r = CliRunner().invoke(app, mint(setup))
    assert r.exit_code == 0, r.output
    assert len(calls(setup)) == 2
    return setup


def test_written_rows_carry_the_stamp(minted):
    raw = json.loads(row_path(minted / "work").read_text())
    assert raw["result_schema"] == RESULT_SCHEMA and raw["swemint_version"] == swemint.__version__


def test_a_row_with_an_unknown_field_stops_every_reader_and_nothing_moves(minted):
    work = minted / "work"
    edit_row(work, field_of_a_newer_swemint=1, result_schema=RESULT_SCHEMA + 1, swemint_version="9.0.0")
    before = snapshot(work)
    outputs = {}
    for name, args in {"eval": ["eval", "-w", str(work), "--gold"], "report": ["report", "-w", str(work)],
                       "export": ["export", "-w", str(work)], "bench": ["bench", "-w", str(work), "--score-only"],
                       "mint": mint(minted)}.items():
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 2, (name, r.output)
        [line] = error_lines(r.output)
        outputs[name] = line
        assert snapshot(work) == before, name  # byte-identical: nothing renamed, no DONE removed
    for line in outputs.values():
        assert f"[{VERIFIED}]" in line and str(work) in line and "field_of_a_newer_swemint" in line
        assert "swemint 9.0.0" in line and "upgrade" in line
    assert len(calls(minted)) == 2  # the driver re-minted nothing (not even the infra_error row it retries)
    assert not list(work.rglob("*.corrupt-*")) and (row_path(work).parent / DONE).exists()
    with pytest.raises(NewerRow, match="field_of_a_newer_swemint"):
        swemint.load_rows(work)
    assert snapshot(work) == before


def test_a_higher_schema_stamp_alone_stops_a_reader(minted):
    work = minted / "work"
    edit_row(work, result_schema=RESULT_SCHEMA + 5)  # every field known: a newer shape, a new outcome...
    before = snapshot(work)
    with pytest.raises(NewerRow) as e:
        ResultStore(work, read_only=True).results()
    assert f"says result schema {RESULT_SCHEMA + 5}, newer than this version's {RESULT_SCHEMA}" in str(e.value)
    assert e.value.instance_id == VERIFIED and e.value.path == row_path(work) and e.value.unknown == []
    with driver_lock(work):  # the driver refuses too, and moves nothing
        with pytest.raises(NewerRow):
            ResultStore(work).needs_run(VERIFIED)
    assert snapshot(work) == before


def test_unknown_nested_fields_are_named(minted):
    work = minted / "work"
    raw = json.loads(row_path(work).read_text())
    edit_row(work, env={**raw["env"], "layer_digest": "sha256:0"})
    with pytest.raises(NewerRow) as e:
        ResultStore(work, read_only=True).read_result(VERIFIED)
    assert e.value.unknown == ["env.layer_digest"] and "fields this version does not know (env.layer_digest)" in str(e.value)


def test_a_truncated_row_is_left_in_place_by_readers(minted, caplog):
    work = minted / "work"
    path = row_path(work)
    path.write_bytes(path.read_bytes()[:40])
    before = snapshot(work)
    caplog.set_level(logging.WARNING, logger="pipeline.store")
    store = ResultStore(work)  # writable, but this process holds no driver lock
    assert not holds_driver_lock(work)
    assert store.read_result(VERIFIED) is None and store.needs_run(VERIFIED)
    assert [r.instance_id for r in ResultStore(work, read_only=True).results()] == ["octo__proj-2", "octo__proj-3"]
    assert "skipped" in caplog.text and str(path) in caplog.text and "JSONDecodeError" in caplog.text
    r = CliRunner().invoke(app, ["eval", "-w", str(work), "--gold"])
    assert r.exit_code == 2 and "no verified row" in r.output  # the only verified row was skipped
    r = CliRunner().invoke(app, ["export", "-w", str(work)])
    assert r.exit_code == 0 and "0 verified of 2 results" in r.output, r.output
    r = CliRunner().invoke(app, ["report", "-w", str(work)])
    assert r.exit_code == 0, r.output
    assert swemint.load_rows(work) == {}
    assert snapshot(work) == before and not list(work.rglob("*.corrupt-*"))


def test_a_truncated_row_is_quarantined_by_the_driver_and_reminted(minted):
    work = minted / "work"
    path = row_path(work)
    path.write_bytes(path.read_bytes()[:40])
    r = CliRunner().invoke(app, mint(minted))
    assert r.exit_code in (0, 1), r.output  # 1: the retried infra_error row ended infra_error again
    assert [c[0] for c in calls(minted)[2:]] == [VERIFIED]  # redone; -2 is finished, -3 never reaches the minter
    assert len(list(path.parent.glob("result.json.corrupt-*"))) == 1
    assert ResultStore(work, read_only=True).read_result(VERIFIED).outcome == "verified"


def test_a_read_only_store_never_writes_or_moves(tmp_path, caplog):
    work = tmp_path / "w"
    row = InstanceResult(instance_id="a__b-1", repo="a/b", outcome="verified")
    ResultStore(work).write_result(row)
    ro = ResultStore(work, read_only=True)
    with pytest.raises(ReadOnlyStore):
        ro.write_result(row)
    with pytest.raises(ReadOnlyStore):
        ro.mark_running(types.SimpleNamespace(instance_id="a__b-1"))  # refused before anything is read
    path = ro.dir("a__b-1") / "result.json"
    path.write_text("[1, 2]")  # JSON, but not an object
    with driver_lock(work):
        assert holds_driver_lock(work) and ro.read_result("a__b-1") is None  # read-only even under the lock
        assert path.read_text() == "[1, 2]" and (path.parent / DONE).exists()
        assert ResultStore(work).read_result("a__b-1") is None  # the driver's store moves it aside
    assert not path.exists() and not (path.parent / DONE).exists()
    assert len(list(path.parent.glob("result.json.corrupt-*"))) == 1 and not holds_driver_lock(work)


def test_a_row_that_does_not_validate_otherwise_is_moved_aside_only_by_the_driver(tmp_path):
    work = tmp_path / "w"
    store = ResultStore(work)
    path = store.write_result(InstanceResult(instance_id="a__b-1", repo="a/b", outcome="verified"))
    path.write_text(json.dumps({**json.loads(path.read_text()), "outcome": 7}))  # no newer stamp, no new field
    assert store.read_result("a__b-1") is None and path.exists()
    with driver_lock(work):
        assert store.read_result("a__b-1") is None
    assert not path.exists() and list(path.parent.glob("result.json.corrupt-*"))
