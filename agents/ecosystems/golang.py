"""Go projects: analysis, toolchain floor, setup and the `go test -json` selection.

Analysis (`analyze`): every go.mod of the tree (vendor/ and testdata/ excluded) with its module
path, `go` and `toolchain` lines and whether `vendor/modules.txt` is there; the folders holding
`*_test.go` files (at the base commit plus those the test_patch adds); for repositories without
a go.mod (GOPATH era) the import path (the `// import "..."` comment of a root file, else
`github.com/<owner>/<name>`), vendored sources and dep/glide/govendor lock files.

Toolchain (`go_request`): the newest of the `go` and `toolchain` lines of the modules whose
packages are tested; `envpool.toolchains.golang.ensure_image` picks the oldest Go at least
that new (a request newer than any Go here is an EnvBuildError naming it; GOTOOLCHAIN=local:
never a download). No go.mod: the recipe's `gopath_floor` (1.15).

Tests (`select_packages`): per touched file, the package it belongs to -- a `.go` file: its
folder; anything else (testdata, fixtures, golden files): the nearest folder at or above it with
`*_test.go` files, within its module. What runs, the same on both sides (before: base +
test_patch, after: + patch): every test of the touched packages, one
``go test -json -count=1 -vet=off <pkgs>`` per module (recipe ``run_touched_tests: false``; ids
``<import path>::<TestName/sub_test>``, parser `go_test_json`), so PASS_TO_PASS holds the
packages' regression tests; the test functions the test_patch adds or changes
(`touched_tests`, ``-run '^(TestA|TestB)$'``) are the alternative T. A touched ``_test.go``
gated by ``//go:build <tag>`` gets ``-tags=<tag>`` when the CI passes that tag to ``go test``
(`gated_tags`). A package that fails to build makes its tests absent before; only its touched
test functions are then FAIL_TO_PASS (`Plan.state["absent_scope"]`, `envpool.grading.grade`),
with known_tests the others are FAILED.
Go < 1.24 prints ``FAIL <pkg> [build failed]`` as plain text in the middle of the JSON
stream; the test command turns that line into the JSON events Go >= 1.24 writes, so the parser
sees the failed build on every Go.

Setup (module mode): GOFLAGS in the image's go env (`-mod=mod`, or `-mod=vendor` with a
vendor/modules.txt); `go mod download`; modules the test_patch and patch need (applied to a
scratch copy) downloaded too, so the after side runs offline; `go list -deps -test` of the
selected packages (strict: every import must resolve); their test binaries compiled once with
``-run '^$'`` (lenient: a package that does not build at the base commit is still tested).
Test runs resolve modules from the download cache setup filled (`OFFLINE_PROXY`), not the proxy.
GOPATH mode (no go.mod, vendored sources): the repository is linked at
``$GOPATH/src/<import path>`` and tested there with GO111MODULE=off. No go.mod and no vendored
sources: `go mod init` (which converts dep/glide/govendor lock files into requirements at the
pinned revisions, on Go < 1.22) and the missing requirements resolved by the Go proxy.
"""

from __future__ import annotations

import base64
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict

from agents.gitrepo import GitTree
from agents.models import Instance
from agents.ecosystems.base import Ecosystem, PlanRequest, PolyPlan, TestSpec, shell_args
from agents.ecosystems.toolchain import constrained
from agents.untrusted_yaml import load_untrusted_yaml
from envpool.errors import EnvBuildError
from envpool.patches import sections_by_path
from envpool.images import ImageConfig
from envpool.quoting import shell_word
from envpool.testrun.limits import per_test
from envpool.testrun.polyglot.golang import go_run_regex, quote_meta, split_go_id
from envpool.toolchains import version_key

__all__ = ["ECOSYSTEM", "GoEcosystem", "GoModule", "GoProject", "GoRecipe", "analyze", "go_request",
           "ci_go_tags", "constraint_tags", "gated_tags",
           "changed_tests", "compile_step", "load_recipe", "lock_pins", "overlay_guard", "parse_go_mod", "run_pattern", "select_packages",
           "touched_tests"]

RECIPE_PATH = Path(__file__).with_name("recipes") / "go.yaml"
REPORT_PATH = "/tmp/swemint-go-test.json"
SKIP_PARTS = ("vendor", "testdata")
LOCK_FILES = ("Gopkg.lock", "glide.lock", "vendor/vendor.json", "Godeps/Godeps.json", "vendor.conf",
              "vendor/manifest", "dependencies.tsv", "GLOCKFILE", "vendor.yml")
