"""The environment pool index: verified environment images in one DuckDB file.

Table `environments`: one row per instance whose image was kept (primary key `instance_id`),
with every `EnvRecord` field plus `added_at` (UTC). Times are TIMESTAMPTZ (UTC). Table `usage`:
the last use of an environment by another instance or a re-verification (`touch`; `lru` orders
by it, else by `added_at`). Table `evictions`: every image a size budget or `swemint pool prune`
removed, where from and how many bytes it freed (`record_eviction`; an environment no copy of
which remains leaves `environments`, so a later reuse falls back to a build).

**One writer.** DuckDB allows one process to hold a file open for writing; a read-only
connection from another process fails while the writer holds it. So only the pipeline driver
writes (`EnvPool(path)`), every other process opens `EnvPool(path, read_only=True)`, and each
call opens and closes its own short connection so the file is held only for milliseconds.
Read-only callers retry briefly while a write is in progress.

Reuse order of `find` (hierarchical reuse, after MEnvAgent's environment reuse): the same
repository and version first, then the same repository at the nearest newer commit, then the
same repository at any commit (nearest first). Environments of other repositories are never
offered: what repositories share is a dependency layer no repository's code ran in
(`agents.tiers`), recorded per row as `dependency_key` / `dependency_image_id`.

**Where images live** (`EnvRecord.location`): `"local"` = only on the Docker engine that built
it; otherwise a registry reference by digest (`127.0.0.1:5000/swemint/env@sha256:...`) written
by `publish_image` on the building node. `ensure_local` pulls such an image by that digest on a
node that lacks it, checks that its id is the pool's `image_id` (a registry that serves other
content under the name is refused), and tags it back as `image_tag`, so the minter's reuse path
finds it under its usual name. Pushes and pulls carry credentials when configured
(`registry_credentials`: read from environment variables at call time, handed to the engine's
API only -- never logged, never in a container).
"""

from __future__ import annotations

import builtins
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

import duckdb
from pydantic import BaseModel, ConfigDict

from envpool.errors import InfraError
from envpool.records import EnvRecord

_SQL_TYPES = {"commit_time": "TIMESTAMPTZ", "size_bytes": "BIGINT"}
COLUMNS: list[str] = list(EnvRecord.model_fields)
"""Columns taken from `EnvRecord`, in its field order; `added_at` comes last."""

Tier = Literal["same_version", "newer_commit", "same_repo"]


class PoolMatch(BaseModel):
    """A reuse candidate: the `record`, its `tier` and `distance_s` (seconds between commit
    times, None when either is unknown)."""

    model_config = ConfigDict(extra="forbid")
    record: EnvRecord
    tier: Tier
    distance_s: float | None = None


