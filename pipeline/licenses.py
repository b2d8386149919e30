"""The licence of a row: an SPDX id read from the repository's licence file at `base_commit`.

Which files: the blobs at the root of the tree whose names start with `LICENSE`, `LICENCE`,
`UNLICENSE`, `COPYING` or `COPYRIGHT` (any case, any suffix: `LICENSE-MIT`, `License.txt`,
`COPYING.md`), read from the mirror without a checkout. Each text is matched in two steps:

1. `declared`: a common licence whose distinctive wording (its title, or the clause only it has:
   `DECLARED`) appears near the top of the file (`HEAD_CHARS`), the earliest one winning -- a
   file that states the project's licence first and then those of bundled parts (jq's COPYING,
   pydicom's LICENSE) gets the first; a text that only differs from a template by a missing
   appendix (requests' Apache-2.0 without "APPENDIX") keeps its stated name;
2. else askalono (the `pyaskalono` bindings of the Rust library cargo-deny and others use:
   normalised-text similarity to every SPDX licence template), a match scoring at least
   `MIN_SCORE`.

One licence found: its id (`MIT`, `Apache-2.0`, `BSD-3-Clause`).
Several files with different licences (`LICENSE-MIT` + `LICENSE-APACHE`, `LICENSE-MIT` +
`UNLICENSE`): the dual-licensing convention those names follow, as an SPDX expression with
`OR` (`Apache-2.0 OR MIT`). Nothing found, no confident match, no mirror: `unknown`.

Results are cached per licence blob (`WORKDIR/cache/licenses.json`), so instances of one
repository cost one match. SWE-rebench keeps only permissive licences and says which; swemint
gives the column, `PERMISSIVE` and the export's filter (`swemint export --license`,
`--permissive`).
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import threading
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)

UNKNOWN = "unknown"
"""The licence of a row whose repository has no licence file we can match (or no mirror)."""
MIN_SCORE = 0.9
"""askalono's score (0..1) a licence text must reach to be named."""
NAMES = re.compile(r"^(?:un)?licen[cs]e|^copying|^copyright", re.IGNORECASE)
"""Root file names that hold the project's licence."""
PERMISSIVE = frozenset({
    "0BSD", "Apache-2.0", "BSD-1-Clause", "BSD-2-Clause", "BSD-2-Clause-Patent", "BSD-3-Clause",
    "BSD-3-Clause-Clear", "BSD-4-Clause", "BSL-1.0", "CC0-1.0", "ISC", "MIT", "MIT-0", "NCSA",
    "PostgreSQL", "PSF-2.0", "Python-2.0", "Unlicense", "UPL-1.0", "W3C", "X11", "Zlib", "curl",
})
"""SPDX ids of permissive licences (no copyleft, no field-of-use limit): what `--permissive` keeps."""


HEAD_CHARS = 2000
"""How far into a licence file `declared` looks for a licence's wording."""
DECLARED: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    # (SPDX id, phrases that must all appear, phrases that must not), checked case-insensitively
    # on whitespace-collapsed text; more specific entries first
    ("AGPL-3.0-only", ("GNU AFFERO GENERAL PUBLIC LICENSE", "Version 3"), ()),
    ("LGPL-3.0-only", ("GNU LESSER GENERAL PUBLIC LICENSE", "Version 3"), ()),
    ("LGPL-2.1-only", ("GNU LESSER GENERAL PUBLIC LICENSE", "Version 2.1"), ()),
    ("GPL-3.0-only", ("GNU GENERAL PUBLIC LICENSE", "Version 3"), ()),
    ("GPL-2.0-only", ("GNU GENERAL PUBLIC LICENSE", "Version 2"), ()),
    ("Apache-2.0", ("Apache License", "Version 2.0"), ()),
    ("MPL-2.0", ("Mozilla Public License", "2.0"), ()),
    ("EPL-2.0", ("Eclipse Public License", "2.0"), ()),
    ("BSL-1.0", ("Boost Software License", "Version 1.0"), ()),
    ("CC0-1.0", ("CC0 1.0 Universal",), ()),
    ("Unlicense", ("This is free and unencumbered software released into the public domain",), ()),
    ("PSF-2.0", ("PYTHON SOFTWARE FOUNDATION LICENSE VERSION 2",), ()),
    ("MIT", ("Permission is hereby granted, free of charge, to any person obtaining a copy",), ()),
    ("ISC", ("Permission to use, copy, modify, and", "distribute this software for any purpose with or without fee",
             "provided that the above copyright notice and this permission notice appear in all copies"), ()),
    ("0BSD", ("Permission to use, copy, modify, and", "distribute this software for any purpose with or without fee"),
     ("provided that the above copyright notice",)),
    ("Zlib", ("This software is provided 'as-is', without any express or implied warranty",
              "Permission is granted to anyone to use this software for any purpose"), ()),
    ("BSD-3-Clause", ("Redistribution and use in source and binary forms", "Neither the name"), ("advertising materials",)),
    ("BSD-4-Clause", ("Redistribution and use in source and binary forms", "advertising materials"), ()),
    ("BSD-2-Clause", ("Redistribution and use in source and binary forms",), ("Neither the name", "advertising materials")),
)
"""Common licences by the wording only their text has (the phrase matcher of step 1)."""


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).lower()


