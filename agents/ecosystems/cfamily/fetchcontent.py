"""CMake FetchContent sources from Debian when their upstream host cannot be reached.

A project may download a dependency at configure time (``FetchContent_Declare(Catch2
GIT_REPOSITORY https://github.com/catchorg/Catch2.git GIT_TAG v3.5.0)`` +
``FetchContent_MakeAvailable``); where the host is unreachable (GitHub here) the configure step
fails with ``Failed to clone repository: '<url>'`` (or ``error: downloading '<url>' failed``
for a ``URL`` declaration). FetchContent takes a local copy instead when the cache variable
``FETCHCONTENT_SOURCE_DIR_<NAME-UPPERCASE>`` names one (CMake >= 3.11, FetchContent's docs), so
the repair (`repair_commands`) provides that copy from Debian:

1. the failed fetches of the output (`failed_fetches`: URL and content name), plus every other
   declaration of the tree on a host that just failed (it would fail next);
2. the upstream repository (`agents.ecosystems.cfamily.debsources.upstream_key`: ``github.com/owner/name``)
   -> the Debian source package: data (`recipes/debian_upstreams.yaml`), else the source
   packages whose ``Homepage`` / ``Vcs-*`` names that repository (Debian's Sources indexes);
3. the version of that package nearest to the one requested (`requested`: the ``GIT_TAG``, a
   version in the comment of a ``GIT_TAG <hash>`` line, or the version in a ``URL``), over the
   suites of `SourcesConfig` (`choose`: the same major version, the oldest not older, or
   else the newest older one; a date-like version: the nearest not older);
4. commands: download the ``.orig.tar.*`` with apt's own downloader (``apt-helper
   download-file``, SHA-256 checked against the index), unpack it under
   `FetchContentConfig.root`, and configure again with
   ``-DFETCHCONTENT_SOURCE_DIR_<NAME>=<dir>`` for every source provided so far in this build
   (`provided_in`; the cache keeps them, so the retried configure and later rebuilds use them). The first command echoes
   what was chosen and why, so the trajectory, setup.sh and the Dockerfile say it.

ExternalProject downloads at build time and has no such override: not repaired here.
"""

from __future__ import annotations

import re
import shlex
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from agents.ecosystems.cfamily.debsources import DebianSources, SourceRecord, SourcesConfig, upstream_key

__all__ = ["Declaration", "FailedFetch", "FetchContentConfig", "choose", "declarations", "failed_fetches",
           "provided_in", "repair_commands", "requested", "upstreams"]

RECIPES = Path(__file__).parent.parent / "recipes"
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,100}")
"""A FetchContent content name that may become a cache variable and a folder name."""
_HASH = re.compile(r"[0-9a-f]{7,40}")
_VERSION = re.compile(r"(?<![A-Za-z0-9.])v?(\d+(?:\.\d+)*)(\.[xX*](?![A-Za-z0-9]))?")
"""A version in a tag, comment or file name: ``v3.5.0``, ``release-1.12.1``, ``v3.x``,
``googletest-1.14.0.tar.gz`` (not the 2 of ``catch2``)."""


class FetchContentConfig(BaseModel):
    """`cfamily/cfamily.yaml` ``fetchcontent``: `root`, the folder of the unpacked sources in
    the build container; `sources`, where Debian's indexes come from."""

    model_config = ConfigDict(extra="forbid")
    root: str = "/opt/swemint/fetchcontent"
    sources: SourcesConfig = Field(default_factory=SourcesConfig)


class Declaration(BaseModel):
    """One ``FetchContent_Declare``: content `name`, `url` (``GIT_REPOSITORY`` or the first
    ``URL``), `tag` (``GIT_TAG``), `hint` (the version it asks for, when one is written: the
    tag, a version in the tag line's comment, the URL's version), the CMake `file`."""

    model_config = ConfigDict(extra="forbid")
    name: str
    url: str
    tag: str | None = None
    hint: str | None = None
    file: str = ""


