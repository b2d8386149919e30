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

Modules: `cargo_manifest` (analysis), `rust_versions` (the toolchain floor), `cargo_tests`
(selection, features), `cargo_setup` (setup commands and repairs), `cargo_git` (git
dependencies), `rust_recipe` (the data file `rust.yaml`); this package holds the Ecosystem.
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
from agents.ecosystems.debian import era_time
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig
from envpool.toolchains import version_key
from agents.ecosystems.rust import cargo_limits
from agents.ecosystems.rust.rust_recipe import RustRecipe, load_recipe
from agents.ecosystems.rust.cargo_setup import (CRATE_NAME, CRATE_VERSION, MEMBERS_NOTE, RESUME_MARK, ROOT_NOTE,
                                                _budgeted, _cd, _cd_root, _manifest_hunks, _proxy_target,
                                                cargo_stubs, git_fixes, root_bins_build)
from agents.ecosystems.rust.cargo_manifest import CargoProject, Package, _join, analyze, cargo_root
from agents.ecosystems.rust.rust_versions import VERSION_RULES, above_installable, stable_rust_at, toolchain_request
from agents.ecosystems.rust.cargo_tests import CargoCi, Gate, Selection, cargo_ci, features_for, file_gate, select_tests


__all__ = ["CargoCi", "CargoProject", "ECOSYSTEM", "Gate", "Package", "RESUME_MARK", "RustEcosystem", "RustRecipe",
           "analyze", "cargo_ci", "cargo_stubs", "features_for", "file_gate", "load_recipe", "select_tests",
           "stable_rust_at", "toolchain_request"]

MULTI_FILTER_RUST = (1, 52)
"""The first Rust whose libtest takes several name filters (``cargo test -- a b``; one before)."""


class RustEcosystem(Ecosystem):
    """`agents.ecosystems.base.Ecosystem` for cargo projects (module doc: the rules)."""

    name = "rust"
    languages = ("rust",)
    takes_test_args = True
    parsers = ("cargo_test",)
    toolchain_module = "envpool.toolchains.rust_image"

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
        from envpool.toolchains.rust_image import available_versions, ensure_image

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
        bound, rv_flag, rv_subs = above_installable(project, request, reasons, choice.version)
        subs += rv_subs
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
        # the per-test limit: a watchdog as cargo's test runner (`agents.ecosystems.rust.cargo_limits`)
        own = cargo_limits.own_runner(tree, project.root)
        if own is None:
            setup.append(cargo_limits.install_command())
        else:
            reasons.append(f"{own} sets a cargo runner: its tests run without swemint's per-test limit")
        for sel in sels:
            flags = " ".join(sel.base_flags) or _proxy_target(project, sel.package, tree)
            setup.append(cd + _budgeted(f"cargo test --no-run{rv_flag} -p {shlex.quote(sel.package.name)}"
                                        f"{feature_args[sel.package.name]} {flags}"))
        bins = root_bins_build(project, [s.package for s in sels])
        bins = bins and bins + rv_flag
        if bins:
            setup.append(cd + _budgeted(bins))
            reasons.append("the root package's binaries are built for the tested members' tests (a member's "
                           "test support may exec target/debug/<bin>; cargo builds a package's bins only for "
                           "its own tests)")
        extra = "".join(f" {a}" for a in shell_args(req.test_args))
        runs = [f"CARGO_NET_OFFLINE=true cargo test --no-fail-fast{rv_flag}{extra} -p {shlex.quote(s.package.name)}"
                f"{feature_args[s.package.name]} {' '.join(s.flags)} 2>&1" for s in sels]
        rebuild = f"CARGO_NET_OFFLINE=true {bins} 2>&1 | tail -n 3; " if bins else ""
        limit = cargo_limits.runner_prefix() if own is None else ""
        test_command = f"{cd}{limit}{rebuild}" + "; ".join(runs)
        # compile once (`build_command`): the same targets with --no-run (doc tests cannot be
        # compiled ahead; arguments after a `--` belong to the test binaries)
        bextra = "" if "--" in shell_args(req.test_args) else extra
        builds = [f"CARGO_NET_OFFLINE=true cargo test --no-run{rv_flag}{bextra} -p {shlex.quote(s.package.name)}"
                  f"{feature_args[s.package.name]} {' '.join(f for f in s.flags if f != '--doc')} 2>&1"
                  for s in sels if [f for f in s.flags if f != "--doc"] or not s.flags]
        build_state = {"build_command": f"{cd}{rebuild}" + "; ".join(builds) + "; true",
                       "build_for": test_command} if builds else {}
        # targeted reruns (`targeted_plan`): the same cargo runs, libtest's exact-name filters appended
        build_state["cargo_runs"] = {"prefix": f"{cd}{limit}{rebuild}", "runs": [r[: -len(" 2>&1")] for r in runs],
                                     "for": test_command}
        if bound:  # a failure for the toolchain's version names the substitute (`agents.flow`): no retry helps
            build_state["toolchain_bound"] = bound
            build_state["toolchain_bound_rules"] = list(VERSION_RULES)
        notes = [*reasons, MEMBERS_NOTE + ",".join(p.name for p in project.packages),
                 f"{ROOT_NOTE}/{project.root}", f"Cargo.lock: {'v' + str(project.lock_version) if project.lock_version else ('yes' if project.has_lock else 'no')}"]
        return PolyPlan(ecosystem=self.name, toolchain=f"rust {choice.version}", image=choice.image,
                        route=choice.route, substitutions=subs, setup_commands=setup, env=env,
                        test_command=test_command, parser="cargo_test", parser_options={"no_fail_fast": True},
                        test_files=[
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

    def targeted_plan(self, plan: PolyPlan, ids: list[str]) -> PolyPlan | None:
        """`plan` running only the tests `ids` (a targeted rerun, `agents.adaptive`): each of the
        plan's ``cargo test`` runs with libtest's ``--exact`` filters, one per id (libtest ids
        are the names libtest matches; every target of the run is still started, and reports the
        others as filtered out). Several filters need libtest from Rust 1.52; before it, only one
        id is targeted. None for a plan made without its runs recorded, another test command (an
        LLM's, a move's), or several ids on an older Rust (the rerun is then full)."""
        from envpool.quoting import shell_word

        rec = plan.state.get("cargo_runs") or {}
        if not ids or rec.get("for") != plan.test_command or not rec.get("runs"):
            return None
        m = re.search(r"(\d+)\.(\d+)", plan.toolchain)
        if len(ids) > 1 and (m is None or (int(m.group(1)), int(m.group(2))) < MULTI_FILTER_RUST):
            return None
        names = " ".join(shell_word(i) for i in ids)
        runs = [f"{r} {'' if ' -- ' in f'{r} ' else '-- '}--exact {names} 2>&1" for r in rec["runs"]]
        return plan.with_test(TestSpec(name=f"{plan.state.get('test_name', 'touched')}:targeted",
                                       test_command=rec["prefix"] + "; ".join(runs), parser=plan.parser,
                                       report_path=plan.report_path, parser_options=dict(plan.parser_options),
                                       test_files=list(plan.test_files)))

    def portable_paths(self, plan: PolyPlan) -> list[str]:
        """Folders whose content does not depend on the toolchain's version (`agents.seed`):
        cargo's registry (index, downloaded crates and their sources)."""
        return ["/root/.cargo/registry"]

    def toolchain(self, requested: str | None, images: ImageConfig):
        """(ToolchainChoice, environment) of a Rust image at least `requested` (LLM plans)."""
        from envpool.toolchains.rust_image import ensure_image

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