class EnvPool:
    """DuckDB-backed index of kept environments.

    Args:
        path: the DuckDB file (e.g. `WORKDIR/pool.duckdb`); created with its table on first write.
        read_only: open read-only (every process but the pipeline driver).
    Raises `duckdb.IOException` when the file is locked by a writer for longer than `lock_wait`
    seconds.
    """

    def __init__(self, path: Path | str, read_only: bool = False, lock_wait: float = 10.0):
        self.path = Path(path)
        self.read_only = read_only
        self.lock_wait = lock_wait
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as con:
                self._ensure_schema(con)

    @contextmanager
    def _connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        deadline = time.monotonic() + self.lock_wait
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=self.read_only)
                break
            except duckdb.IOException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        try:
            con.execute("SET TimeZone = 'UTC'")
            yield con
        finally:
            con.close()

    @staticmethod
    def _ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
        cols = ", ".join(f"{c} {_SQL_TYPES.get(c, 'VARCHAR')}" for c in COLUMNS if c != "instance_id")
        con.execute(f"CREATE TABLE IF NOT EXISTS environments (instance_id VARCHAR PRIMARY KEY, {cols}, "
                    "added_at TIMESTAMPTZ)")
        con.execute("CREATE TABLE IF NOT EXISTS usage (instance_id VARCHAR PRIMARY KEY, last_used_at TIMESTAMPTZ, "
                    "uses BIGINT)")
        con.execute("CREATE TABLE IF NOT EXISTS evictions (instance_id VARCHAR, repo VARCHAR, language VARCHAR, "
                    "image_tag VARCHAR, image_id VARCHAR, location VARCHAR, place VARCHAR, bytes BIGINT, "
                    "reason VARCHAR, kept_in_pool BOOLEAN, evicted_at TIMESTAMPTZ)")
        have = {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                          "WHERE table_name = 'environments'").fetchall()}
        for c in COLUMNS:  # fields added to EnvRecord later become new columns
            if c not in have:
                con.execute(f"ALTER TABLE environments ADD COLUMN {c} {_SQL_TYPES.get(c, 'VARCHAR')}")

    def _exists(self) -> bool:
        return self.path.exists()

    def add(self, record: EnvRecord) -> None:
        """Insert or replace the row of `record.instance_id`; `added_at` is now (UTC)."""
        if self.read_only:
            raise PermissionError(f"{self.path} is open read-only; only the pipeline driver writes the pool")
        values = record.model_dump()
        row = [values[c] for c in COLUMNS] + [datetime.now(timezone.utc)]
        marks = ", ".join("?" * len(row))
        with self._connect() as con:
            con.execute(f"INSERT OR REPLACE INTO environments ({', '.join(COLUMNS)}, added_at) VALUES ({marks})", row)

    def _select(self, where: str = "", params: list | None = None, order: str = "added_at") -> list[dict]:
        if not self._exists():
            return []
        with self._connect() as con:
            cur = con.execute(f"SELECT * FROM environments {where} ORDER BY {order}", params or [])
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    @staticmethod
    def _record(row: dict) -> EnvRecord:
        return EnvRecord.model_validate({c: row[c] for c in COLUMNS if row.get(c) is not None})

    def get(self, instance_id: str) -> EnvRecord | None:
        """The record of `instance_id`, or None."""
        rows = self._select("WHERE instance_id = ?", [instance_id])
        return self._record(rows[0]) if rows else None

    def list(self, repo: str | None = None) -> builtins.list[EnvRecord]:
        """Every record (of `repo` when given), oldest `added_at` first."""
        rows = self._select("WHERE repo = ?", [repo]) if repo else self._select()
        return [self._record(r) for r in rows]

    def remove(self, instance_id: str) -> bool:
        """Delete the row of `instance_id` (the image itself is left alone); True if one existed."""
        if self.read_only:
            raise PermissionError(f"{self.path} is open read-only; only the pipeline driver writes the pool")
        with self._connect() as con:
            row = con.execute("SELECT count(*) FROM environments WHERE instance_id = ?", [instance_id]).fetchone()
            con.execute("DELETE FROM environments WHERE instance_id = ?", [instance_id])
        return bool(row and row[0])

    def touch(self, instance_id: str, when: datetime | None = None) -> None:
        """Record a use of `instance_id`'s environment (reused by another instance, re-verified):
        its `last_used_at` becomes `when` (default now, UTC) and `uses` grows by one."""
        if self.read_only:
            raise PermissionError(f"{self.path} is open read-only; only the pipeline driver writes the pool")
        when = _utc(when) or datetime.now(timezone.utc)
        with self._connect() as con:
            con.execute("INSERT INTO usage VALUES (?, ?, 1) ON CONFLICT (instance_id) DO UPDATE SET "
                        "last_used_at = excluded.last_used_at, uses = usage.uses + 1", [instance_id, when])

    def lru(self) -> builtins.list[tuple[EnvRecord, datetime | None]]:
        """Every record with its last use (`last_used_at`, else `added_at`), least recently used
        first (ties by instance id)."""
        if not self._exists():
            return []
        with self._connect() as con:
            cur = con.execute("SELECT e.*, coalesce(u.last_used_at, e.added_at) AS last_use FROM environments e "
                              "LEFT JOIN usage u USING (instance_id) ORDER BY last_use, instance_id")
            names = [d[0] for d in cur.description]
            rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
        return [(self._record(r), _utc(r["last_use"])) for r in rows]

    def record_eviction(self, record: EnvRecord, place: str, nbytes: int, reason: str, kept_in_pool: bool) -> None:
        """Record that `record`'s image left `place` (a node's engine, or `registry`) freeing
        `nbytes`; unless `kept_in_pool` (a copy stays reachable: the registry's) its pool row is
        removed, so reuse no longer offers it and the instance's next reuse builds instead."""
        if self.read_only:
            raise PermissionError(f"{self.path} is open read-only; only the pipeline driver writes the pool")
        with self._connect() as con:
            con.execute("INSERT INTO evictions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [record.instance_id, record.repo, record.language, record.image_tag, record.image_id,
                         record.location, place, int(nbytes), reason, kept_in_pool, datetime.now(timezone.utc)])
            if not kept_in_pool:
                con.execute("DELETE FROM environments WHERE instance_id = ?", [record.instance_id])

    def evictions(self) -> builtins.list[dict]:
        """Every recorded eviction, oldest first (dicts with the `evictions` columns)."""
        if not self._exists():
            return []
        with self._connect() as con:
            try:
                cur = con.execute("SELECT * FROM evictions ORDER BY evicted_at")
            except duckdb.CatalogException:  # a pool written before evictions existed
                return []
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def find(self, repo: str, version: str | None = None, commit_time: datetime | None = None, *,
             before: datetime | None = None, after: datetime | None = None, exclude: str | None = None,
             limit: int | None = None) -> builtins.list[PoolMatch]:
        """Reuse candidates for an instance of `repo`, best first.

        Tiers: `same_version` (same `version`, only when given), then `newer_commit` (commit
        time >= `commit_time`), then `same_repo` (the rest). Within a tier: commit times at or
        after `commit_time` first, nearest first, then older ones, nearest first; unknown times
        last. `before` / `after` bound commit times (exclusive / inclusive; rows without a
        commit time are dropped when a bound is given). `exclude`: an instance id to leave out
        (the instance itself). Naive datetimes are taken as UTC.
        """
        ct, before, after = (_utc(d) for d in (commit_time, before, after))
        rows = self._select("WHERE repo = ?", [repo], order="instance_id")
        out: builtins.list[PoolMatch] = []
        for row in rows:
            rec = self._record(row)
            t = _utc(rec.commit_time)
            if rec.instance_id == exclude:
                continue
            if before or after:
                if t is None or (before and t >= before) or (after and t < after):
                    continue
            dist = (t - ct).total_seconds() if (t is not None and ct is not None) else None
            if version is not None and rec.version == version:
                tier: Tier = "same_version"
            elif dist is not None and dist >= 0:
                tier = "newer_commit"
            else:
                tier = "same_repo"
            out.append(PoolMatch(record=rec, tier=tier, distance_s=abs(dist) if dist is not None else None))
        rank = {"same_version": 0, "newer_commit": 1, "same_repo": 2}

        def key(m: PoolMatch) -> tuple:
            t = _utc(m.record.commit_time)
            older = ct is not None and t is not None and t < ct
            return (rank[m.tier], m.distance_s is None, older, m.distance_s or 0.0, m.record.instance_id)

        out.sort(key=key)
        return out[:limit] if limit is not None else out


