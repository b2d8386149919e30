"""On-disk response cache: a repeat of an identical call costs no request.

The key is the sha256 of the canonical JSON of everything that decides the reply: model,
sampling parameters, messages, tools and the response model's JSON schema (never the API key or
the endpoint URL). One file per entry, `<dir>/<key[:2]>/<key>.json`, written atomically (temp file
+ `os.replace`), so concurrent workers sharing a directory never read half an entry. Only
successful, validated results are stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

CACHE_FORMAT = 1
"""Bump when the stored shape changes: old entries then miss instead of misparsing."""


def cache_key(payload: dict[str, Any]) -> str:
    """sha256 hex digest of `payload` as canonical JSON (sorted keys, no whitespace)."""
    blob = json.dumps({"format": CACHE_FORMAT, **payload}, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """A directory of JSON entries keyed by `cache_key`."""

    def __init__(self, directory: Path | str):
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry, or None (missing or unreadable: a miss, never an error)."""
        try:
            return json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store `value` (JSON-able) under `key`, atomically."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(value, f, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
