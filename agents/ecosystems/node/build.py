"""The repository's own build step, for workspace monorepos whose packages are used from their
build output.

A yarn/npm/pnpm workspace or lerna repository whose workspace packages point (``main``,
``module`` or ``exports["."]``) at a file the tree does not hold (``lib/index.js`` of babel's
packages, made by ``make build``) cannot be tested from a fresh install: a test importing
``@babel/parser`` stops with ``Cannot find module '.../node_modules/@babel/parser/lib/index.js'``.
`build_step` finds the command the repository itself builds with:

The runner's config is read first: a vitest/vite ``alias`` or a jest ``moduleNameMapper`` that is
not null means the tests import sources (vuejs/core), and no build is run.

1. a development build the project keeps beside its full one (`recipes/node.yaml`
   ``build.dev_targets``: babel's ``make build-no-bundle``, skipping bundles and standalone
   builds), as a Makefile target or a package.json script;
2. a build step of its CI workflows (`run:` lines such as ``yarn build``, ``make build``,
   ``lerna run build``: ``build.ci_pattern``; steps that also install or bootstrap are skipped,
   they reinstall what setup installed);
3. the ``build`` script of the root package.json, else the Makefile's ``build`` target, else
   ``lerna run build`` when lerna.json exists.

The step runs at setup (after the install, with the network) and again before every test run
where the side's patches changed non-test files (`rebuild_guard`): the sources under test are
compiled after the patch, as the project's CI builds before it tests. Which files count as test
files: the JS/TS group's `not_built` role of the one test-path rule set (`envpool.testpaths`), as
git pathspecs. The tree the setup build saw (a git tree id of
the working tree's non-test files, `tree_id`) is recorded in the image (`STATUS_FILE`) and
compared, so build outputs that are not git-ignored, and setup's own edits (committed after
setup), never force a rebuild on the before side.

Compile once (`verify.compile_once`, `snapshot_build`): the side's build container runs the
guard's build once and records the tree it built in `STATUS_FILE`, so the runs started from the
side's snapshot find the tree built and do not rebuild (a build that fails records nothing: every
run then builds again and prints why it failed, as without a snapshot).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import PurePosixPath

import yaml

from agents.ecosystems.node.manifest import package_scripts, read_json, recipe
from agents.untrusted_yaml import load_untrusted_yaml
from envpool.testpaths import role

STATUS_FILE = "/opt/swemint-node/build.status"
"""The git tree id of /testbed's non-test files right after the setup build (`tree_id`)."""
BUILD_LOG = "/tmp/swemint-node/build.log"
"""Where a test run's rebuild writes its output (its tail is printed when it fails)."""


@dataclass
class BuildStep:
    """`command`: bash run at the repository root; `source`: where it was found
    (``Makefile target build-no-bundle``, ``.github/workflows/ci.yml``, ``package.json script
    build``); `reason`: why a build is needed (the first unbuilt entry)."""

    command: str
    source: str
    reason: str


def workspace_globs(tree, pkg: dict) -> list[str]:
    """The workspace package globs: package.json ``workspaces`` (a list or ``{packages: [...]}``),
    pnpm-workspace.yaml ``packages``, lerna.json ``packages``; [] for a single package."""
    out: list[str] = []
    ws = pkg.get("workspaces")
    if isinstance(ws, dict):
        ws = ws.get("packages")
    if isinstance(ws, list):
        out += [str(w) for w in ws]
    try:
        pnpm = load_untrusted_yaml(tree.read("pnpm-workspace.yaml") or "") or {}
    except yaml.YAMLError:
        pnpm = {}
    if isinstance(pnpm, dict) and isinstance(pnpm.get("packages"), list):
        out += [str(p) for p in pnpm["packages"]]
    lerna = read_json(tree, "lerna.json")
    if isinstance(lerna.get("packages"), list):
        out += [str(p) for p in lerna["packages"]]
    elif tree.exists("lerna.json") and not out:
        out.append("packages/*")  # lerna's default
    return list(dict.fromkeys(g for g in out if g and not g.startswith("!")))


def workspace_dirs(tree, globs: list[str]) -> list[str]:
    """Directories holding a package.json that match one of `globs` (``packages/*``,
    ``packages/**``)."""
    dirs = sorted({str(PurePosixPath(p).parent) for p in tree.files
                   if PurePosixPath(p).name == "package.json" and "/" in p and "node_modules/" not in p})
    pats = [g.rstrip("/").removeprefix("./") for g in globs]
    return [d for d in dirs if any(fnmatch(d, g) or (g.endswith("/**") and d.startswith(g[:-3] + "/"))
                                   for g in pats)]