def _utc(d: datetime | None) -> datetime | None:
    if d is None:
        return None
    return d.replace(tzinfo=timezone.utc) if d.tzinfo is None else d.astimezone(timezone.utc)


def split_reference(ref: str) -> tuple[str, str]:
    """`"host:5000/a/b:tag"` -> (`"host:5000/a/b"`, `"tag"`); `"host:5000/a/b@sha256:d"` ->
    (`"host:5000/a/b"`, `"sha256:d"`); no tag -> `"latest"` (a colon in the registry's host:port
    is not a tag)."""
    if "@" in ref:
        repo, _, digest = ref.partition("@")
        return repo, digest
    repo, sep, tag = ref.rpartition(":")
    if not sep or "/" in tag:
        return ref, "latest"
    return repo, tag


def registry_reference(registry: str, image_tag: str) -> str:
    """Where `image_tag` lives in `registry`: `("127.0.0.1:5000", "swemint/env:x")` ->
    `"127.0.0.1:5000/swemint/env:x"`. `registry` may carry a path prefix (`host:port/team`)."""
    return f"{registry.rstrip('/')}/{image_tag}"


def _client(client):
    if client is not None:
        return client
    from envpool.docker_sandbox import docker_client

    return docker_client()


def _stream_errors(lines) -> str | None:
    for line in lines:
        if isinstance(line, dict) and (line.get("error") or line.get("errorDetail")):
            return str(line.get("error") or line.get("errorDetail"))
    return None