def declared(text: str) -> str | None:
    """The common licence (`DECLARED`) whose wording appears earliest in the first `HEAD_CHARS`
    characters of `text` (its required phrases all in the file, its excluded ones absent), else
    None."""
    whole = _squash(text[:200_000])
    head = _squash(text[:HEAD_CHARS])
    best: tuple[int, str] | None = None
    for spdx, need, avoid in DECLARED:
        if not all(_squash(p) in whole for p in need) or any(_squash(p) in whole for p in avoid):
            continue
        at = head.find(_squash(need[0]))
        if at >= 0 and (best is None or at < best[0]):
            best = (at, spdx)
    return best[1] if best else None


def spdx_ids(expression: str) -> list[str]:
    """The licence ids of an expression such as `Apache-2.0 OR MIT` (`unknown` -> [unknown])."""
    return [t for t in re.split(r"\s+(?:OR|AND|WITH)\s+|[()]", expression or UNKNOWN) if t.strip()]


def allowed(expression: str, wanted: Iterable[str]) -> bool:
    """Whether a row whose licence is `expression` may be published under `wanted` (SPDX ids,
    case-insensitive): every id of an AND expression, any id of an OR expression."""
    want = {w.lower() for w in wanted}
    ids = [i.lower() for i in spdx_ids(expression)]
    if " AND " in (expression or ""):
        return all(i in want for i in ids)
    return any(i in want for i in ids)


def identify(text: str) -> str | None:
    """The SPDX id askalono matches `text` to with a score of at least `MIN_SCORE`, else None.
    Raises ImportError when `pyaskalono` is not installed."""
    import askalono

    try:
        match = askalono.identify(text)
    except Exception:  # noqa: BLE001 - a text askalono cannot read (binary, empty): no licence
        return None
    return match.name if match is not None and float(match.score) >= MIN_SCORE else None


def _git(git_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True, timeout=120, check=False)


class LicenseReader:
    """`reader(repo, base_commit) -> SPDX id or expression` from the mirrors, cached.

    Args:
        mirrors: mirror roots (`pipeline.repos.RepoResolver` layouts); no clone is attempted.
        cache_path: JSON file of blob sha -> licence id (None: in memory only).
        git_dirs: repo -> git dir, looked at before the mirrors (`swemint run`'s local sources).
    Never raises for a repository's problems (no mirror, no commit, no file): `unknown`.
    """

    def __init__(self, mirrors: Iterable[Path] = (), cache_path: Path | None = None,
                 git_dirs: dict[str, Path] | None = None):
        from pipeline.repos import RepoConfig, RepoResolver

        self.resolver = RepoResolver([Path(m) for m in mirrors], RepoConfig(allow_clone=False))
        self.git_dirs = {k: Path(v) for k, v in (git_dirs or {}).items()}
        self.cache_path = Path(cache_path) if cache_path else None
        self._blobs: dict[str, str] = self._load()
        self._commits: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()
        self.available = True

    def _load(self) -> dict[str, str]:
        try:
            return json.loads(self.cache_path.read_text(encoding="utf-8")) if self.cache_path else {}
        except (OSError, ValueError):
            return {}

    def save(self) -> None:
        """Write the blob cache (when a path was given); never raises."""
        if self.cache_path is None:
            return
        try:
            from pipeline.store import atomic_write

            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.cache_path, json.dumps(self._blobs, indent=0, sort_keys=True))
        except OSError as e:
            log.warning("could not write %s: %s", self.cache_path, e)

    def _blob_license(self, git_dir: Path, sha: str) -> str | None:
        if sha in self._blobs:
            return self._blobs[sha] if self._blobs[sha] != UNKNOWN else None
        r = _git(git_dir, "cat-file", "blob", sha)
        text = r.stdout[:200_000].decode("utf-8", "replace") if r.returncode == 0 else ""
        found = (declared(text) or identify(text)) if text.strip() else None
        self._blobs[sha] = found or UNKNOWN
        return found

    def __call__(self, repo: str, base_commit: str | None) -> str:
        if not repo or not base_commit or not self.available:
            return UNKNOWN
        key = (repo, base_commit)
        with self._lock:
            if key in self._commits:
                return self._commits[key]
            try:
                git_dir = self.git_dirs.get(repo) or self.resolver.resolve(repo)
            except Exception:  # noqa: BLE001 - no mirror of it here
                self._commits[key] = UNKNOWN
                return UNKNOWN
            r = _git(git_dir, "ls-tree", base_commit)
            found: list[str] = []
            try:
                for line in r.stdout.decode("utf-8", "replace").splitlines() if r.returncode == 0 else []:
                    meta, _, name = line.partition("\t")
                    parts = meta.split()
                    if len(parts) == 3 and parts[1] == "blob" and NAMES.match(name):
                        lic = self._blob_license(git_dir, parts[2])
                        if lic and lic not in found:
                            found.append(lic)
            except ImportError:
                log.warning("pyaskalono is not installed: every row's licence is %r", UNKNOWN)
                self.available = False
                found = []
            result = " OR ".join(sorted(found)) if found else UNKNOWN
            self._commits[key] = result
            return result
