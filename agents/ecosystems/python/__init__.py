"""Python behind the same contract as every other ecosystem (`agents.ecosystems.base.Ecosystem`).

Modules: `profile` (the packaging profile: python_requires, extras, requirement files, tox, CI
conda files...; the package version and the memory's facts), `python_plan` (interpreter by era, uv
options, test pins), `builder` (the uv builder and its repair rules), `selection` (which tests
pytest runs), `python_envpatch` (a pooled environment made to fit another commit), `submodules` (git
submodules the mirror lacks). This package holds the Ecosystem:

- `plan`: the interpreter that fits the commit's era among those this host provides and that
  satisfy the request's constraint (`PlanRequest.toolchain`, e.g. `>=3.11` after a touched test
  was skipped for its version), its toolchain image, T = pytest on the touched test modules
  (alternative: their test folders); on a `driver:<id>` route (a Django-style
  ``tests/runtests.py`` the project's CI or tox.ini runs) T is that driver on the touched test
  modules (alternative: their packages), parsed by `unittest_log`; a driver whose role is an
  alternative (SymPy's ``bin/test``, parser `sympy_test_log`) is the uv route's second test
  configuration, tried when pytest runs nothing (old SymPy trees do not import under pytest);
- hooks: `build` (the uv builder: what it discovers while installing -- lifted date bounds,
  isolation, crashing packages -- needs the installer's state, so it runs the setup itself, with
  the flow's repair helper for what its rules miss), `run_tests` (pytest with swemint's report
  plugin; `aborted_exit_codes` 3/4), `stored_test_command`, `adapt` (EnvPatch: `adapts`),
  `install_command` (`uv pip install` under the instance's date bound) and `request_action`
  (memory pins, `uv_lift`, `uv_option`), `plan_from_spec` (an LLM plan's test files and commands),
  `package_version` and `context_facts` (from the packaging profile),
  `dependency_layer` (the virtualenv with its date-bounded toolchain packages and the pinned
  requirement files, keyed by what it resolved to: `agents.tiers`).

Python's dependency tier holds only what needs no code of the repository: the virtualenv with its
toolchain packages and the pinned lines of the requirement files whose every line is pinned
(`pinned`). Dependencies declared in code (setup.py) or by range are resolved with the project
(`uv pip install -e .[test] -r ...`) in the instance tier, as before; that install finds the
pinned ones already there.
"""

from __future__ import annotations

import re
import shlex

from agents.ecosystems.base import PYTEST_PARSER, Ecosystem, Plan, PlanRequest, RepoFacts, Route, TestSpec, is_pytest
from agents.ecosystems.drivers import driver_tests, find_drivers, driver_test_specs
from agents.ecosystems.python.profile import PythonProfile, analyze_python
from agents.ecosystems.python.python_plan import (PY, REPAIR_HINT, PythonChoice, choose_python, lifted_date, pretend_version,
                                           runtime_env)
from agents.ecosystems.python.selection import configure_python_tests, test_folders
from agents.ecosystems.runs import SetupOutcome, TestRun, run_plan_tests, stored_test_command
from agents.ecosystems.toolchain import allowed
from agents.gitrepo import GitTree
from agents.models import Instance
from envpool import images
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig

__all__ = ["ECOSYSTEM", "PYTHON_MARKERS", "PythonEcosystem"]

PYTHON_MARKERS = frozenset({"setup.py", "setup.cfg", "pyproject.toml"})
"""Root files that make a tree without a `language` hint a Python project."""



RUNTIME_KEEP = ("SETUPTOOLS_SCM_PRETEND_VERSION",)
"""Build variables the tests need too: a project that computes its version with setuptools_scm
at import (astropy 5's `astropy/version.py`) gets 0.0.0 in a mirror without tags, and plugins
that compare it (pytest-astropy-header) then import modules of astropy < 3."""


def run_environment(build_env: dict[str, str]) -> dict[str, str]:
    """The environment of test runs (and the image's ENV): `runtime_env()` plus the variables
    of `RUNTIME_KEEP` the build set."""
    return {**runtime_env(), **{k: build_env[k] for k in RUNTIME_KEEP if k in build_env}}


