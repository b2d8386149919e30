"""On-disk HTTP response cache for conditional requests (one JSON file per response).

A GET that returned 200 with an `ETag` or `Last-Modified` is stored under
`ROOT/<key[:2]>/<key>.json`, where `key` = sha256 of method, URL (query included) and `Accept`
header; the request's `Authorization` header is never part of the key or the file. The next
identical GET carries `If-None-Match` / `If-Modified-Since`; a 304 then costs no rate-limit
quota (GitHub's rule for authenticated conditional requests) and the body comes from here.
Writes are atomic (temporary file + rename), so a crash never leaves a half-written entry; an
unreadable entry counts as a miss. Safe for concurrent threads and processes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

_SKIP_HEADERS = {"set-cookie", "content-encoding", "transfer-encoding", "connection", "content-length"}


@dataclass
class CachedResponse:
    """A stored response: `status` (200), `headers` (lower-case names), raw `body` bytes,
    `stored_at` (epoch seconds)."""

    url: str
    status: int
    headers: dict[str, str]
    body: bytes
    stored_at: float = 0.0

    @property
    def etag(self) -> str | None:
        """The validator for `If-None-Match`, if the server sent one."""
        return self.headers.get("etag")

    @property
    def last_modified(self) -> str | None:
        """The validator for `If-Modified-Since`, if the server sent one."""
        return self.headers.get("last-modified")


class HttpCache:
    """The cache directory `root` (created on first write)."""

    def __init__(self, root: Path | str):
        self.root = Path(root)

    @staticmethod
    def key(method: str, url: str, accept: str | None) -> str:
        """Cache key of a request: hex sha256 of `METHOD URL ACCEPT`."""
        return hashlib.sha256(f"{method.upper()} {url} {accept or ''}".encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> CachedResponse | None:
        """The entry for `key`, or None (missing or unreadable)."""
        try:
            raw = json.loads(self._path(key).read_text(encoding="utf-8"))
            return CachedResponse(url=raw["url"], status=int(raw["status"]), headers=raw["headers"],
                                  body=base64.b64decode(raw["body"]), stored_at=raw["stored_at"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, entry: CachedResponse) -> None:
        """Store `entry` under `key` atomically (hop-by-hop and cookie headers dropped)."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        headers = {k.lower(): v for k, v in entry.headers.items() if k.lower() not in _SKIP_HEADERS}
        doc = {"url": entry.url, "status": entry.status, "headers": headers,
               "body": base64.b64encode(entry.body).decode("ascii"), "stored_at": entry.stored_at}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("*/*.json")) if self.root.is_dir() else 0
