"""The seam between the minter and one ecosystem (Node, Go, Rust, Java, C/C++, PHP, Ruby).

An ecosystem is data plus two functions: `detect` (does this tree belong to me, how surely)
and `plan` (toolchain image, setup commands, test command, parser). The minter
(`agents.minter`) owns everything else: the sandbox, laying out /testbed, running and timing the
setup steps, committing the environment image, applying patches, reruns, parsing with
`envpool.testrun.polyglot.get_any_parser`, anomaly checks and grading. Ecosystems never start
containers besides building their toolchain image.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from agents.gitrepo import GitTree
from agents.models import Instance
from envpool.images import ImageConfig


class PolyPlan(BaseModel):
    """What an ecosystem decided for one instance (the triple: base image B, setup script P,
    test configuration T).

    - `image`: toolchain image tag (from `envpool.toolchains.<eco>.ensure_image`).
    - `setup_commands`: bash commands run in order in /testbed on the bridge network (each under
      `timeouts.setup_step` seconds); a non-zero exit fails the build unless `repair` fixes it.
      They must leave everything the tests need inside the image (dependencies downloaded,
      test code compiled where that is slow), because tests run with no network.
    - `env`: environment for setup *and* test runs (toolchain PATH, offline flags, CA paths
      beyond the defaults the sandbox sets).
    - `test_command`: bash command run in /testbed under `network=none`; its exit code is not a
      verdict. `report_path`: a file it writes that the parser reads (None = the command's own
      combined output is parsed). `parser`: a name in `envpool.testrun.polyglot.POLYGLOT_PARSERS`.
    - `test_files`: the test files (or units) the command selects, from the test_patch.
    """

    model_config = ConfigDict(extra="forbid")
    ecosystem: str
    toolchain: str
    image: str
    route: str = "debootstrap"
    substitutions: list[str] = Field(default_factory=list)
    setup_commands: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    test_command: str
    parser: str
    report_path: str | None = None
    parser_options: dict = Field(default_factory=dict)
    test_files: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class Ecosystem(Protocol):
    """One ecosystem's rules. `name` is stored in rows (`parser`, `interpreter` = toolchain)."""

    name: str

    def detect(self, tree: GitTree, language: str | None) -> int:
        """0 when the tree is not this ecosystem's; higher = surer (manifest at the root: 10)."""
        ...

    def plan(self, tree: GitTree, instance: Instance, touched: list[str], images: ImageConfig) -> PolyPlan:
        """The plan for `instance` whose test_patch touches the paths `touched` (repository
        relative). Raises `envpool.errors.EnvBuildError` naming the cause when no plan can work
        here (a registry that cannot be reached, no toolchain new enough)."""
        ...

    def repair(self, plan: PolyPlan, command: str, output: str, tried: set[str]) -> list[str] | None:
        """Commands to run after setup `command` failed with `output` (then the command is
        retried once), or None. `tried`: repairs already applied in this build (never repeat)."""
        ...
