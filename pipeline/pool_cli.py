"""The bodies of `swemint pool du` and `swemint pool prune` (their Typer commands are in
`pipeline.cli`): the pool's bytes, and its disk budgets applied by hand (`pipeline.budget`)."""

from __future__ import annotations

import re

from rich.table import Table

from pipeline.cli_common import escape

_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def parse_bytes(text: str) -> int:
    """`"500M"`, `"20G"`, `"1.5T"`, `"123"` -> bytes (binary units; a trailing `B`/`iB` allowed).
    Raises ValueError for anything else."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not m:
        raise ValueError(f"not a size: {text!r} (e.g. 500M, 20G)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def human(n: int | float) -> str:
    """Bytes as `1.2 GB` (decimal units, as `docker system df`)."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n} TB"


def _table(title: str, rows: dict[str, dict], limit: int | None = None) -> Table:
    t = Table(title=title)
    for col in ("", "images", "bytes", "unique", "shared"):
        t.add_column(col, justify="left" if not col else "right", overflow="fold")
    items = sorted(rows.items(), key=lambda kv: -kv[1]["bytes"])
    for name, r in items[:limit]:
        t.add_row(escape(name), str(r["images"]), human(r["bytes"]), human(r["unique"]), human(r["shared"]))
    return t


def du(cfg, top: int = 20) -> None:
    """`swemint pool du` for `cfg` (see its help in `pipeline.cli`): tables, or under `--json` one
    summary object (the `disk_usage` dict)."""
    from envpool.errors import SwemintError
    from envpool.pool import EnvPool
    from pipeline.budget import disk_usage
    from pipeline.cli_common import MODE, console, emit, fail

    try:
        got = disk_usage(cfg, EnvPool(cfg.pool_path, read_only=True))
    except SwemintError as e:
        fail(e.message, 1)
    if MODE.json:
        emit(got)
        return
    for place in ("engine", "registry"):
        part = got.get(place)
        if not part:
            continue
        tot = part["total"]
        console.print(f"[b]{place}[/b]: {tot['images']} images, {human(tot['bytes'])} (every layer once)", soft_wrap=True)
        console.print(_table(f"{place}: by language", part["by_language"]))
        console.print(_table(f"{place}: by repository (top {top})", part["by_repo"], top))
    console.print(f"{got['environments']} pooled environments", soft_wrap=True)


def prune(cfg, engine_bytes: str | None = None, registry_bytes: str | None = None, evict_published: bool = False,
          dry_run: bool = False, ray: bool = False, wait: float = 0.0, everything: bool = False) -> None:
    """`swemint pool prune` for `cfg` (see its help in `pipeline.cli`): sweep leftovers of
    finished instances, then `pipeline.budget.enforce` under the driver lock; a line per node and
    per deleted manifest, or under `--json` the summary. `everything` (`--all`): instead, remove
    every image of the work directory's run (`envpool.eviction.remove_run_images`) and record
    each pooled environment removed. Exit 1 when an engine could not be reached."""
    from envpool.eviction import BudgetConfig
    from envpool.pool import EnvPool
    from pipeline.budget import enforce
    from pipeline.cli_common import MODE, console, emit, fail
    from pipeline.pipeline_config import minted_run_id
    from pipeline.store import ResultStore, WorkdirLocked, driver_lock

    cfg.mint.run_id = minted_run_id(cfg)  # the label the work directory's images carry
    try:
        budget = BudgetConfig(engine_bytes=parse_bytes(engine_bytes) if engine_bytes else cfg.budget.engine_bytes,
                              registry_bytes=parse_bytes(registry_bytes) if registry_bytes else cfg.budget.registry_bytes,
                              evict_published=evict_published or cfg.budget.evict_published)
    except ValueError as e:
        fail(str(e))
    if everything:
        if engine_bytes or registry_bytes:
            fail("--all removes every image of the work directory's run: give no --engine-bytes / --registry-bytes")
        return _remove_all(cfg, dry_run, ray, wait)
    if budget.engine_bytes is None and budget.registry_bytes is None:
        fail("no budget: give --engine-bytes / --registry-bytes or set budget.engine_bytes / budget.registry_bytes")
    executor = None
    if ray:
        from pipeline.ray_adapter import RayExecutor

        executor = RayExecutor(1, cfg.ray)
    try:
        with driver_lock(cfg.workdir, wait=wait):
            store, pool = ResultStore(cfg.workdir, read_only=True), EnvPool(cfg.pool_path)
            swept = {} if dry_run else _sweep(cfg, store, pool, executor)
            got = enforce(cfg, pool, executor.each_node if executor else None, store=store, budget=budget,
                          dry_run=dry_run)
    except WorkdirLocked as e:
        fail(str(e), 1)
    finally:
        if executor is not None:
            executor.close()
    errors = got.get("errors") or []
    if MODE.json and not errors:
        emit({**got, "swept": swept})
        return
    if errors:
        fail("; ".join(errors), 1)
    if swept.get("containers") or swept.get("images"):
        console.print(f"swept {swept['containers']} container(s) and {swept['images']} image(s) left by finished "
                      "instances", soft_wrap=True)
    for node in got["engines"]:
        verb = "would evict" if dry_run else "evicted"
        console.print(f"engine {escape(node['node'])}: {human(node['before'])} -> {human(node['after'])}, "
                      f"{len(node['evicted'])} environment(s) {verb}", soft_wrap=True)
        for ev in node["evicted"]:
            console.print(f"  {escape(ev['instance_id'])} {escape(ev['image_tag'])} ({human(ev['bytes'])})", soft_wrap=True)
    reg = got.get("registry")
    if reg:
        verb = "would delete" if reg["dry_run"] else "deleted"
        console.print(f"registry: {human(reg['before'])}; {verb} {len(reg['deleted'])} manifest(s), "
                      f"{human(reg['freed'])} after garbage collection", soft_wrap=True)
        for d in reg["deleted"]:
            console.print(f"  {escape(d['repo'])}@{d['digest'][:19]} {escape(d['instance_id'] or '(no row)')} "
                          f"({human(d['bytes'])})", soft_wrap=True)
        if reg.get("still_over"):
            console.print(f"[yellow]registry still {human(reg['still_over'])} over budget: the rest is named by "
                          "published rows (--evict-published)[/yellow]", soft_wrap=True)


