"""JavaScript/TypeScript: npm, yarn and pnpm projects tested with vitest, jest or mocha.

Analysis (`analyze`, pure: reads the tree only):
- package manager: ``packageManager`` (``pnpm@9.7.0``), else the lockfile (pnpm-lock.yaml,
  yarn.lock -- yarn berry when it has ``__metadata`` or a ``.yarnrc.yml`` --, package-lock.json /
  npm-shrinkwrap.json), else npm without a lockfile;
- Node: a pin (``.nvmrc``, ``.node-version``, ``volta.node``) is used as is; otherwise the CI
  workflow's node-version matrix, else ``engines.node``, each narrowed to the newest LTS of the
  project's era (base commit date; `recipes/node.yaml` ``lts_start``) so a 2022 project gets 16
  or 18, not today's Node; else that era's LTS. Floors always win and are recorded as
  substitutions: package-lock v3 needs npm >= 7 (Node 16), a pnpm/yarn major its own minimum
  (pnpm 9: Node 18.12);
- runner: the one the test scripts name (following ``npm run x`` one level), else the first of
  vitest, jest, mocha in the dependencies; run from the directory that holds its configuration
  (the root, or the touched files' workspace package); karma (`karma`: headless Chromium or
  Firefox from Debian) for touched specs its config's globs list and no Node runner's script
  covers;
- build: in a workspace monorepo whose packages point at build output the tree lacks, the
  repository's own build (`build`: a dev build target, its CI's build step, its ``build``
  script), at setup and again before a side's tests when its patches changed non-test files;
- dependencies the patch or test_patch *adds* to the root package.json (tests run offline, so
  the after side's new packages are installed at setup without touching package.json).

Plan: toolchain image from `envpool.toolchains.node_image.ensure_image`; setup = the package manager
(pnpm at its pinned version), a frozen install (``npm ci``, ``yarn install --frozen-lockfile``,
``pnpm install --frozen-lockfile``), the added packages; test command = only the touched test
files with a machine-readable report (vitest/jest JSON file, mocha JSON on stdout, karma:
swemint's reporter's JSON file).

What runs on each side (the same selection before and after the patch):
- jest (``--runTestsByPath``), vitest and mocha (positional files): the touched test files only;
  a touched fixture (``<dir>/test/fixtures/...``) selects the test files directly in
  ``<dir>/test/`` (babel's fixture runners), so every case those files hold runs;
- karma: the touched spec files (the config's ``files`` entries matching them are replaced by
  them); the whole configured suite when no entry's pattern matches a touched spec.
PASS_TO_PASS is therefore the touched files' other tests, not the package's whole suite. `repair`
answers a lockfile mismatch with a non-frozen install, engine checks with engine-strict off, a
failing lifecycle script with ignore-scripts, a network hiccup with a pause, a locked version the
registry no longer serves (404) with an override to the next published release.

Modules: `manifest` (package.json, package manager, added dependencies, the recipe), `version`
(the Node choice), `runner` (runner, test files, script options), `build` (the workspace build
step), `runner_timeouts` (the runners' per-test time limit), `karma` (the browser route),
`analysis` (`analyze`), `node_plan` (`build_plan`, `test_command`); this package holds the Ecosystem (detect / plan / repair).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from agents.models import Instance
from agents.ecosystems.base import Ecosystem, PlanRequest, PolyPlan, TestSpec
from agents.ecosystems.node.decisions import NodeAnalysis, analyze
from agents.ecosystems.node.manifest import added_dependencies, package_manager, recipe
from agents.ecosystems.node.nested import SubTree, in_folder, nested_project, strip_folder
from agents.ecosystems.node.node_plan import REPORT_PATH, build_plan, test_command
from agents.ecosystems.node.runner import (TEST_EXTS, fixture_test_files, glob_regex, mocha_options, mocha_spec_globs, runner_of,
                                         runner_options, select_test_files)
from agents.ecosystems.node.version import choose_node, ci_node_versions
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig

__all__ = ["ECOSYSTEM", "REPORT_PATH", "TEST_EXTS", "NodeAnalysis", "NodeEcosystem", "added_dependencies", "analyze",
           "build_plan", "choose_node", "ci_node_versions", "fixture_test_files", "glob_regex", "mocha_options", "mocha_spec_globs",
           "package_manager", "recipe", "runner_of", "runner_options", "select_test_files", "test_command"]


def _matches(kind: str, output: str) -> bool:
    return any(re.search(p, output, re.I) for p in recipe()["repairs"][kind])


_MIRROR_UNREACHABLE = re.compile(r"request to https?://(?P<host>[A-Za-z0-9][A-Za-z0-9.-]{0,200})(?::\d+)?/\S* failed, "
                                 r"reason: getaddrinfo (?:ENOTFOUND|EAI_AGAIN)")
_PUBLIC_REGISTRIES = ("registry.npmjs.org", "registry.yarnpkg.com")


def _mirror_fix(output: str) -> list[str] | None:
    """S26: an npm install that fails resolving a registry *mirror* (a project's .npmrc
    ``registry=`` and its lock file's ``resolved`` URLs naming, e.g., registry.npmmirror.com,
    which this host does not reach): the public registry serves the same tarballs (the lock
    file's integrity hashes still check them), so the project's npm config is pointed at it and
    npm rewrites the mirror's host in ``resolved`` URLs (``replace-registry-host``, npm >= 9);
    None when the host is the public registry itself (a network failure: not substitutable)."""
    m = _MIRROR_UNREACHABLE.search(output)
    if m is None or m.group("host").lower() in _PUBLIC_REGISTRIES:
        return None
    return ["npm config set registry https://registry.npmjs.org/ --location=project",
            f"npm config set replace-registry-host {m.group('host')} --location=project",
            f"echo 'swemint: substitute registry.npmjs.org for the registry mirror {m.group('host')} "
            "(unreachable here; same tarballs, the lock file integrity checks them)'"]


_TARBALL_404 = re.compile(r"https?://registry\.(?:npmjs\.org|yarnpkg\.com)/(?P<name>(?:@[\w.-]+/)?[\w.-]+)/-/"
                          r"[\w.-]+?-(?P<ver>\d+\.\d+\.\d+[\w.+-]*?)\.tgz")
_UNFROZEN_INSTALL = {"npm": "npm install --no-audit --no-fund", "pnpm": "pnpm install --no-frozen-lockfile",
                     "yarn": "yarn install --no-frozen-lockfile --non-interactive --network-timeout 600000",
                     "yarn-berry": "yarn install --no-immutable"}


def _unpublished_fix(plan: PolyPlan, output: str) -> list[str] | None:
    """Locked versions the registry answers 404 for (unpublished, or not served by the
    registry this host reaches): each tarball the output names (every one, in order, each
    package once: babel-16130's lockfile names ten 8.0.0-alpha.4 packages) is overridden in the
    root package.json with the lowest published release above it (`recipes/node-unpublished.js`),
    then one install without the frozen lockfile. None when the output names no such tarball."""
    if not re.search(r"\b404\b", output):
        return None
    found: dict[str, str] = {}
    for m in _TARBALL_404.finditer(output):
        found.setdefault(m.group("name"), m.group("ver"))
    if not found:
        return None
    pm = plan.state.get("pm", "npm")
    script = (Path(__file__).parents[1] / "recipes" / "node-unpublished.js").read_text()
    return [*(f"node -e {shlex.quote(script)} {shlex.quote(name)} {shlex.quote(ver)} {shlex.quote(pm)}"
              for name, ver in found.items()), _UNFROZEN_INSTALL.get(pm, _UNFROZEN_INSTALL["npm"])]


def js_regex_literal(text: str) -> str:
    """`text` as a JavaScript regular expression matching it literally (every syntax character
    escaped with a backslash)."""
    return re.sub(r"([\\^$.*+?()\[\]{}|/])", r"\\\1", text)


AVA_SEP = " \u203a "
"""Between the parts of an AVA id (``<file> › <title>``: AVA's ``prefix-title``)."""


def _targeted(plan: PolyPlan, cmd: str) -> PolyPlan:
    """`plan` with the targeted rerun's command `cmd` (same parser, report, files)."""
    return plan.with_test(TestSpec(name=f"{plan.state.get('test_name', 'touched')}:targeted", test_command=cmd,
                                   parser=plan.parser, report_path=plan.report_path,
                                   parser_options=dict(plan.parser_options), test_files=list(plan.test_files)))


class NodeEcosystem(Ecosystem):
    """`agents.ecosystems.base.Ecosystem` for JavaScript/TypeScript (npm, yarn, pnpm)."""

    name = "node"
    languages = ("javascript", "typescript")
    installer = "npm"
    parsers = ("jest_json", "vitest_json", "mocha_json", "ava_tap", "ava_console", "karma_json")
    toolchain_module = "envpool.toolchains.node_image"

    def detect(self, tree, language: str | None) -> int:
        """10 with a root package.json and a JS/TS language hint (or no hint); 6 for a root
        package.json beside another ecosystem's manifest; 2 for a JS/TS hint alone; 3 for a
        package.json below the root only (a nested project, `nested`: S18); else 0."""
        lang = (language or "").lower()
        js = lang in ("javascript", "typescript", "js", "ts", "node", "nodejs")
        if not tree.exists("package.json"):  # S18: a Node project below the root, tried after others
            nested = any(f.endswith("/package.json") and "node_modules/" not in f for f in tree.files)
            return 2 if js else 3 if nested else 0
        if tree.exists("package.json"):
            if js:
                return 10
            if lang:
                return 0 if lang not in ("", "unknown") else 6
            others = ("go.mod", "Cargo.toml", "pom.xml", "build.gradle", "setup.py", "pyproject.toml",
                      "composer.json", "Gemfile", "CMakeLists.txt")
            return 6 if any(tree.exists(o) for o in others) else 10
        return 2 if js else 0

    def language_of(self, tree) -> str:
        """`typescript` with a root tsconfig.json, else `javascript`."""
        return "typescript" if tree.exists("tsconfig.json") else "javascript"

    def install_command(self, packages: list[str], plan: PolyPlan | None = None) -> str:
        """`npm install --no-save` of `packages` (each quoted): the lockfile and package.json stay."""
        return "npm install --no-save --no-audit --no-fund " + " ".join(shlex.quote(p) for p in packages)

    def toolchain(self, requested: str | None, images: ImageConfig):
        """(ToolchainChoice, environment) of a Node image for `requested` (LLM plans)."""
        from envpool.toolchains.node_image import ensure_image

        return ensure_image(requested, images), {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}

    def plan(self, tree, instance: Instance, touched: list[str], images: ImageConfig,
             request: PlanRequest | None = None) -> PolyPlan:
        """Analyse (`analyze`), build or reuse the Node image (`ensure_image`), plan (`build_plan`).
        `request.toolchain` replaces the project's Node request (e.g. `>=14` after a syntax
        error of an older Node). Raises EnvBuildError (no package.json/test file/runner; no Node
        build fits)."""
        from envpool.errors import InfraError
        from envpool.toolchains.node_image import ensure_image
        folder = nested_project(tree, touched)
        view = SubTree(tree, folder) if folder else tree
        a = analyze(view, instance, [p[len(folder) + 1:] for p in touched if p.startswith(folder + "/")]
                    if folder else touched)
        req = request or PlanRequest()
        try:
            choice = ensure_image(req.toolchain.replace(",", " ") if req.toolchain else a.node_request, images)
        except InfraError as e:
            if "satisfies" in e.message:
                raise EnvBuildError(e.message, instance_id=instance.instance_id) from e
            raise
        plan = build_plan(a, choice)
        return in_folder(plan, folder) if folder else plan

    def dependency_layer(self, plan: PolyPlan, tree):
        """Node's dependency tier (`agents.tiers`): the package manager's cache filled from the
        lockfile alone -- ``npm ci --ignore-scripts`` (package-lock.json / npm-shrinkwrap.json) or
        ``yarn install --frozen-lockfile --ignore-scripts`` (yarn v1) -- given only the root
        package.json, the workspaces' package.json files, the lockfile and the root .npmrc /
        .yarnrc: no install script runs, the repository's and its dependencies' alike. Its
        node_modules go with /testbed; the cache stays, so the instance tier's own install (with
        its scripts) takes every package from it. None for pnpm and yarn berry (their stores are
        linked, not copied: nothing would be shared) and without a lockfile (no fixed set)."""
        from agents.ecosystems.base import LayerSpec
        from agents.ecosystems.node.build import workspace_manifests

        pm, lock = plan.state.get("pm"), plan.state.get("lockfile") or ""
        if plan.state.get("folder"):  # a nested project (S18): its manifests are not the root's
            return None
        if pm == "npm" and lock in ("package-lock.json", "npm-shrinkwrap.json"):
            command = "npm ci --ignore-scripts --no-audit --no-fund"
        elif pm == "yarn" and lock == "yarn.lock":
            command = "yarn install --frozen-lockfile --ignore-scripts --non-interactive --network-timeout 600000"
        else:
            return None
        files = sorted({*workspace_manifests(tree), lock, *(f for f in (".npmrc", ".yarnrc") if tree.exists(f))})
        return LayerSpec(name=f"{pm} cache", files=files, commands=[command], env=dict(plan.env))

    def targeted_plan(self, plan: PolyPlan, ids: list[str]) -> PolyPlan | None:
        """`plan` running only the tests `ids` (a targeted rerun, `agents.adaptive`; the files
        still load, and a test not targeted that matches too is not graded from this run:
        `envpool.grading.observed`):
        - Jest and Vitest (``<file> > <describe> > ... > <test>``): ``-t`` (``--testNamePattern``),
          a regular expression matching a full name -- the describe titles and the test's, joined
          by spaces, as both runners name a test -- that ends with one of the targets';
        - mocha (ids: ``fullTitle()``): ``--grep`` of the full titles, escaped, anchored at both
          ends (mocha matches ``--grep`` against ``fullTitle()``; one pattern, as mocha takes one);
        - AVA (ids: ``<file> › <title>`` or the bare title): ``--match`` per target (repeatable;
          a test runs when any matches) in both the TAP run and its console fallback -- AVA
          matches the title without its file prefix, whose length the id does not tell, so every
          tail of the id at a `` › `` is a pattern (the title is one of them; the others can
          only select more), ``*`` is AVA's wildcard (a title holding one selects more), and a
          leading ``!`` (AVA's negation) is preceded by ``*``.
        None for other runners, an id naming a file alone (Jest: a file that failed to load), a
        title over lines, or a test command not of the plan's runner form."""
        runner = plan.state.get("runner", "")
        if runner == "mocha":
            return self._targeted_mocha(plan, ids)
        if runner == "ava":
            return self._targeted_ava(plan, ids)
        from envpool.quoting import shell_word
        from envpool.testrun.polyglot.jest import SEP

        anchor = {"jest": " --json --outputFile=", "vitest": " --reporter=json --outputFile="}.get(runner)
        if not ids or anchor is None or plan.test_command.count(anchor) != 1:
            return None
        names = []
        for i in ids:
            _, sep, rest = i.partition(SEP)
            if not sep or not rest:
                return None
            names.append(js_regex_literal(rest.replace(SEP, " ")))
        pattern = "(?:" + "|".join(sorted(set(names))) + ")$"
        cmd = plan.test_command.replace(anchor, f" -t {shell_word(pattern)}{anchor}", 1)
        return _targeted(plan, cmd)

    @staticmethod
    def _targeted_mocha(plan: PolyPlan, ids: list[str]) -> PolyPlan | None:
        """mocha's targeted rerun (`targeted_plan`): ``--grep '^(?:t1|t2)$'`` before the JSON
        reporter option."""
        from envpool.quoting import shell_word

        anchor = " --reporter json "
        if not ids or plan.test_command.count(anchor) != 1 or any(not i or "\n" in i for i in ids):
            return None
        pattern = "^(?:" + "|".join(js_regex_literal(i) for i in sorted(set(ids))) + ")$"
        return _targeted(plan, plan.test_command.replace(anchor, f" --grep {shell_word(pattern)}{anchor}", 1))

    @staticmethod
    def _targeted_ava(plan: PolyPlan, ids: list[str]) -> PolyPlan | None:
        """AVA's targeted rerun (`targeted_plan`): ``--match`` patterns after ``--tap`` and after
        the console fallback's ``--verbose``."""
        from envpool.quoting import shell_word

        cmd = plan.test_command
        if not ids or cmd.count(" --tap ") != 1 or cmd.count(" --verbose ") > 1 or \
                any(not i or "\n" in i for i in ids):
            return None
        patterns: set[str] = set()
        for i in ids:
            parts = i.split(AVA_SEP)
            for k in range(len(parts)):
                tail = AVA_SEP.join(parts[k:])
                patterns.add(f"*{tail}" if tail.startswith("!") else tail)
        match = " ".join(f"--match {shell_word(p)}" for p in sorted(patterns))
        cmd = cmd.replace(" --tap ", f" --tap {match} ", 1).replace(" --verbose ", f" --verbose {match} ", 1)
        return _targeted(plan, cmd)

    def build_command(self, plan: PolyPlan) -> str | None:
        """Compile once (`verify.compile_once`): the repository's build step (`build.
        snapshot_build`), run once per side in its build container, recording the tree it built
        so that the rebuild guard of every run from the side's snapshot skips the build. None
        without a build step, or when the plan's test command no longer holds its guard."""
        guard, cmd = plan.state.get("rebuild_guard"), plan.state.get("build_command")
        if not guard or not cmd or guard not in plan.test_command:
            return None
        return cmd

    def next_moves(self, ctx) -> list:
        """A `ci_command` move for a stalled Jest round (`agents.moves`): the runner started
        through the package's own ``test`` script (`plan.script_command`), whose wrappers, Node
        flags and environment then apply -- the runner called bare is a class of failure ("Cannot
        use import statement outside a module" when the script adds ES-module flags)."""
        from agents.ecosystems.move_types import Move
        from agents.ecosystems.node.node_plan import script_command

        cmd = script_command(ctx.plan)
        if cmd is None or any(t.test_command == cmd for t in ctx.tried):
            return []
        spec = ctx.plan.test_spec().model_copy(update={"name": "script", "test_command": cmd})
        return [Move(kind="ci_command", serves="the runner called bare", test=spec,
                     evidence=f"package.json script {ctx.plan.state.get('script')!r} runs {ctx.plan.state.get('runner')}; "
                              f"{ctx.why}"[:600])]

    def repair(self, plan: PolyPlan, command: str, output: str, tried: set[str]) -> list[str] | None:
        """Fixes for a failed install step (see the module doc); None when none applies."""
        fix: list[str] | None = None
        cd, command = strip_folder(plan, command)
        if _matches("unfrozen", output):
            if command.startswith("npm ci"):
                fix = ["npm install --no-audit --no-fund"]
            elif "pnpm install" in command:
                fix = ["pnpm install --no-frozen-lockfile"]
            elif "yarn install --immutable" in command:
                fix = ["yarn install --no-immutable"]
            elif "yarn install" in command:
                fix = ["yarn install --no-frozen-lockfile --non-interactive --network-timeout 600000"]
        if fix is None:
            fix = _unpublished_fix(plan, output)
        if fix is None and _matches("engines", output):
            fix = ["npm config set engine-strict false", "yarn config set ignore-engines true >/dev/null 2>&1 || true"]
        if fix is None and _matches("peer_deps", output) and "npm " in command:
            fix = ["npm config set legacy-peer-deps true"]
        if fix is None and command.startswith("npm "):
            fix = _mirror_fix(output)
        if fix is None and _matches("network", output):
            fix = ["sleep 15"]
        if fix is None and _matches("scripts", output):
            fix = ["npm config set ignore-scripts true",
                   "yarn config set ignore-scripts true >/dev/null 2>&1 || true"]
        fix = [cd + c for c in fix] if fix is not None else None
        if fix is None or "\n".join(fix) in tried:
            return None
        return fix


ECOSYSTEM = NodeEcosystem()
"""The object `agents.ecosystems` registers (module name ``node``)."""
