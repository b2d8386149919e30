"""The cargo project of a tree (`analyze`): its cargo root, workspace members, each member's
targets and features, Cargo.lock, rust-toolchain, rust-version and edition."""

from __future__ import annotations

import fnmatch
import posixpath
import re
import tomllib
from dataclasses import dataclass, field
from agents.gitrepo import GitTree
from envpool.errors import EnvBuildError


@dataclass
class Package:
    """One workspace member. `dir`: its folder relative to the cargo root ("" = the root).
    `tests`: integration test target name -> source path (relative to `dir`)."""

    name: str
    dir: str
    manifest: dict
    lib: str | None = None
    bins: dict[str, str] = field(default_factory=dict)
    tests: dict[str, str] = field(default_factory=dict)
    autotests: bool = True

    def rel(self, path: str) -> str | None:
        """`path` (relative to the cargo root) relative to this package, or None outside it."""
        if not self.dir:
            return path
        return path[len(self.dir) + 1:] if path.startswith(self.dir + "/") else None


@dataclass
class CargoProject:
    """What `analyze` found. Paths are relative to the cargo root `root` ("" = repository root)."""

    root: str
    packages: list[Package]
    has_lock: bool
    lock_version: int | None
    registry_deps: bool
    git_sources: list[str]
    vendored: bool
    toolchain_channel: str | None
    rust_versions: list[str]
    editions: list[str]

    def owner(self, path: str) -> Package | None:
        """The member whose folder holds `path` (the deepest one)."""
        best = None
        for p in self.packages:
            if p.rel(path) is not None and (best is None or len(p.dir) > len(best.dir)):
                best = p
        return best


def _toml(text: str | None) -> dict | None:
    if text is None:
        return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def cargo_root(files: list[str]) -> str | None:
    """The cargo root: "" when Cargo.toml is at the repository root, else the shallowest folder
    (depth <= 2) holding one; None when there is none."""
    if "Cargo.toml" in files:
        return ""
    cands = [posixpath.dirname(f) for f in files if posixpath.basename(f) == "Cargo.toml" and f.count("/") <= 2]
    return min(cands, key=lambda d: (d.count("/"), d)) if cands else None


def _join(root: str, path: str) -> str:
    return posixpath.normpath(posixpath.join(root, path)) if root else posixpath.normpath(path)


def _inherit(value, ws_pkg: dict, key: str):
    if isinstance(value, dict) and value.get("workspace"):
        return ws_pkg.get(key)
    return value


def _package(tree_files: set[str], read, root: str, pdir: str, manifest: dict, ws_pkg: dict,
             extra_files: set[str]) -> Package | None:
    pkg = manifest.get("package") or manifest.get("project")
    if not isinstance(pkg, dict) or not pkg.get("name"):
        return None
    here = lambda rel: _join(root, posixpath.join(pdir, rel))  # noqa: E731 -- a path maker
    files = tree_files | extra_files
    p = Package(name=str(pkg["name"]), dir=pdir, manifest=manifest)
    lib = manifest.get("lib") or {}
    lib_path = lib.get("path") or "src/lib.rs"
    if lib or here(lib_path) in files:
        p.lib = lib_path
    if here("src/main.rs") in files and pkg.get("autobins", True):
        p.bins[p.name] = "src/main.rs"
    for b in manifest.get("bin") or []:
        if b.get("name"):
            p.bins[b["name"]] = b.get("path") or f"src/bin/{b['name']}.rs"
    p.autotests = bool(pkg.get("autotests", True))
    for t in manifest.get("test") or []:
        if t.get("name"):
            p.tests[t["name"]] = t.get("path") or f"tests/{t['name']}.rs"
    if p.autotests:
        prefix = here("tests") + "/"
        for f in sorted(files):
            if not f.startswith(prefix):
                continue
            rest = f[len(prefix):]
            if "/" not in rest and rest.endswith(".rs"):
                p.tests.setdefault(rest[:-3], f"tests/{rest}")
            elif rest.count("/") == 1 and rest.endswith("/main.rs"):
                p.tests.setdefault(rest.split("/")[0], f"tests/{rest}")
    return p


