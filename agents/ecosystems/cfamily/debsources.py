"""Debian's source packages as a stand-in for upstream sources a build cannot download.

Debian keeps the pristine upstream tarball of every non-native source package in its pool
(``pool/main/<p>/<package>/<package>_<version>.orig.tar.*``); a suite's
``dists/<suite>/main/source/Sources.xz`` lists each source package with its version, pool
directory, files with their SHA-256 (``Checksums-Sha256``) and its ``Homepage`` / ``Vcs-*``
fields, which name the upstream repository for most packages (catch2:
``Homepage: https://github.com/catchorg/Catch2``). `DebianSources` reads those indexes from a
mirror (the host's own HTTP client; the host CA bundle for an https mirror), keeps a reduced copy
on disk (a SQLite file per suite in `SourcesConfig.cache_dir`, refreshed after `max_age_days`),
and answers two questions:
which source packages name an upstream repository (`by_upstream`) and what each suite has of a
package (`records`). `upstream_version` turns a Debian version into the upstream one it packages
(epoch, revision and repack suffixes dropped: ``1:1.15.2+ds-2`` -> ``1.15.2``,
``3.12.0.really.3.11.3-3`` -> ``3.11.3``).

The Sources format is Debian Policy 5.5 (deb822 paragraphs; ``Checksums-Sha256`` lines
`` <sha256> <size> <name>``).
"""

from __future__ import annotations

import hashlib
import lzma
import os
import re
import sqlite3
import ssl
import threading
import time
import urllib.request
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DebianSources", "SourceRecord", "SourcesConfig", "parse_sources", "upstream_key", "upstream_version"]

SHA256 = re.compile(r"[0-9a-f]{64}")
POOL_DIR = re.compile(r"pool/[A-Za-z0-9][A-Za-z0-9+._/-]{0,200}")
FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9+._~-]{0,200}")
PACKAGE = re.compile(r"[a-z0-9][a-z0-9.+-]{0,80}")


class SourcesConfig(BaseModel):
    """Where Debian's source indexes come from (`cfamily/cfamily.yaml` ``fetchcontent.sources``).

    - `suites`: the suites asked, oldest first (bookworm and newer: their tarballs unpack
      anywhere; the build uses the toolchain image's own compiler).
    - `mirror`: the archive's base URL; None: the image configuration's `debian_mirror`.
    - `cache_dir`: where the reduced indexes are kept (``~`` expanded).
    - `max_age_days`: a cached index older than this is fetched again (a frozen mirror: any).
    - `timeout`: seconds per index download.
    - `retry_after`: seconds a suite whose index could not be read is not asked again (a
      mirror without forky, a host without the network).
    """

    model_config = ConfigDict(extra="forbid")
    suites: list[str] = Field(default_factory=lambda: ["bookworm", "trixie", "forky", "sid"])
    mirror: str | None = None
    cache_dir: str = "~/.cache/swemint/debian-sources"
    max_age_days: float = Field(default=7.0, ge=0)
    timeout: float = Field(default=60.0, gt=0)
    retry_after: float = Field(default=3600.0, ge=0)


class SourceRecord(BaseModel):
    """One source package of one suite: `package`, Debian `version`, `suite`, pool `directory`,
    its upstream tarball (`orig`, `sha256`, `size`), `homepage` and `vcs` (``Vcs-Git`` /
    ``Vcs-Browser`` URLs). Only packages with an upstream tarball are recorded."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    package: str
    version: str
    suite: str
    directory: str
    orig: str
    sha256: str
    size: int = 0
    homepage: str = ""
    vcs: tuple[str, ...] = ()

    @property
    def upstream(self) -> str:
        """The upstream version packaged (`upstream_version`)."""
        return upstream_version(self.version)

    def url(self, mirror: str) -> str:
        """The tarball's URL under `mirror`."""
        return f"{mirror.rstrip('/')}/{self.directory}/{self.orig}"


def upstream_version(debian: str) -> str:
    """The upstream part of a Debian version: no epoch (``1:``), no revision (``-2``), the part
    after a ``.really.`` (a version rolled back under a higher number), up to a repack or
    pre-release marker (``+ds``, ``+dfsg``, ``~rc1``, ``+git2023``): ``1:1.15.2+ds-2`` -> ``1.15.2``."""
    v = debian.split(":", 1)[1] if re.match(r"\d+:", debian) else debian
    v = v.rsplit("-", 1)[0] if "-" in v else v
    if ".really." in v:
        v = v.rsplit(".really.", 1)[1]
    m = re.match(r"\d+(?:\.\d+)*", v)
    return m.group(0) if m else v


