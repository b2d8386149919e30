"""Rust (cargo) projects: analysis, toolchain floor, setup and the cargo test selection.

Analysis (`analyze`): the cargo root (the repository root, else the shallowest folder with a
Cargo.toml), workspace members (`members` globs minus `exclude`, the root package, path
dependencies), each member's targets (lib, bins, `[[test]]` and auto-discovered `tests/*.rs`,
`tests/*/main.rs`), Cargo.lock (present? `version = N`? registry or git sources?),
`rust-toolchain(.toml)`, `rust-version` and `edition`.

Toolchain (`toolchain_request`): a floor from rust-toolchain, rust-version, edition, lockfile
version and the sparse index (crates.io's git index is on GitHub); with a Cargo.lock the
dependencies are those of the commit's time, so the floor is raised to the stable Rust of the
commit date (newer compilers broke old locked crates, e.g. `time` < 0.3.35 on 1.80); without
one, cargo resolves the newest crates, which need the newest compiler (request None), and
``CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=fallback`` keeps them within the project's
rust-version.

Tests (`select_tests`): per touched file, the cargo target that compiles it -- `tests/<n>.rs`
-> ``--test n``; a module of a test target (`tests/regression.rs` under ripgrep's
``[[test]] integration``) -> that target; `src/**` -> ``--lib`` (bins: ``--bin``); data under
`tests/` -> the package's integration tests unless a test source of it is touched. One
``cargo test --no-fail-fast`` per package (ids as libtest prints them: `regression::r2208`,
`routing::tests::wildcard_with_trailing_slash`; parser `cargo_test`), the same command on both
sides (before: base + test_patch, after: + patch). A test target that fails to compile before
the patch leaves its tests absent, i.e. not passing.

Features (`features_for`): each package's ``cargo test`` (and its setup compile) gets
``--features`` = the features its CI passes to ``cargo test`` / ``cargo nextest run``
(`cargo_ci`, read from .github/workflows), the ``required-features`` of a selected
``[[test]]``, and the features of a touched test file's ``#![cfg(feature = "x")]`` gate
(`file_gate`) -- only those the package defines. Bare cfg names of the gate
(``#![cfg(tokio_unstable)]``) go into cargo's rustflags (``--cfg tokio_unstable``) when the CI
sets them. Without this, tokio's ``#![cfg(feature = "full")]`` test files compiled to nothing
and ran 0 tests.
"""

from __future__ import annotations

import base64
import fnmatch
import posixpath
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict

from agents.gitrepo import GitTree
from agents.models import Instance
from agents.ecosystems.base import Ecosystem, PlanRequest, PolyPlan, shell_args
from agents.ecosystems.toolchain import constrained
from agents.ecosystems.debian import era_time
from envpool.errors import EnvBuildError
from envpool.patches import sections_by_path
from envpool.images import ImageConfig
from envpool.toolchains import version_key

__all__ = ["ECOSYSTEM", "CargoCi", "CargoProject", "Gate", "Package", "RustEcosystem", "RustRecipe", "analyze", "cargo_ci",
           "features_for", "file_gate",
           "load_recipe", "select_tests", "stable_rust_at", "toolchain_request"]

RECIPE_PATH = Path(__file__).with_name("recipes") / "rust.yaml"
COMPILE_BUDGET = 840
"""Seconds one compile step may run before it stops itself (below the minter's 900 s setup
step) and prints `RESUME_MARK`, so `repair` can resume it where cargo left off."""
RESUME_MARK = "swemint: cargo stopped at its time budget; resume"
MEMBERS_NOTE = "workspace members: "
ROOT_NOTE = "cargo root: "
"""Plan note naming the cargo root (repository-relative, after a `/`), read back by `repair`."""


class AptRepair(BaseModel):
    """Install Debian `packages` when a failed step's output matches `pattern`."""

    model_config = ConfigDict(extra="forbid")
    pattern: str
    packages: list[str]