class PythonEcosystem(Ecosystem):
    """`agents.ecosystems.base.Ecosystem` for pip/uv-installable (or plain) Python repositories."""

    name = "python"
    languages = ("python",)
    installer = "uv"
    takes_test_args = True
    memory_actions = frozenset({"uv_lift", "uv_option"})
    adapts = True
    parsers = (PYTEST_PARSER, "unittest_log", "sympy_test_log")
    toolchain_module = "envpool.images"
    repair_hint = REPAIR_HINT

    def detect(self, tree: GitTree, language: str | None) -> int:
        """20 with `language: python` or, without a language, a setup.py / setup.cfg /
        pyproject.toml at the root (Python wins over a package.json beside it); 1 for any other
        tree without a language (the last resort); 0 when the row names another language."""
        lang = (language or "").lower()
        if lang:
            return 20 if lang == "python" else 0
        return 20 if tree.file_set & PYTHON_MARKERS else 1

    def routes(self, tree: GitTree, language: str | None) -> list[Route]:
        """`uv` (uv installs into a virtualenv, pytest runs the tests), after the repository's own
        test drivers (`driver:<id>`, e.g. a Django-style ``tests/runtests.py``: unittest with a
        settings module, which pytest cannot run) when the project uses one
        (`agents.ecosystems.drivers.find_drivers`)."""
        return [Route(name=d.route) for d in find_drivers(tree, self.name) if d.spec.role == "route"] + \
            [Route(name="uv")]

    def plan(self, tree: GitTree, instance: Instance, touched: list[str], images_cfg: ImageConfig,
             request: PlanRequest | None = None) -> Plan:
        """Interpreter, toolchain image and T (module doc). Raises EnvBuildError when no Python
        here satisfies the request's constraint."""
        request = request or PlanRequest()
        tests = configure_python_tests(instance.test_patch).test_files
        profile = analyze_python(tree)
        available = images.available_pythons(images_cfg)
        fits = allowed(available, request.toolchain, request.avoid)
        if not fits:
            raise EnvBuildError(f"no Python here satisfies {request.toolchain!r} (available: {', '.join(available)};"
                                f" tried: {', '.join(request.avoid) or 'none'})", instance_id=instance.instance_id)
        choice = choose_python(profile, instance.created, fits)
        if request.toolchain:
            choice.substitutions.append(f"python {request.toolchain} asked for ({'; '.join(request.reasons)[:200]})")
        image = images.ensure_python_image(choice.version, images_cfg)
        folders = test_folders(tree, instance.test_patch)
        alts = [TestSpec(name="folders", parser=PYTEST_PARSER, test_files=folders)] \
            if folders and folders != tests else []
        driver = self._driver(tree, request.route, touched, instance.instance_id)
        plan = Plan(ecosystem=self.name, toolchain=choice.version, image=image, route=images_cfg.route, build="uv",
                    language="python", substitutions=list(choice.substitutions), env=runtime_env(),
                    parser=PYTEST_PARSER, test_files=tests, test_alternatives=alts,
                    notes=[f"python {choice.version} (ideal {choice.ideal}), date bound {choice.exclude_newer}"],
                    state={"profile": profile.model_dump(), "choice": choice.model_dump(),
                           "version": pretend_version(instance, tree, profile.package_version),
                           "lifted": lifted_date(choice.version, instance.created),
                           "test_args": list(request.test_args), "repo": instance.repo,
                           "created": instance.created.isoformat() if instance.created else None,
                           "options": {**request.options, **({"pytest_floor": True} if request.toolchain else {})},
                           "caches": {"uv": "/root/.cache/uv"}})
        if driver is None:
            # a driver the project uses whose role is an alternative (SymPy's bin/test): tried
            # right after the first pytest configuration, in the same environment
            extra = [sp for d in find_drivers(tree, self.name) if d.spec.role == "alternative"
                     for sp in driver_test_specs(d, driver_tests(d, touched), interpreter=PY)]
            if extra:
                plan.test_alternatives = [*extra, *plan.test_alternatives]
                plan.notes.append("test drivers as alternatives: " + ", ".join(sp.test_command[:80] for sp in extra))
            return plan
        specs = driver_test_specs(driver, driver_tests(driver, touched), interpreter=PY)
        plan = plan.with_test(specs[0])
        plan.test_alternatives = specs[1:]
        plan.build = driver.route
        plan.state["driver"] = driver.spec.id
        plan.notes.append(f"test driver {driver.path} (used by {', '.join(driver.evidence[:3])})")
        return plan

    def _driver(self, tree: GitTree, route: str | None, touched: list[str], iid: str):
        """The driver a `driver:<id>` route names, or None for the uv route. Raises EnvBuildError
        when it is gone or the test patch touches none of its tests."""
        if not route or not route.startswith("driver:"):
            return None
        driver = next((d for d in find_drivers(tree, self.name) if d.route == route), None)
        if driver is None:
            raise EnvBuildError(f"python: {route}: no such driver here", instance_id=iid)
        if not driver_tests(driver, touched):
            raise EnvBuildError(f"python: {route}: the test patch touches none of its tests "
                                f"({', '.join(touched[:5])})", instance_id=iid)
        return driver

    def repair(self, plan: Plan, command: str, output: str, tried: set[str]) -> list[str] | None:
        """None: Python's rules live in its builder (`build`), which knows the installer's state."""
        return None

    # -- hooks ------------------------------------------------------------------------------
    @staticmethod
    def _facts(plan: Plan) -> tuple[PythonProfile, PythonChoice, str | None]:
        return (PythonProfile.model_validate(plan.state["profile"]), PythonChoice.model_validate(plan.state["choice"]),
                plan.state.get("version"))

    def build(self, job):
        """The uv builder in `job.sb` (repository at /testbed): the request's commands first,
        then the venv, toolchain, project and test dependencies with repairs, the collect probe,
        then the plan's post commands. Returns a `SetupOutcome`; the request's commands run
        through Execution's generic runner (`job.run_setup`)."""
        from agents.diagnosis import diagnose
        from agents.ecosystems.python.builder import PythonEnvBuilder

        plan = job.plan
        pre: list[str] = []
        if plan.setup_commands:
            first = job.run_setup(_only(job, plan.setup_commands))
            if not first.ok:
                return first
            pre = first.commands
        profile, choice, version = self._facts(plan)
        cfg = job.config
        builder = PythonEnvBuilder(job.sb, job.tree, profile, choice, job.instance.created, version,
                                   step_timeout=cfg.timeouts.setup_step, on_step=job.traj, helper=job.helper,
                                   rule_repairs=cfg.policy != "llm", install_rounds=cfg.repair.install_rounds,
                                   probe_rounds=cfg.repair.probe_rounds, repo=job.instance.repo)
        options = plan.state.get("options") or {}
        builder.apply_options(options)
        setup = builder.build([] if plan.state.get("driver") else plan.test_files,  # pytest cannot collect a driver's tests
                              base_ready=job.dependency is not None)
        for req in options.get("install", []) if setup.ok else []:
            builder.uv_install(shlex.quote(req), "memory:before-plan")
        post_ok = True
        for cmd in plan.post_commands if setup.ok else []:
            post_ok &= builder.run(cmd, "post").ok
        failed = [(s.command, s.exit_code or 0) for s in setup.steps if s.exit_code not in (0, None) and s.command]
        env = {**setup.env, **plan.env}
        if setup.ok and post_ok:
            return SetupOutcome(ok=True, commands=pre + setup.commands, env=env, test_env=run_environment(setup.env),
                                failed=failed, installed_packages=setup.installed_packages, reason=setup.reason)
        reason = setup.reason if not setup.ok else "a post-setup command failed: " + builder.steps[-1].command[:200]
        return SetupOutcome(ok=False, commands=pre + setup.commands, env=env, failed=failed, reason=reason,
                            diagnosis=diagnose(builder.steps[-1].output_excerpt if builder.steps else "", self.name,
                                               plan.toolchain))

    def dependency_layer(self, plan: Plan, tree: GitTree):
        """Python's dependency tier (`agents.tiers`): the builder's `base_commands` (the virtualenv,
        the toolchain packages under the instance's uv flags, the era's ABC shim), then the pinned
        lines of the requirement files the builder reads whose every line is pinned
        (`agents.ecosystems.python.pinned`: ``-r``/``-c`` includes followed; an editable, local, VCS,
        URL or unpinned line leaves its file to the instance tier) installed with ``uv pip install
        -r`` under the same flags -- written out by the command itself: no file of the tree, no
        setup.py or pyproject build of the project runs here. Keyed by the resolved set
        (`RESOLVED_COMMAND`: `uv pip freeze` and the .pth files), so instances whose pins and date
        bounds resolve alike share it; the spec without the pins is its `fallback` (a pin with no
        wheel for the interpreter fails the install: the instance tier's builder then skips it as
        before). None when the plan runs commands before the builder (`setup_commands`: they came
        first in the sandbox) or installs build requirements first."""
        from datetime import datetime

        from agents.ecosystems.base import LayerSpec
        from agents.ecosystems.python.builder import REQUIREMENT_FILES, RESOLVED_COMMAND, PythonEnvBuilder
        from agents.ecosystems.python.pinned import install_command as pinned_install
        from agents.ecosystems.python.pinned import pinned_requirements
        from agents.ecosystems.python.python_plan import SKIP_TEST_DEPS

        if plan.setup_commands or "profile" not in plan.state or "created" not in plan.state:
            return None
        profile, choice, _ = self._facts(plan)
        created = datetime.fromisoformat(plan.state["created"]) if plan.state.get("created") else None
        builder = PythonEnvBuilder(None, tree, profile, choice, created, None, repo=plan.state.get("repo", ""))
        builder.apply_options(plan.state.get("options") or {})
        commands = builder.base_commands()
        if not commands:
            return None
        venv = LayerSpec(name=f"python {choice.version} virtualenv", commands=commands, env=dict(builder.env),
                         resolved=RESOLVED_COMMAND)
        pins = pinned_requirements(tree, profile.requirement_files[:REQUIREMENT_FILES], choice.version, builder.own,
                                   SKIP_TEST_DEPS)
        if not pins.requirements:
            return venv
        return venv.model_copy(update={
            "name": f"python {choice.version} virtualenv + pinned {', '.join(pins.files)}"[:200],
            "commands": [*commands, pinned_install(pins, builder.uv.flags())], "fallback": venv,
            "requested": list(pins.requirements)})

    def run_tests(self, sb, plan: Plan, *, timeout: float, known_tests=None, log_label: str = "tests",
                  per_test_timeout: float | None = None, env: dict[str, str] | None = None) -> TestRun:
        """pytest on `plan.test_files` with swemint's report plugin over the authenticated
        channel (exact node ids), checked against JUnit XML and the `-rA` log of the same run;
        the trust rule's findings are the run's `anomalies` (`tampered`: only tampering explains them).
        A plan whose parser is not pytest's (a repository test driver) runs its command
        (`agents.ecosystems.runs.run_plan_tests`) in the plan's environment; `env` is not used."""
        from envpool.testrun.pytest_runner import run_pytest_detailed

        if not is_pytest(plan.parser):
            return run_plan_tests(sb, plan, timeout=timeout, known_tests=known_tests, log_label=log_label)

        run = run_pytest_detailed(sb, plan.test_files, python=PY, timeout=timeout, per_test_timeout=per_test_timeout,
                                  log_label=log_label, extra_args=list(plan.state.get("test_args", [])))
        return TestRun(report=run.report, anomalies=list(run.anomalies), tampered=list(run.tampered),
                       command=run.command, output_tail=run.output_tail)

    def aborted_exit_codes(self, plan: Plan) -> frozenset[int]:
        """pytest's exit 3 (internal error) and 4 (usage error: a plugin or option it does not
        know) say it reached no test; none for a test driver's plan."""
        return frozenset({3, 4}) if is_pytest(plan.parser) else frozenset()

    def targeted_plan(self, plan: Plan, ids: list[str]) -> Plan | None:
        """`plan` running only the pytest node ids `ids` (a targeted rerun: pytest takes node ids
        where it takes files). None for a plan whose parser is not pytest's (a test driver) or an
        id that is not a node id of one of the plan's test files."""
        if not is_pytest(plan.parser) or not ids:
            return None
        files = set(plan.test_files)
        if any("::" not in i or (files and i.split("::", 1)[0] not in files) for i in ids):
            return None
        return plan.model_copy(update={"test_files": sorted(set(ids))}, deep=True)

    def stored_test_command(self, plan: Plan, command: str, per_test_timeout: float | None = None) -> str:
        """The pytest part of the row's `test_command` (`envpool.testrun.pytest_runner.row_command`:
        one line, its run folder fixed, the plugin's frames on stdout for `pytest_channel`)."""
        from envpool.testrun.pytest_runner import row_command

        if not is_pytest(plan.parser):
            return stored_test_command(plan, command, per_test_timeout)
        return row_command(command, per_test_timeout)

    def dockerfile_files(self) -> dict[str, bytes]:
        """swemint's pytest report plugin, written into the Dockerfile's image."""
        from agents.envimage import plugin_files

        return plugin_files()

    def adapt(self, job, candidate):
        """EnvPatch (`envpatch.EnvPatch`) in a sandbox of `candidate`'s image whose /testbed holds
        this instance's tree: sync the project and its dependencies, probe the tests, repair
        within `reuse.patch_rounds`. The candidate's interpreter is kept."""
        from agents.ecosystems.python.builder import PythonEnvBuilder
        from agents.ecosystems.python.python_envpatch import EnvPatch

        profile, _, version = self._facts(job.plan)
        choice = choose_python(profile, job.instance.created, [candidate.interpreter or "3.11"])
        cfg = job.config
        builder = PythonEnvBuilder(job.sb, job.tree, profile, choice, job.instance.created, version,
                                   step_timeout=cfg.timeouts.setup_step, on_step=job.traj, helper=job.helper,
                                   rule_repairs=cfg.policy != "llm", repo=job.instance.repo)
        patch = EnvPatch(builder, rounds=cfg.reuse.patch_rounds)
        ok = patch.run(job.plan.test_files, job.instance.test_patch)
        return SetupOutcome(ok=ok, commands=list(patch.commands), env=dict(patch.builder.env),
                            test_env=run_environment(patch.builder.env), reason=patch.reason)

    def install_command(self, packages: list[str], plan: Plan | None = None) -> str:
        """`uv pip install` of `packages` into /opt/venv, under the instance's lifted date bound
        when `plan` gives one; an import name (`yaml`, `PIL.Image`) becomes its distribution."""
        from agents.ecosystems.python.builder import IMPORT_TO_DIST

        lifted = plan.state.get("lifted") if plan is not None else None
        bound = f" --exclude-newer {shlex.quote(lifted)}" if lifted else ""
        dists = [IMPORT_TO_DIST.get(p) or IMPORT_TO_DIST.get(p.split(".")[0]) or
                 (p.split(".")[0].replace("_", "-") if re.fullmatch(r"[A-Za-z_][\w.]*", p) else p) for p in packages]
        return f"uv pip install --python {PY}{bound} " + " ".join(shlex.quote(p) for p in dict.fromkeys(dists))

    def request_action(self, request: PlanRequest, action) -> str | None:
        """Memory actions before planning: `pin` / `install` -> the builder installs them after the
        project (`options["install"]`, the date bound kept); `uv_lift` -> the package's date bound
        lifted; `uv_option` `no_build_isolation` -> uv builds without isolation."""
        kind = action.kind
        if kind in ("pin", "install"):
            reqs = [action.requirement] if kind == "pin" else list(action.packages)
            request.options.setdefault("install", [])
            request.options["install"] += [r for r in reqs if r not in request.options["install"]]
            return f"{kind} {' '.join(reqs)}"
        if kind == "uv_lift":
            request.options.setdefault("uv_lift", [])
            if action.package in request.options["uv_lift"]:
                return None
            request.options["uv_lift"].append(action.package)
            return f"uv lift {action.package}"
        if kind == "uv_option" and action.option == "no_build_isolation" and \
                not request.options.get("no_build_isolation"):
            request.options["no_build_isolation"] = True
            return "uv no_build_isolation"
        return None

    def package_version(self, tree: GitTree) -> str | None:
        """The version setup.py / setup.cfg / pyproject declare at the commit when it reads
        `X.Y...`, else `__version__` in a top-level module (`package_version_of`)."""
        from agents.ecosystems.python.profile import package_version_of

        return package_version_of(tree)

    def context_facts(self, plan: Plan) -> RepoFacts | None:
        """The packaging profile the plan holds (`state["profile"]`) as the memory's facts
        (`agents.ecosystems.python.profile.memory_facts`); None without one."""
        from agents.ecosystems.python.profile import memory_facts

        if not plan.state.get("profile"):
            return None
        return memory_facts(PythonProfile.model_validate(plan.state["profile"]))

    def plan_from_spec(self, spec, tree: GitTree, instance: Instance, images_cfg: ImageConfig) -> Plan:
        """A plan from an LLM proposal: this ecosystem's plan on the proposed interpreter, T =
        pytest on the proposed test files, the proposed commands after the builder's setup."""
        plan = self.plan(tree, instance, list(spec.test_files), images_cfg,
                         PlanRequest(toolchain=spec.toolchain or None, reasons=["llm plan"]))
        plan = plan.with_test(TestSpec(name="llm", parser=PYTEST_PARSER, test_files=list(spec.test_files)))
        plan.post_commands = list(spec.setup_commands)
        plan.notes.append(f"llm plan: {spec.reason[:300]}")
        return plan


def _only(job, commands: list[str]):
    """A copy of `job` whose plan runs only `commands` (the request's apt / pre commands)."""
    import dataclasses

    return dataclasses.replace(job, plan=job.plan.model_copy(update={"setup_commands": list(commands),
                                                                      "post_commands": []}))


ECOSYSTEM = PythonEcosystem()
"""The object `agents.ecosystems` registers (package name ``python``)."""
