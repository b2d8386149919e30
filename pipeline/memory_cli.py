"""The bodies of `swemint memory list` and `swemint memory show` (their Typer commands are in
`pipeline.cli`): the experience memory's knowledge store (`WORKDIR/memory/experiences.duckdb`, or
`--path FILE`) read, never written.

The store is opened read-only (`ExperienceStore(path, read_only=True)`): DuckDB refuses that
while a driver holds the file for writing, which is reported as one line. Every number shown is
the one the code uses: `Experience.reliability` (Laplace-smoothed, a trust prior of
`TRUST_PRIOR` successes for hand-written entries) and `Experience.dropped(floor, min_uses)` with
the configuration's `mint.memory.floor` / `mint.memory.min_uses`.
"""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from pipeline.cli_common import escape

SOURCES = ("seed", "rule", "learned")
"""The provenance sources `--source` accepts (`Provenance.source`)."""


def open_entries(path: Path) -> list:
    """Every entry of the store at `path` (ordered by id), opened read-only; exits with one line
    when the file is missing or cannot be read (locked by a writing driver, not a DuckDB file:
    `is_duckdb_file`, whatever its name ends with)."""
    import duckdb

    from agents.memory.experience_store import ExperienceStore
    from pipeline.cli_common import fail

    if not Path(path).is_file():
        fail(f"no knowledge store at {path} (the driver writes WORKDIR/memory/experiences.duckdb on the first "
             "`swemint mint`; pass -w WORKDIR or --path FILE)")
    if not is_duckdb_file(path):  # DuckDB opens `x.parquet` / `x.csv` as an in-memory view: say what it is
        fail(f"cannot read {path}: not a DuckDB database (the knowledge store is "
             "WORKDIR/memory/experiences.duckdb)")
    try:
        with ExperienceStore(path, read_only=True) as store:
            return store.all()
    except duckdb.Error as e:
        why = ("; a running driver holds it for writing -- try again when it has finished"
               if "lock" in str(e).lower() else "")
        fail(f"cannot read {path} ({type(e).__name__}: {str(e).splitlines()[0][:160]}){why}")


DUCKDB_MAGIC = b"DUCK"
"""The bytes at offset 8 of every DuckDB database file (its main header)."""


def is_duckdb_file(path: Path) -> bool:
    """Whether `path` starts like a DuckDB database file (`DUCKDB_MAGIC` at offset 8). DuckDB
    itself opens a path ending `.parquet` / `.csv` as a view in an in-memory database, which it
    refuses read-only ("Cannot launch in-memory database in read-only mode!")."""
    try:
        with open(path, "rb") as f:
            return f.read(12)[8:12] == DUCKDB_MAGIC
    except OSError:
        return False


def check_ecosystem(ecosystem: str | None) -> None:
    """Exit 2 with one line when `--ecosystem` is not a memory language
    (`agents.memory.experience.memory_languages`: `cpp`, never `c++`); None passes."""
    from agents.memory.experience import memory_languages
    from pipeline.cli_common import fail

    names = memory_languages()
    if ecosystem is not None and ecosystem not in names:
        hint = " (C++ is `cpp`)" if ecosystem.lower() in ("c++", "cxx", "cplusplus") else ""
        fail(f"--ecosystem {ecosystem}: not one of {', '.join(names)}{hint}")


def reliability_inputs(e) -> dict:
    """The inputs of `Experience.reliability` for entry `e` and its value:
    (times_worked + 1 + prior) / (times_applied + 2 + prior), prior = `TRUST_PRIOR` for a
    hand-written entry (seed, rule), 0 for a learned one."""
    from agents.memory.experience import TRUST_PRIOR

    prior = TRUST_PRIOR if e.provenance.hand_written else 0
    return {"times_worked": e.times_worked, "times_applied": e.times_applied, "prior": prior,
            "formula": f"({e.times_worked} + 1 + {prior}) / ({e.times_applied} + 2 + {prior})",
            "reliability": round(e.reliability, 4)}


def row(e, dropped: bool) -> dict:
    """One entry as `memory list` shows it (and `--json` gives it); `dropped` from
    `agents.memory.retrieve.dropped_flags` (a lesson bound to a dropped rule is dropped too)."""
    return {"id": e.id, "ecosystem": e.ecosystem, "source": e.provenance.source,
            "reliability": round(e.reliability, 3), "applied": e.times_applied, "worked": e.times_worked,
            "dropped": dropped, "negative": e.negative}