"""Lock files `go mod init` (Go < 1.22) converts into go.mod requirements."""
BUILD_FAILED_TO_JSON = (
    r"""sed -u -E 's/^FAIL\t([^ ]+) \[(build|setup) failed\]$/{"Action":"output","Package":"\1","""
    r""""Output":"FAIL\\t\1 [\2 failed]\\n"}\n{"Action":"fail","Package":"\1"}/'""")
"""Filter turning Go < 1.24's plain ``FAIL <pkg> [build failed]`` line into JSON events."""
OFFLINE_PROXY = ('m=$(go env GOMODCACHE 2>/dev/null); [ -n "$m" ] || m="$(go env GOPATH | cut -d: -f1)/pkg/mod"; '
                 'export GOPROXY="file://$m/cache/download"; ')
"""Test runs resolve modules from the module cache setup filled (Go's download cache is a
GOPROXY tree), never the network: a version query the module graph needs -- a required version
that go.mod `exclude`s (prometheus-9248: google.golang.org/api), a `@latest` -- is answered by the
versions setup downloaded, where the default proxy fails offline (``Get .../@v/list: dial tcp``)."""
MAX_INLINE_PATCH = 90_000
"""Bytes of base64 patch text a setup command may carry (one argv string is capped at 128 KiB)."""


class Repair(BaseModel):
    """Run `commands` when a failed setup step's output matches `pattern`."""

    model_config = ConfigDict(extra="forbid")
    pattern: str
    commands: list[str]
    why: str = ""


class GoRecipe(BaseModel):
    """The data in recipes/go.yaml (see the comments there)."""

    model_config = ConfigDict(extra="forbid")
    test_flags: list[str]
    gopath_floor: str
    run_touched_tests: bool = True
    repairs: list[Repair]


@lru_cache(maxsize=1)
def load_recipe(path: str = str(RECIPE_PATH)) -> GoRecipe:
    """The Go recipe (validated; a typo is a pydantic ValidationError)."""
    return GoRecipe.model_validate(yaml.safe_load(Path(path).read_text()))


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
        if p.endswith("_test.go"):
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
        if "/" not in p and p.endswith(".go") and not p.endswith("_test.go"):
            m = _IMPORT_COMMENT.search(tree.read(p, limit=200_000) or "")
            if m:
                return m.group(1)
    return f"github.com/{repo}" if repo else "example.com/project"


def _package_dir(proj: GoProject, path: str) -> str | None:
    """The package folder a touched `path` belongs to (module doc), or None."""
    parts = path.split("/")
    if parts[0] == "vendor":
        return None
    cut = next((i for i, p in enumerate(parts[:-1]) if p in SKIP_PARTS or p.startswith((".", "_"))), None)
    if path.endswith(".go") and cut is None:
        return posixpath.dirname(path)
    d = "/".join(parts[:cut]) if cut is not None else posixpath.dirname(path)
    mod = proj.module_of(d)
    floor = mod.dir if mod else ""
    while True:
        if d in proj.test_dirs:
            return d
        if d == floor or d == "":
            return None
        d = posixpath.dirname(d)


def select_packages(proj: GoProject, touched: list[str]) -> dict[str, list[str]]:
    """Module folder -> package folders relative to it ("." for the module's own folder), for
    the `touched` paths, in first-touched order. GOPATH-era projects use the key ""."""
    out: dict[str, list[str]] = {}
    for path in touched:
        d = _package_dir(proj, path)
        if d is None:
            continue
        mod = proj.module_of(d)
        key = mod.dir if mod else ""
        rel = d[len(key):].lstrip("/") if key else d
        pkg = f"./{rel}" if rel else "."
        if pkg not in out.setdefault(key, []):
            out[key].append(pkg)
    return out


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


_TEST_FUNC = re.compile(r"^func\s+((?:Test|Example|Fuzz)\w*)\s*\(")


def _header(lines: list[str], i: int) -> int:
    """Index of the declaration line owning line `i` (0-based): itself when it starts at column
    0, else the nearest column-0 line above it that is not a closing brace, paren or comment;
    -1 when there is none."""
    for j in range(min(i, len(lines) - 1), -1, -1):
        t = lines[j]
        if t and not t[0].isspace() and not t.startswith(("}", ")", "//")):
            return j
    return -1


