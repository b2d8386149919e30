"""A pool that fits its disk: size budgets for each engine's image store and for the registry,
least-recently-used environments evicted first.

- **Engine** (`evict_engine`, run on each node): when the engine's image bytes (`docker system df`:
  `LayersSize`, every layer once) are over `BudgetConfig.engine_bytes`, pooled environment images
  are untagged in the order given (least recently used first) until it fits. Images in use by a
  container are skipped (Docker refuses), and so are `protect`ed ones (reuse candidates of
  builds in flight). An environment whose pool location is a registry digest keeps its pool
  row: the node pulls it again when it reuses it. One that lived only on this engine
  (`location: local`) is gone: the caller removes its pool row (`EnvPool.record_eviction`), so a
  later reuse builds instead.
- **Registry** (`plan_registry_evictions`): over `registry_bytes` (distinct blob bytes of every
  manifest), manifests of environment repositories that no row names are deleted first; a
  manifest a row names by digest (a published row's `location`) only with `evict_published`.
  The registry frees the bytes at its next garbage collection.

Toolchain images are never evicted here: they are the shared base of every environment.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from envpool.diskuse import engine_layers, freed_by
from envpool.records import EnvRecord
from envpool.registry_http import Manifest

log = logging.getLogger(__name__)


class BudgetConfig(BaseModel):
    """Disk budgets of the environment pool (bytes; None = no budget).

    `engine_bytes`: each node's engine (its image store: every image, every layer once).
    `registry_bytes`: the registry (distinct blob bytes of its manifests). `evict_published`:
    also delete registry images that a verified row names by digest (off: a published row's
    image stays pullable). `check_every_s`: seconds between two budget checks during a run.
    """

    model_config = ConfigDict(extra="forbid")
    engine_bytes: int | None = Field(default=None, ge=0)
    registry_bytes: int | None = Field(default=None, ge=0)
    evict_published: bool = False
    check_every_s: float = Field(default=60.0, gt=0)


def engine_bytes(client) -> int:
    """Bytes of the engine's images, every layer once (`docker system df` LayersSize)."""
    return int(client.df().get("LayersSize") or 0)


def _tags(client) -> list[str]:
    """Every tag on the engine, from one listing (`docker image ls`): no image is inspected, so
    an image removed meanwhile by another process is simply absent (`client.images.list()`
    inspects each image and raises 404 for one gone between the listing and the inspection)."""
    return [t for d in client.api.images() for t in (d.get("RepoTags") or []) if t != "<none>:<none>"]


def _gone(e: Exception) -> bool:
    """The engine says the image does not exist (HTTP 404)."""
    return getattr(getattr(e, "response", None), "status_code", None) == 404 or "No such image" in str(e)


def evict_engine(candidates: list[dict], budget: int, protect: Iterable[str] = (), client=None,
                 dry_run: bool = False) -> dict:
    """Bring this node's engine under `budget` bytes by untagging environment images.

    `candidates`: `{"instance_id", "image_tag", "image_id"}` dicts, least recently used first
    (only those present here count; an image whose id differs from the record's is not the
    pool's and is left alone). `protect`: image ids never evicted. Returns `{"node", "before",
    "after" (bytes), "evicted": [{"instance_id", "image_tag", "bytes"}]}` (`bytes`: what removing
    it freed as counted by layer before the removal). Never raises for one image: one removed
    by another process between the listing and the removal is skipped (as `ignore_removed` for
    containers) and the rest goes on. `dry_run`: nothing is removed; `evicted` lists what a real
    run would untag (`after`: the bytes it would leave), `dry_run` is set in the result.
    """
    from envpool.image_registry import engine_node

    if client is None:
        from envpool.docker_sandbox import docker_client

        client = docker_client()
    before = engine_bytes(client)
    out: dict = {"node": engine_node(client), "before": before, "after": before, "evicted": []}
    if dry_run:
        out["dry_run"] = True
    if before <= budget:
        return out
    keep = set(protect)
    here = []
    for c in candidates:
        try:
            img = client.images.get(c["image_tag"])
        except Exception:  # noqa: BLE001 - not on this node
            continue
        if c.get("image_id") and img.id != c["image_id"] or img.id in keep:
            continue
        here.append(c)
    if not here:
        return out
    refs = [c["image_tag"] for c in here]
    others = [t for t in _tags(client) if t not in refs]
    layers = engine_layers(client, refs + others)
    used, gone = before, []
    for c in here:
        freed = freed_by(layers, [*gone, c["image_tag"]]) - freed_by(layers, gone)
        if not dry_run:
            try:
                client.images.remove(c["image_tag"])  # untag; the image goes when nothing else names it
            except Exception as e:  # noqa: BLE001 - in use by a container, or gone meanwhile
                log.info("not evicted %s (%s): %s", c["image_tag"], "removed meanwhile" if _gone(e) else "kept",
                         str(e)[:200])
                continue
        gone.append(c["image_tag"])
        out["evicted"].append({"instance_id": c["instance_id"], "image_tag": c["image_tag"], "bytes": freed})
        used -= freed
        if used <= budget:
            break
    out["after"] = used if dry_run else engine_bytes(client)
    return out


