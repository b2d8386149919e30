"""The setup commands of a Rust plan and their repairs: the compile step under its time budget
(resumed where cargo stopped), stubs for files a manifest names, the fixes of git
dependencies the mirror cannot fetch (`git_fixes`, with `cargo_git`)."""

from __future__ import annotations

import base64
import fnmatch
import posixpath
import re
import shlex
from agents.gitrepo import GitTree
from envpool.errors import EnvBuildError
from envpool.patches import sections_by_path
from agents.ecosystems.rust.cargo_manifest import CargoProject, Package, _join, _toml


COMPILE_BUDGET = 840
"""Seconds one compile step may run before it stops itself (below the minter's 900 s setup
step) and prints `RESUME_MARK`, so `repair` can resume it where cargo left off."""


RESUME_MARK = "swemint: cargo stopped at its time budget; resume"


MEMBERS_NOTE = "workspace members: "


ROOT_NOTE = "cargo root: "
"""Plan note naming the cargo root (repository-relative, after a `/`), read back by `repair`."""


def root_bins_build(project: CargoProject, tested: list[Package]) -> str:
    """``cargo build -p <root> --bins`` when the cargo root is itself a package with binaries and
    no tested member is that package; "" otherwise. nushell's nu-command tests exec
    ``target/debug/nu`` through nu-test-support ("Can't run test ... No such file"), and cargo
    builds a package's binaries only for that package's own tests. In the test command it runs
    before the tests (incremental: the after side's patch reaches the binary)."""
    root = next((p for p in project.packages if p.dir == ""), None)
    if root is None or not root.bins or any(t.name == root.name for t in tested):
        return ""
    return f"cargo build -p {shlex.quote(root.name)} --bins"


def _cd_root(root: str) -> str:
    """`cd <the cargo root> && ` (the folder quoted: it comes from the repository)."""
    return f"cd {shlex.quote(posixpath.join('/testbed', root))} && " if root else "cd /testbed && "


def _cd(project: CargoProject) -> str:
    return _cd_root(project.root)