def _remove_all(cfg, dry_run: bool, ray: bool, wait: float) -> None:
    """`swemint pool prune --all`: every image labelled with the work directory's run id, on
    this engine or (`ray`) every node; pooled environments whose image went are recorded as
    evicted (`EnvPool.record_eviction`), so a later reuse builds or pulls."""
    from envpool.eviction import remove_run_images
    from envpool.pool import EnvPool
    from pipeline.cli_common import MODE, console, emit, fail
    from pipeline.store import WorkdirLocked, driver_lock

    executor = None
    if ray:
        from pipeline.ray_adapter import RayExecutor

        executor = RayExecutor(1, cfg.ray)
    run = cfg.mint.run_id
    try:
        with driver_lock(cfg.workdir, wait=wait):
            pool = EnvPool(cfg.pool_path)
            try:
                nodes = executor.each_node(remove_run_images, run, dry_run) if executor else \
                    [remove_run_images(run, dry_run)]
            except Exception as e:  # noqa: BLE001 - no engine
                fail(f"images of run {run} not removed: {type(e).__name__}: {str(e)[:300]}", 1)
            if not dry_run:
                by_image = {r.image_id: r for r in pool.list() if r.image_id}
                for node in nodes:
                    for img in node["removed"]:
                        rec = by_image.get(img["image_id"])
                        if rec is not None:
                            pool.record_eviction(rec, f"engine:{node['node']}", img["bytes"],
                                                 "swemint pool prune --all", rec.location not in ("", "local"))
    except WorkdirLocked as e:
        fail(str(e), 1)
    finally:
        if executor is not None:
            executor.close()
    if MODE.json:
        emit({"run_id": run, "engines": nodes, "dry_run": dry_run})
        return
    verb = "would remove" if dry_run else "removed"
    for node in nodes:
        console.print(f"engine {escape(node['node'])}: {verb} {len(node['removed'])} image(s) of run {escape(run)}"
                      f" ({human(sum(i['bytes'] for i in node['removed']))}, shared layers counted in each)",
                      soft_wrap=True)
        for img in node["removed"]:
            console.print(f"  {img['image_id'][7:19]} {escape(' '.join(img['tags']) or '(untagged)')}", soft_wrap=True)
        for img in node["kept"]:
            console.print(f"  [yellow]kept {img['image_id'][7:19]} {escape(' '.join(img['tags']))}: "
                          f"{escape(img['why'])}[/yellow]", soft_wrap=True)


def _sweep(cfg, store, pool, executor) -> dict[str, int]:
    from pipeline.stages import sweep_leftovers

    ids = [r.instance_id for r in store.results()]
    keep = [r.image_id for r in pool.list() if r.image_id]
    if not ids:
        return {}
    try:
        got = executor.each_node(sweep_leftovers, cfg.mint.run_id, ids, keep) if executor else \
            [sweep_leftovers(cfg.mint.run_id, ids, keep)]
    except Exception:  # noqa: BLE001 - no engine: nothing to sweep
        return {}
    return {k: sum(c.get(k, 0) for c in got) for k in ("containers", "images")}
