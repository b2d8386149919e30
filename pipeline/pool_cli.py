"""`swemint pool du` and `swemint pool prune` (registered on `pipeline.cli`'s `pool` app): the pool's
bytes, and its disk budgets applied by hand (`pipeline.budget`)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

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


Workdir = Annotated[Optional[Path], typer.Option("--workdir", "-w", help="State, logs, pool, dataset")]
ConfigFile = Annotated[Optional[Path], typer.Option("--config", "-c", help="YAML config layered on the defaults")]
Sets = Annotated[Optional[list[str]], typer.Option("--set", "-s", help="Override, e.g. registry=127.0.0.1:5000")]


def _table(title: str, rows: dict[str, dict], limit: int | None = None) -> Table:
    t = Table(title=title)
    for col in ("", "images", "bytes", "unique", "shared"):
        t.add_column(col, justify="left" if not col else "right", overflow="fold")
    items = sorted(rows.items(), key=lambda kv: -kv[1]["bytes"])
    for name, r in items[:limit]:
        t.add_row(escape(name), str(r["images"]), human(r["bytes"]), human(r["unique"]), human(r["shared"]))
    return t


def du(workdir: Workdir = None, config: ConfigFile = None, sets: Sets = None,
       as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
       top: Annotated[int, typer.Option(help="Repositories shown (largest first)")] = 20) -> None:
    """Bytes of the pool's environments on this node's engine and in the registry: per language
    and per repository, unique (only its images use them: what evicting it frees) and shared
    (toolchain and dependency layers, layers of reused environments). `other`: images that are
    no pooled environment (toolchains). Registry bytes are compressed.

    [b]Example:[/b] swemint pool du --workdir work --set registry=127.0.0.1:5000
    """
    from pipeline.budget import disk_usage
    from pipeline.cli import config_from_options, console, err_console
    from envpool.errors import SwemintError
    from envpool.pool import EnvPool

    cfg = config_from_options(config, sets, workdir=workdir)
    try:
        got = disk_usage(cfg, EnvPool(cfg.pool_path, read_only=True))
    except SwemintError as e:
        err_console.print(f"[red]error:[/red] {escape(e.message)}", soft_wrap=True)
        raise typer.Exit(1) from None
    if as_json:
        console.print_json(json.dumps(got))
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


def prune(workdir: Workdir = None, config: ConfigFile = None, sets: Sets = None,
          engine_bytes: Annotated[Optional[str], typer.Option(help="Budget of each node's engine, e.g. 200G "
                                                              "(default: budget.engine_bytes)")] = None,
          registry_bytes: Annotated[Optional[str], typer.Option(help="Budget of the registry, e.g. 2T "
                                                                "(default: budget.registry_bytes)")] = None,
          evict_published: Annotated[bool, typer.Option("--evict-published", help="Also delete registry images "
                                                        "verified rows name by digest")] = False,
          dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the registry plan; change nothing")] = False,
          ray: Annotated[bool, typer.Option("--ray/--no-ray", help="Every node of the Ray cluster ($RAY_ADDRESS) "
                                            "or only this host's engine")] = False,
          wait: Annotated[float, typer.Option(help="Seconds to wait for a running driver")] = 0.0) -> None:
    """Apply the pool's disk budgets now: on each node's engine the least recently used
    environments are untagged until it fits (a registry copy stays pullable; an environment
    with no copy left leaves the pool, so its next reuse builds); in the registry, manifests no
    row names go first, published ones only with --evict-published (bytes come back at the
    registry's garbage collection). Leftovers of finished instances (containers, unpooled
    images) are swept first. Every eviction is recorded in the pool (`evictions` table).

    [b]Example:[/b] swemint pool prune --workdir work --engine-bytes 200G --ray
    """
    from envpool.eviction import BudgetConfig
    from envpool.pool import EnvPool
    from pipeline.budget import enforce
    from pipeline.cli import config_from_options, console, err_console
    from pipeline.store import ResultStore, WorkdirLocked, driver_lock

    cfg = config_from_options(config, sets, workdir=workdir)
    try:
        budget = BudgetConfig(engine_bytes=parse_bytes(engine_bytes) if engine_bytes else cfg.budget.engine_bytes,
                              registry_bytes=parse_bytes(registry_bytes) if registry_bytes else cfg.budget.registry_bytes,
                              evict_published=evict_published or cfg.budget.evict_published)
    except ValueError as e:
        err_console.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True)
        raise typer.Exit(2) from None
    if budget.engine_bytes is None and budget.registry_bytes is None:
        err_console.print("[red]error:[/red] no budget: give --engine-bytes / --registry-bytes or set budget.*",
                          soft_wrap=True)
        raise typer.Exit(2)
    executor = None
    if ray:
        from pipeline.ray_adapter import RayExecutor

        executor = RayExecutor(1, cfg.ray)
    try:
        with driver_lock(cfg.workdir, wait=wait):
            store, pool = ResultStore(cfg.workdir), EnvPool(cfg.pool_path)
            if not dry_run:
                _sweep(cfg, store, pool, executor)
            got = enforce(cfg, pool, executor.each_node if executor else None, store=store, budget=budget,
                          dry_run=dry_run)
    except WorkdirLocked as e:
        err_console.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True)
        raise typer.Exit(1) from None
    finally:
        if executor is not None:
            executor.close()
    for node in got["engines"]:
        console.print(f"engine {escape(node['node'])}: {human(node['before'])} -> {human(node['after'])}, "
                      f"{len(node['evicted'])} environment(s) evicted", soft_wrap=True)
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


def _sweep(cfg, store, pool, executor) -> None:
    from pipeline.stages import sweep_leftovers

    ids = [r.instance_id for r in store.results()]
    keep = [r.image_id for r in pool.list() if r.image_id]
    if not ids:
        return
    try:
        got = executor.each_node(sweep_leftovers, cfg.mint.run_id, ids, keep) if executor else \
            [sweep_leftovers(cfg.mint.run_id, ids, keep)]
    except Exception:  # noqa: BLE001 - no engine: nothing to sweep
        return
    from pipeline.cli import console

    n = {k: sum(c.get(k, 0) for c in got) for k in ("containers", "images")}
    if n["containers"] or n["images"]:
        console.print(f"swept {n['containers']} container(s) and {n['images']} image(s) left by finished instances",
                      soft_wrap=True)
