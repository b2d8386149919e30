"""Class S31: a cgo package links a library that the repository itself builds with its own build.

A cgo file's ``#cgo LDFLAGS`` (or ``CFLAGS`` / ``CPPFLAGS`` / ``CXXFLAGS``) may name paths inside
the repository that no checkout has: ``${SRCDIR}/../cpp/cmake-build-release/libfoo.a``,
``-L${SRCDIR}/build -lfoo``, ``-I${SRCDIR}/build/include``. They are what the repository's own
CMake project or Makefile leaves behind, and the package (with every package importing it) does
not build until that build ran.

`cgo_needs` reads the packages the test_patch touches and the repository packages they import
(transitively), the cgo files among them that build for linux/amd64, their directives whose
constraints hold here, and the in-repository paths those name that are missing at the base
commit. `library_builds` finds the build that produces each: the nearest folder at or above the
path holding a CMakeLists.txt or a Makefile (`agents.ecosystems.owners.owner_build`); below a
CMake project, a folder named like a build folder (``cmake-build-release``, ``build``,
``build-debug``, ``build/Release``) is configured as exactly that binary folder with the build
type its name implies, else the project builds in its own folder. A Makefile counts only when it
names the file (``libfoo``) or the folder. The builds themselves are the C/C++ ecosystem's
(`agents.ecosystems.cfamily.c_library.library_build`).

Paths of other variables, absolute paths and paths outside the repository are not the
repository's to build. Library files and ``-L`` folders must exist after the build (the row ends
naming the one that does not); a missing ``-I`` folder alone asks for the build but is not
checked (a compiler ignores it).
"""

from __future__ import annotations

import posixpath
import re
import shlex
import weakref
from dataclasses import dataclass, field

from agents.ecosystems.base import PlanRequest
from agents.ecosystems.cfamily.c_library import LibraryBuild, library_build
from agents.ecosystems.golang.go_modules import GoProject, _skipped, analyze
from agents.ecosystems.golang.go_setup import _abs
from agents.ecosystems.golang.go_tests import HERE, file_builds, gated_tags, legacy_constraint, select_packages
from agents.ecosystems.move_types import Move
from agents.ecosystems.owners import owner_build
from envpool.patches import changed_lines

__all__ = ["CgoNeed", "NATIVE_SYSTEMS", "NativeSetup", "cgo_directives", "cgo_needs", "go_imports", "library_builds",
           "native_moves", "native_of", "native_setup"]

NATIVE_SYSTEMS: dict[str, tuple[str, ...]] = {"cmake": ("CMakeLists.txt",),
                                              "make": ("GNUmakefile", "makefile", "Makefile")}
"""The builds that may produce a cgo package's library, nearest folder first (CMake before a
Makefile in one folder)."""

_DIRECTIVE = re.compile(r"^\s*(?://\s*)?#cgo\s+([^:\n]*?)\s*\b(CFLAGS|CPPFLAGS|CXXFLAGS|LDFLAGS)\s*:(.*)$", re.M)
_IMPORT_BLOCK = re.compile(r"^import\s*\((.*?)^\)", re.M | re.S)
_IMPORT_LINE = re.compile(r"^import\s+(?:[\w.]+\s+)?\"([^\"]+)\"", re.M)
_IMPORT_SPEC = re.compile(r"^\s*(?:[\w.]+\s+)?\"([^\"]+)\"", re.M)
_LIBRARY = re.compile(r"^lib([A-Za-z0-9_.+-]+?)\.(?:a|so(?:\.\d+)*|dylib)$")
_BUILD_FOLDER = re.compile(r"^(?:cmake-build-.+|_?build(?:[-_.].*)?)$", re.I)
_BUILD_TYPES = {"debug": "Debug", "release": "Release", "relwithdebinfo": "RelWithDebInfo", "minsizerel": "MinSizeRel"}


@dataclass
class CgoNeed:
    """A path a cgo directive names that the tree lacks: the Go `file` and its package folder
    (`package`), the directive's `flag` (``LDFLAGS``), the word as written (`word`), the
    repository `path` it resolves to and its `kind` (``library``: a file to link, ``libdir``:
    a ``-L`` folder, ``include``: a ``-I`` folder)."""

    package: str
    file: str
    flag: str
    word: str
    path: str
    kind: str

    def required(self) -> bool:
        """Whether the path must exist after the build (a library or a ``-L`` folder)."""
        return self.kind in ("library", "libdir")


