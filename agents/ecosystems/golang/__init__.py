"""Go projects: analysis, toolchain floor, setup and the `go test -json` selection.

Analysis (`analyze`): every go.mod of the tree (vendor/ and testdata/ excluded) with its module
path, `go` and `toolchain` lines and whether `vendor/modules.txt` is there; the folders holding
`*_test.go` files (at the base commit plus those the test_patch adds); for repositories without
a go.mod (GOPATH era) the import path (the `// import "..."` comment of a root file, else
`github.com/<owner>/<name>`), vendored sources and dep/glide/govendor lock files.

Toolchain (`go_request`): the newest of the `go` and `toolchain` lines of the modules whose
packages are tested; `envpool.toolchains.golang_image.ensure_image` picks the oldest Go at least
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
vendor/modules.txt); `go mod download` (a module version the proxy refuses -- a `replace` to a
fork that lives only on GitHub -- replaced by an empty local module: `download_step`, S23); modules the test_patch and patch need (applied to a
scratch copy) downloaded too, so the after side runs offline; `go list -deps -test` of the
selected packages (strict: every import must resolve); their test binaries compiled once with
``-run '^$'`` (lenient: a package that does not build at the base commit is still tested).
Test runs resolve modules from the download cache setup filled (`OFFLINE_PROXY`), not the proxy.
A cgo package (touched, or imported by a touched one) whose ``#cgo`` directives name a path in the
repository that the checkout lacks -- ``${SRCDIR}/../cpp/cmake-build-release/libfoo.a``, a library
the repository's own CMake project or Makefile builds (S31, `go_cgo`) -- does not build on
either side; the loop's move (`next_moves`, kind ``owner_build``, request option ``cgo_native``)
plans that build as setup steps before the packages are listed (`agents.ecosystems.cfamily.
c_library`), checks that it produced each library, and brings the library up to date before
each test run.
GOPATH mode (no go.mod, vendored sources): the repository is linked at
``$GOPATH/src/<import path>`` and tested there with GO111MODULE=off. No go.mod and no vendored
sources: `go mod init` (which converts dep/glide/govendor lock files into requirements at the
pinned revisions, on Go < 1.22) and the missing requirements resolved by the Go proxy.

Modules: `go_modules` (analysis and the Go it asks for), `go_tests` (selection, tags),
`go_setup` (setup commands), `go_cgo` (the libraries cgo packages link that the repository
builds), `go_recipe` (the data file `go.yaml`); this package holds the Ecosystem.
"""

from __future__ import annotations

import base64
import posixpath
import re
import shlex
from agents.gitrepo import GitTree
from agents.models import Instance
from agents.ecosystems.base import Ecosystem, PlanRequest, PolyPlan, TestSpec, shell_args
from agents.ecosystems.toolchain import constrained
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig
from envpool.quoting import shell_word
from envpool.testrun.limits import per_test
from envpool.testrun.polyglot.golang import split_go_id
from agents.ecosystems.golang.go_recipe import GoRecipe, load_recipe
from agents.ecosystems.golang.go_tests import (_buildable, added_tests, BUILD_FAILED_TO_JSON, REPORT_PATH, _patch_blocks, changed_tests,
                                               ci_go_tags, constraint_tags, gated_tags, run_pattern, select_packages,
                                               touched_tests)
from agents.ecosystems.golang.go_modules import (GO_MANIFESTS, GoModule, GoProject, _skipped, analyze,
                                                 anonymous_go_mods, go_request, lock_pins, parse_go_mod)
from agents.ecosystems.golang.go_setup import (MAX_INLINE_PATCH, download_step, OFFLINE_PROXY, _abs, _cd, _module_runs,
                                               compile_step, overlay_guard)
from agents.ecosystems.golang.go_cgo import native_moves, native_of


__all__ = ["BUILD_FAILED_TO_JSON", "ECOSYSTEM", "GoEcosystem", "GoModule", "GoProject", "GoRecipe", "OFFLINE_PROXY",
           "REPORT_PATH", "_cd", "_module_runs", "analyze", "changed_tests", "ci_go_tags", "compile_step",
           "constraint_tags", "gated_tags", "go_request", "load_recipe", "lock_pins", "overlay_guard",
           "parse_go_mod", "run_pattern", "select_packages", "touched_tests"]

