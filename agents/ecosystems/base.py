"""The contract between the flow and one ecosystem (Python, Node, Go, Rust, Java, C/C++, PHP, Ruby, Lua).

An ecosystem is knowledge (rules plus its data file) behind one class, `Ecosystem`. Its
capabilities are declared attributes; its hooks are methods, each with a documented default, so a
small ecosystem overrides `detect`, `plan` and `repair` and nothing else, and a reader sees the
whole contract here. The flow (`agents.flow`) and the other agents call these methods and never
ask an ecosystem for a hook by name; they own everything else: sandboxes, laying out /testbed, the
repair chain beyond the ecosystem's own rules (memory, LLM), committing images, patches, reruns,
grading, and the loop back to planning. Ecosystems never start containers besides building their
toolchain image.

Declared capabilities (class attributes):

| attribute         | meaning                                                           | default      |
|-------------------|-------------------------------------------------------------------|--------------|
| `name`            | stored in plans and trajectories (`recipe:<name>:<n>` steps)      | required     |
| `languages`       | the row languages it serves (swemint's vocabulary is their union) | `(name,)`    |
| `test_path_rules` | the test-path rule sets (by language) that say which files are tests | `languages` |
| `installer`       | its package installer (`uv`, `npm`): `install_command` answers     | None         |
| `takes_test_args` | its plans have a place for runner arguments (`PlanRequest.test_args`) | False     |
| `tools`           | the memory's `toolchain` actions whose tool constrains its plans  | `(name,)`    |
| `memory_actions`  | memory action kinds only it executes (`request_action`)           | none         |
| `adapts`          | `adapt` is its own adaptation of a pooled environment (EnvPatch)  | False        |
| `parsers`         | the report parsers its plans name (`envpool.testrun.registry`)    | none         |
| `toolchain_module`| the module that builds its toolchain images (`envpool.toolchains[.*]`, Python's `envpool.images`; checked by the contract test, not looked up by the flow) | "" |
| `repair_hint`     | what an LLM repairing its environment should know (a sentence)    | ""           |

Hooks (methods; the default in brackets): `detect` [0], `plan` [EnvBuildError], `repair` [None],
`routes` [one route named after the ecosystem], `language_of` [the first of `languages`],
`toolchain` [EnvBuildError], `plan_from_spec` [the LLM's commands on `toolchain`'s image],
`build` [Execution's generic `run_setup`], `adapt` [the same on the candidate's image],
`run_tests` [`agents.ecosystems.runs.run_plan_tests`], `aborted_exit_codes` [none],
`targeted_plan` [None], `build_command` [None], `stored_test_command`
[`agents.ecosystems.runs.stored_test_command`], `portable_paths` [none], `dockerfile_files`
[none], `diagnose` [None], `install_command` [None], `request_action` [`pin`/`install` through
`install_command`], `dependency_layer` [None], `next_moves` [none], `added_tests` [none],
`package_version` [None], `context_facts` [None], `executes` [the shared memory-action kinds, `install`/`pin`
with an `installer`, `test_arg`, `toolchain` of `tools`, `memory_actions`], `snapshot_env` [no
variables for the compile-once snapshots].

Registering an ecosystem is one name in `agents.ecosystems.ECOSYSTEM_MODULES`; the records it
exchanges with the agents (`Plan`, `TestSpec`, `PlanRequest`, ...) live in
`agents.ecosystems.plans` and are re-exported here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from agents.ecosystems.plans import (PYTEST_PARSER, LayerSpec, Plan, PlanRequest, PolyPlan, RepoFacts, Route,
                                     TestSpec, is_pytest, shell_args)
from agents.gitrepo import GitTree
from agents.models import Instance
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig

if TYPE_CHECKING:
    from agents.diagnosis import Diagnosis
    from agents.ecosystems.move_types import Move, MoveContext
    from agents.ecosystems.runs import BuildJob, SetupOutcome, TestRun

__all__ = ["PYTEST_PARSER", "Ecosystem", "LayerSpec", "Plan", "PlanRequest", "PolyPlan", "RepoFacts", "Route",
           "TestSpec", "is_pytest", "shell_args"]

SHARED_ACTIONS = frozenset({"shell", "env", "apt"})
"""Memory action kinds every ecosystem's build executes (`agents.execution.action_commands`)."""