def changed_tests(section: str, old_text: str | None) -> tuple[set[str], bool]:
    """(test functions a test file's diff `section` adds or changes, whether it also changes
    shared code). A changed line belongs to the declaration above it (`_header`, in the new file
    for added lines, in the old file for removed ones). Test/Example/Fuzz functions: their name;
    import blocks, blank and comment lines: nothing; lines under a declaration the diff adds
    (a new helper or type): nothing; anything else (an existing helper, a shared table):
    shared code, so the whole package must run (also when unidiff cannot read the section)."""
    from unidiff import PatchSet

    old = (old_text or "").splitlines()
    new: list[str] = []
    added: list[int] = []      # indexes into `new`
    removed: list[int] = []    # indexes into `old`
    o = 0
    try:
        files = list(PatchSet(section))
    except Exception:  # noqa: BLE001 - unreadable: the whole package runs
        return set(), True
    for hunk in (h for pf in files for h in pf):
        start = hunk.source_start if hunk.source_length == 0 else hunk.source_start - 1  # 0-based first old line
        new.extend(old[o:start])
        o = start
        for line in hunk:
            if line.is_added:
                added.append(len(new))
                new.append(line.value.rstrip("\r\n"))
            elif line.is_removed:
                removed.append(o)
                o += 1
            elif line.is_context:
                new.append(line.value.rstrip("\r\n"))
                o += 1
    new.extend(old[o:])
    added_set = set(added)
    names: set[str] = set()
    shared = False

    def judge(text: str, header: str, header_is_new: bool) -> None:
        nonlocal shared
        body = text.strip()
        if not body or body.startswith("//"):
            return
        m = _TEST_FUNC.match(header)
        if m:
            names.add(m.group(1))
        elif header.startswith("import") or header.startswith("package ") or header_is_new:
            return
        else:
            shared = True

    for i in added:
        h = _header(new, i)
        judge(new[i], new[h] if h >= 0 else "", h in added_set)
    for i in removed:
        h = _header(old, i)
        judge(old[i], old[h] if h >= 0 else "", False)
    return names, shared


def touched_tests(test_patch: str, tree: GitTree, proj: GoProject) -> dict[str, set[str] | None]:
    """Package folder -> the test functions the test_patch adds or changes there, or None when
    the whole package must run (a non-Go file of it is touched, or shared test code changes)."""
    out: dict[str, set[str] | None] = {}
    for path, block in sections_by_path(test_patch).items():
        d = _package_dir(proj, path)
        if d is None:
            continue
        if not path.endswith("_test.go") or _skipped(path):
            out[d] = None
            continue
        names, shared = changed_tests(block, tree.read(path))
        if shared:
            out[d] = None
        elif out.get(d, set()) is not None:
            out[d] = out.get(d, set()) | names
    return out


def run_pattern(test_ids: list[str]) -> str:
    """A ``go test -run`` pattern selecting `test_ids` (``pkg::TestX/sub`` or bare ``TestX/sub``).

    One id: exactly it (`go_run_regex`, each level anchored and QuoteMeta'd, so names with
    ``(``, ``.``, ``_`` for spaces match literally). Several subtests of one parent at the same
    depth: ``^Parent$/^(a|b)$``. Otherwise the top-level tests, ``^(TestA|TestB)$`` (their
    subtests all run). Go splits a pattern at ``/`` outside brackets and parentheses only.
    """
    names = list(dict.fromkeys(split_go_id(i)[1] for i in test_ids))
    if not names:
        return "^$"
    if len(names) == 1:
        return go_run_regex(names[0])
    levels = [n.split("/") for n in names]
    if len({len(lv) for lv in levels}) == 1 and len({tuple(lv[:-1]) for lv in levels}) == 1 and len(levels[0]) > 1:
        parent = "/".join(f"^{quote_meta(p)}$" for p in levels[0][:-1])
        return f"{parent}/^({'|'.join(quote_meta(lv[-1]) for lv in levels)})$"
    tops = dict.fromkeys(lv[0] for lv in levels)
    return f"^({'|'.join(quote_meta(t) for t in tops)})$"


def _patch_blocks(text: str, keep) -> str:
    """The file sections of a unified git diff whose path satisfies `keep(path)`."""
    return "".join(section for path, section in sections_by_path(text).items() if keep(path))


DEP_ERROR = re.compile(r"^(?:\S*/)?pkg/mod/(\S+?)@(v[^/\s]+)/(\S+?\.go):\d+:\d+: (.*)$", re.M)
"""A compile error inside the module cache: (module, version, file in it, message)."""
SAFE_MODULE_PATH = re.compile(r"[A-Za-z0-9._~+!/-]{1,300}")
"""Characters of a module path (and a file path in it) as Go's module cache spells them."""
SAFE_VERSION = re.compile(r"v[0-9A-Za-z.+-]{1,100}")
GUARD_ERROR = re.compile(r'cannot use "[^"]*" \(untyped string constant\) as int value')
"""quic-go's (and others') deliberate version guard: ``var _ int = "can't be built on Go 1.N"``."""