def upstream_key(url: str) -> str | None:
    """A repository URL or a download URL of a forge as ``host/owner/name``, lower case, without
    ``.git``: ``https://github.com/catchorg/Catch2.git`` and
    ``https://github.com/google/googletest/archive/refs/tags/v1.14.0.zip`` give
    ``github.com/catchorg/catch2`` / ``github.com/google/googletest``; ``git@github.com:a/b``,
    ``codeload.github.com/a/b/...`` and GitLab's ``/-/archive/`` too. None for a URL without
    an owner and a name."""
    u = (url or "").strip()
    m = re.match(r"(?:[a-z+]+://)?(?:[^@/]+@)?([^/:]+)[:/](.*)$", u, re.I)
    if not m:
        return None
    host, path = m.group(1).lower(), m.group(2)
    if host.startswith("www."):
        host = host[4:]
    if host == "codeload.github.com":
        host = "github.com"
    path = path.split("?", 1)[0].split("#", 1)[0].split("/-/", 1)[0]
    parts = [p for p in path.split("/") if p]
    if len(parts) < 2:
        return None
    owner, name = parts[0], parts[1]
    if name.endswith(".git"):
        name = name[:-4]
    if not owner or not name:
        return None
    return f"{host}/{owner}/{name}".lower()


def _fields(paragraph: str) -> dict[str, str]:
    out: dict[str, str] = {}
    key = None
    for line in paragraph.split("\n"):
        if line[:1] in (" ", "\t") and key:
            out[key] += "\n" + line.strip()
        elif ":" in line:
            key, _, value = line.partition(":")
            key = key.strip()
            out[key] = value.strip()
    return out


def _orig(package: str, version: str, checksums: str) -> tuple[str, str, int] | None:
    """(name, sha256, size) of the upstream tarball among a paragraph's checksum lines: the
    ``.orig.tar.*`` (not an ``orig-<component>``), else a native package's ``.tar.*``."""
    v = version.split(":", 1)[1] if re.match(r"\d+:", version) else version
    files = []
    for line in checksums.split("\n"):
        bits = line.split()
        if len(bits) == 3 and SHA256.fullmatch(bits[0]) and bits[1].isdigit() and FILE_NAME.fullmatch(bits[2]):
            files.append((bits[2], bits[0], int(bits[1])))
    up = v.rsplit("-", 1)[0] if "-" in v else v
    for name, sha, size in files:
        if re.fullmatch(re.escape(f"{package}_{up}") + r"\.orig\.tar\.(?:gz|xz|bz2|lzma|zst)", name):
            return name, sha, size
    for name, sha, size in files:
        if "-" not in v and re.fullmatch(re.escape(f"{package}_{v}") + r"\.tar\.(?:gz|xz|bz2|lzma|zst)", name):
            return name, sha, size
    return None


def parse_sources(text: str, suite: str) -> list[SourceRecord]:
    """The records of a Sources index (`text`, decompressed) of `suite`: packages with an
    upstream tarball whose name, pool directory and file name are plain (anything else is left
    out: these values reach shell commands)."""
    out = []
    for para in text.split("\n\n"):
        f = _fields(para)
        pkg, ver, directory = f.get("Package", ""), f.get("Version", ""), f.get("Directory", "")
        if not (PACKAGE.fullmatch(pkg) and ver and POOL_DIR.fullmatch(directory) and ".." not in directory):
            continue
        orig = _orig(pkg, ver, f.get("Checksums-Sha256", ""))
        if orig is None:
            continue
        vcs = tuple(f[k].split()[0] for k in ("Vcs-Git", "Vcs-Browser") if f.get(k))
        out.append(SourceRecord(package=pkg, version=ver, suite=suite, directory=directory, orig=orig[0],
                                sha256=orig[1], size=orig[2], homepage=f.get("Homepage", "").split()[0]
                                if f.get("Homepage") else "", vcs=vcs))
    return out


def _age(path: Path) -> float:
    """Seconds since `path` was written (infinite when it is missing)."""
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return float("inf")


def _download(url: str, timeout: float) -> bytes:
    """The bytes at `url` (the host CA bundle trusted for https). Raises OSError / URLError."""
    from envpool.docker_sandbox import host_ca_bundle

    ctx = None
    if url.startswith("https:"):
        ctx = ssl.create_default_context()
        ca = host_ca_bundle()
        if ca:
            ctx.load_verify_locations(str(ca))
    with urllib.request.urlopen(url, timeout=timeout, context=ctx) as r:  # noqa: S310 - a configured mirror
        return r.read()


