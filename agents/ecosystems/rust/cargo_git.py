"""Cargo dependencies from git repositories, which cannot be fetched here (GitHub is unreachable).

Detection (`git_deps`): every ``git = "<url>"`` dependency of a workspace manifest (member
``[dependencies]``, ``[dev-dependencies]``, ``[build-dependencies]``, their ``[target.*]``
forms, ``[workspace.dependencies]``), with the version Cargo.lock records for it (the lock
entry whose source is ``git+<url>``).

Two routes, both recorded in the plan (substitutions):

- a workspace member no selected test package needs (not one of them, not a path dependency of
  one, not in ``default-members``) is dropped from the workspace (``[workspace] exclude``):
  nothing the tests build changes (axum's ``examples/hyper-1-0``);
- otherwise the dependency spec is rewritten to the crates.io release closest to the git
  revision (`choose_release`: the locked version, else the nearest newer compatible release,
  else the newest published before the commit date, else the oldest after it; only releases
  with the features the manifest asks for). Cargo does not accept a registry ``[patch]`` of a
  git source offline from it: it still clones the git source (checked on cargo 1.78), hence
  the manifest rewrite.

A ``[patch.crates-io]`` entry from git (nushell's ``reedline = { git = ..., branch = "main" }``)
is dropped when crates.io has the version Cargo.lock records for it, or an older compatible
release (`released_as_locked`): the dependency's own requirement then resolves from the registry
(`drop_patch`).

A crate crates.io has no release of (a fork-only crate), a git dependency only Cargo.lock knows
(a dependency of a dependency), a git ``[patch]`` whose version crates.io lacks, or a manifest
whose rewrite does not parse back as intended: EnvBuildError with that cause.
"""

from __future__ import annotations

import json
import posixpath
import re
import ssl
import tomllib
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache

from envpool.toolchains import version_key

__all__ = ["GitDep", "GitPatch", "Release", "choose_release", "crate_releases", "drop_patch", "exclude_member",
           "git_deps", "git_patches", "index_path", "released_as_locked", "rewrite_dep"]

INDEX = "https://index.crates.io"
DEP_TABLES = ("dependencies", "dev-dependencies", "build-dependencies")
GIT_KEYS = ("git", "rev", "branch", "tag")
SEMVER = re.compile(r"(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?")


@dataclass
class GitDep:
    """One git dependency: `key` (its name in the table), `crate` (the package name), `url`,
    `manifest` (repository-relative path), `member` (the member's folder relative to the cargo
    root; None for ``[workspace.dependencies]``), `features` asked for, `locked` version."""

    key: str
    crate: str
    url: str
    manifest: str
    member: str | None
    package: str | None = None
    features: list[str] = field(default_factory=list)
    locked: str | None = None


@dataclass(frozen=True)
class Release:
    """A crates.io release as the sparse index lists it."""

    version: str
    published: datetime | None = None
    yanked: bool = False
    features: frozenset[str] = frozenset()


def norm_url(url: str) -> str:
    """A git URL without query, fragment, trailing slash or ``.git`` (how Cargo.lock and the
    manifest spell the same repository may differ)."""
    url = url.split("#")[0].split("?")[0].rstrip("/")
    return url[:-4] if url.endswith(".git") else url


def _tables(manifest: dict):
    """(table, its dependency dict) of a manifest, target-specific ones included."""
    for t in DEP_TABLES:
        yield t, manifest.get(t) or {}
    for cfg, tgt in (manifest.get("target") or {}).items():
        if isinstance(tgt, dict):
            for t in DEP_TABLES:
                yield f"target.{cfg}.{t}", tgt.get(t) or {}
    ws = manifest.get("workspace")
    if isinstance(ws, dict):
        yield "workspace.dependencies", ws.get("dependencies") or {}


def _locked_versions(lock: dict | None) -> dict[tuple[str, str], str]:
    """(crate, normalised git url) -> the version Cargo.lock records for that git source."""
    locked: dict[tuple[str, str], str] = {}
    for e in (lock or {}).get("package") or []:
        src = str(e.get("source") or "")
        if src.startswith("git+") and e.get("name") and e.get("version"):
            locked[(str(e["name"]), norm_url(src[4:]))] = str(e["version"])
    return locked