def compile_step(flags: str, pkgs: str) -> str:
    """Shell compiling the test binaries of `pkgs` once (``go test -run '^$'``). Lenient when the
    repository's own code does not build (its tests then fail on that side), but exit 1 when a
    *dependency* does not (an error under ``pkg/mod/``): that is the environment's fault, and
    `repair` may fix it."""
    # `|| rc=$?` keeps the step lenient under `set -e` (the published setup.sh runs with -e)
    return (f"rc=0; out=$(go test {flags} -run '^$' {pkgs} 2>&1) || rc=$?; printf '%s\\n' \"$out\"; "
            "if [ $rc -ne 0 ]; then if printf '%s\\n' \"$out\" | grep -Eq '^(\\S*/)?pkg/mod/\\S+\\.go:[0-9]+:'; then "
            "echo 'swemint: a dependency does not build with this Go'; exit 1; fi; "
            "echo 'swemint: some test binaries do not build at the base commit (their tests fail on that side)'; fi")


def overlay_guard(output: str) -> list[str] | None:
    """Commands that blank a dependency's version-guard file (`GUARD_ERROR`) through a Go build
    overlay (``-overlay``, Go >= 1.16, kept in the image's go env), or None when the output has
    no such error. Used when the Go the module's era needs is not installable here (caddy of
    mid-2022 pins quic-go v0.26, which refuses Go 1.19; Go 1.16-1.18 are not available)."""
    for m in DEP_ERROR.finditer(output):
        mod, ver, rel, msg = m.groups()
        if not GUARD_ERROR.search(msg):
            continue
        if not (SAFE_MODULE_PATH.fullmatch(mod) and SAFE_MODULE_PATH.fullmatch(rel) and SAFE_VERSION.fullmatch(ver)):
            continue  # not a path Go writes into its module cache: text from the build, never a command
        path = f"$(go env GOMODCACHE)/{mod}@{ver}/{rel}"
        return [
            "mkdir -p /root/.config/go/overlay && "
            f"f={path} && r=/root/.config/go/overlay/$(printf '%s' \"$f\" | md5sum | cut -c1-12).go && "
            "grep -m1 '^package ' \"$f\" > \"$r\" && printf '%s\\t%s\\n' \"$f\" \"$r\" >> /root/.config/go/overlay.tsv && "
            "awk -F'\\t' 'BEGIN{printf \"{\\\"Replace\\\":{\"} {printf \"%s\\\"%s\\\":\\\"%s\\\"\", (NR>1?\",\":\"\"), $1, $2} "
            "END{print \"}}\"}' /root/.config/go/overlay.tsv > /root/.config/go/overlay.json && "
            "go env -w GOFLAGS=\"$(go env GOFLAGS | sed -E 's/ ?-overlay=[^ ]*//') -overlay=/root/.config/go/overlay.json\" && "
            f"echo 'swemint: version guard {mod}@{ver}/{rel} blanked by a build overlay' && go env GOFLAGS"]
    return None


def _abs(module_dir: str, pkg: str) -> str:
    """Repository-relative folder of package `pkg` ("./x" or ".") of the module at `module_dir`."""
    d = posixpath.normpath(posixpath.join(module_dir or ".", pkg))
    return "" if d == "." else d


def _module_runs(mdir: str, pkgs: list[str], tests: dict[str, set[str] | None], flags: str) -> list[str]:
    """`go test -json` invocations for the packages `pkgs` of the module at `mdir`: packages
    with known touched tests run those alone (``-run '^(TestA|TestB)$'``), one invocation each;
    the others together."""
    whole, runs = [], []
    for p in pkgs:
        names = tests.get(_abs(mdir, p)) if p != "./..." else None
        if names:
            pat = shlex.quote(run_pattern(sorted(names)))
            runs.append(f"({_cd(mdir)} && go test -json {flags} -run {pat} {shlex.quote(p)})")
        else:
            whole.append(shlex.quote(p))
    if whole:
        runs.insert(0, f"({_cd(mdir)} && go test -json {flags} {' '.join(whole)})")
    return runs


def _cd(module_dir: str) -> str:
    return f"cd {shell_word('/testbed/' + module_dir)}" if module_dir else "cd /testbed"


