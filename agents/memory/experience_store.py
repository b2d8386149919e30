"""Durable storage of experiences in one DuckDB file, and the seed set loader.

DuckDB allows one read-write process per file, so the store has one writer: in a Ray run, hold
the `ExperienceStore` in a single actor (or in the driver) and send it trajectories; readers in
other processes may open the file with `read_only=True` while nobody writes. Each row keeps the
whole entry as JSON (`body`) next to the columns used for filtering and counting.
"""

from __future__ import annotations

from packaging.utils import canonicalize_name
import json
import re
import threading
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path

import duckdb
from pydantic import ValidationError

from agents.memory.experience import Experience, ExperienceMemoryError, SeedError, family
from envpool.resources import resource

SEED_DIR = resource("data/experiences")
"""The team's seed set: `data/experiences/<ecosystem>.jsonl`, one Experience per line."""
SCHEMA_VERSION = "1"
_DDL = """
CREATE TABLE IF NOT EXISTS experiences (
    id VARCHAR PRIMARY KEY, ecosystem VARCHAR NOT NULL, negative BOOLEAN NOT NULL,
    source VARCHAR NOT NULL, error_signature VARCHAR NOT NULL, times_applied INTEGER NOT NULL,
    times_worked INTEGER NOT NULL, body JSON NOT NULL, updated_at TIMESTAMP NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL);
"""
_ROW_MARKS = "(?, ?, ?, ?, ?, ?, ?, ?, ?)"
_INSERT = "INSERT OR REPLACE INTO experiences VALUES " + _ROW_MARKS


class UnknownExperience(ExperienceMemoryError, KeyError):
    """No entry has this id."""


class DuplicateExperience(ExperienceMemoryError):
    """`add` of an id that is already stored (use `upsert` to replace)."""


_norm_name = canonicalize_name  # a package name as `RepoContext.dependency_names` spells it (PEP 503)


def load_seed_files(directory: Path | str = SEED_DIR) -> list[Experience]:
    """Every entry of `directory/*.jsonl` (files in name order, blank lines and `//` comments
    skipped), marked `provenance.source = "seed"`. A line may carry `context` (`EntryContext`:
    `dependencies`, `build_systems`, `derived`, `generic`, ...); its dependencies are normalised
    and followed by those its actions name (`action_dependencies`); a line that declares none
    gets its actions' names, marked `derived`. A line's own `"derived": true` is kept (a context
    of build systems only, or a toolchain range: it narrows retrieval, never acts before planning).

    Raises:
        SeedError: a line is not JSON or not a valid Experience, or an id repeats
            (the message names the file and line).
    """
    out: list[Experience] = []
    where: dict[str, str] = {}
    for path in sorted(Path(directory).glob("*.jsonl")):
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip() or line.lstrip().startswith("//"):
                continue
            loc = f"{path}:{lineno}"
            try:
                exp = Experience.model_validate(json.loads(line))
            except (json.JSONDecodeError, ValidationError) as e:
                raise SeedError(f"{loc}: {e}") from e
            if exp.id in where:
                raise SeedError(f"{loc}: id {exp.id!r} already defined at {where[exp.id]}")
            where[exp.id] = loc
            exp.provenance.source = "seed"
            exp.provenance.file = exp.provenance.file or path.name
            declared = bool(exp.context.dependencies)
            exp.context.dependencies = list(dict.fromkeys(
                [_norm_name(d) for d in exp.context.dependencies] + action_dependencies(exp.actions)))
            if not declared and exp.context.dependencies:  # read off its actions: retrieval only
                exp.context.derived = True  # (a line's own `"derived": true` is kept)
            out.append(exp)
    return out


def _dist(req: str) -> str | None:
    m = re.match(r"\s*([A-Za-z0-9@][A-Za-z0-9._/@-]*)", req)
    if not m or "${" in req:
        return None
    name = m.group(1)
    return re.sub(r"[-_.]+", "-", name.split("@")[0] if not name.startswith("@") else name).lower() or None


def action_dependencies(actions: list) -> list[str]:
    """The packages a hand-written entry's `pin`, `install`, `apt` and `uv_lift` actions name
    (normalised), the entry's dependency context when it declares none."""
    names: list[str] = []
    for a in actions:
        reqs = [a.requirement] if a.kind == "pin" else list(a.packages) if a.kind in ("install", "apt") else \
            [a.package] if a.kind == "uv_lift" else []
        names += [n for r in reqs if (n := _dist(r)) and n not in names]
    return names


def hand_written(directory: Path | str | None = SEED_DIR) -> list[Experience]:
    """The team's knowledge as entries: the seed set of `directory` (None: none) and every rule
    that is data (`agents.memory.knowledge.rule_entries`)."""
    from agents.memory.knowledge import rule_entries

    seeds = load_seed_files(directory) if directory is not None else []
    ids = {e.id for e in seeds}
    return seeds + [e.model_copy(deep=True) for e in rule_entries() if e.id not in ids]


