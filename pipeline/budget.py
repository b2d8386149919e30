"""The pool's disk budgets, applied by the driver (the pool's one writer) during a run and by
`swemint pool prune`; `swemint pool du` counts the bytes (see `envpool.eviction` for the rules,
`envpool.diskuse` for the counting).

`enforce` evicts on every Docker node (`each_node`: a small task per node, or this host's engine
in-process) and in the registry, then records each eviction in the pool (`EnvPool.record_eviction`:
where, how many bytes, why; an environment no copy of which is left leaves the pool, so a later
reuse builds instead). `disk_usage` returns bytes per language and per repository, unique and
shared, on this node's engine and in the registry.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from envpool.eviction import (BudgetConfig, engine_candidates, evict_engine, plan_registry_evictions,
                              registry_bytes)
from envpool.pool import EnvPool, registry_credentials
from envpool.records import EnvRecord
from pipeline.pipeline_config import PipelineConfig

log = logging.getLogger("pipeline.driver")


def _auth(cfg: PipelineConfig) -> dict | None:
    a = cfg.registry_auth
    return registry_credentials(a.username_env, a.password_env) if a else None


def env_repository(cfg: PipelineConfig) -> str:
    """The environment images' repository inside the registry (`prefix/swemint/env` for a
    registry `host:port/prefix`)."""
    prefix = (cfg.registry or "").partition("/")[2]
    return f"{prefix}/{cfg.mint.image_repository}" if prefix else cfg.mint.image_repository


def named_digests(store: Any, pool: EnvPool) -> dict[str, str]:
    """Manifest digest -> instance id, for every verified row (stored or pooled) whose
    `location` names an image by digest: the images published rows point at."""
    out: dict[str, str] = {}
    rows = [r.env for r in store.results() if r.outcome == "verified" and r.env is not None] if store else []
    for env in [*rows, *pool.list()]:
        if "@sha256:" in env.location:
            out[env.location.rsplit("@", 1)[1]] = env.instance_id
    return out


def enforce(cfg: PipelineConfig, pool: EnvPool, each_node: Callable[..., list] | None, store: Any = None,
            protect: Iterable[str] = (), budget: BudgetConfig | None = None, dry_run: bool = False) -> dict:
    """Apply `budget` (default `cfg.budget`): engines first (every node through `each_node(fn,
    *args)`, else this host's engine), then the registry. Returns {"engines": [per node: node,
    before, after, evicted], "registry": {before, deleted, freed} or None, plus "errors": [lines]
    when the engines could not be reached}. `protect`: image ids
    in use (reuse candidates of builds in flight). `dry_run`: nothing is removed or recorded; each
    node and the registry report what a real run would evict (each node plans on its own engine).
    Never raises for one node."""
    budget = budget or cfg.budget
    out: dict = {"engines": [], "registry": None}
    lru = pool.lru()
    by_id = {r.instance_id: r for r, _ in lru}
    if budget.engine_bytes is not None:
        args = (engine_candidates(lru), budget.engine_bytes, list(protect), None, dry_run)
        try:
            got = each_node(evict_engine, *args) if each_node else [evict_engine(*args)]
        except Exception as e:  # noqa: BLE001 - one node's engine failing must not stop a run
            log.warning("engine budget not applied: %s", e)
            out["errors"] = [f"engine budget not applied: {type(e).__name__}: {str(e)[:300]}"]
            got = []
        for node in got:
            out["engines"].append(node)
            for ev in [] if dry_run else node["evicted"]:
                rec = by_id.get(ev["instance_id"])
                if rec is None:
                    continue
                kept = rec.location not in ("", "local")
                pool.record_eviction(rec, f"engine:{node['node']}", ev["bytes"],
                                     f"engine over budget ({node['before']} > {budget.engine_bytes} bytes)", kept)
            if node["evicted"] and not dry_run:
                log.info("budget: node %s evicted %d environment(s), %d -> %d bytes", node["node"],
                         len(node["evicted"]), node["before"], node["after"])
    if budget.registry_bytes is not None and cfg.registry:
        out["registry"] = _registry(cfg, pool, store, lru, budget, dry_run)
    return out


def _registry(cfg: PipelineConfig, pool: EnvPool, store: Any, lru: list[tuple[EnvRecord, Any]],
              budget: BudgetConfig, dry_run: bool) -> dict:
    from envpool.registry_http import RegistryAPI

    api = RegistryAPI(cfg.registry, _auth(cfg))
    tagged = api.manifests()
    manifests = [m for _, m in tagged]
    named = named_digests(store, pool)
    lru_digests = [r.location.rsplit("@", 1)[1] for r, _ in lru if "@sha256:" in r.location]
    plan = plan_registry_evictions(manifests, {env_repository(cfg)}, named, lru_digests, budget.registry_bytes,
                                   budget.evict_published)
    before = registry_bytes(list({m.digest: m for m in manifests}.values()))
    tags = {m.digest: t for t, m in tagged}
    out = {"before": before, "deleted": [], "freed": 0, "dry_run": dry_run}
    for m, freed in plan:
        iid = named.get(m.digest)
        if not dry_run:
            api.delete(m.repo, m.digest)
            rec = pool.get(iid) if iid else None
            rec = rec or EnvRecord(instance_id=iid or "", repo="", base_commit="",
                                   image_tag=f"{m.repo}:{tags.get(m.digest, '')}", image_id=m.config,
                                   location=f"{cfg.registry.split('/', 1)[0]}/{m.repo}@{m.digest}")
            pool.record_eviction(rec, "registry", freed, f"registry over budget ({before} > {budget.registry_bytes} "
                                 "bytes)" + ("; named by a published row (evict_published)" if iid else ""),
                                 kept_in_pool=False)
        out["deleted"].append({"repo": m.repo, "digest": m.digest, "instance_id": iid, "bytes": freed})
        out["freed"] += freed
    if plan and not dry_run:
        log.info("budget: registry deleted %d manifest(s) (%d bytes once garbage-collected)", len(plan), out["freed"])
    over = before - out["freed"] - budget.registry_bytes
    if over > 0:
        out["still_over"] = over
        if not budget.evict_published:
            log.warning("registry still %d bytes over budget: the rest is named by published rows "
                        "(evict them with budget.evict_published / --evict-published)", over)
    return out


class BudgetWatch:
    """The driver's periodic check: `due()` at most every `cfg.budget.check_every_s` seconds
    when a budget is set; `run(pool, each_node, store, protect)` applies it (`enforce`)."""

    def __init__(self, cfg: PipelineConfig):
        self.cfg = cfg
        self.last = 0.0
        self.results: list[dict] = []

    @property
    def active(self) -> bool:
        """A budget is configured."""
        b = self.cfg.budget
        return b.engine_bytes is not None or (b.registry_bytes is not None and bool(self.cfg.registry))

    def due(self, now: float | None = None) -> bool:
        """True when a check is due (and notes it as done)."""
        now = time.monotonic() if now is None else now
        if not self.active or now - self.last < self.cfg.budget.check_every_s:
            return False
        self.last = now
        return True

    def run(self, pool: EnvPool, each_node: Callable[..., list] | None, store: Any = None,
            protect: Iterable[str] = ()) -> dict | None:
        """`enforce` now; never raises (a budget problem is logged)."""
        try:
            got = enforce(self.cfg, pool, each_node, store=store, protect=protect)
        except Exception as e:  # noqa: BLE001 - housekeeping never stops a run
            log.warning("budget check failed: %s", e)
            return None
        self.results.append(got)
        return got


def disk_usage(cfg: PipelineConfig, pool: EnvPool, client=None, registry: bool = True) -> dict:
    """Bytes of the pool's environments on this node's engine and in the registry: `{"engine":
    {"by_language", "by_repo", "total"}, "registry": {...} or None}`. Each entry: images, bytes
    (distinct layers), unique (layers no image outside the entry uses: what evicting it frees),
    shared (= bytes - unique: toolchain and dependency layers, layers of reused environments).
    Toolchain and other images count in the totals; registry bytes are compressed."""
    from envpool.diskuse import engine_layers

    records = pool.list()
    out: dict = {"engine": None, "registry": None, "environments": len(records)}
    if client is None:
        from envpool.docker_sandbox import docker_client

        client = docker_client()
    env_refs = {r.image_tag: r for r in records}
    others = [t for img in client.images.list() for t in img.tags[:1] if t not in env_refs]
    layers = engine_layers(client, [*env_refs, *others])
    out["engine"] = _grouped(layers, env_refs)
    if registry and cfg.registry:
        from envpool.registry_http import RegistryAPI

        api = RegistryAPI(cfg.registry, _auth(cfg))
        by_digest = {r.location.rsplit("@", 1)[1]: r for r in records if "@sha256:" in r.location}
        reg_layers: dict[str, list[tuple[str, int]]] = {}
        reg_recs: dict[str, EnvRecord] = {}
        for _tag, m in api.manifests():
            key = f"{m.repo}@{m.digest}"
            reg_layers[key] = m.layers
            if m.digest in by_digest:
                reg_recs[key] = by_digest[m.digest]
        out["registry"] = _grouped(reg_layers, reg_recs)
    return out


def _grouped(layers: dict[str, list[tuple[str, int]]], recs: dict[str, EnvRecord]) -> dict:
    from envpool.diskuse import usage

    by_lang = usage(layers, {k: r.language or "?" for k, r in recs.items()})
    by_repo = usage(layers, {k: r.repo for k, r in recs.items()})
    total = by_lang.pop("*")
    by_repo.pop("*")
    return {"total": total, "by_language": by_lang, "by_repo": by_repo}
