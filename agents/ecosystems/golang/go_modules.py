"""The Go modules of a tree (`analyze`): every go.mod with its module path, `go` and `toolchain`
lines and vendoring, the folders holding tests, the GOPATH-era import path and lock files, and
the Go those modules ask for (`go_request`)."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
import yaml
from agents.gitrepo import GitTree
from agents.untrusted_yaml import load_untrusted_yaml
from envpool.toolchains import version_key
from agents.ecosystems.golang.go_recipe import GoRecipe
from envpool.testpaths import TestPathRules


_RULES = TestPathRules(None, ["go"])
"""The Go group of the one test-path rule set (`envpool.testpaths`): `*_test.go` files by name."""

SKIP_PARTS = ("vendor", "testdata")


LOCK_FILES = ("Gopkg.lock", "glide.lock", "vendor/vendor.json", "Godeps/Godeps.json", "vendor.conf",
              "vendor/manifest", "dependencies.tsv", "GLOCKFILE", "vendor.yml")
"""Lock files `go mod init` (Go < 1.22) converts into go.mod requirements."""


@dataclass
class GoModule:
    """One go.mod: `dir` ("" = repository root), module `path`, `go` / `toolchain` versions
    ("1.21.5" form, None when absent), `vendored` (vendor/modules.txt next to it)."""

    dir: str
    path: str
    go: str | None = None
    toolchain: str | None = None
    vendored: bool = False


@dataclass
class GoProject:
    """What `analyze` found. `test_dirs`: folders with `*_test.go` files; `go_dirs`: folders
    with `.go` files (both "" for the root, base commit plus files the test_patch adds);
    GOPATH-era fields (no go.mod): `import_path`, `vendor_sources`, `lock_files`."""

    modules: list[GoModule] = field(default_factory=list)
    test_dirs: set[str] = field(default_factory=set)
    go_dirs: set[str] = field(default_factory=set)
    base_go_dirs: set[str] = field(default_factory=set)
    import_path: str = ""
    vendor_sources: bool = False
    lock_files: list[str] = field(default_factory=list)
    pins: list[str] = field(default_factory=list)

    def module_of(self, path_dir: str) -> GoModule | None:
        """The module whose folder is the longest prefix of `path_dir`, or None."""
        best = None
        for m in self.modules:
            if _within(path_dir, m.dir) and (best is None or len(m.dir) > len(best.dir)):
                best = m
        return best


def _within(d: str, root: str) -> bool:
    return root == "" or d == root or d.startswith(root + "/")


GO_MANIFESTS = frozenset({"go.mod", "go.sum", "go.work", "go.work.sum"})
"""The files Go's dependency tier is given (`GoEcosystem.dependency_layer`)."""


DEPS_MODULE = "swemint.invalid/deps"
"""The module path each go.mod has in Go's dependency tier (`anonymous_go_mods`)."""


_MODULE_LINE = re.compile(r"^module\s+\S.*$", re.M)


_LOCAL_REPLACE = re.compile(r"=>\s*\.{1,2}/|=>\s*/", re.M)


def anonymous_go_mods(tree: GitTree, files: list[str]) -> dict[str, str]:
    """path -> text of each go.mod among `files` with its `module` line replaced by
    `module DEPS_MODULE` (what `go mod download` reads does not name the module itself), or {}
    when a go.mod replaces a module with a local folder (a module of the tree then has to keep
    the path it is required by)."""
    mods = {p: tree.read(p) or "" for p in files if posixpath.basename(p) == "go.mod"}
    if any(_LOCAL_REPLACE.search(t) for t in mods.values()):
        return {}
    return {p: _MODULE_LINE.sub(f"module {DEPS_MODULE}", t, count=1) for p, t in mods.items() if _MODULE_LINE.search(t)}


def _skipped(path: str) -> bool:
    parts = path.split("/")
    return any(p in SKIP_PARTS or p.startswith((".", "_")) for p in parts[:-1])


_GO_LINE = re.compile(r"^go\s+(\d+\.\d+(?:\.\d+)?\S*)\s*(?://.*)?$", re.M)


_TOOLCHAIN_LINE = re.compile(r"^toolchain\s+go(\d+\.\d+(?:\.\d+)?\S*)\s*(?://.*)?$", re.M)


_MODULE_LINE = re.compile(r"^module\s+\"?([^\s\"]+)\"?", re.M)


_IMPORT_COMMENT = re.compile(r"^package\s+\w+\s*//\s*import\s+\"([^\"]+)\"", re.M)


def parse_go_mod(text: str, dir: str = "") -> GoModule:
    """A GoModule from go.mod `text`: ``module``, ``go 1.21.5`` and ``toolchain go1.22.3`` lines."""
    m, g, t = _MODULE_LINE.search(text), _GO_LINE.search(text), _TOOLCHAIN_LINE.search(text)
    return GoModule(dir=dir, path=m.group(1) if m else "", go=g.group(1) if g else None,
                    toolchain=t.group(1) if t else None)