class DebianSources:
    """The source indexes of `config.suites` on `mirror` (module docstring). Each suite's index
    is kept as a small SQLite file in `config.cache_dir` (records by package, upstream keys of
    their Homepage / Vcs URLs), so a question reads a few rows, not the whole index.

    Args:
        config: the `SourcesConfig`.
        mirror: the archive URL (``http://deb.debian.org/debian``); `config.mirror` wins.
        fetch: ``url -> bytes`` (default: an HTTP GET); a test passes a local stand-in.
    A suite whose index cannot be read counts as empty (`errors` says why); nothing raises.
    """

    def __init__(self, config: SourcesConfig, mirror: str, fetch: Callable[[str], bytes] | None = None):
        self.config = config
        self.mirror = (config.mirror or mirror).rstrip("/")
        self.fetch = fetch or (lambda url: _download(url, config.timeout))
        self.errors: dict[str, str] = {}
        self._ready: dict[str, Path | None] = {}

    def _cache_path(self, suite: str) -> Path:
        key = hashlib.sha256(self.mirror.encode()).hexdigest()[:12]
        return Path(self.config.cache_dir).expanduser() / f"{key}-{suite}.sqlite"

    def _db(self, suite: str) -> Path | None:
        """The SQLite index of `suite`, fetched and written when missing or older than
        `max_age_days`; None when it cannot be read or written (`errors`)."""
        if suite in self._ready:
            return self._ready[suite]
        path = self._cache_path(suite)
        failed = path.with_suffix(".failed")
        if _age(path) > self.config.max_age_days * 86400:
            url = f"{self.mirror}/dists/{suite}/main/source/Sources.xz"
            if _age(failed) < self.config.retry_after:
                self.errors[suite] = f"{url}: failed less than {self.config.retry_after:.0f} s ago"
                path = None
            else:
                try:
                    records = parse_sources(lzma.decompress(self.fetch(url)).decode("utf-8", "replace"), suite)
                    self._write(path, records)
                except Exception as e:  # noqa: BLE001 - a suite we cannot read has nothing
                    self.errors[suite] = f"{url}: {type(e).__name__}: {e}"[:300]
                    try:
                        failed.parent.mkdir(parents=True, exist_ok=True)
                        failed.write_text(self.errors[suite])
                    except OSError:
                        pass
                    path = None
        self._ready[suite] = path
        return path

    @staticmethod
    def _write(path: Path, records: list[SourceRecord]) -> None:
        """Write `records` as the SQLite index at `path` (atomically: a temporary file renamed)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}-{threading.get_ident()}.tmp")
        tmp.unlink(missing_ok=True)
        with closing(sqlite3.connect(tmp)) as db:
            db.execute("CREATE TABLE src (package TEXT, record TEXT)")
            db.execute("CREATE TABLE up (key TEXT, package TEXT)")
            db.executemany("INSERT INTO src VALUES (?, ?)", [(r.package, r.model_dump_json()) for r in records])
            db.executemany("INSERT INTO up VALUES (?, ?)", sorted({
                (k, r.package) for r in records for u in (r.homepage, *r.vcs) if u and (k := upstream_key(u))}))
            db.execute("CREATE INDEX src_package ON src (package)")
            db.execute("CREATE INDEX up_key ON up (key)")
            db.commit()
        os.replace(tmp, path)

    def _query(self, suite: str, sql: str, arg: str) -> list[tuple]:
        path = self._db(suite)
        if path is None:
            return []
        try:
            with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
                return db.execute(sql, (arg,)).fetchall()
        except sqlite3.Error as e:
            self.errors[suite] = f"{path}: {e}"[:300]
            return []

    def records(self, package: str) -> list[SourceRecord]:
        """What every suite has of source `package`, in suite order."""
        return [SourceRecord.model_validate_json(row[0]) for s in self.config.suites
                for row in self._query(s, "SELECT record FROM src WHERE package = ?", package)]

    def by_upstream(self, key: str) -> list[str]:
        """Source packages whose ``Homepage`` or ``Vcs-*`` URL names the repository `key`
        (`upstream_key` form), best first: named as the repository (catch2 before catch, which
        has Catch2's homepage too), containing its name (libuv1), contained in it, then the
        shorter name."""
        found = {row[0] for s in self.config.suites
                 for row in self._query(s, "SELECT package FROM up WHERE key = ?", key)}
        name = key.rsplit("/", 1)[-1]

        def rank(p: str) -> tuple[int, int, str]:
            return (0 if p == name else 1 if name in p else 2 if p in name else 3, len(p), p)

        return sorted(found, key=rank)