def go_imports(text: str) -> list[str]:
    """The import paths of a Go file's ``import`` declarations (single and grouped)."""
    out = _IMPORT_LINE.findall(text)
    for block in _IMPORT_BLOCK.findall(text):
        out += _IMPORT_SPEC.findall(block)
    return list(dict.fromkeys(out))


def _holds(constraint: str, tags: list[str]) -> bool:
    """A ``#cgo`` directive's constraint (``linux``, ``darwin,arm64``, ``!windows linux``: read as a
    ``// +build`` line, `go_tests.legacy_constraint`) on linux/amd64 with `tags`; none: True."""
    return not constraint.strip() or legacy_constraint(constraint, HERE | frozenset(tags))


def cgo_directives(text: str, tags: list[str] | None = None) -> list[tuple[str, list[str]]]:
    """(flag, words) of each ``#cgo`` flag directive of a Go file whose constraint holds here."""
    out = []
    for cons, flag, rest in _DIRECTIVE.findall(text):
        if not _holds(cons, tags or []):
            continue
        try:
            words = shlex.split(rest)
        except ValueError:
            words = rest.split()
        out.append((flag, words))
    return out


def _paths(flag: str, words: list[str]) -> list[tuple[str, str, str]]:
    """(word, path as written with ${SRCDIR}, kind) of the path words of one directive."""
    out = []
    it = iter(range(len(words)))
    for i in it:
        w = words[i]
        for opt, kind in (("-L", "libdir"), ("-I", "include")):
            if w == opt and i + 1 < len(words):
                out.append((f"{w} {words[i + 1]}", words[i + 1], kind))
                next(it, None)
                break
            if w.startswith(opt) and len(w) > 2:
                out.append((w, w[2:], kind))
                break
        else:
            if flag == "LDFLAGS" and not w.startswith("-") and ("/" in w or _LIBRARY.match(posixpath.basename(w))):
                out.append((w, w, "library"))
    return out


def _resolve(package: str, written: str) -> str | None:
    """The repository path of `written` in the package folder `package` (``${SRCDIR}`` is that
    folder; a relative path is relative to it); None for absolute paths, other variables and
    paths outside the repository."""
    if written.startswith("${SRCDIR}") or written.startswith("$SRCDIR"):
        written = "./" + written.split("SRCDIR", 1)[1].lstrip("}").lstrip("/")
    elif written.startswith(("/", "$", "~")) or "$" in written:
        return None
    path = posixpath.normpath(posixpath.join(package or ".", written))
    if path == "..":
        return None
    if path.startswith("../") or path.startswith("/"):
        return None
    return "" if path == "." else path


@dataclass
class _Index:
    files: frozenset[str]
    dirs: set[str] = field(default_factory=set)
    go_files: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, tree) -> _Index:
        idx = cls(files=tree.file_set)
        for f in tree.files:
            d = posixpath.dirname(f)
            while d and d not in idx.dirs:
                idx.dirs.add(d)
                d = posixpath.dirname(d)
            if f.endswith(".go") and not _skipped(f):
                idx.go_files.setdefault(posixpath.dirname(f), []).append(f)
        return idx

    def exists(self, path: str) -> bool:
        return path == "" or path in self.files or path in self.dirs


def _package_dir(proj: GoProject, imp: str) -> str | None:
    """The repository folder of import path `imp` (the module whose path is its longest prefix;
    GOPATH mode: the import path of the root), or None for another module's package."""
    roots = [(m.path, m.dir) for m in proj.modules if m.path] or \
        ([(proj.import_path, "")] if proj.import_path else [])
    best = None
    for path, d in roots:
        if (imp == path or imp.startswith(path + "/")) and (best is None or len(path) > len(best[0])):
            best = (path, d)
    if best is None:
        return None
    rest = imp[len(best[0]):].lstrip("/")
    return posixpath.join(best[1], rest) if best[1] and rest else (best[1] or rest)


