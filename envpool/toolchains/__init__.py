"""Toolchain images for ecosystems other than Python, built without a container registry.

One module per ecosystem (`node_image`, `golang_image`, `rust_image`, `java_image`, `cfamily_image`, ...) exposes
``ensure_image(requested: str | None, cfg: ImageConfig, engine=None) -> ToolchainChoice``:
the image tag of a toolchain at least as new as `requested` (a version string taken from the
project: `.nvmrc`, go.mod's `go` line, `rust-version`, ...), with every substitution recorded.
Routes (``../shared/notes/platform.md``): the official image where a registry answers
(`node:16`, `golang:1.19`, `rust:1.70`, `eclipse-temurin:11`), else Debian suites bootstrapped
by `envpool.images.ensure_debian_base` plus a layer built by run + commit (`layer_image`).

Every image is tagged by a hash of its inputs (`envpool.images.spec_hash`), so a changed recipe
never reuses a stale image.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from envpool.imagestore import active_store
from envpool.images import (ImageConfig, _apt_script, _layer, _lock, debian_base_tag, ensure_debian_base, note_layer,
                            spec_hash)
from envpool.image_registry import shared_image

__all__ = ["ToolchainChoice", "apt_script", "layer_image", "version_key"]


class ToolchainChoice(BaseModel):
    """A toolchain image chosen for a project.

    `language`: ecosystem name (`node`, `go`, `rust`, `java`, `c`); `requested`: what the project
    asked for (None when it names nothing); `version`: what the image provides; `image`: its tag;
    `route`: `official` or `debootstrap`; `substitutions`: human-readable notes of every
    deviation (e.g. "go 1.18 requested, 1.19 provided (nearest available)").
    """

    model_config = ConfigDict(extra="forbid")
    language: str
    requested: str | None = None
    version: str
    image: str
    route: str = "debootstrap"
    substitutions: list[str] = Field(default_factory=list)


def version_key(v: str) -> tuple[int, ...]:
    """Numeric sort key of a dotted version (`"1.19.3"` -> (1, 19, 3)); non-digits end a part."""
    out = []
    for part in v.strip().lstrip("v").split("."):
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def apt_script(packages: list[str]) -> str:
    """Shell script installing Debian `packages` without recommends (apt over plain http)."""
    return _apt_script(packages)


def layer_image(name: str, version: str, suite: str, script: str, cfg: ImageConfig | None = None,
                engine=None, inputs: dict | None = None) -> str:
    """Tag of `swemint/<name>:<version>-<hash>`: Debian `suite` base + `script` run on the bridge
    network and committed; built once (per-tag lock; with `cfg.registry` once in the cluster,
    pulled by digest on other nodes: `envpool.image_registry.shared_image`), reused after. Raises
    InfraError when the script fails (its output's tail in the message) or the registry fails."""
    cfg = cfg or ImageConfig()
    store = active_store(engine)
    h = spec_hash({"name": name, "version": version, "suite": suite, "script": script,
                   "mirror": cfg.debian_mirror, **(inputs or {})})
    tag = f"swemint/{name}:{version}-{h}"
    note_layer(tag, debian_base_tag(suite, cfg), script)  # noted even when the image exists: Dockerfiles spell it out
    with _lock(tag):
        return shared_image(store, tag, cfg, lambda: _layer(store, ensure_debian_base(suite, cfg, store), tag,
                                                             script, route="debootstrap", mirror=cfg.mirror))