def analyze(tree: GitTree, extra_files: list[str] | None = None) -> CargoProject:
    """Read the cargo project of `tree` (see the module doc). `extra_files`: paths the
    test_patch adds (new test targets). Raises EnvBuildError when no Cargo.toml is found."""
    files = tree.files
    root = cargo_root(files)
    if root is None:
        raise EnvBuildError("no Cargo.toml in the repository", instance_id=tree.instance_id)
    tree_files = set(files)
    extra = set(extra_files or ())
    top = _toml(tree.read(_join(root, "Cargo.toml"))) or {}
    ws = top.get("workspace") if isinstance(top.get("workspace"), dict) else None
    ws_pkg = (ws or {}).get("package") or {}
    dirs: list[str] = []
    if top.get("package"):
        dirs.append("")
    if ws is not None:
        manifests = sorted(posixpath.dirname(f[len(root) + 1:] if root else f) for f in files
                           if posixpath.basename(f) == "Cargo.toml" and (not root or f.startswith(root + "/")))
        excl = [e.rstrip("/") for e in ws.get("exclude") or []]
        for pat in ws.get("members") or []:
            pat = pat.rstrip("/")
            for d in manifests:
                if d and fnmatch.fnmatchcase(d, pat) and not any(d == e or d.startswith(e + "/") for e in excl):
                    dirs.append(d)
    # path dependencies of members inside the tree are members too
    i = 0
    while i < len(dirs):
        m = _toml(tree.read(_join(root, posixpath.join(dirs[i], "Cargo.toml")))) or {}
        for sect in ("dependencies", "dev-dependencies", "build-dependencies"):
            for spec in (m.get(sect) or {}).values():
                if isinstance(spec, dict) and isinstance(spec.get("path"), str):
                    d = posixpath.normpath(posixpath.join(dirs[i], spec["path"]))
                    if not d.startswith("..") and d not in dirs and _join(root, posixpath.join(d, "Cargo.toml")) in tree_files:
                        dirs.append(d if d != "." else "")
        i += 1
    packages: list[Package] = []
    rust_versions, editions = [], []
    for d in dict.fromkeys(dirs):
        m = _toml(tree.read(_join(root, posixpath.join(d, "Cargo.toml")))) if d else top
        p = _package(tree_files, tree.read, root, d, m or {}, ws_pkg, extra) if m else None
        if p is None:
            continue
        packages.append(p)
        meta = m.get("package") or {}
        rv = _inherit(meta.get("rust-version"), ws_pkg, "rust-version")
        if isinstance(rv, str):
            rust_versions.append(rv)
        ed = _inherit(meta.get("edition"), ws_pkg, "edition")
        editions.append(str(ed) if ed else "2015")
    lock_text = tree.read(_join(root, "Cargo.lock"))
    lock = _toml(lock_text) if lock_text else None
    lock_version = None
    registry_deps, git_sources = False, []
    if lock is not None:
        lock_version = lock.get("version") if isinstance(lock.get("version"), int) else None
        for entry in lock.get("package") or []:
            src = str(entry.get("source") or "")
            if src.startswith("registry+") or src.startswith("sparse+"):
                registry_deps = True
            elif src.startswith("git+"):
                git_sources.append(f"{entry.get('name')} ({src.split('#')[0]})")
    else:
        for p in packages:
            for sect in ("dependencies", "dev-dependencies", "build-dependencies"):
                for name, spec in (p.manifest.get(sect) or {}).items():
                    if isinstance(spec, dict) and spec.get("git"):
                        git_sources.append(f"{name} ({spec['git']})")
                    elif not (isinstance(spec, dict) and "path" in spec and "version" not in spec):
                        registry_deps = True
            for tgt in (p.manifest.get("target") or {}).values():
                if isinstance(tgt, dict) and any(tgt.get(s) for s in ("dependencies", "dev-dependencies")):
                    registry_deps = True
    cfg = (tree.read(_join(root, ".cargo/config.toml")) or "") + (tree.read(_join(root, ".cargo/config")) or "")
    vendored = bool(re.search(r"replace-with\s*=", cfg))
    channel = None
    tc = tree.read(_join(root, "rust-toolchain.toml")) or tree.read(_join(root, "rust-toolchain"))
    if tc:
        parsed = _toml(tc)
        if parsed and isinstance(parsed.get("toolchain"), dict):
            channel = parsed["toolchain"].get("channel")
        elif tc.strip() and "\n" not in tc.strip():
            channel = tc.strip()
    return CargoProject(root=root, packages=packages, has_lock=lock is not None, lock_version=lock_version,
                        registry_deps=registry_deps, git_sources=git_sources, vendored=vendored,
                        toolchain_channel=channel, rust_versions=rust_versions, editions=editions)