TAG_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
"""A Go build tag as `-tags` takes it (anything else from a repository is not used)."""
_NOT_TAGS = re.compile(r"^(go1\.\d+|cgo|ignore|gc|gccgo|unix|linux|darwin|windows|freebsd|openbsd|netbsd|"
                       r"solaris|plan9|js|wasm|wasip1|android|ios|aix|dragonfly|illumos|amd64|arm64|386|arm|"
                       r"ppc64le?|s390x|riscv64|mips\w*|loong64)$")


def constraint_tags(text: str) -> list[str]:
    """Tags a Go file's ``//go:build`` (or ``// +build``) lines ask for, outside ``!``: not the
    GOOS/GOARCH/release/cgo terms the toolchain sets itself. Never raises."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("package "):
            break
        m = re.match(r"//\s*(?:go:build|\+build)\s+(.*)", line)
        if not m:
            continue
        for neg, tag in re.findall(r"(!?)\s*([A-Za-z0-9_.]+)", m.group(1)):
            if not neg and TAG_NAME.fullmatch(tag) and not _NOT_TAGS.match(tag) and tag not in out:
                out.append(tag)
    return out


def ci_go_tags(tree: GitTree) -> list[str]:
    """Build tags the project's CI passes to ``go test`` (``-tags a,b``, ``--tags=a``), from its
    GitHub workflows (`agents.ecosystems.ci`) and its top-level Makefile."""
    from agents.ecosystems.ci import ci_steps, command_lines, flag_values, split_words

    texts = [st.run for st in ci_steps(tree)] + [tree.read(p) or "" for p in ("Makefile", "GNUmakefile")
                                                  if tree.exists(p)]
    tags: list[str] = []
    for text in texts:
        for line in command_lines(text):
            words = split_words(line)
            if not any(w == "test" and i and words[i - 1].endswith("go") for i, w in enumerate(words)):
                continue
            for value in flag_values(words, "-tags", "--tags"):
                for tag in re.split(r"[,\s]+", value):
                    if TAG_NAME.fullmatch(tag) and tag not in tags:
                        tags.append(tag)
    return tags


def gated_tags(tree: GitTree, test_patch: str, touched: list[str]) -> tuple[list[str], list[str]]:
    """(tags, reasons): the build tags of touched ``_test.go`` files (their text after the
    test_patch: the base file, or the lines a new file adds) that the CI also passes to
    ``go test`` -- so a test file gated by ``//go:build integration`` compiles, as on CI."""
    from envpool.patches import changed_lines

    wanted: dict[str, list[str]] = {}
    added = None
    for path in touched:
        if not path.endswith("_test.go"):
            continue
        text = tree.read(path)
        if text is None:
            added = changed_lines(test_patch) if added is None else added
            text = "\n".join(added.get(path, []))
        for tag in constraint_tags(text):
            wanted.setdefault(tag, []).append(path)
    if not wanted:
        return [], []
    ci = ci_go_tags(tree)
    tags = [t for t in wanted if t in ci]
    return tags, [f"build tag {t} (CI: go test -tags; gates {', '.join(wanted[t][:3])})" for t in tags]