class RustRecipe(BaseModel):
    """The data in recipes/rust.yaml (see the comments there)."""

    model_config = ConfigDict(extra="forbid")
    edition_floor: dict[str, str]
    lockfile_floor: dict[int, str]
    sparse_index_floor: str
    msrv_fallback_floor: str
    apt_repairs: list[AptRepair]


@lru_cache(maxsize=1)
def load_recipe(path: str = str(RECIPE_PATH)) -> RustRecipe:
    """The Rust recipe (validated; a typo is a pydantic ValidationError)."""
    return RustRecipe.model_validate(yaml.safe_load(Path(path).read_text()))


# ---------------------------------------------------------------------------------- analysis

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


# --------------------------------------------------------------------------------- toolchain

RUST_1_56 = date(2021, 10, 21)


def stable_rust_at(when: date | datetime) -> str:
    """The newest stable Rust released on `when` (a release every 6 weeks; 1.56 on 2021-10-21)."""
    d = when.date() if isinstance(when, datetime) else when
    return f"1.{max(0, 56 + (d - RUST_1_56).days // 42)}"


def _vmax(versions: list[tuple[str, str]]) -> tuple[str, str] | None:
    best = None
    for v, why in versions:
        if version_key(v) and (best is None or version_key(v) > version_key(best[0])):
            best = (v, why)
    return best


def toolchain_request(project: CargoProject, when: date | datetime | None,
                      recipe: RustRecipe | None = None) -> tuple[str | None, list[str]]:
    """(version request for `envpool.toolchains.rust.ensure_image`, reasons).

    The request is the highest floor (rust-toolchain channel, rust-version, edition, lockfile
    version, sparse index when crates come from crates.io, and with a Cargo.lock the stable Rust
    at `when` -- a preference capped at the newest Rust installable here, where the floors are
    not); None (= newest) without a Cargo.lock unless a floor demands more; a nightly or beta
    channel is passed through (the toolchain module maps it to the newest stable).
    """
    recipe = recipe or load_recipe()
    floors: list[tuple[str, str]] = []
    ch = project.toolchain_channel
    if ch and (ch.startswith("nightly") or ch.startswith("beta")):
        return ch, [f"rust-toolchain asks for {ch}"]
    if ch and version_key(ch):
        floors.append((ch, f"rust-toolchain channel {ch}"))
    floors += [(v, f"rust-version {v}") for v in project.rust_versions]
    floors += [(recipe.edition_floor.get(e, "1.0"), f"edition {e}") for e in project.editions]
    if project.lock_version in recipe.lockfile_floor:
        floors.append((recipe.lockfile_floor[project.lock_version], f"Cargo.lock version {project.lock_version}"))
    if project.registry_deps and not project.vendored:
        floors.append((recipe.sparse_index_floor, "crates.io sparse index (the git index is on GitHub)"))
    floor = _vmax(floors)
    if project.has_lock and when is not None:
        from envpool.toolchains.rust import DEBIAN_RUST

        era = stable_rust_at(when)
        newest = DEBIAN_RUST[-1].version
        why = f"stable Rust at the commit date ({era}), locked dependencies"
        if version_key(era) > version_key(newest):  # a preference, not a floor: the newest there is
            era, why = newest, f"stable Rust at the commit date ({era}) is not installable here; {newest}, the newest"
        best = _vmax([*([floor] if floor else []), (era, why)])
        return (best[0], [best[1]]) if best else (None, [])
    if not project.has_lock:
        # newest crates need the newest compiler; a floor only matters when it is newer still
        from envpool.toolchains.rust import DEBIAN_RUST, STABLE_SUITES
        newest = [d.version for d in DEBIAN_RUST if d.suite in STABLE_SUITES][-1]
        if floor and version_key(floor[0]) > version_key(newest):
            return floor[0], [floor[1]]
        return None, ["no Cargo.lock: dependencies resolve to the newest crates, newest toolchain"]
    return (floor[0], [floor[1]]) if floor else (None, [])