CRATE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What cargo accepts as a package name; anything else in a build error is not a crate to update."""


CRATE_VERSION = re.compile(r"\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]{1,40})?")


def _budgeted(cmd: str) -> str:
    return (f"timeout {COMPILE_BUDGET} {cmd}; rc=$?; "
            f"if [ $rc -eq 124 ]; then echo '{RESUME_MARK}'; fi; exit $rc")


def _manifest_hunks(*patches: str) -> str:
    """The parts of unified diffs that touch Cargo.toml / Cargo.lock files."""
    return "".join(section for patch in patches for path, section in sections_by_path(patch or "").items()
                   if posixpath.basename(path) in ("Cargo.toml", "Cargo.lock"))


def _proxy_target(project: CargoProject, pkg: Package, tree: GitTree) -> str:
    """Setup's compile target when no selected target exists before the test_patch (a new
    tests/x.rs): the package's shortest existing integration test (``--test n``) -- it builds
    the library and the dev-dependencies with the features a test build unifies, so the new file
    alone compiles at test time -- else ``--tests`` (every test target)."""
    sizes = []
    for name, rel in pkg.tests.items():
        text = tree.read(_join(project.root, posixpath.join(pkg.dir, rel)))
        if text is not None:
            sizes.append((len(text), name))
    return f"--test {shlex.quote(min(sizes)[1])}" if sizes else "--tests"


def _write_file(path: str, text: str) -> str:
    """A setup command writing `text` to /testbed/`path` (base64: no quoting of the content;
    the repository's path shlex-quoted)."""
    b64 = base64.b64encode(text.encode()).decode()
    return f"echo {b64} | base64 -d > {shlex.quote(posixpath.join('/testbed', path))}"


_TARGET_PATH = re.compile(r'^\s*path\s*=\s*"([^"]+\.rs)"', re.M)


def cargo_stubs(tree: GitTree) -> list[str]:
    """The source files cargo needs to exist to read the manifests (target discovery: each
    package's `src/lib.rs`, `src/main.rs`, `build.rs`, `src/bin|tests|examples|benches/*.rs` and
    `*/main.rs` there, and every `path = "....rs"` a Cargo.toml names) that the tree has: Rust's
    dependency tier creates them empty (`RustEcosystem.dependency_layer`). Sorted."""
    dirs = {posixpath.dirname(p) for p in tree.files if posixpath.basename(p) == "Cargo.toml"}
    named: set[str] = set()
    for d in dirs:
        for m in _TARGET_PATH.finditer(tree.read(_join(d, "Cargo.toml")) or ""):
            named.add(posixpath.normpath(_join(d, m.group(1))))
    out = []
    for p in tree.files:
        if not p.endswith(".rs"):
            continue
        if p in named:
            out.append(p)
            continue
        parts = p.split("/")
        for cut in range(len(parts) - 1, max(len(parts) - 5, -1), -1):
            d, rest = "/".join(parts[:cut]), parts[cut:]
            if d not in dirs:
                continue
            if rest in (["src", "lib.rs"], ["src", "main.rs"], ["build.rs"]) or \
                    (len(rest) == 2 and rest[0] in ("tests", "examples", "benches")) or \
                    (len(rest) == 3 and rest[:2] == ["src", "bin"]) or \
                    (len(rest) == 3 and rest[0] in ("tests", "examples", "benches") and rest[2] == "main.rs") or \
                    (len(rest) == 4 and rest[:2] == ["src", "bin"] and rest[3] == "main.rs"):
                out.append(p)
            break
    return sorted(out)


def git_fixes(tree: GitTree, project: CargoProject, selected: list[str], when, iid: str) -> tuple[list[str], list[str]]:
    """(setup commands, substitutions) standing in for `project`'s git dependencies
    (`agents.ecosystems.rust.cargo_git`): a git ``[patch.crates-io]`` entry whose locked version
    crates.io releases is dropped, a member the `selected` package folders do not need is
    excluded from the workspace, any other git dependency becomes the crates.io release
    `choose_release` picks. Raises EnvBuildError when one cannot be replaced."""
    import agents.ecosystems.rust.cargo_git as cg

    def fail(why: str) -> EnvBuildError:
        return EnvBuildError(f"cargo dependencies from git repositories cannot be fetched here (GitHub is "
                             f"unreachable): {why}", instance_id=iid)

    root_path = _join(project.root, "Cargo.toml")
    texts: dict[str, str] = {}
    manifests: dict[str, tuple[str | None, dict]] = {}
    for p in project.packages:
        path = _join(project.root, posixpath.join(p.dir, "Cargo.toml"))
        manifests[path] = (p.dir, p.manifest)
    top_text = tree.read(root_path) or ""
    top = _toml(top_text) or {}
    if root_path not in manifests:
        manifests[root_path] = (None, top)
    else:  # the root package's manifest may hold [workspace.dependencies] too
        manifests[root_path] = ("", top)
    lock_text = tree.read(_join(project.root, "Cargo.lock"))
    lock = _toml(lock_text) if lock_text else None
    subs: list[str] = []
    patches = cg.git_patches(manifests, lock)
    for gp in patches:
        rels = cg.crate_releases(gp.crate)
        if rels is None:
            raise fail(f"[patch.{gp.registry}] {gp.crate} ({gp.url}); the crates.io index could not be read")
        version = cg.released_as_locked(list(rels), gp.locked) if gp.registry == "crates-io" else None
        if version is None:
            raise fail(f"a [patch.{gp.registry}] entry from git: {gp.crate} ({gp.url}), Cargo.lock "
                       f"{gp.locked or 'has no version'}, which crates.io does not release")
        try:
            texts[gp.manifest] = cg.drop_patch(texts.get(gp.manifest) or tree.read(gp.manifest) or "", gp.registry,
                                               gp.key)
        except ValueError as e:
            raise fail(f"[patch.{gp.registry}] {gp.crate} ({gp.url}): {e}") from e
        subs.append(f"cargo [patch.{gp.registry}] {gp.crate} from git ({gp.url}) dropped: crates.io has "
                    f"{gp.crate} {version} (Cargo.lock: {gp.locked}); the dependency resolves from the registry")
    deps = cg.git_deps(manifests, lock)
    hidden = cg.lock_only(lock, deps, patches)
    if hidden:
        raise fail(f"only Cargo.lock names {', '.join(hidden[:5])} (a dependency of a dependency)")
    ws = top.get("workspace") if isinstance(top.get("workspace"), dict) else None
    defaults = [str(d).rstrip("/") for d in (ws or {}).get("default-members") or []]
    need = cg.needed_members(manifests, selected)
    for d in deps:
        if d.member and ws is not None and d.member not in need and not any(
                fnmatch.fnmatchcase(d.member, pat) for pat in defaults):
            if d.member in ((_toml(texts.get(root_path, top_text)) or {}).get("workspace") or {}).get("exclude", []):
                continue
            try:
                texts[root_path] = cg.exclude_member(texts.get(root_path, top_text), d.member)
            except ValueError as e:
                raise fail(f"{d.crate} ({d.url}): {e}") from e
            subs.append(f"cargo git dependency {d.crate} ({d.url}) of workspace member {d.member}, which the "
                        f"tested packages do not build: {d.member} excluded from the workspace")
            continue
        rels = cg.crate_releases(d.crate)
        if rels is None:
            raise fail(f"{d.crate} ({d.url}); the crates.io index could not be read for a stand-in")
        if not rels:
            raise fail(f"{d.crate} ({d.url}) has no release on crates.io (a crate only in git)")
        pick = cg.choose_release(list(rels), d.locked, when, d.features)
        if pick is None or not CRATE_VERSION.fullmatch(pick[0]):
            raise fail(f"{d.crate} ({d.url}): no crates.io release has the features {d.features}")
        try:
            texts[d.manifest] = cg.rewrite_dep(texts.get(d.manifest) or tree.read(d.manifest) or "", d.key, d.url, pick[0])
        except ValueError as e:
            raise fail(f"{d.crate} ({d.url}): {e}") from e
        subs.append(f"cargo git dependency {d.crate} ({d.url}) -> crates.io {d.crate} ={pick[0]}: {pick[1]}")
    return [_write_file(p, t) for p, t in texts.items()], subs

