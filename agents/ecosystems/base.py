"""The seam between the flow and one ecosystem (Python, Node, Go, Rust, Java, C/C++, PHP, Ruby).

An ecosystem is knowledge (rules plus the data in `recipes/`) behind three required calls:
`detect` (does this tree belong to me, how surely), `plan` (the triple B, P, T: toolchain
image, setup commands, test configuration) and `repair` (a fix for a failed setup step). The
flow (`agents.flow`) owns everything else: sandboxes, laying out /testbed, the repair chain
beyond the ecosystem's own rules (memory, LLM), committing images, patches, reruns, grading,
and the loop back to planning. Ecosystems never start containers besides building their
toolchain image.

Optional hooks (looked up with `getattr`, so a small ecosystem implements only the three calls;
`hook(eco, name)` returns the one to call):

- `languages: tuple[str, ...]` -- the row languages it serves, in swemint's vocabulary
  (`agents.models.LANGUAGES`); default `(name,)`.
- `routes(tree, language) -> list[Route]` -- the build routes it knows for this tree, best
  first; a route with `available=False` names what is missing ("Ant build, no route").
  Default: one route named after the ecosystem.
- `language_of(tree) -> str` -- the language of a tree claimed without a row language.
- `build(job) -> SetupOutcome` -- run the whole setup itself (Python: its uv builder, whose
  repairs need the installer's state); default: `agents.execution` runs `plan.setup_commands`
  (`job.run_setup`, which a `build` hook may call for the commands it does not own).
- `run_tests(sb, plan, timeout, known_tests, log_label) -> TestRun` -- run T once (Python: the
  pytest runner with swemint's report plugin); default `agents.ecosystems.runs.run_plan_tests`.
- `stored_test_command(plan, command, per_test_timeout=None) -> str` -- the runner part of the
  row's `test_command` (the flow puts the test files back first: `envpool.testrun.published`).
- `adapt(job, candidate) -> SetupOutcome` -- make a pooled environment of another instance fit
  this one (EnvPatch); default: the plan's setup commands rerun on the candidate's caches.
- `diagnose(text) -> Diagnosis | None` -- ecosystem knowledge about a failure's cause, before
  the shared rules in `agents.diagnosis`.
- `install_command(packages) -> str` -- the ecosystem's installer, for memory `install`/`pin`
  actions and for a missing module Verification names.
- `apply_action(plan, action) -> bool` -- memory actions only this ecosystem can apply.
- `plan_from_spec(spec, tree, instance, images) -> Plan` -- a plan proposed by the LLM
  (`agents.setup.LLMPlanSpec`) on this ecosystem's toolchain.
- `dependency_layer(plan, tree) -> LayerSpec | None` -- the dependency tier of `plan`'s
  environment (`agents.tiers`): what installs the project's dependencies from its manifests and
  lockfiles alone, with no code of the repository present, so the layer may be shared by every
  repository with the same key. Default (`dependency_layer`): None, no dependency tier (the
  instance tier is built on the toolchain image, as for C/C++ with no package manager).
- `next_moves(ctx: agents.ecosystems.moves.MoveContext) -> list[agents.ecosystems.moves.Move]` -- the generic next
  moves this ecosystem can feed with data when a round gave nothing to grade (the build that
  owns the touched path, the CI's command, options that gate tests, the whole suite, discovery
  after the test_patch, scripts and make targets graded by exit status); default: none.
- `added_tests(test_patch) -> list[str]` -- names of the tests the test_patch adds, as they
  appear in this ecosystem's test ids (a googletest ``Suite.Name``), so the loop sees a test
  that no run reached (`agents.moves.never_ran`); default: none.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from agents.debindex import Need
from agents.gitrepo import GitTree
from agents.models import Instance
from envpool.images import ImageConfig


class TestSpec(BaseModel):
    """One test configuration T: the command (empty for runners the ecosystem drives itself,
    e.g. pytest), the parser that reads its report, and what it selects.

    - `name`: which rule made it (`touched`, `folders`, `packages`, `llm`, ...).
    - `test_command`: bash run in /testbed under `network=none`; its exit code is not a verdict.
    - `report_path`: a file it writes that the parser reads (None: its combined output).
    - `parser`: a name in `envpool.testrun.registry.PARSERS`: `PYTEST_PARSER` for
      pytest (run by the ecosystem's `run_tests` hook; `is_pytest`).
    - `test_files`: the files (or units) it selects, repository relative.
    """

    __test__ = False
    model_config = ConfigDict(extra="forbid")
    name: str = "touched"
    test_command: str = ""
    parser: str
    report_path: str | None = None
    parser_options: dict = Field(default_factory=dict)
    test_files: list[str] = Field(default_factory=list)


class Plan(BaseModel):
    """What an ecosystem decided for one instance: the base image B, the setup script P and the
    first test configuration T (inline, as rows store it), plus alternatives for T.

    - `image`: toolchain image tag (from `envpool.toolchains.<eco>.ensure_image`).
    - `setup_commands`: bash commands run in order in /testbed on the bridge network (each under
      `timeouts.setup_step` seconds); a non-zero exit fails the build unless a repair fixes it.
      They must leave everything the tests need inside the image, because tests run offline.
      `post_commands`: run after them (and after an ecosystem's own `build`): what memory and
      feedback add (installs, pins).
    - `env`: environment for setup *and* test runs.
    - `test_command` / `parser` / `report_path` / `parser_options` / `test_files`: T (see TestSpec).
    - `route`: how the toolchain image was made (`official`, `debootstrap`, `debian`, ...);
      `build`: the build route of the candidate plan (`maven`, `cmake`, `uv`, ...).
    - `language`: the row language the plan is for (swemint's vocabulary).
    - `test_alternatives`: further test configurations, tried in order when T finds nothing.
    - `needs`: what the tests need that the image may lack, read at analysis time (a test
      driver's `You need tcl 8.5 or newer`: command tclsh); Execution answers them from Debian's
      file index and installs the packages before the setup commands (`agents.debindex`).
      `ci_packages`: Debian package names the project's CI installs for those tests, installed
      with them where this suite has them.
    - `state`: ecosystem-private facts its hooks need later (JSON-able).
    """

    model_config = ConfigDict(extra="forbid")
    ecosystem: str
    toolchain: str
    image: str
    route: str = "debootstrap"
    build: str = ""
    language: str = ""
    substitutions: list[str] = Field(default_factory=list)
    setup_commands: list[str] = Field(default_factory=list)
    post_commands: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    test_command: str = ""
    parser: str
    report_path: str | None = None
    parser_options: dict = Field(default_factory=dict)
    test_files: list[str] = Field(default_factory=list)
    test_alternatives: list[TestSpec] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    needs: list[Need] = Field(default_factory=list)
    ci_packages: list[str] = Field(default_factory=list)
    state: dict[str, Any] = Field(default_factory=dict)

    def test_spec(self) -> TestSpec:
        """The inline T as a TestSpec (named after the first alternative's absence: `touched`)."""
        return TestSpec(name=self.state.get("test_name", "touched"), test_command=self.test_command,
                        parser=self.parser, report_path=self.report_path,
                        parser_options=dict(self.parser_options), test_files=list(self.test_files))

    def with_test(self, spec: TestSpec) -> Plan:
        """A copy whose inline T is `spec`."""
        return self.model_copy(update={
            "test_command": spec.test_command, "parser": spec.parser, "report_path": spec.report_path,
            "parser_options": dict(spec.parser_options), "test_files": list(spec.test_files),
            "state": {**self.state, "test_name": spec.name}}, deep=True)


PolyPlan = Plan
"""The name `Plan` had when only languages other than Python used it."""


class LayerSpec(BaseModel):
    """The dependency tier an ecosystem asks for (hook `dependency_layer`): run in a container of
    the plan's toolchain image whose /testbed holds only `files` (repository paths, copied with
    their content from the tree: manifests, lockfiles) and `stubs` (repository paths created
    empty: a source file a manifest names, e.g. cargo's `src/lib.rs`, so the manifest parses).
    `commands` run in order in /testbed with `env`; they must leave what they install outside
    /testbed (caches, a virtualenv): /testbed is emptied before the layer is committed.

    `content`: text given in place of the tree's for some of `files` (a manifest reduced to what
    the install reads: Go's go.mod without the repository's own module path), so repositories
    that differ only there get the same layer; the Dockerfile writes it as given.

    `resolved`: a command printing the resolved dependency set after `commands` (Python:
    `uv pip freeze`); when given, the layer is keyed by that output instead of by the inputs
    (`files`, `stubs`, `commands`, `env`), so two instances whose commands differ only in ways
    that resolve the same (another date bound) share it. `name`: a short label (`go modules`).
    The instance tier then runs the plan's own setup on top of the layer, unchanged: the
    commands of a layer must be ones the plan's setup would leave as they are (a module
    download, a fetch into the cache, a virtualenv with the toolchain packages).
    """

    model_config = ConfigDict(extra="forbid")
    name: str
    files: list[str] = Field(default_factory=list)
    stubs: list[str] = Field(default_factory=list)
    content: dict[str, str] = Field(default_factory=dict)
    commands: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    resolved: str | None = None


def dependency_layer(eco: object, plan: Plan, tree: GitTree) -> LayerSpec | None:
    """`eco.dependency_layer(plan, tree)`, or None when the ecosystem declares no dependency tier
    (the default: no layer is shared across repositories)."""
    fn = hook(eco, "dependency_layer")
    return fn(plan, tree) if fn else None


class Route(BaseModel):
    """A build route an ecosystem knows for a tree (`maven`, `gradle`, `ant`, `cmake`, ...).
    `available=False`: recognised but not buildable here; `reason` says what is missing."""

    model_config = ConfigDict(extra="forbid")
    name: str
    available: bool = True
    reason: str = ""


class PlanRequest(BaseModel):
    """What the loop asks of the next plan: the adjustments memory and feedback made.

    - `route`: the build route to plan (None: the ecosystem's best).
    - `toolchain`: a constraint on the toolchain version (`>=3.11`, `<1.16`, `11`, `bookworm`);
      every ecosystem with a version choice honours it or raises EnvBuildError naming it.
    - `avoid`: toolchain versions already tried and rejected for a version reason.
    - `apt` / `env` / `pre` / `post`: Debian packages, environment, commands before and after the
      ecosystem's setup commands (applied by `agents.setup`, the same for every ecosystem).
    - `test_args`: arguments for the test runner (ecosystems that have a place for them).
    - `options`: ecosystem options (Python: `uv_lift` packages, `no_build_isolation`).
    - `reasons`: why each adjustment was made (memory entry id, feedback), for the trajectory.
    """

    model_config = ConfigDict(extra="forbid")
    route: str | None = None
    toolchain: str | None = None
    avoid: list[str] = Field(default_factory=list)
    apt: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    pre: list[str] = Field(default_factory=list)
    post: list[str] = Field(default_factory=list)
    test_args: list[str] = Field(default_factory=list)
    options: dict[str, Any] = Field(default_factory=dict)
    reasons: list[str] = Field(default_factory=list)

    def empty(self) -> bool:
        """True when nothing is asked beyond the ecosystem's own choices."""
        return self == PlanRequest()


class Ecosystem(Protocol):
    """One ecosystem's rules (required part; see the module docstring for the optional hooks).
    `name` is stored in plans and trajectories (`recipe:<name>:<n>` steps)."""

    name: str

    def detect(self, tree: GitTree, language: str | None) -> int:
        """0 when the tree is not this ecosystem's; higher = surer (manifest at the root: 10)."""
        ...

    def plan(self, tree: GitTree, instance: Instance, touched: list[str], images: ImageConfig,
             request: PlanRequest | None = None) -> Plan:
        """The plan for `instance` whose test_patch touches the paths `touched` (repository
        relative), honouring `request`. Raises `envpool.errors.EnvBuildError` naming the cause
        when no plan can work here (a registry that cannot be reached, no toolchain that fits)."""
        ...

    def repair(self, plan: Plan, command: str, output: str, tried: set[str]) -> list[str] | None:
        """Commands to run after setup `command` failed with `output` (then the command is
        retried), or None. `tried`: repairs already applied in this build (never repeat)."""
        ...


PYTEST_PARSER = "pytest_channel"
"""The parser of pytest rows: swemint's report plugin, its frames read by
`envpool.testrun.parsers.parse_pytest_channel` (the row's `test_command` prints them)."""


def is_pytest(parser: str) -> bool:
    """Whether `parser` names pytest's report (`pytest_channel`, or the older `pytest_plugin`)."""
    return parser in (PYTEST_PARSER, "pytest_plugin")


def hook(eco: object, name: str):
    """The optional hook `name` of `eco`, or None."""
    return getattr(eco, name, None)


def languages_of(eco: object) -> tuple[str, ...]:
    """The row languages `eco` serves (`languages`, default its `name`)."""
    return tuple(getattr(eco, "languages", None) or (getattr(eco, "name", ""),))


def routes_of(eco: object, tree: GitTree, language: str | None) -> list[Route]:
    """`eco.routes(tree, language)`, or one available route named after the ecosystem."""
    fn = hook(eco, "routes")
    return list(fn(tree, language)) if fn else [Route(name=getattr(eco, "name", "default"))]


def plan_with(eco: Ecosystem, tree: GitTree, instance: Instance, touched: list[str], images: ImageConfig,
              request: PlanRequest | None) -> Plan:
    """`eco.plan(...)` with `request`; an ecosystem whose `plan` takes no request (a test double)
    is called without it."""
    import inspect

    try:
        takes = "request" in inspect.signature(eco.plan).parameters
    except (TypeError, ValueError):
        takes = False
    return eco.plan(tree, instance, touched, images, request=request) if takes else \
        eco.plan(tree, instance, touched, images)


def shell_args(args: list[str]) -> list[str]:
    """Test arguments (memory `test_arg` actions, requests) as shell-quoted tokens: each string is
    split like a shell would (`-Da=1 -Db=2` is two arguments), every token quoted; a string that
    does not split (an unbalanced quote) is one quoted token."""
    import shlex

    out: list[str] = []
    for a in args:
        try:
            parts = shlex.split(a)
        except ValueError:
            parts = [a]
        out += [shlex.quote(p) for p in parts]
    return out