# ------------------------------------------------------------------------------------- tests

@dataclass
class Selection:
    """The cargo targets to test in one package: `flags` (``--lib``, ``--test n``, ...);
    `base_flags`: those whose sources exist before the test_patch (compiled in setup)."""

    package: Package
    flags: list[str] = field(default_factory=list)
    base_flags: list[str] = field(default_factory=list)

    def add(self, flag: str, at_base: bool) -> None:
        if flag not in self.flags:
            self.flags.append(flag)
        if at_base and flag not in self.base_flags:
            self.base_flags.append(flag)


def _mod_users(project: CargoProject, pkg: Package, read, module: str) -> list[str]:
    """Test targets of `pkg` whose root source declares `mod <module>`."""
    pat = re.compile(rf"^\s*(pub(\([^)]*\))?\s+)?mod\s+{re.escape(module)}\s*;", re.M)
    out = []
    for name, path in pkg.tests.items():
        text = read(_join(project.root, posixpath.join(pkg.dir, path))) or ""
        if pat.search(text):
            out.append(name)
    return out


def select_tests(project: CargoProject, touched: list[str], tree: GitTree) -> list[Selection]:
    """The targets to run per package for the test_patch's `touched` paths (repository
    relative); see the module doc. Falls back to all test targets (``--tests``) of a package
    whose touched files map to no target."""
    files = tree.file_set
    sels: dict[str, Selection] = {}
    data_only: dict[str, Package] = {}
    prefix = project.root + "/" if project.root else ""
    for path in touched:
        if prefix and not path.startswith(prefix):
            continue
        rpath = path[len(prefix):]
        pkg = project.owner(rpath)
        if pkg is None:
            continue
        rel = pkg.rel(rpath) or ""
        sel = sels.setdefault(pkg.name, Selection(pkg))
        at = lambda p: _join(project.root, posixpath.join(pkg.dir, p)) in files  # noqa: E731, B023 (called in this iteration)
        if rel.startswith("tests/"):
            if not rel.endswith(".rs"):
                data_only[pkg.name] = pkg
                continue
            hit = [n for n, p in pkg.tests.items() if p == rel]
            if not hit:
                parts = rel[len("tests/"):].split("/")
                if len(parts) > 1 and f"tests/{parts[0]}/main.rs" in pkg.tests.values():
                    hit = [n for n, p in pkg.tests.items() if p == f"tests/{parts[0]}/main.rs"]
                else:
                    module = parts[0][:-3] if parts[0].endswith(".rs") else parts[0]
                    hit = _mod_users(project, pkg, tree.read, module)
            if not hit:
                hit = list(pkg.tests)
            for n in hit:
                sel.add(f"--test {shlex.quote(n)}", at(pkg.tests[n]))
        elif rel.startswith("src/"):
            bin_hit = [n for n, p in pkg.bins.items()
                       if rel == p or (p.endswith("/main.rs") and rel.startswith(posixpath.dirname(p) + "/"))]
            if bin_hit and not (pkg.lib and rel == pkg.lib):
                for n in bin_hit:
                    sel.add(f"--bin {shlex.quote(n)}", at(pkg.bins[n]))
            elif pkg.lib:
                sel.add("--lib", at(pkg.lib))
            else:
                sel.add("--bins", True)
    for name, pkg in data_only.items():
        sel = sels[name]
        if not any(f.startswith("--test ") for f in sel.flags):
            for n, p in pkg.tests.items():
                sel.add(f"--test {shlex.quote(n)}", _join(project.root, posixpath.join(pkg.dir, p)) in files)
    out = []
    for sel in sels.values():
        if not sel.flags:
            sel.add("--tests", True)
        out.append(sel)
    return out


# ------------------------------------------------------------------- features and cfg flags

