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


def test_a_parquet_file_is_not_a_duckdb_database_either(tmp_path):
    """Issue 30 trial: `--path some.parquet` said "Cannot launch in-memory database in read-only
    mode!" (DuckDB opens a `.parquet` path as a view in an in-memory database)."""
    for name in ("some.parquet", "some.csv", "experiences.duckdb"):
        bad = tmp_path / name
        bad.write_bytes(b"PAR1" + b"\0" * 64)
        r = CliRunner().invoke(app, ["memory", "list", "--path", str(bad)])
        assert r.exit_code == 2, (name, r.stderr)
        assert "not a DuckDB database" in r.stderr and "in-memory" not in r.stderr, r.stderr


def test_an_unknown_ecosystem_exits_2_naming_the_valid_ones(tmp_path):
    """Issue 30 trial: `--ecosystem c++` / `cobol` listed 0 entries with exit 0 (`--source bogus`
    exits 2)."""
    from agents.memory.experience_store import ExperienceStore

    path = tmp_path / "experiences.duckdb"
    with ExperienceStore(path):
        pass
    for name, hint in (("c++", "C++ is `cpp`"), ("cobol", "")):
        r = CliRunner().invoke(app, ["memory", "list", "--path", str(path), "--ecosystem", name])
        assert r.exit_code == 2, r.stdout
        line = r.stderr.strip()
        assert line.count("\n") == 0 and f"--ecosystem {name}: not one of python," in line and "cpp" in line
        assert hint in line
    for name in ("cpp", "any", "python"):
        r = CliRunner().invoke(app, ["memory", "list", "--path", str(path), "--ecosystem", name])
        assert r.exit_code == 0, r.stderr