class GoEcosystem(Ecosystem):
    """`agents.ecosystems.base.Ecosystem` for Go (module doc: the rules)."""

    name = "go"
    languages = ("go",)
    takes_test_args = True
    parsers = ("go_test_json",)
    toolchain_module = "envpool.toolchains.golang"

    def detect(self, tree: GitTree, language: str | None) -> int:
        """10: go.mod at the root (or any Go code with language=go); 6: a go.mod below the root;
        3: .go files only; 0: no Go. Another language named by the instance caps it at 2."""
        lang = (language or "").lower()
        root_mod = tree.exists("go.mod")
        any_mod = root_mod or any(p.endswith("/go.mod") and not _skipped(p) for p in tree.files)
        has_go = any_mod or any(p.endswith(".go") and not p.startswith("vendor/") for p in tree.files)
        if not has_go:
            return 0
        if lang in ("go", "golang"):
            return 10
        score = 10 if root_mod else 6 if any_mod else 3
        return min(score, 2) if lang else score

    def plan(self, tree: GitTree, instance: Instance, touched: list[str], images: ImageConfig,
             request: PlanRequest | None = None) -> PolyPlan:
        """Go image, module download + test compile setup, one `go test -json` per module.
        `request.toolchain` constrains the Go release (e.g. `>=1.16` after a fix used io/fs on
        an older Go), `request.test_args` join the `go test` flags. Raises EnvBuildError when no
        Go here is new enough for go.mod (or the constraint), or when the test_patch touches no
        Go package and the repository has no module to fall back on."""
        from envpool.toolchains.golang import GO_ENV, available_gos, ensure_image

        recipe = load_recipe()
        iid = instance.instance_id
        added = [p for p in touched if not tree.exists(p)]
        proj = analyze(tree, extra_files=added, repo=instance.repo)
        sel = select_packages(proj, touched)
        notes = []
        if not sel:
            root = next((m for m in proj.modules if m.dir == ""), None)
            if root is None and not proj.go_dirs:
                raise EnvBuildError("the test_patch touches no Go package and the repository has no Go code",
                                    instance_id=iid)
            sel = {"": ["./..."]}
            notes.append("the test_patch touches no Go package: testing ./...")
        gopath = "" in sel and proj.module_of("") is None
        if gopath and len(sel) > 1:
            notes.append("GOPATH-mode root: packages of nested modules not tested: " + ", ".join(d for d in sel if d))
            sel = {"": sel[""]}
        wanted, reasons = go_request(proj, list(sel), recipe)
        req = request or PlanRequest()
        try:
            asked = constrained([r.version for r in available_gos(images)], wanted, req.toolchain, req.avoid)
        except ValueError as e:
            raise EnvBuildError(f"go: {e}", instance_id=iid) from e
        if asked != wanted:
            reasons.append(f"go {asked} asked for: {req.toolchain} ({'; '.join(req.reasons)[:200]})")
        choice = ensure_image(asked, images, instance_id=iid)
        env = dict(GO_ENV)
        flags = " ".join([*recipe.test_flags, *(a for a in shell_args(req.test_args) if a not in recipe.test_flags)])
        if not any(a.startswith(("-timeout", "'-timeout")) for a in shell_args(req.test_args)):
            # Go has no per-test limit: a test binary gets 4 per-test limits, then panics naming
            # the running test (that test fails, the run goes on; `envpool.testrun.limits`)
            flags += f" -timeout={per_test(4)}s"
        tags, why = gated_tags(tree, instance.test_patch, touched)
        if tags:  # TAG_NAME-validated
            flags += f" -tags={','.join(tags)}"
            reasons += why
        setup: list[str] = []
        runs: list[str] = []
        deps_state: list[str] = []
        tests: dict[str, set[str] | None] = {}
        if gopath:
            setup, runs, mode_notes = self._gopath(proj, sel[""], env, flags)
            notes += mode_notes
        else:
            vendored = all(m.vendored for m in proj.modules if m.dir in sel)
            setup.append(f"go env -w GOFLAGS={'-mod=vendor' if vendored else '-mod=mod'} && go version && go env GOFLAGS")
            for mdir in sel:
                if not vendored:
                    setup.append(f"{_cd(mdir)} && go mod download")
            if not vendored:  # the dependency tier (`dependency_layer`): what needs only go.mod / go.sum
                deps_state = list(setup)
            setup += self._prefetch(instance, sel, flags)
            for mdir, pkgs in sel.items():
                base = [p for p in pkgs if p == "./..." or _abs(mdir, p) in proj.base_go_dirs]
                if not base:
                    continue
                q = " ".join(shlex.quote(p) for p in base)
                setup.append(f"{_cd(mdir)} && go list -deps -test {q} >/dev/null")
                setup.append(f"{_cd(mdir)} && {compile_step(flags, q)}")
            tests = touched_tests(instance.test_patch, tree, proj)
            primary = tests if recipe.run_touched_tests else {}
            for mdir, pkgs in sel.items():
                runs += _module_runs(mdir, pkgs, primary, flags)
            if tests:
                notes.append("touched tests: " + "; ".join(
                    f"/{d}: {' '.join(sorted(n)) if n else 'all'}" for d, n in tests.items()))
            if not recipe.run_touched_tests:
                notes.append("tests run: every test of the touched packages")
        test_command = f"{OFFLINE_PROXY}: > {REPORT_PATH}; " + "; ".join(
            f"{r} | {BUILD_FAILED_TO_JSON} >> {REPORT_PATH}" for r in runs)
        notes = [*reasons, *notes, "packages: " + "; ".join(f"/{d}: {' '.join(p)}" for d, p in sel.items())]
        alts = []
        state: dict = {"test_name": "touched" if recipe.run_touched_tests else "packages"}
        if deps_state:
            state["dependency_commands"] = deps_state
        if not gopath:  # module folder -> module path: where a targeted rerun runs a package
            state["go_modules"] = {m.dir: m.path for m in proj.modules if m.dir in sel}
        state["go_flags"] = flags
        if tests and any(names for names in tests.values()):  # T2: the other selection
            other = {} if recipe.run_touched_tests else tests
            cmd = "; ".join(f"{r} | {BUILD_FAILED_TO_JSON} >> {REPORT_PATH}"
                            for m, pkgs in sel.items() for r in _module_runs(m, pkgs, other, flags))
            alts.append(TestSpec(name="packages" if recipe.run_touched_tests else "touched",
                                 test_command=f"{OFFLINE_PROXY}: > {REPORT_PATH}; {cmd}", parser="go_test_json",
                                 report_path=REPORT_PATH, test_files=list(touched)))
            if not recipe.run_touched_tests and all(n is not None for n in tests.values()):
                # a package that does not build before the fix: only its touched tests are F2P
                state["absent_scope"] = sorted({n.split("/", 1)[0] for names in tests.values() for n in names})
        return PolyPlan(ecosystem=self.name, toolchain=f"go {choice.version}", image=choice.image,
                        route=choice.route, substitutions=list(choice.substitutions), setup_commands=setup,
                        env=env, test_command=test_command, parser="go_test_json", report_path=REPORT_PATH,
                        test_files=list(touched), notes=notes, test_alternatives=alts, state=state)

    @staticmethod
    def _prefetch(instance: Instance, sel: dict[str, list[str]], flags: str) -> list[str]:
        """A lenient step downloading the modules that the test_patch + patch *declare* (their
        go.mod / go.sum hunks only, applied to a scratch copy), so the after side builds offline.
        Never the code or tests of the patches: the setup script and Dockerfile are published
        with the row, and the image's build cache must not hold the fixed code."""
        text = instance.test_patch + ("\n" if not instance.test_patch.endswith("\n") else "") + instance.patch
        small = _patch_blocks(text, lambda p: posixpath.basename(p) in ("go.mod", "go.sum"))
        if not small:
            return []
        b64 = base64.b64encode(small.encode()).decode()
        if len(b64) > MAX_INLINE_PATCH:
            return []
        lists = "; ".join(f"(cd {shell_word('/tmp/swemint-prefetch/' + m)} && go mod download; go list -e -deps {q} >/dev/null)"
                          for m, q in ((m, " ".join(shlex.quote(p) for p in pkgs)) for m, pkgs in sel.items()))
        return ["rm -rf /tmp/swemint-prefetch && cp -a /testbed /tmp/swemint-prefetch && cd /tmp/swemint-prefetch && "
                f"echo {b64} | base64 -d | git apply --reject --whitespace=nowarn - ; {lists}; "
                "cd / && rm -rf /tmp/swemint-prefetch; true"]

    @staticmethod
    def _gopath(proj: GoProject, pkgs: list[str], env: dict[str, str], flags: str) -> tuple[list[str], list[str], list[str]]:
        q = " ".join(shlex.quote(p) for p in pkgs)
        link = f"/go/src/{proj.import_path}"
        if proj.vendor_sources:
            env["GO111MODULE"] = "off"
            setup = [f"mkdir -p {shlex.quote(posixpath.dirname(link))} && ln -sfn /testbed {shlex.quote(link)} && go version",
                     f"cd {shlex.quote(link)} && {compile_step(flags, q)}"]
            runs = [f"(cd {shlex.quote(link)} && go test -json {flags} {q})"]
            return setup, runs, [f"GOPATH mode at {link} (vendored sources)"]
        conv = f" ({len(proj.pins)} revisions pinned from {', '.join(proj.lock_files)})" if proj.pins else ""
        setup = ["go env -w GOFLAGS=-mod=mod && go version",
                 f"cd /testbed && go mod init {shlex.quote(proj.import_path)} 2>&1 | grep -v '^go: converting' ; test -f go.mod"]
        if proj.pins:
            setup.append("cd /testbed && for p in " + " ".join(shlex.quote(p) for p in proj.pins)
                         + "; do go get -d \"$p\" >/dev/null 2>&1 || echo \"swemint: could not pin $p\"; done; cat go.mod")
        setup += [f"cd /testbed && go list -deps -test {q} >/dev/null",
                  f"cd /testbed && {compile_step(flags, q)}"]
        runs = [f"(cd /testbed && go test -json {flags} {q})"]
        return setup, runs, [f"no go.mod: synthesised with go mod init {proj.import_path}{conv}"]

    def dependency_layer(self, plan: PolyPlan, tree: GitTree):
        """Go's dependency tier (`agents.tiers`): the module cache filled by the plan's first
        commands (`go env -w GOFLAGS=...`, `go mod download` per module), given only the tree's
        go.mod / go.sum / go.work / go.work.sum files (vendor/ and testdata/ left out): `go mod
        download` reads the module graph and runs no code. The instance tier runs them again
        (a no-op on the filled cache). Each go.mod's own module path is given as
        `DEPS_MODULE` (`anonymous_go_mods`): two repositories requiring the same modules with
        the same go.sum get the same layer. None in GOPATH mode and for vendored modules."""
        from agents.ecosystems.base import LayerSpec

        commands = plan.state.get("dependency_commands") or []
        if not commands:
            return None
        files = sorted(p for p in tree.files if posixpath.basename(p) in GO_MANIFESTS and not _skipped(p))
        if not files:
            return None
        return LayerSpec(name="go modules", files=files, content=anonymous_go_mods(tree, files),
                         commands=list(commands), env=dict(plan.env))
    def targeted_plan(self, plan: PolyPlan, ids: list[str]) -> PolyPlan | None:
        """`plan` running only the tests `ids` (``pkg::TestX/sub``): one ``go test -json -run``
        per package, in the folder of the module whose path is the longest prefix of the
        package's (`state["go_modules"]`), the top-level tests of each package selected
        (`run_pattern`: their subtests all run; grading reads only the targeted ids). None in
        GOPATH mode or for an id whose package no module of the plan holds."""
        modules: dict[str, str] = plan.state.get("go_modules") or {}
        flags = plan.state.get("go_flags", "")
        if not modules or not ids:
            return None
        by_pkg: dict[str, list[str]] = {}
        for i in ids:
            pkg, name = split_go_id(i)
            if not pkg or not name:
                return None
            by_pkg.setdefault(pkg, []).append(i)
        runs = []
        for pkg, tests in sorted(by_pkg.items()):
            owners = [d for d, path in modules.items() if pkg == path or pkg.startswith(path + "/")]
            if not owners:
                return None
            mdir = max(owners, key=lambda d: len(modules[d]))
            top = sorted({split_go_id(t)[1].split("/", 1)[0] for t in tests})
            pat = shlex.quote(run_pattern(top))
            runs.append(f"({_cd(mdir)} && go test -json {flags} -run {pat} {shlex.quote(pkg)}) | "
                        f"{BUILD_FAILED_TO_JSON} >> {REPORT_PATH}")
        cmd = f"{OFFLINE_PROXY}: > {REPORT_PATH}; " + "; ".join(runs)
        return plan.with_test(TestSpec(name=f"{plan.state.get('test_name', 'touched')}:targeted", test_command=cmd,
                                       parser=plan.parser, report_path=plan.report_path,
                                       parser_options=dict(plan.parser_options), test_files=list(plan.test_files)))

    def build_command(self, plan: PolyPlan) -> str | None:
        """Compile once (`verify.compile_once`): the plan's test command with every ``go test
        -json`` made ``go test -exec /bin/true`` -- the same packages and flags compiled and
        linked into the build cache, each test binary handed to ``true`` instead of run (no test
        runs); its report file is emptied again. None for a command that runs no ``go test``."""
        cmd = plan.test_command
        if "go test -json" not in cmd:
            return None
        return cmd.replace("go test -json", "go test -exec /bin/true") + f"; rm -f {REPORT_PATH}; true"

    def portable_paths(self, plan: PolyPlan) -> list[str]:
        """Folders whose content does not depend on the toolchain's version (`agents.seed`):
        Go's module cache (downloaded module zips and their extracted trees)."""
        return ["/go/pkg/mod"]

    def toolchain(self, requested: str | None, images: ImageConfig):
        """(ToolchainChoice, environment) of a Go image at least as new as `requested` (LLM plans)."""
        from envpool.toolchains.golang import GO_ENV, ensure_image

        return ensure_image(requested, images), dict(GO_ENV)

    def repair(self, plan: PolyPlan, command: str, output: str, tried: set[str]) -> list[str] | None:
        """The first recipe repair whose pattern matches `output` and was not tried, else None.
        A module that needs a newer Go than the image is not repairable here (the setup error
        keeps Go's own message: "requires go >= X (running go Y; GOTOOLCHAIN=local)")."""
        guard = overlay_guard(output)
        if guard and "\n".join(guard) not in tried:
            return guard
        for rule in load_recipe().repairs:
            if re.search(rule.pattern, output, re.M) and "\n".join(rule.commands) not in tried:
                return list(rule.commands)
        return None


ECOSYSTEM = GoEcosystem()