def git_deps(manifests: dict[str, tuple[str | None, dict]], lock: dict | None) -> list[GitDep]:
    """The git dependencies of `manifests` (path -> (member folder or None for the root without
    a package, parsed manifest)), with the version `lock` (parsed Cargo.lock) records."""
    locked = _locked_versions(lock)
    out = []
    for path, (member, m) in manifests.items():
        for table, deps in _tables(m):
            for key, spec in deps.items():
                if not (isinstance(spec, dict) and isinstance(spec.get("git"), str)):
                    continue
                crate = str(spec.get("package") or key)
                out.append(GitDep(key=key, crate=crate, url=spec["git"], manifest=path,
                                  member=None if table.startswith("workspace.") else member,
                                  package=spec.get("package"),
                                  features=[str(f) for f in spec.get("features") or []],
                                  locked=locked.get((crate, norm_url(spec["git"])))))
    return out


def lock_only(lock: dict | None, deps: list, patched: list | None = None) -> list[str]:
    """Git sources of `lock` that no manifest declares ("name (url)"): dependencies of git
    dependencies, which no manifest rewrite here reaches. `deps` (`GitDep`s) and `patched`
    (`GitPatch`es) are declared."""
    known = {(d.crate, norm_url(d.url)) for d in [*deps, *(patched or [])]}
    out = []
    for e in (lock or {}).get("package") or []:
        src = str(e.get("source") or "")
        if src.startswith("git+") and (str(e.get("name")), norm_url(src[4:])) not in known:
            out.append(f"{e.get('name')} ({src.split('#')[0]})")
    return out


# ------------------------------------------------------------------------- version choice

def _semver(v: str) -> tuple[int, int, int, str] | None:
    m = SEMVER.fullmatch(v)
    return (int(m[1]), int(m[2]), int(m[3]), m[4] or "") if m else None


def _compatible(a: tuple, b: tuple) -> bool:
    """Cargo's caret compatibility: same major (>= 1), same minor (0.y, y >= 1), same patch (0.0.z)."""
    if a[0] or b[0]:
        return a[0] == b[0]
    if a[1] or b[1]:
        return a[1] == b[1]
    return a[2] == b[2]


def choose_release(releases: list[Release], locked: str | None, when: datetime | None,
                   features: list[str] | tuple[str, ...] = ()) -> tuple[str, str] | None:
    """(version, why) of the crates.io release standing in for a git dependency, or None when
    no release fits. Only unyanked releases defining every feature in `features` count;
    pre-releases only for the `locked` rules. In order: `locked` itself; the oldest newer
    release compatible with it; the newest stable release published on or before `when`; the
    oldest stable release after `when` (nearest in time)."""
    need = set(features)
    ok = [(r, _semver(r.version)) for r in releases if not r.yanked and need <= r.features]
    ok = sorted(((r, s) for r, s in ok if s), key=lambda x: version_key(x[0].version))
    lv = _semver(locked) if locked else None
    if lv:
        for r, s in ok:
            if s == lv:
                return r.version, f"the version Cargo.lock records ({locked})"
        newer = [r for r, s in ok if s[:3] > lv[:3] or (s[:3] == lv[:3] and not s[3])]
        newer = [r for r in newer if _compatible(_semver(r.version), lv)]
        if newer:
            return newer[0].version, f"Cargo.lock records {locked}, not on crates.io; the nearest newer compatible release"
    stable = [r for r, s in ok if not s[3]]
    if when is not None:
        when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
        dated = [r for r in stable if r.published]
        before = [r for r in dated if r.published <= when]
        if before:
            newest = max(before, key=lambda r: version_key(r.version))
            return newest.version, (f"the newest release published before the commit date ({when.date()}): "
                                    f"{newest.published.date()}")
        after = sorted((r for r in dated if r.published > when), key=lambda r: r.published)
        if after:
            return after[0].version, (f"no release before the commit date ({when.date()}) fits; the first after it "
                                      f"({after[0].published.date()})")
    if stable:
        return stable[-1].version, "the newest release (no commit date to go by)"
    return None


# --------------------------------------------------------------------------- sparse index

def index_path(name: str) -> str:
    """The sparse index path of crate `name` (``1/a``, ``2/ab``, ``3/a/abc``, ``hy/pe/hyper-util``)."""
    n = name.lower()
    if len(n) <= 2:
        return f"{len(n)}/{n}"
    if len(n) == 3:
        return f"3/{n[0]}/{n}"
    return f"{n[:2]}/{n[2:4]}/{n}"