class GoEcosystem(Ecosystem):
    """`agents.ecosystems.base.Ecosystem` for Go (module doc: the rules)."""

    name = "go"
    languages = ("go",)
    takes_test_args = True
    parsers = ("go_test_json",)
    toolchain_module = "envpool.toolchains.golang_image"

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
        from envpool.toolchains.golang_image import GO_ENV, available_gos, ensure_image

        recipe = load_recipe()
        iid = instance.instance_id
        added = [p for p in touched if not tree.exists(p)]
        proj = analyze(tree, extra_files=added, repo=instance.repo)
        sel = select_packages(proj, touched)
        notes = []
        tags, why = gated_tags(tree, instance.test_patch, touched)
        sel, elsewhere = _buildable(tree, instance, sel, tags)
        if elsewhere:
            notes.append("left out, no file builds for linux/amd64 (build constraints): " + ", ".join(elsewhere))
            if not sel:
                raise EnvBuildError("the touched Go packages build only for other platforms (no file of "
                                    f"{', '.join(elsewhere[:5])} builds for linux/amd64)", instance_id=iid)
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
        if tags:  # TAG_NAME-validated
            flags += f" -tags={','.join(tags)}"
            reasons += why
        setup: list[str] = []
        runs: list[str] = []
        deps_state: list[str] = []
        tests: dict[str, set[str] | None] = {}
        native = native_of(tree, instance, proj, sel, tags) if req.options.get("cgo_native") else None
        if native is not None:
            notes += [f"S31: {native.evidence}" if native.builds else
                      "S31 asked: no cgo directive of these packages names a missing path a build of the repository "
                      "produces", *native.notes]
        if gopath:
            setup, runs, mode_notes = self._gopath(proj, sel[""], env, flags)
            setup = (native.commands if native else []) + setup
            notes += mode_notes
        else:
            vendored = all(m.vendored for m in proj.modules if m.dir in sel)
            setup.append(f"go env -w GOFLAGS={'-mod=vendor' if vendored else '-mod=mod'} && go version && go env GOFLAGS")
            for mdir in sel:
                if not vendored:
                    setup.append(download_step(mdir))
            if not vendored:  # the dependency tier (`dependency_layer`): what needs only go.mod / go.sum
                deps_state = list(setup)
            setup += self._prefetch(instance, sel, flags)
            setup += native.commands if native else []  # S31: the libraries the cgo packages link
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
        rebuild = f"{native.rebuild}; " if native and native.rebuild else ""
        test_command = f"{rebuild}{OFFLINE_PROXY}: > {REPORT_PATH}; " + "; ".join(
            f"{r} | {BUILD_FAILED_TO_JSON} >> {REPORT_PATH}" for r in runs)
        notes = [*reasons, *notes, "packages: " + "; ".join(f"/{d}: {' '.join(p)}" for d, p in sel.items())]
        alts = []
        state: dict = {"test_name": "touched" if recipe.run_touched_tests else "packages"}
        if deps_state:
            state["dependency_commands"] = deps_state
        if not gopath:  # module folder -> module path: where a targeted rerun runs a package
            state["go_modules"] = {m.dir: m.path for m in proj.modules if m.dir in sel}
        state["go_flags"] = flags
        if native is not None:  # S31 asked: the move is not offered again
            state["cgo_native"] = {"evidence": native.evidence[:2000],
                                   "outputs": [p for b in native.builds for p in b.outputs]}
            state["library_rebuild"] = native.rebuild
            state["library_steps"] = list(native.commands)
        if tests and any(names for names in tests.values()):  # T2: the other selection
            other = {} if recipe.run_touched_tests else tests
            cmd = "; ".join(f"{r} | {BUILD_FAILED_TO_JSON} >> {REPORT_PATH}"
                            for m, pkgs in sel.items() for r in _module_runs(m, pkgs, other, flags))
            alts.append(TestSpec(name="packages" if recipe.run_touched_tests else "touched",
                                 test_command=f"{rebuild}{OFFLINE_PROXY}: > {REPORT_PATH}; {cmd}", parser="go_test_json",
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

    def next_moves(self, ctx) -> list:
        """S31's move (`go_cgo.native_moves`): a cgo package's library the repository builds
        with its own CMake project or Makefile, planned as setup steps (kind `owner_build`)."""
        return native_moves(ctx) if ctx.plan.ecosystem == self.name else []

    def added_tests(self, test_patch: str) -> list[str]:
        """The test functions the test_patch adds (`go_tests.added_tests`): a round none of whose
        runs reached one stalled (`agents.moves.never_ran`)."""
        return added_tests(test_patch)

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
        rebuild = plan.state.get("library_rebuild") or ""
        cmd = f"{rebuild + '; ' if rebuild else ''}{OFFLINE_PROXY}: > {REPORT_PATH}; " + "; ".join(runs)
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
        from envpool.toolchains.golang_image import GO_ENV, ensure_image

        return ensure_image(requested, images), dict(GO_ENV)

    def repair(self, plan: PolyPlan, command: str, output: str, tried: set[str]) -> list[str] | None:
        """The first recipe repair whose pattern matches `output` and was not tried, else None.
        A module that needs a newer Go than the image is not repairable here (the setup error
        keeps Go's own message: "requires go >= X (running go Y; GOTOOLCHAIN=local)")."""
        guard = overlay_guard(output)
        if guard and "\n".join(guard) not in tried:
            return guard
        if plan is not None and command in (plan.state.get("library_steps") or []):
            from agents.ecosystems.cfamily import package_repair  # S31: the library's own configure

            fix = package_repair(output, tried)
            if fix:
                return fix
        for rule in load_recipe().repairs:
            if re.search(rule.pattern, output, re.M) and "\n".join(rule.commands) not in tried:
                return list(rule.commands)
        return None


ECOSYSTEM = GoEcosystem()