class FailedFetch(BaseModel):
    """A fetch the configure output reports failed: the `url`, and the content `name` (lower
    case, as FetchContent prints it) when the output names it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    url: str
    name: str | None = None


@lru_cache(maxsize=1)
def upstreams() -> dict[str, str]:
    """`recipes/debian_upstreams.yaml`: upstream repository (``host/owner/name``, lower case)
    -> Debian source package."""
    data = yaml.safe_load((RECIPES / "debian_upstreams.yaml").read_text()) or {}
    return {str(k).lower(): str(v) for k, v in data.items()}


# -- reading the tree -----------------------------------------------------------------------

def _arguments(text: str, start: int) -> tuple[list[tuple[str, int]], dict[int, str], int]:
    """The arguments of the command whose ``(`` is at `start`: (token, line) pairs, the comment
    of each line, and the index after the closing ``)``."""
    tokens: list[tuple[str, int]] = []
    comments: dict[int, str] = {}
    i, line, depth, cur = start + 1, text.count("\n", 0, start), 0, ""

    def flush():
        nonlocal cur
        if cur:
            tokens.append((cur, line))
            cur = ""

    while i < len(text):
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            cur += text[i + 1:j]
            line += text.count("\n", i, j)
            i = j + 1
            continue
        if ch == "#":
            j = text.find("\n", i)
            j = len(text) if j < 0 else j
            comments[line] = text[i + 1:j].strip()
            i = j
            continue
        if ch in " \t\r\n":
            flush()
            line += ch == "\n"
        elif ch == "(":
            depth += 1
            cur += ch
        elif ch == ")":
            if depth == 0:
                flush()
                return tokens, comments, i + 1
            depth -= 1
            cur += ch
        else:
            cur += ch
        i += 1
    flush()
    return tokens, comments, i


def _expand(value: str, variables: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}", lambda m: variables.get(m.group(1), m.group(0)), value)


def _hint(tag: str | None, comment: str | None, url: str) -> str | None:
    if tag and not _HASH.fullmatch(tag) and re.search(r"\d", tag):
        return tag
    if comment and _VERSION.search(comment):
        return comment
    parts = [p for p in url.split("?", 1)[0].split("://", 1)[-1].split("/") if p][3:]  # after host/owner/name
    return next((p for p in reversed(parts) if re.search(r"\d+\.\d+|(?<![A-Za-z])v\d+", p)), None)


def declarations(files: dict[str, str]) -> list[Declaration]:
    """Every ``FetchContent_Declare`` with a ``GIT_REPOSITORY`` or ``URL`` in `files` (CMake
    file path -> text); ``${VAR}`` is expanded where the same file ``set``s VAR to one value."""
    out = []
    for path, text in files.items():
        if "fetchcontent_declare" not in text.lower():
            continue
        variables = {m.group(1): m.group(2) for m in re.finditer(
            r"^\s*set\s*\(\s*(\w+)\s+\"?([^\s\")]+)\"?\s*\)", text, re.I | re.M)}
        for m in re.finditer(r"\bFetchContent_Declare\s*\(", text, re.I):
            tokens, comments, _ = _arguments(text, m.end() - 1)
            if not tokens:
                continue
            name = _expand(tokens[0][0], variables)
            values: dict[str, tuple[str, int]] = {}
            for (key, _), (value, vline) in zip(tokens[1:], tokens[2:]):
                if key in ("GIT_REPOSITORY", "URL", "GIT_TAG") and key not in values:
                    values[key] = (_expand(value, variables), vline)
            url = (values.get("GIT_REPOSITORY") or values.get("URL") or ("", 0))[0]
            if not url or not NAME.fullmatch(name):
                continue
            tag, tline = values.get("GIT_TAG", (None, 0))
            out.append(Declaration(name=name, url=url, tag=tag, file=path,
                                   hint=_hint(tag, comments.get(tline) if tag else None, url)))
    return out


# -- reading the failure --------------------------------------------------------------------

_NAMED = re.compile(r"for '([\w.+-]+)-populate'|/fc-tmp/([\w.+-]+)/|([\w.+-]+)-populate-gitclone\.cmake|"
                    r"Build step for ([\w.+-]+) failed")
_FAILED = re.compile(r"Failed to clone repository: '([^'\s]+)'|error: downloading '([^'\s]+)' failed")


def failed_fetches(output: str) -> list[FailedFetch]:
    """The fetches a configure `output` reports failed, each once, with the content name printed
    nearest before the failure (``for 'catch2-populate'``, ``fc-tmp/catch2/``: CMake's sub-build
    and direct population both)."""
    out: list[FailedFetch] = []
    name = None
    for line in (output or "").splitlines():
        for m in _NAMED.finditer(line):
            name = next(g for g in m.groups() if g)
        for m in _FAILED.finditer(line):
            url = m.group(1) or m.group(2)
            if not any(f.url == url for f in out):
                out.append(FailedFetch(url=url, name=name.lower() if name else None))
    return out


# -- choosing the version ---------------------------------------------------------------------

def requested(hint: str | None) -> tuple[tuple[int, ...], bool] | None:
    """(version, wildcard) a hint asks for: ``v3.5.0`` -> ((3, 5, 0), False), ``v3.x`` ->
    ((3,), True), ``release-1.12.1`` -> ((1, 12, 1), False); None without a version."""
    m = _VERSION.search(hint or "")
    if not m:
        return None
    return tuple(int(x) for x in m.group(1).split(".")), bool(m.group(2))


def _key(r: SourceRecord) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", r.upstream))


def choose(records: list[SourceRecord], hint: str | None) -> tuple[SourceRecord | None, str]:
    """The record to use for a request (`requested(hint)`) and why, or (None, why not).
    No version asked: the newest. A version: the same major only (another major is another
    API), the oldest one not older than asked (``v3.x``: the newest 3.x), else the newest
    older one; a date-like major (>= 1900, abseil's ``20230802``): the nearest not older, else
    the newest. Among equal versions the earliest suite of `records` wins."""
    seen: dict[str, SourceRecord] = {}
    for r in records:
        seen.setdefault(r.upstream, r)
    cands = sorted(seen.values(), key=_key)
    have = ", ".join(f"{r.upstream} ({r.suite})" for r in cands) or "none"
    if not cands:
        return None, "Debian has no such source package in the suites asked"
    want = requested(hint)
    if want is None:
        return cands[-1], f"no version asked: the newest of {have}"
    version, wild = want
    asked = ".".join(map(str, version)) + (".x" if wild else "")
    if version[0] < 1900:
        pool = [r for r in cands if _key(r)[:1] == version[:1]]
        if not pool:
            return None, f"{asked} asked; Debian has {have}: no release of major version {version[0]}"
    else:
        pool = cands
    if wild:
        pick = [r for r in pool if _key(r)[:len(version)] == version] or pool
        return pick[-1], f"{asked} asked: the newest of {have} that matches"
    newer = [r for r in pool if _key(r) >= version]
    if newer:
        return newer[0], f"{asked} asked: the oldest of {have} not older"
    return pool[-1], f"{asked} asked: the newest of {have} (none is as new)"


# -- the repair -------------------------------------------------------------------------------

def _q(s: str) -> str:
    return shlex.quote(s)


def provide_command(name: str, record: SourceRecord, mirror: str, root: str, why: str) -> str:
    """The shell command placing `record`'s upstream tarball unpacked at ``<root>/<name lower>``
    (a single top folder is stripped), its SHA-256 checked by apt's downloader; it first echoes
    `why`. Raises ValueError for a name that is not a plain content name."""
    if not NAME.fullmatch(name):
        raise ValueError(f"not a FetchContent content name: {name!r}")
    dest = f"{root.rstrip('/')}/{name.lower()}"
    work = f"{dest}.download"
    return (f"echo {_q('swemint: ' + why)} && rm -rf {_q(dest)} {_q(work)} && mkdir -p {_q(work + '/x')} && "
            f"cd {_q(work)} && /usr/lib/apt/apt-helper download-file {_q(record.url(mirror))} {_q(record.orig)} "
            f"{_q('SHA256:' + record.sha256)} && tar -xf {_q(record.orig)} -C x && "
            f"if [ \"$(ls -A x | wc -l)\" = 1 ] && [ -d \"x/$(ls -A x)\" ]; then mv \"x/$(ls -A x)\" {_q(dest)}; "
            f"else mv x {_q(dest)}; fi && cd / && rm -rf {_q(work)}")


_CONFIGURE = re.compile(r"(?:^|&&|;|\|\||\()\s*(cmake)\s+(?!--build\b|--install\b|-E\b|-P\b|--version\b)")


def configure_with(command: str, flags: list[str]) -> str | None:
    """`command` (a step running a CMake configure) with `flags` (quoted) right after its last
    configuring ``cmake``; None when it runs none."""
    found = list(_CONFIGURE.finditer(command))
    if not found:
        return None
    at = found[-1].end(1)
    return command[:at] + "".join(" " + _q(f) for f in flags) + command[at:]


def _package(key: str, sources: DebianSources) -> tuple[str | None, str]:
    mapped = upstreams().get(key)
    if mapped:
        return mapped, "recipes/debian_upstreams.yaml"
    found = sources.by_upstream(key)
    if found:
        return found[0], f"Debian's Sources ({'Homepage/Vcs of ' + ', '.join(found[:3])})"
    return None, "no Debian source package names it (data, Homepage, Vcs)"


def provided_in(tried: set[str] | list[str]) -> dict[str, str]:
    """Content name (upper case) -> folder of the sources earlier repairs of this build provided:
    the ``-DFETCHCONTENT_SOURCE_DIR_<NAME>=<dir>`` arguments of the repairs in `tried`
    (Execution's keys of the repairs it applied)."""
    out: dict[str, str] = {}
    for entry in tried:
        if "FETCHCONTENT_SOURCE_DIR_" not in entry:
            continue
        for line in entry.splitlines():
            try:
                words = shlex.split(line)
            except ValueError:
                continue
            for w in words:
                m = re.fullmatch(r"-DFETCHCONTENT_SOURCE_DIR_([A-Z0-9_.+-]+)=(.+)", w)
                if m:
                    out[m.group(1)] = m.group(2)
    return out


def repair_commands(state: dict, command: str, output: str, sources: DebianSources, config: FetchContentConfig,
                    tried: set[str] | list[str] = ()) -> tuple[list[str], list[str]] | None:
    """(commands, notes) providing from Debian the sources the configure `command` failed to
    fetch (module docstring), or None when `output` shows no failed fetch or nothing new can be
    provided. `state`: the plan's ``fetchcontent`` state (``declarations`` read from the tree);
    `tried`: the repairs already applied in this build (`provided_in`: their sources are not
    provided again, and the new configure names them too). `notes`: one line per dependency
    (what was chosen, or why nothing could be)."""
    fails = failed_fetches(output)
    if not fails:
        return None
    decls = [Declaration(**d) for d in state.get("declarations", [])]
    provided = provided_in(tried)
    hosts = {(upstream_key(f.url) or "").split("/", 1)[0] for f in fails} - {""}
    wanted: list[tuple[str, str, str | None]] = []
    for f in fails:
        d = next((d for d in decls if d.url == f.url), None) or \
            next((d for d in decls if f.name and d.name.lower() == f.name), None)
        name = d.name if d else f.name
        if name:
            wanted.append((name, f.url, d.hint if d else None))
    for d in decls:  # the same host fails for them too, one configure later
        if (upstream_key(d.url) or "").split("/", 1)[0] in hosts:
            wanted.append((d.name, d.url, d.hint))
    commands, notes, new = [], [], {}
    for name, url, hint in wanted:
        up = name.upper()
        if up in new or up in provided or not NAME.fullmatch(name):
            continue
        new[up] = ""
        key = upstream_key(url)
        package, via = _package(key, sources) if key else (None, "not a forge repository URL")
        if package is None:
            notes.append(f"FetchContent {name} ({url}): {via}")
            continue
        record, why = choose(sources.records(package), hint)
        if record is None:
            notes.append(f"FetchContent {name} ({url}): Debian source {package}: {why}")
            continue
        dest = f"{config.root.rstrip('/')}/{name.lower()}"
        note = (f"FetchContent {name} ({url}{', ' + hint if hint else ''}) cannot be fetched: Debian source "
                f"{package} {record.version} ({record.suite}, {record.orig}) -> {dest}, package from {via}; {why}")
        commands.append(provide_command(name, record, sources.mirror, config.root, note))
        notes.append(note)
        new[up] = dest
    dirs = {**provided, **{k: v for k, v in new.items() if v}}
    configure = configure_with(command, [f"-DFETCHCONTENT_SOURCE_DIR_{k}={v}" for k, v in dirs.items()])
    if not commands or configure is None:
        return None
    return commands + [configure], notes
