"""The record the environment pool indexes: one verified environment image.

It lives here, in the harness layer, because `envpool.pool` stores it and nothing in `envpool`
may import `agents`; `agents.models` re-exports it for the agents and the pipeline.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict


class EnvRecord(BaseModel):
    """A verified environment image, as indexed in the pool (DuckDB table `environments`).

    `commit_time`: committer time of `base_commit` (UTC). `size_bytes`: image size in bytes.
    `location`: where the image lives ("local" or a registry reference). `language`: the
    instance's language in swemint's vocabulary (`python`, `javascript`, `typescript`, `go`,
    `rust`, `java`, `php`, `ruby`, `c`, `cpp`); `interpreter`: the toolchain the image holds
    (`3.11`, `go 1.21.13`, `rust 1.78`, ...). `dependencies`: the names the repository declares
    at `base_commit` (manifest dependencies; one per line, sorted; informational: environments are
    reused only within their repository). `dependency_key` / `dependency_image_id`: the dependency
    layer the image stands on (`agents.tiers`), None without one. `node`: the Docker node that
    verified it (its engine's `swemint.node` label, else the engine's name; "" unknown): where the
    image, its dependency layer and the repository's caches are, so a later run prefers that node
    for the repository's instances (`pipeline.executors.Locality`, a hint).
    """

    model_config = ConfigDict(extra="forbid")
    instance_id: str
    repo: str
    version: str | None = None
    base_commit: str
    commit_time: datetime | None = None
    created_at: str | None = None
    language: str = "python"
    interpreter: str = ""
    image_tag: str
    image_id: str = ""
    size_bytes: int = 0
    setup_script: str = ""
    dockerfile: str = ""
    test_command: str = ""
    parser: str = ""
    route: str = ""
    installed_packages: str = ""
    location: str = "local"
    dependencies: str = ""
    dependency_key: str | None = None
    dependency_image_id: str | None = None
    node: str = ""

    def dependency_set(self) -> set[str]:
        """`dependencies` as a set of names (empty lines dropped)."""
        return {d for d in self.dependencies.splitlines() if d.strip()}