BUILTIN_CFGS = frozenset({"unix", "windows", "test", "debug_assertions", "miri", "doc", "doctest",
                          "proc_macro", "panic", "target_os", "target_family", "target_arch", "target_env",
                          "target_pointer_width", "target_endian", "target_vendor", "target_has_atomic",
                          "target_feature", "overflow_checks", "fuzzing", "loom"})
"""Cfg names rustc or cargo set themselves (or that need a tool of their own, `loom`): never
turned on from a gate."""
FEATURE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_+.-]{0,63}")
CFG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_CFG_TOKEN = re.compile(r'[A-Za-z_][A-Za-z0-9_]*|"[^"]*"|[(),=]')


@dataclass
class Gate:
    """What a test file's ``#![cfg(...)]`` asks for: `features` (``feature = "x"``) and bare
    `cfgs` (``tokio_unstable``), outside any ``not(...)``."""

    features: list[str] = field(default_factory=list)
    cfgs: list[str] = field(default_factory=list)


def file_gate(text: str) -> Gate:
    """The `Gate` of the crate-level ``#![cfg(...)]`` attributes of a Rust source `text`
    (`#[cfg]` on single items is not a gate of the file). Never raises."""
    gate = Gate()
    for m in re.finditer(r"#!\[\s*cfg\s*\(", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        toks = _CFG_TOKEN.findall(text[m.end():i - 1])
        stack: list[str] = []
        j = 0
        while j < len(toks):
            t = toks[j]
            nxt = toks[j + 1] if j + 1 < len(toks) else ""
            if t == ")":
                if stack:
                    stack.pop()
            elif nxt == "(" and t[0] != '"':
                stack.append(t)
                j += 1
            elif nxt == "=" and j + 2 < len(toks):
                if t == "feature" and "not" not in stack and toks[j + 2].startswith('"'):
                    gate.features.append(toks[j + 2].strip('"'))
                j += 2
            elif t[0] != '"' and t not in "(),=" and "not" not in stack and t not in BUILTIN_CFGS:
                gate.cfgs.append(t)
            j += 1
    gate.features = list(dict.fromkeys(f for f in gate.features if FEATURE_NAME.fullmatch(f)))
    gate.cfgs = list(dict.fromkeys(c for c in gate.cfgs if CFG_NAME.fullmatch(c)))
    return gate


@dataclass
class CargoCi:
    """What the project's CI passes to cargo (`agents.ecosystems.ci`): explicit `features` of
    ``cargo test`` / ``cargo nextest run`` (per package name, "" = no ``-p``), whether some test
    command uses ``--all-features``, and the ``--cfg`` names it sets through RUSTFLAGS."""

    features: dict[str, list[str]] = field(default_factory=dict)
    all_features: bool = False
    cfgs: list[str] = field(default_factory=list)


def cargo_ci(tree: GitTree) -> CargoCi:
    """Read `CargoCi` from `tree`'s GitHub workflows (only values that are valid feature / cfg
    names are kept). Never raises."""
    from agents.ecosystems.ci import ci_steps, command_lines, flag_values, split_words

    ci = CargoCi()
    for step in ci_steps(tree):
        flags_text = " ".join(v for k, v in step.env.items() if k in ("RUSTFLAGS", "RUSTDOCFLAGS")) + " " + step.run
        for m in re.finditer(r"--cfg[= ]+([A-Za-z_][A-Za-z0-9_]*)", flags_text):
            if m.group(1) not in ci.cfgs and CFG_NAME.fullmatch(m.group(1)):
                ci.cfgs.append(m.group(1))
        for line in command_lines(step.run):
            words = split_words(line)
            if "cargo" not in words:
                continue
            rest = words[words.index("cargo") + 1:]
            rest = [w for w in rest if not w.startswith("+")]  # cargo +nightly test
            if not (rest[:1] == ["test"] or rest[:2] == ["nextest", "run"] or rest[:2] == ["hack", "test"]):
                continue
            if "--all-features" in rest:
                ci.all_features = True
            pkgs = flag_values(rest, "-p", "--package") or [""]
            for value in flag_values(rest, "--features", "-F"):
                for feat in re.split(r"[,\s]+", value):
                    if FEATURE_NAME.fullmatch(feat or "") or (feat.count("/") == 1 and all(
                            FEATURE_NAME.fullmatch(x) for x in feat.split("/"))):
                        for p in pkgs:
                            ci.features.setdefault(p, [])
                            if feat not in ci.features[p]:
                                ci.features[p].append(feat)
    return ci


def _package_features(pkg: Package) -> set[str]:
    """Feature names `pkg` defines: its [features] table and its optional dependencies."""
    names = set((pkg.manifest.get("features") or {}).keys())
    for sect in ("dependencies", "dev-dependencies"):
        for name, spec in (pkg.manifest.get(sect) or {}).items():
            if isinstance(spec, dict) and spec.get("optional"):
                names.add(name)
    return names


def features_for(project: CargoProject, sel: Selection, tree: GitTree, test_patch: str,
                  ci: CargoCi) -> tuple[list[str], list[str], list[str]]:
    """(features, cfg names, reasons) for the ``cargo test`` of `sel`'s package: the features
    its CI passes to ``cargo test`` (for that package or without ``-p``), the
    ``required-features`` of the selected ``[[test]]`` targets, and the features of a touched
    test file's ``#![cfg(feature = ...)]`` gate (its text after the test_patch: the base file,
    or the lines the test_patch adds to a new one) -- each kept only when the package defines
    it; cfg names of the gate are kept only when the CI sets them (``RUSTFLAGS=--cfg X``)."""
    from envpool.patches import changed_lines

    pkg = sel.package
    defined = _package_features(pkg)
    feats: list[str] = []
    cfgs: list[str] = []
    reasons: list[str] = []

    def own(f: str) -> str | None:
        if "/" in f:
            p, f = f.split("/", 1)
            if p != pkg.name:
                return None
        return f if f in defined else None

    ci_feats = [x for x in (own(f) for f in ci.features.get("", []) + ci.features.get(pkg.name, [])) if x]
    if ci_feats:
        feats += ci_feats
        reasons.append(f"{pkg.name}: CI runs cargo test --features {','.join(dict.fromkeys(ci_feats))}")
    added = None
    targets = {shlex.split(f)[1] for f in sel.flags if f.startswith("--test ")}
    for t in (pkg.manifest.get("test") or []):
        if t.get("name") in targets:
            req = [x for x in (own(str(f)) for f in t.get("required-features") or []) if x]
            if req:
                feats += req
                reasons.append(f"[[test]] {t['name']} required-features {','.join(req)}")
    for name in sorted(targets):
        rel = pkg.tests.get(name)
        if rel is None:
            continue
        path = _join(project.root, posixpath.join(pkg.dir, rel))
        text = tree.read(path)
        if text is None:
            added = changed_lines(test_patch) if added is None else added
            text = "\n".join(added.get(path, []))
        gate = file_gate(text)
        got = [x for x in (own(f) for f in gate.features) if x]
        if got:
            feats += got
            reasons.append(f"{path} is gated by feature {','.join(got)}")
        on = [c for c in gate.cfgs if c in ci.cfgs]
        if on:
            cfgs += on
            reasons.append(f"{path} is gated by cfg {','.join(on)} (the CI sets --cfg)")
    return list(dict.fromkeys(feats)), list(dict.fromkeys(cfgs)), reasons


# -------------------------------------------------------------------------------------- plan

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
    (`agents.ecosystems.cargo_git`): a git ``[patch.crates-io]`` entry whose locked version
    crates.io releases is dropped, a member the `selected` package folders do not need is
    excluded from the workspace, any other git dependency becomes the crates.io release
    `choose_release` picks. Raises EnvBuildError when one cannot be replaced."""
    from agents.ecosystems import cargo_git as cg

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


class RustEcosystem(Ecosystem):
    """`agents.ecosystems.base.Ecosystem` for cargo projects (module doc: the rules)."""

    name = "rust"
    languages = ("rust",)
    takes_test_args = True
    parsers = ("cargo_test",)
    toolchain_module = "envpool.toolchains.rust"

    def detect(self, tree: GitTree, language: str | None) -> int:
        """10: Cargo.toml at the root; 8: one below it with language=rust; 3: below, no hint;
        at most 4 when the instance's language names another language (a JS package with a
        Rust addon is the JS ecosystem's)."""
        root = cargo_root(tree.files)
        if root is None:
            return 0
        lang = (language or "").lower()
        score = 10 if root == "" else 8 if lang == "rust" else 3
        return min(score, 4) if lang and lang != "rust" else score

    def plan(self, tree: GitTree, instance: Instance, touched: list[str], images: ImageConfig,
             request: PlanRequest | None = None) -> PolyPlan:
        """Toolchain image, `cargo fetch` + `cargo test --no-run` setup, and the per-package
        ``cargo test --no-fail-fast`` command. `request.toolchain` constrains the Rust release,
        `request.test_args` join every `cargo test`. Git dependencies (GitHub is unreachable) are
        replaced or their member dropped (`git_fixes`); raises EnvBuildError when that cannot be
        done or for a toolchain newer than any installable here."""
        from envpool.toolchains.rust import available_versions, ensure_image

        recipe = load_recipe()
        added = [p for p in touched if not tree.exists(p)]
        project = analyze(tree, extra_files=added)
        iid = instance.instance_id
        if not project.packages:
            raise EnvBuildError("no cargo package found (virtual manifest without members?)", instance_id=iid)
        when = era_time(instance, tree)
        sels = select_tests(project, touched, tree)
        if not sels:
            sels = [Selection(project.packages[0], ["--tests"], ["--tests"])]
        git_setup: list[str] = []
        git_subs: list[str] = []
        if project.git_sources and not project.vendored:
            git_setup, git_subs = git_fixes(tree, project, [s.package.dir for s in sels], when, iid)
        req = request or PlanRequest()
        request, reasons = toolchain_request(project, when, recipe)
        try:
            asked = constrained(available_versions(), request, req.toolchain, req.avoid)
        except ValueError as e:
            raise EnvBuildError(f"rust: {e}", instance_id=iid) from e
        if asked != request:
            reasons.append(f"rust {asked} asked for: {req.toolchain} ({'; '.join(req.reasons)[:200]})")
            request = asked
        choice = ensure_image(request, images)
        env = {"CARGO_TERM_COLOR": "never", "CARGO_INCREMENTAL": "0", "CARGO_PROFILE_DEV_DEBUG": "0",
               "CARGO_PROFILE_TEST_DEBUG": "0", "CARGO_NET_RETRY": "5",
               "CARGO_REGISTRIES_CRATES_IO_PROTOCOL": "sparse"}
        subs = list(choice.substitutions) + git_subs
        ch = project.toolchain_channel
        if ch and version_key(ch) and version_key(ch)[:2] != version_key(choice.version)[:2]:
            subs.append(f"rust-toolchain pins {ch}; rust {choice.version} used ({reasons[0] if reasons else 'nearest'})")
        if request and (request.startswith("nightly") or request.startswith("beta")):
            env["RUSTC_BOOTSTRAP"] = "1"
        fallback = (not project.has_lock and (choice.version == "latest"
                    or version_key(choice.version) >= version_key(recipe.msrv_fallback_floor)))
        if fallback:
            env["CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS"] = "fallback"
        cd = _cd(project)
        ci = cargo_ci(tree)
        feature_args: dict[str, str] = {}
        cfgs: list[str] = []
        for sel in sels:
            feats, sel_cfgs, why = features_for(project, sel, tree, instance.test_patch, ci)
            feature_args[sel.package.name] = f" --features {shlex.quote(','.join(feats))}" if feats else ""
            cfgs += [c for c in sel_cfgs if c not in cfgs]
            reasons += why
        rustflags = ", ".join(f'"{f}"' for f in ["--cap-lints", "warn", *(x for c in cfgs for x in ("--cfg", c))])
        setup = [
            # deny(warnings) crates must not break on a newer compiler than their CI's; the
            # --cfg names a touched test's gate needs (CFG_NAME-validated) are the CI's own
            f'mkdir -p "${{CARGO_HOME:-$HOME/.cargo}}" && printf \'[build]\\nrustflags = [{rustflags}]\\n\' '
            '> "${CARGO_HOME:-$HOME/.cargo}/config.toml" && rustc --version && cargo --version',
            *git_setup,
            f"{cd}cargo fetch",
        ]
        state = {"dependency_commands": list(setup), "cargo_root": project.root} \
            if project.registry_deps and not project.vendored else {}
        hunks = _manifest_hunks(instance.test_patch, instance.patch)
        if hunks:  # dependencies the patches add must be in the cache for the offline test runs
            b64 = base64.b64encode(hunks.encode()).decode()
            setup.append("rm -rf /tmp/swemint-prefetch && cp -a /testbed /tmp/swemint-prefetch && "
                         f"cd /tmp/swemint-prefetch && echo {b64} | base64 -d | git apply --reject - ; "
                         f"cd {shlex.quote(posixpath.join('/tmp/swemint-prefetch', project.root))} && cargo fetch; rc=$?; "
                         "rm -rf /tmp/swemint-prefetch; exit $rc")
        for sel in sels:
            flags = " ".join(sel.base_flags) or _proxy_target(project, sel.package, tree)
            setup.append(cd + _budgeted(f"cargo test --no-run -p {shlex.quote(sel.package.name)}"
                                        f"{feature_args[sel.package.name]} {flags}"))
        bins = root_bins_build(project, [s.package for s in sels])
        if bins:
            setup.append(cd + _budgeted(bins))
            reasons.append("the root package's binaries are built for the tested members' tests (a member's "
                           "test support may exec target/debug/<bin>; cargo builds a package's bins only for "
                           "its own tests)")
        extra = "".join(f" {a}" for a in shell_args(req.test_args))
        runs = [f"CARGO_NET_OFFLINE=true cargo test --no-fail-fast{extra} -p {shlex.quote(s.package.name)}"
                f"{feature_args[s.package.name]} {' '.join(s.flags)} 2>&1" for s in sels]
        rebuild = f"CARGO_NET_OFFLINE=true {bins} 2>&1 | tail -n 3; " if bins else ""
        test_command = f"{cd}{rebuild}" + "; ".join(runs)
        # compile once (`build_command`): the same targets with --no-run (doc tests cannot be
        # compiled ahead; arguments after a `--` belong to the test binaries)
        bextra = "" if "--" in shell_args(req.test_args) else extra
        builds = [f"CARGO_NET_OFFLINE=true cargo test --no-run{bextra} -p {shlex.quote(s.package.name)}"
                  f"{feature_args[s.package.name]} {' '.join(f for f in s.flags if f != '--doc')} 2>&1"
                  for s in sels if [f for f in s.flags if f != "--doc"] or not s.flags]
        build_state = {"build_command": f"{cd}{rebuild}" + "; ".join(builds) + "; true",
                       "build_for": test_command} if builds else {}
        notes = [*reasons, MEMBERS_NOTE + ",".join(p.name for p in project.packages),
                 f"{ROOT_NOTE}/{project.root}", f"Cargo.lock: {'v' + str(project.lock_version) if project.lock_version else ('yes' if project.has_lock else 'no')}"]
        return PolyPlan(ecosystem=self.name, toolchain=f"rust {choice.version}", image=choice.image,
                        route=choice.route, substitutions=subs, setup_commands=setup, env=env,
                        test_command=test_command, parser="cargo_test", test_files=[
                            p for p in touched if p.endswith(".rs")], notes=notes, state={**state, **build_state})

    def dependency_layer(self, plan: PolyPlan, tree: GitTree):
        """Rust's dependency tier (`agents.tiers`): the registry cache filled by the plan's first
        commands (cargo's rustflags config, the git-dependency stand-ins, which rewrite manifests
        only, `cargo fetch`), given only the tree's Cargo.toml files and the root's Cargo.lock,
        with every source file a manifest needs to parse created empty (`cargo_stubs`): `cargo
        fetch` resolves and downloads, it compiles nothing and runs no build script. The
        repository's `.cargo/config*` is left out (a `rustc-wrapper` there would run on the
        first call to rustc). The instance tier runs the commands again (a no-op on the filled
        cache). None for vendored sources or a project without registry dependencies."""
        from agents.ecosystems.base import LayerSpec

        commands = plan.state.get("dependency_commands") or []
        if not commands:
            return None
        lock = _join(plan.state.get("cargo_root") or "", "Cargo.lock")
        files = sorted(p for p in tree.files if posixpath.basename(p) == "Cargo.toml" or p == lock)
        return LayerSpec(name="cargo registry", files=files, stubs=cargo_stubs(tree), commands=list(commands),
                         env=dict(plan.env))

    def build_command(self, plan: PolyPlan) -> str | None:
        """Compile once (`verify.compile_once`): the plan's cargo targets with ``--no-run``
        (every test binary built, none run), made with the plan; None when the plan's test
        command is no longer the one it was made for."""
        if plan.state.get("build_for") != plan.test_command:
            return None
        return plan.state.get("build_command")

    def portable_paths(self, plan: PolyPlan) -> list[str]:
        """Folders whose content does not depend on the toolchain's version (`agents.seed`):
        cargo's registry (index, downloaded crates and their sources)."""
        return ["/root/.cargo/registry"]

    def toolchain(self, requested: str | None, images: ImageConfig):
        """(ToolchainChoice, environment) of a Rust image at least `requested` (LLM plans)."""
        from envpool.toolchains.rust import ensure_image

        return ensure_image(requested, images), {"CARGO_TERM_COLOR": "never", "CARGO_NET_RETRY": "5"}

    def repair(self, plan: PolyPlan, command: str, output: str, tried: set[str]) -> list[str] | None:
        """Resume a compile stopped at its time budget; install Debian packages a build script
        missed (recipe `apt_repairs`); `cargo update -p X@V` for a dependency X that no longer
        compiles on this rustc. None when nothing applies or all was tried."""
        if RESUME_MARK in output:
            n = sum(1 for t in tried if t.startswith(": resume")) + 1
            return [f": resume {n}"]
        for rule in load_recipe().apt_repairs:
            if re.search(rule.pattern, output, re.M):
                fix = ("export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq "
                       f"--no-install-recommends {' '.join(rule.packages)} >/dev/null")
                if fix not in tried:
                    return [fix]
        members = set()
        root = ""
        for n in plan.notes:
            if n.startswith(MEMBERS_NOTE):
                members = set(n[len(MEMBERS_NOTE):].split(","))
            elif n.startswith(ROOT_NOTE):
                root = n[len(ROOT_NOTE):].strip("/")
        for m in re.finditer(r"error: could not compile `([^`]+)`", output):
            crate = m.group(1)
            if crate in members or not CRATE_NAME.fullmatch(crate):
                continue  # a name cargo would never print: text the build wrote, not a crate
            ver = re.search(rf"Compiling {re.escape(crate)} v(\S+)", output)
            spec = f"{crate}@{ver.group(1)}" if ver and CRATE_VERSION.fullmatch(ver.group(1)) else crate
            fix = f"{_cd_root(root)}cargo update -p {shlex.quote(spec)}"
            if fix not in tried:
                return [fix]
        return None


ECOSYSTEM = RustEcosystem()
"""The instance the registry (`agents.ecosystems.ECOSYSTEM_MODULES`) loads."""
