"""Review rv86: `swemint memory list` on a file DuckDB cannot read said "a running driver holds it
for writing" whatever the error: a file that is not a DuckDB database is not locked."""

from __future__ import annotations

from typer.testing import CliRunner

from pipeline.cli import app


def test_a_file_that_is_not_a_store_is_not_blamed_on_a_running_driver(tmp_path):
    bad = tmp_path / "experiences.duckdb"
    bad.write_bytes(b"this is not a duckdb file" * 200)
    r = CliRunner().invoke(app, ["memory", "list", "--path", str(bad)])
    assert r.exit_code != 0 and "cannot read" in r.stderr and "Traceback" not in r.stderr
    assert "running driver" not in r.stderr, r.stderr