def parse_index(text: str) -> list[Release]:
    """The releases of one sparse index file (one JSON object a line; bad lines skipped)."""
    out = []
    for line in text.splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if not isinstance(e, dict) or not isinstance(e.get("vers"), str):
            continue
        feats = set((e.get("features") or {}).keys()) | set((e.get("features2") or {}).keys())
        feats |= {str(d.get("name")) for d in e.get("deps") or [] if d.get("optional")}
        pub = None
        if isinstance(e.get("pubtime"), str):
            try:
                pub = datetime.fromisoformat(e["pubtime"].replace("Z", "+00:00"))
            except ValueError:
                pub = None
        out.append(Release(e["vers"], pub, bool(e.get("yanked")), frozenset(feats)))
    return out


@lru_cache(maxsize=64)
def crate_releases(name: str, base: str = INDEX) -> tuple[Release, ...] | None:
    """The crates.io releases of `name` from the sparse index; () when crates.io has none (404),
    None when the index cannot be read (network)."""
    from envpool.docker_sandbox import host_ca_bundle

    ctx = ssl.create_default_context()
    ca = host_ca_bundle()
    if ca:
        ctx.load_verify_locations(str(ca))
    try:
        with urllib.request.urlopen(f"{base}/{index_path(name)}", timeout=20, context=ctx) as r:
            return tuple(parse_index(r.read().decode("utf-8", "replace")))
    except urllib.error.HTTPError as e:
        return () if e.code in (404, 410) else None
    except Exception:
        return None


# ----------------------------------------------------------------------- manifest rewrites

def _header(line: str) -> str | None:
    m = re.match(r"\s*\[\[?([^\]]+)\]\]?\s*(#.*)?$", line)
    return re.sub(r"\s+", "", m.group(1)) if m else None


def _key_re(key: str) -> str:
    return rf"""(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')"""


def _reparsed(lines: list[str], what: str) -> tuple[str, dict]:
    """(text, parsed TOML) of rewritten manifest `lines`; ValueError naming `what` when it does not parse."""
    new = "".join(lines)
    try:
        return new, tomllib.loads(new)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"the {what} does not parse: {e}") from e


def rewrite_dep(text: str, key: str, url: str, version: str) -> str:
    """`text` (a Cargo.toml) with every git spec of dependency `key` from `url` turned into
    ``version = "=<version>"`` (git/rev/branch/tag dropped; features, package, optional kept);
    inline tables and ``[*.dependencies.<key>]`` sections. Raises ValueError when the result
    does not parse or still holds that git dependency."""
    kv = re.compile(rf"""\s*(?:{'|'.join(GIT_KEYS)}|version)\s*=\s*("[^"]*"|'[^']*')\s*,?""")
    lines = text.splitlines(keepends=True)
    out, section = [], None
    inline = re.compile(rf"^(\s*{_key_re(key)}\s*=\s*\{{)(.*)(\}}\s*(?:#.*)?\n?)$")
    for line in lines:
        h = _header(line)
        if h is not None:
            section = h
            out.append(line)
            if re.search(rf"(^|[.-])dependencies\.{_key_re(key)}$", h):
                out.append(f'version = "={version}"\n')
            continue
        m = inline.match(line)
        if m and "git" in m.group(2):
            body = kv.sub("", m.group(2)).strip().rstrip(",").strip()
            body = f' version = "={version}"' + (f", {body}" if body else "")
            out.append(f"{m.group(1)}{body} {m.group(3)}")
            continue
        if section and re.search(rf"(^|[.-])dependencies\.{_key_re(key)}$", section) and \
                re.match(rf"\s*(?:{'|'.join(GIT_KEYS)}|version)\s*=", line):
            continue
        out.append(line)
    new, parsed = _reparsed(out, "rewritten manifest")
    for _, deps in _tables(parsed):
        spec = deps.get(key)
        if isinstance(spec, dict) and spec.get("git"):
            raise ValueError(f"{key} still comes from git after the rewrite")
    return new