class Ecosystem:
    """One ecosystem's rules behind the contract of this module (its docstring lists the declared
    capabilities and every hook with its default). Subclasses set `name` and override what they
    know; `languages`, `tools` and `test_path_rules` default to `(name,)` / `languages`."""

    name: ClassVar[str] = ""
    languages: ClassVar[tuple[str, ...]] = ()
    test_path_rules: ClassVar[tuple[str, ...]] = ()
    installer: ClassVar[str | None] = None
    takes_test_args: ClassVar[bool] = False
    tools: ClassVar[tuple[str, ...]] = ()
    memory_actions: ClassVar[frozenset[str]] = frozenset()
    adapts: ClassVar[bool] = False
    parsers: ClassVar[tuple[str, ...]] = ()
    toolchain_module: ClassVar[str] = ""
    repair_hint: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.name and not cls.languages:
            cls.languages = (cls.name,)
        if cls.name and not cls.tools:
            cls.tools = (cls.name,)
        if not cls.test_path_rules:
            cls.test_path_rules = cls.languages

    # -- what the tree is -----------------------------------------------------------------------

    def detect(self, tree: GitTree, language: str | None) -> int:
        """0 when the tree is not this ecosystem's; higher = surer (manifest at the root: 10).
        `language`: the row's language, when it names one. Default: 0."""
        return 0

    def routes(self, tree: GitTree, language: str | None) -> list[Route]:
        """The build routes known for this tree, best first; a route with `available=False`
        names what is missing ("Ant build, no route"). Default: one route named after the
        ecosystem."""
        return [Route(name=self.name or "default")]

    def language_of(self, tree: GitTree) -> str:
        """The row language of a tree claimed without a row language. Default: the first of
        `languages`."""
        return self.languages[0]

    def package_version(self, tree: GitTree) -> str | None:
        """The version the project's own packaging declares at this commit (the pool's
        `same_version` key, `agents.reuse.derive_version`, before the nearest tag). Default: None
        (the tag decides)."""
        return None

    # -- planning ---------------------------------------------------------------------------

    def plan(self, tree: GitTree, instance: Instance, touched: list[str], images: ImageConfig,
             request: PlanRequest | None = None) -> Plan:
        """The plan for `instance` whose test_patch touches the paths `touched` (repository
        relative), honouring `request`. Raises `envpool.errors.EnvBuildError` naming the cause
        when no plan can work here (a registry that cannot be reached, no toolchain that fits).
        Default: EnvBuildError (an ecosystem that cannot plan)."""
        raise EnvBuildError(f"the {self.name} ecosystem has no planner", instance_id=instance.instance_id)

    def toolchain(self, requested: str | None, images: ImageConfig) -> tuple[Any, dict[str, str]]:
        """(`envpool.toolchains.ToolchainChoice`, environment) of a toolchain image at least
        `requested` (a version constraint or None: the newest), for plans the LLM proposes.
        Default: EnvBuildError (no toolchain outside the ecosystem's own planning)."""
        raise EnvBuildError(f"{self.name} cannot build a toolchain for an LLM plan")

    def plan_from_spec(self, spec: Any, tree: GitTree, instance: Instance, images: ImageConfig) -> Plan:
        """A plan proposed by the LLM (`agents.setup.LLMPlanSpec`: toolchain, setup commands, test
        command and parser) on this ecosystem's toolchain image. Default: the proposal as is, on
        `toolchain(spec.toolchain)`'s image. Raises EnvBuildError when no toolchain fits."""
        try:
            choice, env = self.toolchain(spec.toolchain, images)
        except EnvBuildError as e:
            if e.instance_id:
                raise
            raise EnvBuildError(e.message, instance_id=instance.instance_id) from e
        return Plan(ecosystem=self.name, toolchain=choice.version if choice.version.startswith(self.name)
                    else f"{self.name} {choice.version}", image=choice.image, route=choice.route, build="llm",
                    substitutions=list(choice.substitutions), setup_commands=list(spec.setup_commands), env=dict(env),
                    test_command=spec.test_command, parser=spec.parser, report_path=spec.report_path,
                    test_files=list(spec.test_files), notes=[f"llm plan: {spec.reason[:300]}"],
                    state={"test_name": "llm"})

    def dependency_layer(self, plan: Plan, tree: GitTree) -> LayerSpec | None:
        """The dependency tier of `plan`'s environment (`agents.tiers`): what installs the
        project's dependencies from its manifests and lockfiles alone, with no code of the
        repository present, so the layer may be shared by every repository with the same key.
        Default: None, no dependency tier (the instance tier is built on the toolchain image, as
        for C/C++ with no package manager)."""
        return None

    # -- building -------------------------------------------------------------------------------

    def build(self, job: BuildJob) -> SetupOutcome:
        """Run the whole setup of `job.plan` in `job.sb` (Python: its uv builder, whose repairs
        need the installer's state). Default: Execution's generic runner (`job.run_setup`: the
        plan's setup and post commands with the repair chain)."""
        if job.run_setup is None:
            raise ValueError("a build job without Execution's run_setup")
        return job.run_setup(job)

    def adapt(self, job: BuildJob, candidate: Any) -> SetupOutcome:
        """Make a pooled environment of another instance (`candidate`, an EnvRecord) fit this
        one, in a sandbox of its image whose /testbed holds this instance's tree. Only called
        with `adapts` set is this the ecosystem's own (EnvPatch); default: the plan's setup
        commands rerun on the candidate's caches (`job.run_setup`)."""
        if job.run_setup is None:
            raise ValueError("a build job without Execution's run_setup")
        return job.run_setup(job)

    def repair(self, plan: Plan, command: str, output: str, tried: set[str]) -> list[str] | None:
        """Commands to run after setup `command` failed with `output` (then the command is
        retried), or None. `tried`: repairs already applied in this build (never repeat).
        Default: None (the flow's memory and LLM repairs remain)."""
        return None

    def diagnose(self, text: str) -> Diagnosis | None:
        """Ecosystem knowledge about a failure's cause in `text` (a step's or a run's output),
        asked before the shared rules of `agents.diagnosis`. Default: None."""
        return None

    def install_command(self, packages: list[str], plan: Plan | None = None) -> str | None:
        """The command installing `packages` with the ecosystem's `installer` (memory `install` /
        `pin` actions, a missing module Verification names); `plan` may bound it (Python: the
        instance's date). Default: None (no installer)."""
        return None

    def request_action(self, request: PlanRequest, action: Any) -> str | None:
        """Change `request` (in place) for a memory action before planning
        (`agents.memory.before`) whose kind is `pin`, `install` or one of `memory_actions`; the
        change as text, or None when it means nothing here. Default: `pin` / `install` as a post
        command of `install_command`."""
        if action.kind not in ("pin", "install"):
            return None
        reqs = [action.requirement] if action.kind == "pin" else list(action.packages)
        cmd = self.install_command(reqs)
        if cmd is None:
            return None
        request.post.append(cmd)
        return f"{action.kind} {' '.join(reqs)}"

    def executes(self, action: Any) -> bool:
        """Whether some executor of this ecosystem runs memory `action` (`agents.execution.
        executable`): the shared kinds; `install` / `pin` with an `installer`; `test_arg` where
        plans take runner arguments; `toolchain` for one of `tools`; else `memory_actions`."""
        kind = action.kind
        if kind in SHARED_ACTIONS:
            return True
        if kind in ("install", "pin"):
            return self.installer is not None
        if kind == "test_arg":
            return self.takes_test_args
        if kind == "toolchain":
            return action.tool in self.tools
        return kind in self.memory_actions

    def portable_paths(self, plan: Plan) -> list[str]:
        """Absolute folders of an environment worth copying into a build on another toolchain
        version (downloads, not builds: Go's module cache). Default: none."""
        return []

    def dockerfile_files(self) -> dict[str, bytes]:
        """Files the environment's Dockerfile writes into the image (path -> content: Python's
        pytest report plugin). Default: none."""
        return {}

    # -- testing -------------------------------------------------------------------------------

    def run_tests(self, sb: Any, plan: Plan, *, timeout: float, known_tests: set[str] | None = None,
                  log_label: str = "tests", per_test_timeout: float | None = None,
                  env: dict[str, str] | None = None) -> TestRun:
        """Run T once in `sb` (/testbed, patches applied): `timeout` seconds for the run,
        `per_test_timeout` for one test, `env` the run's environment (default `plan.env`),
        `known_tests` the other runs' ids. Default: `agents.ecosystems.runs.run_plan_tests`."""
        from agents.ecosystems.runs import run_plan_tests

        return run_plan_tests(sb, plan, timeout=timeout, known_tests=known_tests, log_label=log_label, env=env)

    def aborted_exit_codes(self, plan: Plan) -> frozenset[int]:
        """Exit codes with which `plan`'s runner says it stopped before reaching any test (pytest:
        3 internal error, 4 usage error): a before side that only ends so is `tests_not_run`
        (`agents.verification.judge`). Default: none."""
        return frozenset()

    def targeted_plan(self, plan: Plan, ids: list[str]) -> Plan | None:
        """`plan` narrowed to the test ids `ids` (a targeted rerun), or None when the runner
        cannot select single tests, or not these (the rerun is then full). Default: None."""
        return None

    def scoped_plan(self, plan: Plan, run) -> Plan | None:
        """`plan` with the test command the first before run `run` (an `agents.ecosystems.runs.
        TestRun`) chose for every later run and the row, when `plan`'s test command is a probe
        that picks its own scope (Java's `scope_probe`); None otherwise. Default: None."""
        return None

    def build_command(self, plan: Plan) -> str | None:
        """The compile-once command of `plan`: compiles what the test command would and runs no
        test (`verify.compile_once`). Default: None."""
        return None

    def snapshot_env(self, plan: Plan) -> dict[str, str]:
        """Environment added to every test run started from a compile-once snapshot of `plan`
        (`verify.compile_once`): settings telling the build tool that the tree is built (the
        snapshot's build compiled it after the side's patches), never part of the row's test
        command. Default: none."""
        return {}

    def stored_test_command(self, plan: Plan, command: str, per_test_timeout: float | None = None) -> str:
        """The runner part of the row's `test_command` from the `command` a run used (the flow
        puts the test files back first: `envpool.testrun.published`). Default:
        `agents.ecosystems.runs.stored_test_command`."""
        from agents.ecosystems.runs import stored_test_command

        return stored_test_command(plan, command, per_test_timeout)

    def added_tests(self, test_patch: str) -> list[str]:
        """Names of the tests the test_patch adds, as they appear in this ecosystem's test ids (a
        googletest ``Suite.Name``), so the loop sees a test that no run reached
        (`agents.moves.never_ran`). Default: none."""
        return []

    def next_moves(self, ctx: MoveContext) -> list[Move]:
        """The generic next moves this ecosystem can feed with data when a round gave nothing to
        grade (the build that owns the touched path, the CI's command, options that gate tests,
        the whole suite, discovery after the test_patch, scripts and make targets graded by exit
        status; `agents.ecosystems.move_types`). Default: none."""
        return []

    # -- memory ---------------------------------------------------------------------------------

    def context_facts(self, plan: Plan) -> RepoFacts | None:
        """What the ecosystem read of the repository for `plan` beyond the shared profile (its
        test framework, configuration files, declared dependencies, flags), for the memory's
        context of the repository. Default: None (the shared profile alone)."""
        return None