def cgo_needs(tree, proj: GoProject, start: list[str], tags: list[str] | None = None,
              added: dict[str, str] | None = None, limit: int = 300) -> list[CgoNeed]:
    """The missing in-repository paths named by cgo directives of the packages in `start`
    (repository folders) and of the repository packages they import, transitively (at most
    `limit` packages; a package's test files only for the `start` ones). `added`: path -> text
    of Go files the test_patch adds (their imports count). In the order found, one per path."""
    tags = tags or []
    idx = _Index.of(tree)
    added = added or {}
    queue = list(dict.fromkeys(start))
    seen = set(queue)
    needs: list[CgoNeed] = []
    found: set[str] = set()
    while queue and len(seen) <= limit:
        d = queue.pop(0)
        first = d in start
        names = sorted(set(idx.go_files.get(d, [])) | {p for p in added if posixpath.dirname(p) == d})
        for f in names:
            test = f.endswith("_test.go")
            if test and not first:
                continue
            text = added[f] if f in added else (tree.read(f, limit=400_000) or "")
            if not file_builds(posixpath.basename(f), text, tags):
                continue
            imports = go_imports(text)
            for imp in imports:
                dep = _package_dir(proj, imp)
                if dep is not None and dep not in seen and dep in idx.go_files:
                    seen.add(dep)
                    queue.append(dep)
            if "C" not in imports or test:
                continue
            for flag, words in cgo_directives(text, tags):
                for word, written, kind in _paths(flag, words):
                    path = _resolve(d, written)
                    if path is None or idx.exists(path) or path in found:
                        continue
                    found.add(path)
                    needs.append(CgoNeed(package=d, file=f, flag=flag, word=word, path=path, kind=kind))
    return needs


def _library_name(path: str) -> str | None:
    m = _LIBRARY.match(posixpath.basename(path))
    return m.group(1) if m else None


def _build_folder(owner: str, need: CgoNeed) -> tuple[str, str | None]:
    """(binary folder, build type) of a CMake project in `owner` for a missing path below it:
    the first folder below `owner` on the way to the path when it is named like a build folder
    (and the next one too when that is a build type's name: ``build/Release``), its type from
    the name; else `owner` itself (the project builds in its own folder)."""
    rel = need.path[len(owner):].lstrip("/") if owner else need.path
    folders = rel.split("/") if need.kind != "library" else rel.split("/")[:-1]
    if not folders or not _BUILD_FOLDER.match(folders[0]):
        return owner, None
    folder = posixpath.join(owner, folders[0]) if owner else folders[0]
    kind = _BUILD_TYPES.get(re.sub(r"^(?:cmake-build|_?build)[-_.]?", "", folders[0].lower()))
    if len(folders) > 1 and folders[1].lower() in _BUILD_TYPES:
        folder, kind = posixpath.join(folder, folders[1]), _BUILD_TYPES[folders[1].lower()]
    return folder, kind


def library_builds(tree, needs: list[CgoNeed]) -> tuple[list[LibraryBuild], list[CgoNeed], list[str]]:
    """(the builds producing `needs`' paths, one per project and binary folder; the needs they
    cover; notes for the paths no build of the repository produces)."""
    builds: dict[tuple[str, str, str], LibraryBuild] = {}
    covered: list[CgoNeed] = []
    notes: list[str] = []
    for n in needs:
        probe = n.path if n.kind == "library" else posixpath.join(n.path, "x")
        owner = owner_build(tree.files, probe, NATIVE_SYSTEMS)
        if owner is not None and owner[0] == "make" and not _make_names(tree, owner[1], n):
            owner = None
        if owner is None:
            notes.append(f"{n.file}: #cgo {n.flag} names {n.path}, missing, and no CMakeLists.txt or Makefile "
                         "of the repository above it produces it")
            continue
        system, folder = owner
        covered.append(n)
        build_dir, build_type = _build_folder(folder, n) if system == "cmake" else (folder, None)
        lib = builds.setdefault((system, folder, build_dir), LibraryBuild(
            system="cmake" if system == "cmake" else "make", folder=folder, build_dir=build_dir,
            build_type=build_type))
        name = _library_name(n.path) if n.kind == "library" else None
        goal = n.path[len(folder):].lstrip("/") if folder else n.path
        target = name if system == "cmake" else (goal if n.kind == "library" else None)
        if target and target not in lib.targets:
            lib.targets.append(target)
        if n.required() and n.path not in lib.outputs:
            lib.outputs.append(n.path)
        who = f"{n.package or '.'} links {n.path}" if n.required() else f"{n.package or '.'} includes {n.path}"
        lib.why = f"{lib.why}; {who}" if lib.why else who
    return list(builds.values()), covered, notes


def _make_names(tree, folder: str, need: CgoNeed) -> bool:
    """Whether the Makefile in `folder` names the missing path's file (``libfoo``) or folder."""
    mk = next((posixpath.join(folder, m) if folder else m for m in NATIVE_SYSTEMS["make"]
               if tree.exists(posixpath.join(folder, m) if folder else m)), None)
    text = (tree.read(mk, limit=400_000) or "") if mk else ""
    base = posixpath.basename(need.path)
    stem = base.split(".", 1)[0] if need.kind == "library" else base
    return bool(stem) and stem in text