class ExperienceStore:
    """Experiences in DuckDB (one file, one writer).

    Args:
        path: the database file (created with its folder), or ":memory:".
        read_only: open an existing file without write access.

    Use as a context manager or call `close()`. `revision` counts this object's writes, so a
    retriever can tell when its index is stale.
    """

    def __init__(self, path: Path | str = ":memory:", read_only: bool = False):
        self.path = str(path)
        if self.path != ":memory:" and not read_only:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._con = duckdb.connect(self.path, read_only=read_only)
        self._lock = threading.RLock()  # a connection is not safe for concurrent use
        self.revision = 0
        if not read_only:
            self._con.execute(_DDL)
            self._con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [SCHEMA_VERSION])

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._con.close()

    def __enter__(self) -> ExperienceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        with self._lock:
            row = self._con.execute("SELECT count(*) FROM experiences").fetchone()
        return int(row[0]) if row else 0

    # -- writes ----------------------------------------------------------------------------
    @staticmethod
    def _row(exp: Experience) -> list:
        return [exp.id, exp.ecosystem, exp.negative, exp.provenance.source, exp.error_signature, exp.times_applied,
                exp.times_worked, exp.model_dump_json(), datetime.now(timezone.utc)]

    def _write(self, exp: Experience) -> None:
        self._con.execute(_INSERT, self._row(exp))
        self.revision += 1

    def add(self, exp: Experience) -> None:
        """Insert a new entry. Raises DuplicateExperience when the id exists."""
        with self._lock:
            if self.get(exp.id) is not None:
                raise DuplicateExperience(f"experience {exp.id!r} already stored")
            self._write(exp)

    @staticmethod
    def _merge(new: Experience, old: Experience | None) -> Experience:
        """`new` with `old`'s counters and provenance instance ids (when there is an old row)."""
        if old is None:
            return new
        ids = list(dict.fromkeys(old.provenance.instance_ids + new.provenance.instance_ids))
        return new.model_copy(update={"times_applied": old.times_applied, "times_worked": old.times_worked,
                                      "provenance": new.provenance.model_copy(update={"instance_ids": ids})})

    def upsert(self, exp: Experience, keep_counters: bool = False) -> Experience:
        """Insert or replace `exp`; with `keep_counters`, an existing row's times_applied /
        times_worked and provenance instance ids survive (used when reloading seeds).
        Returns the entry as stored."""
        with self._lock:
            exp = self._merge(exp, self.get(exp.id) if keep_counters else None)
            self._write(exp)
            return exp

    def add_many(self, entries: Iterable[Experience], keep_counters: bool = True) -> int:
        """Upsert every entry (counters kept as in `upsert`); returns the count. Ids must be unique
        within `entries`."""
        entries = list(entries)
        if not entries:
            return 0
        with self._lock:
            old: dict[str, Experience] = {}
            if keep_counters:
                marks = ", ".join("?" * len(entries))
                found = self._con.execute(f"SELECT id, body FROM experiences WHERE id IN ({marks})",
                                          [e.id for e in entries]).fetchall()
                old = {r[0]: Experience.model_validate_json(r[1]) for r in found}
            rows = [self._row(self._merge(e, old.get(e.id))) for e in entries]
            for start in range(0, len(rows), 500):  # one multi-row statement per chunk (executemany is slow)
                chunk = rows[start:start + 500]
                sql = "INSERT OR REPLACE INTO experiences VALUES " + ", ".join([_ROW_MARKS] * len(chunk))
                self._con.execute(sql, [v for row in chunk for v in row])
            self.revision += 1
        return len(entries)

    def load_seed(self, directory: Path | str = SEED_DIR) -> int:
        """Load (or refresh) the hand-written entries -- the seed set of `directory` and the rules
        that are data (`hand_written`) -- keeping their counters. Returns the number of entries.
        Raises SeedError on an invalid file."""
        return self.add_many(hand_written(directory), keep_counters=True)

    def record_outcome(self, exp_id: str, worked: bool, instance_id: str | None = None,
                       repo: str = "") -> Experience:
        """Count one application of entry `exp_id` (times_applied += 1, times_worked += worked),
        remembering `instance_id` in its provenance and, for a learned entry that worked, `repo`
        among the repositories it serves (`EntryContext.repos`; never for a lesson bound to a rule,
        `Provenance.rule`: it serves the repository that taught it only). Raises UnknownExperience."""
        with self._lock:
            exp = self.get(exp_id)
            if exp is None:
                raise UnknownExperience(exp_id)
            ids = exp.provenance.instance_ids
            if instance_id and instance_id not in ids:
                ids = ids + [instance_id]
            ctx = exp.context
            if repo and worked and exp.provenance.source == "learned" and not exp.provenance.rule \
                    and repo not in ctx.repos:
                ctx = ctx.model_copy(update={"repos": ctx.repos + [repo]})
            exp = exp.model_copy(update={"times_applied": exp.times_applied + 1,
                                         "times_worked": exp.times_worked + int(worked), "context": ctx,
                                         "provenance": exp.provenance.model_copy(update={"instance_ids": ids})})
            self._write(exp)
            return exp

    # -- reads -----------------------------------------------------------------------------
    def get(self, exp_id: str) -> Experience | None:
        """The entry with id `exp_id`, or None."""
        with self._lock:
            row = self._con.execute("SELECT body FROM experiences WHERE id = ?", [exp_id]).fetchone()
        return Experience.model_validate_json(row[0]) if row else None

    def all(self, ecosystem: str | None = None, include_negative: bool = True) -> list[Experience]:
        """Every entry (ordered by id); `ecosystem` keeps its family and `any` (see `family`)."""
        sql, args = "SELECT body FROM experiences WHERE 1=1", []
        if ecosystem:
            fam = family(ecosystem)
            sql += f" AND ecosystem IN ({', '.join('?' * len(fam))})"
            args += list(fam)
        if not include_negative:
            sql += " AND NOT negative"
        with self._lock:
            rows = self._con.execute(sql + " ORDER BY id", args).fetchall()
        return [Experience.model_validate_json(r[0]) for r in rows]

    def counts(self) -> dict[str, int]:
        """Number of entries per ecosystem."""
        with self._lock:
            rows = self._con.execute("SELECT ecosystem, count(*) FROM experiences GROUP BY 1 ORDER BY 1").fetchall()
        return {str(e): int(n) for e, n in rows}