def workspace_manifests(tree) -> list[str]:
    """The root package.json and each workspace package's: the manifests a package manager reads
    to install the project (`workspace_globs`, matched one path segment per glob segment as npm
    and yarn do, `**` any number of them: a fixture's package.json below a package is not one).
    [] without a root package.json."""
    if not tree.exists("package.json"):
        return []
    globs = [g.rstrip("/").removeprefix("./").split("/") for g in workspace_globs(tree, read_json(tree, "package.json"))]
    dirs = sorted({str(PurePosixPath(p).parent) for p in tree.files
                   if PurePosixPath(p).name == "package.json" and "/" in p and "node_modules/" not in p})
    return ["package.json", *(f"{d}/package.json" for d in dirs if any(_segments_match(d.split("/"), g) for g in globs))]


def _segments_match(parts: list[str], pattern: list[str]) -> bool:
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_segments_match(parts[i:], pattern[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch(parts[0], pattern[0]) and _segments_match(parts[1:], pattern[1:])


def _entries(pkg: dict) -> list[str]:
    out = [str(pkg[k]) for k in ("main", "module") if isinstance(pkg.get(k), str)]
    exp = pkg.get("exports")
    dot = exp.get(".") if isinstance(exp, dict) else exp
    while isinstance(dot, dict):  # {"import": ..., "require": ..., "default": ...}
        dot = next((dot[k] for k in ("require", "default", "node", "import") if k in dot), None)
    if isinstance(dot, str):
        out.append(dot)
    return out


def unbuilt_entry(tree, pkg: dict) -> str | None:
    """``<dir>: main lib/index.js`` for the first workspace package whose entry file the tree
    lacks (made by a build), None when every entry exists or the repository has no workspaces."""
    for d in workspace_dirs(tree, workspace_globs(tree, pkg)):
        sub = read_json(tree, f"{d}/package.json")
        for entry in _entries(sub):
            rel = str(PurePosixPath(d) / entry.removeprefix("./"))
            if "*" in rel or rel.endswith("/"):
                continue
            candidates = [rel] + ([] if PurePosixPath(rel).suffix else [f"{rel}.js", f"{rel}/index.js"])
            if not any(tree.exists(c) for c in candidates):
                return f"{d}: entry {entry} is not in the tree (made by a build)"
    return None


def makefile_targets(tree) -> set[str]:
    """Target names defined at the start of a line in the root Makefile (``build-no-bundle:``)."""
    text = tree.read("Makefile") or tree.read("makefile") or tree.read("GNUmakefile") or ""
    return set(re.findall(r"^([A-Za-z0-9][\w.-]*)\s*:(?!=)", text, re.M))


def run_script(pm: str, name: str) -> str:
    """The package manager's command that runs package.json script `name`."""
    return {"npm": "npm run", "pnpm": "pnpm run"}.get(pm, "yarn run") + f" {shlex.quote(name)}"


def _ci_build(tree) -> tuple[str, str] | None:
    cfg = recipe()["build"]
    pattern, skip = re.compile(cfg["ci_pattern"]), re.compile(cfg["ci_skip"])
    for path in sorted(p for p in tree.files if p.startswith(".github/workflows/") and p.endswith((".yml", ".yaml"))):
        for line in (tree.read(path) or "").splitlines():
            m = re.match(r"^\s*(?:-\s*)?run:\s*(.+?)\s*$", line)
            cmd = m.group(1).strip("'\"") if m else ""
            if cmd and pattern.fullmatch(cmd) and not skip.search(cmd):
                return cmd, path
    return None


_MAPS_SOURCES = re.compile(r"\b(?:alias|moduleNameMapper)\b\s*[:=](?!\s*(?:null\b|undefined\b|\{\s*\}))")


def runner_maps_sources(tree, pkg: dict, runner: str) -> str | None:
    """The runner config that resolves packages itself (a vite/vitest ``alias``, a jest
    ``moduleNameMapper`` that is not null) -- its tests import sources, no build is needed --
    or None."""
    names = {"vitest": ("vitest.config", "vite.config", "vitest.workspace"), "jest": ("jest.config",)}.get(runner, ())
    for p in tree.files:
        if "/" not in p and p.startswith(names) and _MAPS_SOURCES.search(tree.read(p) or ""):
            return p
    if runner == "jest" and isinstance(pkg.get("jest"), dict) and pkg["jest"].get("moduleNameMapper"):
        return "package.json jest.moduleNameMapper"
    return None


def build_step(tree, pkg: dict, pm: str, runner: str = "") -> BuildStep | None:
    """The build to run before tests (module doc), None when no workspace package needs one,
    the runner maps packages to their sources (`runner_maps_sources`) or the repository names
    no build."""
    reason = unbuilt_entry(tree, pkg)
    if reason is None or runner_maps_sources(tree, pkg, runner):
        return None
    scripts, targets = package_scripts(pkg), makefile_targets(tree)
    for name in recipe()["build"]["dev_targets"]:
        if name in targets:
            return BuildStep(f"make {shlex.quote(name)}", f"Makefile target {name}", reason)
        if name in scripts:
            return BuildStep(run_script(pm, name), f"package.json script {name}", reason)
    ci = _ci_build(tree)
    if ci:
        return BuildStep(ci[0], ci[1], reason)
    if "build" in scripts:
        return BuildStep(run_script(pm, "build"), "package.json script build", reason)
    if "build" in targets:
        return BuildStep("make build", "Makefile target build", reason)
    if tree.exists("lerna.json"):
        return BuildStep("npx --no-install lerna run build", "lerna.json", reason)
    return None


def _specs() -> str:
    return " ".join(shlex.quote(f":(glob,exclude){p}") for p in role("js", "not_built").pathspec_globs())


def tree_id() -> str:
    """Bash printing the git tree id of /testbed's working tree without its test files: the
    index copied to a scratch file, every non-test change added to it (`git add -A`, ignored
    files stay out), `git write-tree`. Committing setup's edits does not change it; a patch to
    a source file does."""
    idx = f"{str(PurePosixPath(BUILD_LOG).parent)}/index"
    return (f"{{ mkdir -p {str(PurePosixPath(idx).parent)} && cp .git/index {idx} && "
            f"GIT_INDEX_FILE={idx} git add -A -- . {_specs()} 2>/dev/null && GIT_INDEX_FILE={idx} git write-tree; }}")


def setup_commands(step: BuildStep) -> list[str]:
    """The setup step: the build, then the tree it built (`tree_id`) recorded in `STATUS_FILE`."""
    d = str(PurePosixPath(STATUS_FILE).parent)
    return [step.command, f"mkdir -p {d} && {tree_id()} > {STATUS_FILE}"]


def rebuild_guard(step: BuildStep) -> str:
    """Bash (ends with ``; ``) that reruns the build in /testbed when the non-test files differ
    from what the setup build saw; its output goes to `BUILD_LOG`, whose tail is printed (with
    ``swemint: build failed``) when it fails -- the tests then run on the old build and fail."""
    log_dir = str(PurePosixPath(BUILD_LOG).parent)
    return (f"if [ \"$({tree_id()})\" != \"$(cat {STATUS_FILE} 2>/dev/null)\" ]; then mkdir -p {log_dir}; "
            f"( {step.command} ) > {BUILD_LOG} 2>&1 || {{ echo 'swemint: build failed'; tail -n 60 {BUILD_LOG}; }}; fi; ")


def snapshot_build(step: BuildStep) -> str:
    """Bash for the compile-once build of a side (`verify.compile_once`): the build, as
    `rebuild_guard` runs it, when the non-test files differ from what `STATUS_FILE` records,
    then -- when it succeeded -- the tree it built recorded there, so `rebuild_guard` in the runs
    from the side's snapshot finds nothing to rebuild. A failed build records nothing (its tail
    is printed; every run rebuilds and reports it). Always exits 0."""
    d, log_dir = str(PurePosixPath(STATUS_FILE).parent), str(PurePosixPath(BUILD_LOG).parent)
    return (f"if [ \"$({tree_id()})\" != \"$(cat {STATUS_FILE} 2>/dev/null)\" ]; then mkdir -p {log_dir} {d}; "
            f"if ( {step.command} ) > {BUILD_LOG} 2>&1; then {tree_id()} > {STATUS_FILE}; "
            f"else echo 'swemint: build failed'; tail -n 60 {BUILD_LOG}; fi; fi; true")