def evidence(needs: list[CgoNeed], builds: list[LibraryBuild]) -> str:
    """One line for a move and a plan note: which directive named which missing path, and
    which build produces it."""
    said = "; ".join(f"{n.file}: #cgo {n.flag} {n.word} -> {n.path} (missing at the base commit)" for n in needs[:4])
    by = "; ".join(f"built by {b.label()}" for b in builds)
    return f"{said}{' ...' if len(needs) > 4 else ''}; {by}"


@dataclass
class NativeSetup:
    """What a Go plan adds for S31: the `needs` found, the `builds` producing them, their setup
    `commands` (before the Go packages are listed and compiled), the `rebuild` run before each
    test run ("" when none), `notes` and the `evidence` line."""

    needs: list[CgoNeed] = field(default_factory=list)
    builds: list[LibraryBuild] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    rebuild: str = ""
    notes: list[str] = field(default_factory=list)
    evidence: str = ""


def native_setup(tree, proj: GoProject, folders: list[str], tags: list[str],
                 added: dict[str, str] | None = None) -> NativeSetup:
    """The S31 setup of the Go packages in `folders` (repository folders; module doc): the
    builds of the repository's own libraries their cgo directives (or those of the packages
    they import) name and the tree lacks, through `library_build`."""
    out = NativeSetup(needs=cgo_needs(tree, proj, folders, tags, added))
    if not out.needs:
        return out
    out.builds, covered, out.notes = library_builds(tree, out.needs)
    rebuilds = []
    for b in out.builds:
        cmds, rebuild, notes = library_build(tree, b)
        out.commands += cmds
        rebuilds.append(rebuild)
        out.notes += notes
    out.rebuild = "; ".join(rebuilds)
    if out.builds:
        out.evidence = evidence(covered, out.builds)
    return out


def native_of(tree, instance, proj: GoProject, sel: dict[str, list[str]], tags: list[str]) -> NativeSetup:
    """`native_setup` of the packages a Go plan selected (`sel`: module folder -> packages);
    Go files the test_patch adds count with their added lines."""
    added = {p: "\n".join(lines) for p, lines in changed_lines(instance.test_patch).items()
             if p.endswith(".go") and not tree.exists(p)}
    folders = [_abs(m, p) for m, pkgs in sel.items() for p in pkgs if p != "./..."]
    return native_setup(tree, proj, folders, tags, added)


_ANALYSES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""The mint's tree (`agents.gitrepo.GitTree`, one per mint) -> {(commit, touched files, test_patch,
repository): NativeSetup}: `native_moves`'s analysis, made once per mint and question (the
entries go with the tree)."""


def _native_analysis(ctx) -> NativeSetup:
    """`native_of` the touched packages of `ctx` (their cgo directives, the builds producing what
    they name), computed once per tree, commit and touched files (`_ANALYSES`); a tree that cannot
    be weakly referenced is analysed each time."""
    tree, instance = ctx.tree, ctx.instance
    key = (getattr(tree, "commit", None), tuple(ctx.touched), instance.test_patch, instance.repo)
    try:
        known = _ANALYSES.setdefault(tree, {})
    except TypeError:
        known = {}
    if key not in known:
        proj = analyze(tree, extra_files=[p for p in ctx.touched if not tree.exists(p)], repo=instance.repo)
        tags, _ = gated_tags(tree, instance.test_patch, ctx.touched)
        known[key] = native_of(tree, instance, proj, select_packages(proj, ctx.touched), tags)
    return known[key]


def native_moves(ctx) -> list:
    """S31's move (`agents.moves`, kind `owner_build`: the build that owns a path): when a round
    ran no test, a test the test_patch adds never ran, or the build failed, and a cgo directive of
    a touched package (or of a repository package it imports) names a path in the repository the
    tree lacks that a CMakeLists.txt or Makefile above it produces, the plan again with that build
    as setup steps (request option ``cgo_native``: data, the plan reads the tree again). Its
    evidence names the directive, the missing path and the build. None for a plan that asked
    for the builds already. The analysis is made once per mint's tree and touched files
    (`_native_analysis`), however many rounds ask."""
    if "cgo_native" in ctx.plan.state:
        return []
    native = _native_analysis(ctx)
    if not native.builds:
        return []
    return [Move(kind="owner_build", key="cgo_native",
                 serves="a cgo package links a library the repository builds with its own build (S31)",
                 evidence=native.evidence[:600], request=PlanRequest(options={"cgo_native": True}))]
