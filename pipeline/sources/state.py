"""Durable crawl state in DuckDB (`WORKDIR/crawl/state.duckdb`): watermarks and outcomes.

Tables:
- `watermarks(source, repo, updated_at, last_run)`: per repository, the newest PR
  `updated_at` (UTC) fully handled; `crawl(since_last=True)` lists only PRs updated after it.
- `outcomes(key PK, source, repo, kind, number, created_at, status, reason, detail, row_json,
  run_id, decided_at)`: one row per examined item, the latest verdict. `accepted` and
  `rejected` are final (skipped by later runs unless `pairs.revisit`); `error` is retried.

One process writes at a time (DuckDB holds a file lock; a second crawl fails to open it).
Timestamps are stored as naive UTC `TIMESTAMP`s.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from pipeline.sources.source_rows import UnitOutcome

_SCHEMA = """
CREATE TABLE IF NOT EXISTS watermarks (
    source TEXT, repo TEXT, updated_at TIMESTAMP, last_run TIMESTAMP, PRIMARY KEY (source, repo));
CREATE TABLE IF NOT EXISTS outcomes (
    key TEXT PRIMARY KEY, source TEXT, repo TEXT, kind TEXT, number INTEGER,
    created_at TIMESTAMP, status TEXT, reason TEXT, detail TEXT, row_json TEXT, run_id TEXT,
    decided_at TIMESTAMP);
"""


def _naive(dt: datetime | None) -> datetime | None:
    if dt is None:
        return None
    return dt.astimezone(timezone.utc).replace(tzinfo=None) if dt.tzinfo else dt


def _aware(dt: datetime | None) -> datetime | None:
    return dt.replace(tzinfo=timezone.utc) if dt is not None and dt.tzinfo is None else dt


class CrawlState:
    """The state database at `path` (created with its tables). Use as a context manager."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = duckdb.connect(str(self.path))
        self.db.execute(_SCHEMA)

    def __enter__(self) -> CrawlState:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close the database (idempotent)."""
        self.db.close()

    def watermark(self, source: str, repo: str) -> datetime | None:
        """The repository's watermark (aware UTC), None before its first run."""
        row = self.db.execute("SELECT updated_at FROM watermarks WHERE source = ? AND repo = ?",
                              [source, repo]).fetchone()
        return _aware(row[0]) if row else None

    def set_watermark(self, source: str, repo: str, updated_at: datetime | None, now: datetime) -> None:
        """Store the watermark (never moves backwards) and the run time."""
        old = self.watermark(source, repo)
        if updated_at is None or (old is not None and updated_at < old):
            updated_at = old
        self.db.execute("INSERT OR REPLACE INTO watermarks VALUES (?, ?, ?, ?)",
                        [source, repo, _naive(updated_at), _naive(now)])

    def final_keys(self, repo: str) -> set[str]:
        """Keys of the repository's items with a final verdict (accepted or rejected)."""
        rows = self.db.execute("SELECT key FROM outcomes WHERE repo = ? AND status <> 'error'",
                               [repo]).fetchall()
        return {r[0] for r in rows}

    def record(self, outcome: UnitOutcome, run_id: str, now: datetime) -> None:
        """Upsert the verdict of one item."""
        rej = outcome.reject
        self.db.execute(
            "INSERT OR REPLACE INTO outcomes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [outcome.key, outcome.source, outcome.repo, outcome.kind, outcome.number,
             _naive(outcome.created_at), outcome.status, rej.reason if rej else None,
             rej.detail if rej else None,
             json.dumps(outcome.row) if outcome.row is not None else None, run_id, _naive(now)])

    def accepted_rows(self) -> Iterator[dict[str, Any]]:
        """Every accepted instance row, ordered by repository, creation time, key."""
        for (raw,) in self.db.execute("SELECT row_json FROM outcomes WHERE status = 'accepted' "
                                      "ORDER BY repo, created_at, key").fetchall():
            yield json.loads(raw)

    def reject_rows(self) -> Iterator[dict[str, Any]]:
        """Every rejected or errored item as a reject row, ordered like `accepted_rows`."""
        q = ("SELECT key, source, repo, kind, number, created_at, status, reason, detail, run_id "
             "FROM outcomes WHERE status <> 'accepted' ORDER BY repo, created_at, key")
        for key, source, repo, kind, number, created, status, reason, detail, run_id in \
                self.db.execute(q).fetchall():
            yield {"key": key, "repo": repo, "kind": kind, "number": number, "reason": reason,
                   "detail": detail or "", "status": status, "source": source, "run_id": run_id,
                   "created_at": created.strftime("%Y-%m-%dT%H:%M:%SZ") if created else None}

    def counts(self) -> dict[str, int]:
        """Number of items per status."""
        return dict(self.db.execute("SELECT status, count(*) FROM outcomes GROUP BY status").fetchall())