def remove_run_images(run_id: str, dry_run: bool = False, client=None) -> dict:
    """Remove every image on this node's engine labelled `swemint.run=<run_id>`: the
    environments a run committed and its dependency layers (`<repo>:deps-*`, label
    `swemint.tier=dependencies`); images of other runs (another label value) and toolchain
    images (no label) are never touched. Removes by id with force (every tag of the image goes),
    children first (newest first). An image gone meanwhile is skipped; one in use by a
    container is kept and named. Returns `{"node", "removed": [{"image_id", "tags", "bytes"}],
    "kept": [{"image_id", "tags", "why"}], "dry_run"}` (`bytes`: the image's size, shared
    layers included)."""
    from envpool.image_registry import engine_node

    if client is None:
        from envpool.docker_sandbox import docker_client

        client = docker_client()
    listed = client.api.images(filters={"label": f"swemint.run={run_id}"})
    out: dict = {"node": engine_node(client), "removed": [], "kept": [], "dry_run": dry_run}
    pending = sorted(listed, key=lambda d: -int(d.get("Created") or 0))  # children first, mostly
    while pending:  # a parent refused while its child is there goes in a later pass
        later, why = [], {}
        for d in pending:
            item = {"image_id": d["Id"], "tags": [t for t in d.get("RepoTags") or [] if t != "<none>:<none>"]}
            if not dry_run:
                try:
                    client.images.remove(d["Id"], force=True)
                except Exception as e:  # noqa: BLE001 - gone meanwhile, a child still there, or in use
                    if "child" in str(e):
                        later.append(d)
                        why[d["Id"]] = str(e)[:200]
                    elif not _gone(e):
                        out["kept"].append({**item, "why": str(e)[:200]})
                    continue
            out["removed"].append({**item, "bytes": int(d.get("Size") or 0)})
        if len(later) == len(pending):  # no progress: children of another run, or in use
            out["kept"] += [{"image_id": d["Id"], "tags": [t for t in d.get("RepoTags") or [] if t != "<none>:<none>"],
                             "why": why[d["Id"]]} for d in later]
            break
        pending = later
    return out


def engine_candidates(lru: list[tuple[EnvRecord, object]]) -> list[dict]:
    """`evict_engine`'s candidates from `EnvPool.lru()`."""
    return [{"instance_id": r.instance_id, "image_tag": r.image_tag, "image_id": r.image_id} for r, _ in lru]


def registry_bytes(manifests: list[Manifest]) -> int:
    """Distinct blob bytes of `manifests`."""
    return sum(dict(lay for m in manifests for lay in m.layers).values())


def plan_registry_evictions(manifests: list[Manifest], env_repos: set[str], named: dict[str, str],
                            lru_digests: list[str], budget: int, evict_published: bool = False) -> list[tuple[Manifest, int]]:
    """Which manifests to delete to bring the registry under `budget` bytes, in order, each with
    the bytes its deletion frees. Pure.

    `manifests`: every manifest of the registry (the budget counts them all); only those of
    `env_repos` are candidates. `named`: manifest digest -> instance id of a row naming it (a
    published row). `lru_digests`: digests of pooled environments, least recently used first.
    Unnamed manifests go first (in the given order), then, with `evict_published`, named ones
    in `lru_digests` order.
    """
    uniq: dict[str, Manifest] = {}
    for m in manifests:
        uniq.setdefault(m.digest, m)
    used = registry_bytes(list(uniq.values()))
    if used <= budget:
        return []
    rank = {d: i for i, d in enumerate(lru_digests)}
    pool = [m for m in uniq.values() if m.repo in env_repos]
    order = [m for m in pool if m.digest not in named]
    if evict_published:
        order += sorted((m for m in pool if m.digest in named), key=lambda m: rank.get(m.digest, -1))
    owners: dict[str, set[str]] = {}
    sizes: dict[str, int] = {}
    for m in uniq.values():
        for blob, n in m.layers:
            owners.setdefault(blob, set()).add(m.digest)
            sizes[blob] = n
    out = []
    for m in order:
        blobs = {b for b, _ in m.layers}
        freed = sum(sizes[b] for b in blobs if owners[b] == {m.digest})
        for b in blobs:
            owners[b].discard(m.digest)
        out.append((m, freed))
        used -= freed
        if used <= budget:
            break
    return out
