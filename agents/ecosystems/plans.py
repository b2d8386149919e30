"""The records an ecosystem and the agents that drive it exchange: the plan (B, P, T), a test
configuration, the request the loop makes of the next plan, a build route, the dependency tier an
ecosystem asks for and the facts it adds to the memory's context of a repository.

They sit below the ecosystem contract (`agents.ecosystems.base.Ecosystem`, which re-exports
them) so the modules that contract's defaults use (`agents.ecosystems.runs`, `.moves`) can name
them without a cycle.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agents.debindex import Need
from agents.ecosystems.service_need import ServiceNeed


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
    - `services`: the servers the CI provides for the tests (a database, a cache;
      `agents.ecosystems.ci_services`), provided in the test container
      (`agents.ecosystems.service_provision`: installed at setup, started before each test run).
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
    services: list[ServiceNeed] = Field(default_factory=list)
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
    `uv pip freeze`); when given, the layer is keyed by its stdout instead of by the inputs
    (`files`, `stubs`, `commands`, `env`), so two instances whose commands differ only in ways
    that resolve the same (another date bound) share it. `name`: a short label (`go modules`).
    `fallback`: a smaller spec tried when one of `commands` fails (Python: the virtualenv without
    the pinned requirements, one of which may have no wheel for the interpreter).
    `requested`: what the repository asked the layer for (Python: its pinned requirement lines),
    part of a `resolved` key too: the resolved set is what the build left, and code that ran in
    the build (a pinned sdist's setup.py) can leave more than it lists -- write a sitecustomize
    and remove its own distribution's record -- so that a layer of other requests resolves alike
    and would be shared with repositories that never asked for that package.
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
    requested: list[str] = Field(default_factory=list)
    fallback: LayerSpec | None = None


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


class RepoFacts(BaseModel):
    """What an ecosystem knows of a repository beyond the shared profile, for the experience
    memory's context (`agents.memory.repo_context.RepoContext`; hook `Ecosystem.context_facts`):
    `frameworks` (test framework and plugins), `files` (manifests and configuration files it
    read), `declared` (dependency name -> specifier), `flags` (`compiled`, `python_capped`, ...),
    `own` (the distributions the repository itself builds: Python's project name)."""

    model_config = ConfigDict(extra="forbid")
    frameworks: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)
    declared: dict[str, str] = Field(default_factory=dict)
    flags: list[str] = Field(default_factory=list)
    own: list[str] = Field(default_factory=list)


PYTEST_PARSER = "pytest_channel"
"""The parser of pytest rows: swemint's report plugin, its frames read by
`envpool.testrun.parsers.parse_pytest_channel` (the row's `test_command` prints them)."""


def is_pytest(parser: str) -> bool:
    """Whether `parser` names pytest's report (`pytest_channel`, or the older `pytest_plugin`)."""
    return parser in (PYTEST_PARSER, "pytest_plugin")


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