def registry_credentials(username_env: str | None, password_env: str | None) -> dict | None:
    """`auth_config` for the docker API from the environment variables named (None when no
    variable is named). Raises InfraError naming a variable that is not set (never its value)."""
    if not username_env and not password_env:
        return None
    missing = [v for v in (username_env, password_env) if not v or v not in os.environ]
    if missing:
        raise InfraError(f"registry credentials: environment variable {missing[0] or '(unnamed)'} is not set")
    return {"username": os.environ[username_env], "password": os.environ[password_env]}  # type: ignore[index]


def _digest(lines: list) -> str | None:
    for line in lines:
        aux = line.get("aux") if isinstance(line, dict) else None
        if isinstance(aux, dict) and str(aux.get("Digest", "")).startswith("sha256:"):
            return str(aux["Digest"])
    return None


def publish_image(image_tag: str, registry: str, client=None, auth: dict | None = None) -> str:
    """Push local `image_tag` to `registry` (with `auth`, the docker API's `auth_config`, when
    given) and return its reference by digest (`host/repo@sha256:...`, for `EnvRecord.location`).

    Tags the image as the registry name, pushes, then drops that extra local tag (the image keeps
    `image_tag`). Raises InfraError when the image is missing, the push fails (registry down,
    credentials refused: an infrastructure failure, not the instance's) or reports no digest.
    """
    client = _client(client)
    ref = registry_reference(registry, image_tag)
    repo, tag = split_reference(ref)
    digest = None
    try:
        client.images.get(image_tag).tag(repo, tag)
        lines = list(client.api.push(repo, tag=tag, stream=True, decode=True, auth_config=auth))
        err = _stream_errors(lines)
        digest = _digest(lines)
        if not err and digest is None:  # older engines: the digest only in the image's RepoDigests
            digests = client.images.get(ref).attrs.get("RepoDigests") or []
            digest = next((d.split("@", 1)[1] for d in digests if d.startswith(repo + "@")), None)
    except Exception as e:  # noqa: BLE001 - docker SDK / engine errors
        raise InfraError(f"pushing {image_tag} to {registry} failed: {e}") from e
    finally:
        try:
            client.images.remove(ref)  # untag only: the image keeps image_tag
        except Exception:  # noqa: BLE001 - never tagged, or already gone
            pass
    if err:
        raise InfraError(f"pushing {image_tag} to {registry} failed: {err}")
    if digest is None:
        raise InfraError(f"pushing {image_tag} to {registry}: the registry returned no digest")
    return f"{repo}@{digest}"


def ensure_local(record: EnvRecord, client=None, auth: dict | None = None) -> bool:
    """Make `record.image_tag` present on this node's engine; True when it had to be pulled.

    A local image is used as is. Otherwise, when `record.location` is a registry reference, the
    image is pulled from it (by digest; `auth` as for `publish_image`), its id compared with
    `record.image_id` (when recorded) and tagged `record.image_tag`. Raises InfraError when the
    image is missing and `location` is `"local"` (it lives on another node), the pull fails, or
    the pulled image is not the pool's (its id differs: the pulled copy is removed again).
    """
    client = _client(client)
    try:
        client.images.get(record.image_tag)
        return False
    except Exception:  # noqa: BLE001 - ImageNotFound, or an engine error the pull will report
        pass
    if record.location in ("", "local"):
        raise InfraError(f"image {record.image_tag} is not on this node and the pool records no registry",
                         instance_id=record.instance_id)
    repo, tag = split_reference(record.location)
    try:
        err = _stream_errors(client.api.pull(repo, tag=tag, stream=True, decode=True, auth_config=auth))
        if err:
            raise InfraError(f"pulling {record.location} failed: {err}", instance_id=record.instance_id)
        pulled = client.images.get(record.location)
        if record.image_id and pulled.id != record.image_id:
            client.images.remove(record.location, force=True)
            raise InfraError(f"pulled {record.location} is image {pulled.id[:19]}, not the pool's {record.image_id[:19]}: "
                             "refused", instance_id=record.instance_id)
        target_repo, target_tag = split_reference(record.image_tag)
        pulled.tag(target_repo, target_tag)
        client.images.remove(record.location)  # untag the registry name; image_tag remains
    except InfraError:
        raise
    except Exception as e:  # noqa: BLE001
        raise InfraError(f"pulling {record.location} failed: {e}", instance_id=record.instance_id) from e
    return True