def exclude_member(text: str, member: str) -> str:
    """The workspace root manifest `text` with `member` added to ``[workspace] exclude``.
    Raises ValueError when the result does not parse or does not exclude it."""
    lines = text.splitlines(keepends=True)
    out, section, done = [], None, False
    quoted = json.dumps(member)
    for line in lines:
        h = _header(line)
        if h is not None:
            section = h
        elif section == "workspace" and not done and re.match(r"\s*exclude\s*=\s*\[", line):
            line = re.sub(r"(exclude\s*=\s*\[)", rf"\1{quoted}, ", line, count=1)
            line = re.sub(r",\s*\]", "]", line)
            done = True
        out.append(line)
        if h == "workspace" and not done and "exclude" not in (tomllib.loads(text).get("workspace") or {}):
            out.append(f"exclude = [{quoted}]\n")
            done = True
    new, parsed = _reparsed(out, "rewritten workspace manifest")
    ws = parsed.get("workspace") or {}
    if member not in (ws.get("exclude") or []):
        raise ValueError(f"{member} is not excluded after the rewrite")
    return new


def needed_members(manifests: dict[str, tuple[str | None, dict]], selected: list[str]) -> set[str]:
    """Member folders the `selected` member folders build: themselves and their path
    dependencies (all tables), transitively."""
    by_dir = {d: m for d, m in manifests.values() if d is not None}
    need, todo = set(), list(selected)
    while todo:
        d = todo.pop()
        if d in need:
            continue
        need.add(d)
        for _, deps in _tables(by_dir.get(d) or {}):
            for spec in deps.values():
                if isinstance(spec, dict) and isinstance(spec.get("path"), str):
                    x = posixpath.normpath(posixpath.join(d, spec["path"]))
                    todo.append("" if x == "." else x)
    return need


@dataclass
class GitPatch:
    """A ``[patch.<registry>]`` entry from git: `registry` (``crates-io``), `key`, `crate` (its
    package name), `url`, `manifest` (repository-relative path), `locked` (the version Cargo.lock
    records for that git source)."""

    registry: str
    key: str
    crate: str
    url: str
    manifest: str
    locked: str | None = None


def git_patches(manifests: dict[str, tuple[str | None, dict]], lock: dict | None) -> list[GitPatch]:
    """The git entries of every manifest's ``[patch.*]`` tables, with their locked versions."""
    locked = _locked_versions(lock)
    out = []
    for path, (_, m) in manifests.items():
        for registry, table in (m.get("patch") or {}).items():
            if not isinstance(table, dict):
                continue
            for key, spec in table.items():
                if isinstance(spec, dict) and isinstance(spec.get("git"), str):
                    crate = str(spec.get("package") or key)
                    out.append(GitPatch(registry=str(registry), key=key, crate=crate, url=spec["git"], manifest=path,
                                        locked=locked.get((crate, norm_url(spec["git"])))))
    return out


def released_as_locked(releases: list[Release], locked: str | None) -> str | None:
    """The unyanked crates.io release a git ``[patch]`` can give way to: the locked version
    itself, else the newest release caret-compatible with it that is not newer than it (cargo
    then resolves the dependency's own requirement from the registry). None when neither exists
    (a git-only version, a pre-release of an unreleased line)."""
    lv = _semver(locked) if locked else None
    if not lv:
        return None
    ok = [(r.version, s) for r in releases if not r.yanked and (s := _semver(r.version))]
    if any(s == lv for _, s in ok):
        return locked
    older = sorted((v for v, s in ok if not s[3] and s[:3] <= lv[:3] and _compatible(s, lv)), key=version_key)
    return older[-1] if older else None


def drop_patch(text: str, registry: str, key: str) -> str:
    """`text` (a Cargo.toml) without the ``[patch.<registry>]`` entry `key` (an inline line, or a
    ``[patch.<registry>.<key>]`` section). Raises ValueError when the result does not parse or
    still has the entry."""
    reg = re.escape(registry)
    table = re.compile(rf"""patch\.(?:{reg}|"{reg}")""")
    entry = re.compile(rf"""patch\.(?:{reg}|"{reg}")\.{_key_re(key)}""")
    inline = re.compile(rf"\s*{_key_re(key)}\s*=")
    out, section = [], None
    for line in text.splitlines(keepends=True):
        h = _header(line)
        section = h if h is not None else section
        if section and (entry.fullmatch(section) or (h is None and table.fullmatch(section) and inline.match(line))):
            continue
        out.append(line)
    new, parsed = _reparsed(out, "manifest without the patch")
    if key in ((parsed.get("patch") or {}).get(registry) or {}):
        raise ValueError(f"[patch.{registry}] {key} is still there")
    return new