def list_entries(path: Path, floor: float, min_uses: int, ecosystem: str | None = None,
                 source: str | None = None, dropped: bool | None = None) -> None:
    """`swemint memory list`: a table of the entries (id, ecosystem, source, reliability,
    applied, worked, dropped, negative), filtered by ecosystem (exact; a name that is not a memory
    language exits 2: `check_ecosystem`), source and dropped state; under `--json` the rows as one
    summary object."""
    from pipeline.cli_common import console, emit, fail

    if source is not None and source not in SOURCES:
        fail(f"--source {source}: not one of {', '.join(SOURCES)}")
    check_ecosystem(ecosystem)
    from agents.memory.retrieve import dropped_flags

    entries = open_entries(path)
    rows = [row(e, d) for e, d in zip(entries, dropped_flags(entries, floor, min_uses), strict=True)]
    rows = [r for r in rows if (ecosystem is None or r["ecosystem"] == ecosystem)
            and (source is None or r["source"] == source) and (dropped is None or r["dropped"] == dropped)]
    table = Table(title=f"knowledge store ({path})")
    table.add_column("id", no_wrap=True)
    for col in ("ecosystem", "source", "reliability", "applied", "worked", "dropped", "negative"):
        table.add_column(col, justify="right" if col in ("reliability", "applied", "worked") else "left")
    for r in rows:
        table.add_row(escape(r["id"]), r["ecosystem"], r["source"], f"{r['reliability']:.3f}", str(r["applied"]),
                      str(r["worked"]), "yes" if r["dropped"] else "", "yes" if r["negative"] else "")
    console.print(table)
    console.print(f"{len(rows)} entries (floor {floor}, min uses {min_uses})", soft_wrap=True)
    emit({"command": "memory list", "path": str(path), "floor": floor, "min_uses": min_uses, "entries": rows})


def show_entry(path: Path, entry_id: str, floor: float, min_uses: int) -> None:
    """`swemint memory show ID`: the whole entry (problem, solution, signature, actions, context,
    provenance, counters) with its reliability, the formula's inputs and whether it is dropped;
    exit 1 when no entry has the id."""
    import json

    from pipeline.cli_common import console, emit, fail

    from agents.memory.retrieve import dropped_flags

    entries = open_entries(path)
    at = next((i for i, e in enumerate(entries) if e.id == entry_id), None)
    if at is None:
        fail(f"no entry {entry_id!r} in {path} (`swemint memory list` shows the ids)", 1)
    found = entries[at]
    body = found.model_dump(mode="json")
    rel = reliability_inputs(found)
    drop = {"dropped": dropped_flags(entries, floor, min_uses)[at], "floor": floor, "min_uses": min_uses}
    console.print(f"[b]{escape(found.id)}[/b] ({found.ecosystem}, {found.provenance.source}"
                  f"{', negative' if found.negative else ''})", soft_wrap=True)
    for key in ("problem", "solution", "error_signature"):
        console.print(f"[b]{key}[/b]: {escape(str(body[key]))}", soft_wrap=True)
    console.print(f"[b]tags[/b]: {escape(', '.join(found.tags) or '-')}", soft_wrap=True)
    console.print("[b]actions[/b]:", soft_wrap=True)
    for a in body["actions"] or ["(none)"]:
        console.print(f"  {escape(a if isinstance(a, str) else json.dumps(a))}", soft_wrap=True)
    ctx = {k: v for k, v in body["context"].items() if v}
    console.print(f"[b]context[/b]: {escape(json.dumps(ctx) if ctx else '(not specific)')}", soft_wrap=True)
    console.print(f"[b]provenance[/b]: {escape(json.dumps(body['provenance']))}", soft_wrap=True)
    console.print(f"[b]counters[/b]: applied {found.times_applied}, worked {found.times_worked}", soft_wrap=True)
    console.print(f"[b]reliability[/b]: {rel['reliability']} = (worked + 1 + prior) / (applied + 2 + prior) = "
                  f"{rel['formula']}; prior {rel['prior']} ({'hand-written' if rel['prior'] else 'learned'})",
                  soft_wrap=True)
    bound = f"; bound to rule {found.provenance.rule}: dropped with it" if found.provenance.rule else ""
    console.print(f"[b]dropped[/b]: {'yes' if drop['dropped'] else 'no'} (dropped when applied >= {min_uses} and "
                  f"reliability < {floor}{bound})", soft_wrap=True)
    emit({"command": "memory show", "path": str(path), "entry": body, "reliability": rel, **drop})