def analyze(tree: GitTree, extra_files: list[str] | None = None, repo: str = "") -> GoProject:
    """The Go project at `tree`'s commit; `extra_files`: paths the test_patch adds; `repo`:
    "owner/name" (the default import path of a GOPATH-era repository)."""
    files = list(tree.files) + [p for p in (extra_files or []) if p not in tree.file_set]
    proj = GoProject()
    for p in tree.files:
        if posixpath.basename(p) == "go.mod" and not _skipped(p):
            d = posixpath.dirname(p)
            mod = parse_go_mod(tree.read(p) or "", d)
            mod.vendored = tree.exists(posixpath.join(d, "vendor/modules.txt"))
            proj.modules.append(mod)
    for p in files:
        if not p.endswith(".go") or _skipped(p):
            continue
        d = posixpath.dirname(p)
        proj.go_dirs.add(d)
        if p in tree.file_set:
            proj.base_go_dirs.add(d)
        if _RULES.is_test_file(p):
            proj.test_dirs.add(d)
    if not any(m.dir == "" for m in proj.modules):
        proj.import_path = _import_path(tree, repo)
        proj.vendor_sources = any(p.startswith("vendor/") and p.endswith(".go") for p in tree.files)
        proj.lock_files = [p for p in LOCK_FILES if tree.exists(p)]
        proj.pins = lock_pins(tree)
    return proj


def lock_pins(tree: GitTree) -> list[str]:
    """``path@revision`` pins from a GOPATH-era lock file (govendor vendor/vendor.json, dep
    Gopkg.lock, glide.lock, Godeps/Godeps.json), one per repository root, in file order. Go
    1.15's own conversion in `go mod init` fetches revisions straight from the VCS (GitHub is
    unreachable), so the pins are applied with `go get -d` through the Go proxy instead."""
    import json
    import tomllib

    pins: dict[str, str] = {}

    def add(path: str | None, rev: str | None) -> None:
        if path and rev and re.fullmatch(r"[\w.\-/~+]+", path) and re.fullmatch(r"[\w.\-+]+", rev):
            parts = path.split("/")
            root = "/".join(parts[:3]) if parts[0] in ("github.com", "bitbucket.org", "gitlab.com") else path
            pins.setdefault(root, rev)
    try:
        if tree.exists("vendor/vendor.json"):
            for pkg in json.loads(tree.read("vendor/vendor.json") or "{}").get("package", []):
                add(pkg.get("path"), pkg.get("revision"))
        if tree.exists("Gopkg.lock"):
            for prj in tomllib.loads(tree.read("Gopkg.lock") or "").get("projects", []):
                add(prj.get("name"), prj.get("revision") or prj.get("version"))
        if tree.exists("glide.lock"):
            for imp in (load_untrusted_yaml(tree.read("glide.lock") or "") or {}).get("imports", []) or []:
                add(imp.get("name"), imp.get("version"))
        if tree.exists("Godeps/Godeps.json"):
            for dep in json.loads(tree.read("Godeps/Godeps.json") or "{}").get("Deps", []):
                add(dep.get("ImportPath"), dep.get("Rev"))
    except (ValueError, AttributeError, TypeError, tomllib.TOMLDecodeError, yaml.YAMLError):
        pass  # an unreadable lock file pins nothing; the proxy resolves the imports
    return [f"{p}@{r}" for p, r in pins.items()]


def _import_path(tree: GitTree, repo: str) -> str:
    for p in tree.files:
        if "/" not in p and p.endswith(".go") and not _RULES.is_test_file(p):
            m = _IMPORT_COMMENT.search(tree.read(p, limit=200_000) or "")
            if m:
                return m.group(1)
    return f"github.com/{repo}" if repo else "example.com/project"


def go_request(proj: GoProject, module_dirs: list[str], recipe: GoRecipe) -> tuple[str | None, list[str]]:
    """(Go version to ask for, reasons): the newest `go`/`toolchain` line of the modules in
    `module_dirs`; the recipe's GOPATH floor when none of them has a go.mod."""
    found: list[tuple[str, str]] = []
    for m in proj.modules:
        if m.dir in module_dirs:
            if m.go:
                found.append((m.go, f"go.mod /{m.dir} go {m.go}"))
            if m.toolchain:
                found.append((m.toolchain, f"go.mod /{m.dir} toolchain go{m.toolchain}"))
    if not found:
        if any(m.dir in module_dirs for m in proj.modules):
            return None, ["go.mod has no go line"]
        return recipe.gopath_floor, [f"no go.mod: GOPATH-era floor go {recipe.gopath_floor}"]
    best = max(found, key=lambda f: version_key(f[0]))
    return best[0], [best[1]]

