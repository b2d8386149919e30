"""The `swemint` command line: one Typer app, a sub-command per stage (SWE-bench cli.py style)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from envpool.errors import SwemintError
from pipeline.config import PipelineConfig, load_config

app = typer.Typer(name="swemint", no_args_is_help=True, rich_markup_mode="rich",
                  help="Turn real repositories into verifiable SWE-bench tasks.\n\n"
                       "[b]Example:[/b] swemint mint --instances tasks.jsonl --mirrors /work/.mirror "
                       "--workdir work --workers 2")
pool_app = typer.Typer(no_args_is_help=True, help="Inspect the environment pool (WORKDIR/pool.duckdb).")
app.add_typer(pool_app, name="pool")
console = Console(width=None if sys.stdout.isatty() else 200)  # logs get whole ids, not `acme__calc…`
err_console = Console(stderr=True)

Instances = Annotated[Optional[Path], typer.Option("--instances", "-i", help="SWE-bench .jsonl/.json/.parquet")]
Mirrors = Annotated[Optional[list[Path]], typer.Option("--mirrors", "-m", help="Mirror root (repeatable)")]
Workdir = Annotated[Optional[Path], typer.Option("--workdir", "-w", help="State, logs, pool, dataset")]
Limit = Annotated[Optional[int], typer.Option(help="First N instances after the filters")]
Workers = Annotated[Optional[int], typer.Option(help="Build slots: instances in flight at once")]
Ids = Annotated[Optional[list[str]], typer.Option("--ids", help="Instance ids (repeatable or comma-separated)")]
IdsFile = Annotated[Optional[Path], typer.Option("--ids-file", help="File of instance ids, one per line")]
Language = Annotated[Optional[str], typer.Option(help="Only this language, e.g. python")]
UseRay = Annotated[Optional[bool], typer.Option("--ray/--no-ray", help="Run on Ray (default) or in-process")]
ConfigFile = Annotated[Optional[Path], typer.Option("--config", "-c", help="YAML config layered on the defaults")]
Sets = Annotated[Optional[list[str]], typer.Option("--set", "-s", help="Override, e.g. mint.run_id=nightly")]
Reverify = Annotated[Optional[bool], typer.Option("--reverify", help="Re-verify verified instances in their "
                                                  "pooled environments (no setup)")]


def config_from_options(config: Path | None, sets: list[str] | None, **flags) -> PipelineConfig:
    """`load_config` from CLI options (None / empty = not given); exits with code 2 on an error."""
    if flags.get("ids"):
        flags["ids"] = [x.strip() for v in flags["ids"] for x in v.split(",") if x.strip()]
    try:
        cfg = load_config(config, sets or [], **{k: (v or None) if isinstance(v, list) else v
                                                  for k, v in flags.items()})
    except (ValidationError, ValueError, OSError) as e:
        err_console.print(f"[red]configuration error:[/red] {escape(str(e))}", soft_wrap=True)
        raise typer.Exit(2) from None
    if cfg.instances is not None and str(cfg.instances) != "demo" and not Path(cfg.instances).is_file():
        err_console.print(f"[red]error:[/red] instance file not found: {escape(str(cfg.instances))}", soft_wrap=True)
        raise typer.Exit(2)
    missing = [str(m) for m in cfg.mirrors if not Path(m).is_dir()]
    if missing:
        err_console.print(f"[red]error:[/red] mirror folder not found: {escape(', '.join(missing))}",
                      soft_wrap=True)
        raise typer.Exit(2)
    return cfg


def _fmt(v: float | None, unit: str = "s") -> str:
    return "-" if v is None else f"{v:.1f}{unit}"


def _run(cfg: PipelineConfig, mint_fn=None):
    from pipeline.driver import run_mint

    if cfg.instances is None:
        console.print("[red]error:[/red] no instance file: pass --instances or set `instances` in the config")
        raise typer.Exit(2)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TextColumn("{task.fields[last]}"), console=console) as progress:
        task = progress.add_task("minting", total=None, last="")

        def plan(n: int, skipped: int) -> None:
            progress.update(task, total=n, description=f"minting ({skipped} already done)")

        def done(res) -> None:
            progress.update(task, advance=1, last=escape(f"{res.instance_id}: {res.outcome}"))

        try:
            report = run_mint(cfg, mint_fn=mint_fn, on_plan=plan, on_result=done)
        except (ValueError, OSError, SwemintError) as e:
            err_console.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True)
            raise typer.Exit(2) from None
    print_summary(report)
    if report.missing_ids or (report.results and all(r.outcome == "infra_error" for r in report.results)):
        # nothing says anything about the instances: the input or the host needs attention
        raise typer.Exit(1)
    return report


def print_summary(report) -> None:
    """Print bad input rows, the outcome table, time statistics and the dataset paths."""
    for e in report.load_errors[:20]:
        console.print(f"[yellow]skipped bad input row:[/yellow] {escape(str(e))}", soft_wrap=True)
    if len(report.load_errors) > 20:
        console.print(f"[yellow]... {len(report.load_errors) - 20} more bad rows[/yellow]", soft_wrap=True)
    if report.missing_ids:
        missing = escape(", ".join(report.missing_ids))
        console.print(f"[yellow]ids not in the instance file:[/yellow] {missing}", soft_wrap=True)
    rows = sorted(report.results + report.skipped, key=lambda r: r.instance_id)
    if 0 < len(rows) <= 40:
        detail = Table(title="instances")
        for col in ("instance_id", "outcome", "FAIL_TO_PASS", "PASS_TO_PASS", "seconds", "reason / image"):
            detail.add_column(col, justify="right" if col in ("FAIL_TO_PASS", "PASS_TO_PASS", "seconds") else "left")
        for r in rows:
            secs = r.timings.get("total")
            note = r.image if r.outcome == "verified" else r.reason.splitlines()[0][:80] if r.reason else ""
            detail.add_row(r.instance_id, r.outcome, str(len(r.FAIL_TO_PASS)), str(len(r.PASS_TO_PASS)),
                           "-" if secs is None else f"{secs:.0f}", escape(note))
        console.print(detail)
    table = Table(title="swemint mint")
    table.add_column("outcome")
    table.add_column("this run", justify="right")
    table.add_column("all selected", justify="right")
    for outcome, (now, total) in report.counts().items():
        if total:
            table.add_row(outcome, str(now), str(total))
    console.print(table)
    st = report.stats()
    console.print(f"{len(report.results)} run, {len(report.skipped)} skipped (already finished) in "
                  f"{report.wall_s:.1f}s; per instance median {_fmt(st['median_s'])}, p90 {_fmt(st['p90_s'])}; "
                  f"throughput {_fmt(st['per_hour'], '/h')}", soft_wrap=True)
    if report.results:
        from pipeline.export import userns_line

        console.print(userns_line([r.isolation for r in report.results], "rows of this run"), soft_wrap=True)
    for name, path in report.dataset.items():
        console.print(f"dataset ({name}): {escape(str(path))}", soft_wrap=True)


@app.command()
def mint(instances: Instances = None, mirrors: Mirrors = None, workdir: Workdir = None, limit: Limit = None,
         workers: Workers = None, ids: Ids = None, ids_file: IdsFile = None, language: Language = None,
         ray: UseRay = None, config: ConfigFile = None, sets: Sets = None, reverify: Reverify = None) -> None:
    """Mint instances into verified tasks; a rerun skips finished ones (verified are never redone).

    [b]Examples:[/b]

      swemint mint -i tasks.jsonl -m /work/.mirror -w work --limit 5 --no-ray

      swemint mint -i tasks.jsonl -m /work/.mirror -w work --workers 4 --ids-file ids.txt

      swemint mint -c my.yaml --set mint.run_id=nightly --set mint.timeouts.instance=1800

      swemint mint -i tasks.jsonl -m /work/.mirror -w work --reverify   # warm: tests in pooled images
    """
    cfg = config_from_options(config, sets, instances=instances, mirrors=mirrors, workdir=workdir, limit=limit,
                  workers=workers, ids=ids, ids_file=ids_file, language=language, use_ray=ray, reverify=reverify)
    _run(cfg)


@app.command()
def bench(instances: Instances = None, mirrors: Mirrors = None, workdir: Workdir = None, limit: Limit = None,
          workers: Workers = None, ids: Ids = None, ids_file: IdsFile = None, language: Language = None,
          ray: UseRay = None, config: ConfigFile = None, sets: Sets = None, reverify: Reverify = None,
          score_only: Annotated[bool, typer.Option(help="Score stored results, mint nothing")] = False) -> None:
    """Mint (skipping finished instances) and score our F2P/P2P lists against the gold lists.

    Writes WORKDIR/bench.json. [b]Example:[/b] swemint bench -i dev.jsonl -m /work/.mirror -w work --ids-file core.txt
    """
    from pipeline.bench import SCORE_COLUMNS, write_bench
    from pipeline.bench import bench as score
    from pipeline.instances import load_and_select
    from pipeline.store import ResultStore

    cfg = config_from_options(config, sets, instances=instances, mirrors=mirrors, workdir=workdir, limit=limit,
                  workers=workers, ids=ids, ids_file=ids_file, language=language, use_ray=ray, reverify=reverify)
    sel = None
    if cfg.instances is not None:
        try:
            sel = load_and_select(cfg.instances, ids=cfg.ids or None, ids_file=cfg.ids_file, language=cfg.language,
                                  limit=cfg.limit).instances
        except (ValueError, OSError, SwemintError) as e:
            err_console.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True)
            raise typer.Exit(2) from None
    store = ResultStore(cfg.workdir)
    gold = store.instances()
    if sel is not None:
        gold.update({i.instance_id: i for i in sel})
        wanted = {i.instance_id for i in sel}
    else:
        wanted = set(gold)
    if not score_only:
        _run(cfg)
    results = [r for r in store.results() if r.instance_id in wanted]
    report = score(results, gold)
    path = write_bench(report, cfg.workdir / "bench.json")
    table = Table(title="swemint bench")
    table.add_column("instance", no_wrap=True)
    for col in ("outcome", "F2P recall", "F2P precision", "P2P agreement"):
        table.add_column(col)
    for r in report["instances"]:
        cells = [r.get(k) for k in SCORE_COLUMNS]
        table.add_row(escape(r["instance_id"]), r["outcome"],
                      *(f"{c:.2f}" if isinstance(c, float) else escape(str("-" if c is None else c)) for c in cells))
    console.print(table)
    console.print(json.dumps(report["aggregate"], indent=1, default=str))
    console.print(f"bench written to {escape(str(path))}", soft_wrap=True)


def _tree_reader(cfg: PipelineConfig):
    """instance -> uncompressed tar of its base_commit tree, from the configured mirrors."""
    from agents.gitrepo import GitTree
    from pipeline.repos import RepoResolver

    resolver = RepoResolver(cfg.mirrors, cfg.repos.model_copy(update={"allow_clone": False}))

    def tree(inst) -> bytes:
        return GitTree(resolver.prepare(inst.repo, inst.base_commit, inst.instance_id), inst.base_commit,
                       instance_id=inst.instance_id).archive()
    return tree


def _ca_bundle() -> bytes | None:
    from envpool.docker_sandbox import host_ca_bundle

    ca = host_ca_bundle()
    return ca.read_bytes() if ca else None


@app.command()
def export(dest: Annotated[Optional[Path], typer.Argument(help="Task repository folder (= --out)")] = None,
           workdir: Workdir = None, mirrors: Mirrors = None, config: ConfigFile = None, sets: Sets = None,
           fmt: Annotated[str, typer.Option("--format", help="parquet (WORKDIR/dataset) or swebench-task-repo")] = "parquet",
           out: Annotated[Optional[Path], typer.Option("--out", help="Task repository folder (swebench-task-repo)")] = None,
           json_strings: Annotated[bool, typer.Option("--json-strings", help="FAIL_TO_PASS / PASS_TO_PASS as JSON "
                                                      "strings, as in the HF copies of SWE-bench")] = False,
           dataset_name: Annotated[str, typer.Option(help="Dataset the task repository publishes")] = "swemint/tasks",
           tag_images: Annotated[bool, typer.Option(help="Tag local images under the names swebench derives "
                                                    "for a task repository")] = False,
           wait: Annotated[float, typer.Option(help="Seconds to wait for a running driver's lock")] = 600.0) -> None:
    """Write the dataset from the stored results: WORKDIR/dataset/{verified,all}.parquet and its
    card README.md, or (--format swebench-task-repo) SWE-bench v5's task folders.

    Runs under the driver's lock (WORKDIR/driver.lock): it waits for a running `mint` (which
    exports when it ends) or another export, up to `--wait` seconds.

    [b]Examples:[/b] swemint export --workdir work

      swemint export -w work -m /work/.mirror --format swebench-task-repo tasks
    """
    from pipeline.store import ResultStore, WorkdirLocked, driver_lock

    cfg = config_from_options(config, sets, workdir=workdir, mirrors=mirrors)
    store = ResultStore(cfg.workdir)
    try:
        with driver_lock(cfg.workdir, wait=wait):
            _export(store, cfg, fmt, out or dest, json_strings, dataset_name, tag_images)
    except WorkdirLocked as e:
        err_console.print(f"[red]error:[/red] {escape(str(e))}; it exports the dataset when it ends", soft_wrap=True)
        raise typer.Exit(1) from None


def _export(store, cfg, fmt: str, out: Path | None, json_strings: bool, dataset_name: str, tag_images: bool) -> None:
    from pipeline.export import export_dataset

    results = store.results()
    verified = sum(r.outcome == "verified" for r in results)
    if fmt == "parquet":
        paths = export_dataset(store, json_strings=json_strings)
        console.print(f"{verified} verified of {len(results)} results", soft_wrap=True)
        for name, path in paths.items():
            console.print(f"dataset ({name}): {escape(str(path))}", soft_wrap=True)
        return
    if fmt != "swebench-task-repo":
        err_console.print(f"[red]error:[/red] unknown format {escape(fmt)} (parquet, swebench-task-repo)")
        raise typer.Exit(2)
    if out is None or not cfg.mirrors:
        err_console.print("[red]error:[/red] swebench-task-repo needs a folder (DIR or --out) and --mirrors "
                          "(the base trees)")
        raise typer.Exit(2)
    from pipeline.export import export_task_repo

    rep = export_task_repo(store, out, _tree_reader(cfg), dataset=dataset_name, ca_bundle=_ca_bundle(),
                           tag_images=tag_images)
    console.print(f"{rep['tasks']} tasks written to {escape(str(out))}", soft_wrap=True)
    for iid, why in rep["skipped"].items():
        console.print(f"[yellow]skipped {escape(iid)}:[/yellow] {escape(why)}", soft_wrap=True)


@app.command("eval")
def eval_(predictions: Annotated[str, typer.Option("--predictions", "-p", help="JSONL/JSON predictions, or "
                                                   "`gold` / `empty`")],
          workdir: Workdir = None, dataset: Annotated[Optional[Path], typer.Option(
              help="Dataset folder or parquet (default: the rows of WORKDIR's store)")] = None,
          out: Annotated[Optional[Path], typer.Option("--out", help="Reports (default WORKDIR/evaluations/RUN_ID)")] = None,
          run_id: Annotated[str, typer.Option(help="Names the reports folder")] = "eval",
          workers: Workers = None, ids: Ids = None, timeout: Annotated[float, typer.Option(help="Seconds per test run")] = 1800,
          config: ConfigFile = None, sets: Sets = None) -> None:
    """Grade model predictions in the rows' pooled images (no network), SWE-bench's rules;
    resumable (finished instances are kept), parallel (--workers).

    [b]Examples:[/b] swemint eval -p preds.jsonl -w work --workers 2

      swemint eval -p gold -w work --run-id gold-check
    """
    from pipeline.evaluate import dataset_rows, evaluate, load_predictions

    cfg = config_from_options(config, sets, workdir=workdir, workers=workers, ids=ids)
    rows = dataset_rows(cfg.workdir, dataset)
    if cfg.ids:
        rows = {k: v for k, v in rows.items() if k in set(cfg.ids)}
    try:
        preds = load_predictions(predictions, rows)
    except (ValueError, OSError) as e:
        err_console.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True)
        raise typer.Exit(2) from None
    out = out or cfg.workdir / "evaluations" / run_id
    limits = {"cpus": cfg.mint.limits.cpus, "memory": cfg.mint.limits.memory, "pids": cfg.mint.limits.pids}
    with Progress(TextColumn("[bold]grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}"), console=console) as progress:
        task = progress.add_task("grading", total=len([p for p in preds if p["instance_id"] in rows]), last="")
        report = evaluate(rows, preds, out, workers=cfg.workers, timeout=timeout, run_id=f"{cfg.mint.run_id}-eval",
                          limits=limits, on_result=lambda r: progress.update(
                              task, advance=1, last=escape(f"{r.instance_id}: {'resolved' if r.resolved else 'no'}")))
    table = Table(title=f"swemint eval ({escape(predictions)})")
    for col in ("instance", "resolved", "F2P", "P2P", "seconds", "mint s", "error"):
        table.add_column(col, justify="right" if col in ("F2P", "P2P", "seconds", "mint s") else "left")
    for iid, r in report["instances"].items():
        ts = r.get("tests_status") or {}
        f, p = ts.get("FAIL_TO_PASS", {}), ts.get("PASS_TO_PASS", {})
        frac = lambda d: f"{len(d.get('success', []))}/{len(d.get('success', [])) + len(d.get('failure', []))}" if d else "-"
        mint_s = r.get("mint_seconds")
        table.add_row(escape(iid), "yes" if r["resolved"] else "no", frac(f), frac(p), f"{r['seconds']:.0f}",
                      "-" if mint_s is None else f"{mint_s:.0f}", escape((r.get("error") or "")[:70]))
    console.print(table)
    console.print(f"resolved {report['resolved_instances']}, unresolved {report['unresolved_instances']}, "
                  f"errors {report['error_instances']}, empty patches {report['empty_patch_instances']} "
                  f"of {report['submitted_instances']} predictions ({len(report['unknown_ids'])} unknown ids); "
                  f"{report['graded_now']} graded now in {report['wall_seconds']:.0f}s", soft_wrap=True)
    console.print(f"report: {escape(str(out / 'report.json'))}", soft_wrap=True)


@app.command()
def rebuild(workdir: Workdir = None, mirrors: Mirrors = None, ids: Ids = None, ids_file: IdsFile = None,
            verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Rerun the before/after grading in "
                                                 "the rebuilt image")] = True,
            keep_images: Annotated[bool, typer.Option(help="Keep the rebuilt images")] = False,
            config: ConfigFile = None, sets: Sets = None) -> None:
    """Build verified rows' Dockerfiles from scratch (docker build --no-cache), rerun the
    before/after grading in the rebuilt image and record whether the labels reproduce
    (WORKDIR/rebuild/<id>.json, the dataset's `rebuild` column).

    [b]Example:[/b] swemint rebuild --verify -w work -m /work/.mirror --ids a,b
    """
    from envpool.docker_sandbox import DockerSandboxFactory, docker_client
    from envpool.netguard import ensure_build_network
    from pipeline.evaluate import dataset_rows
    from pipeline.rebuild import rebuild_row, write_summary
    from pipeline.store import ResultStore

    cfg = config_from_options(config, sets, workdir=workdir, mirrors=mirrors, ids=ids, ids_file=ids_file)
    wanted = set(cfg.ids) | (set(Path(cfg.ids_file).read_text().split()) if cfg.ids_file else set())
    rows = {k: v for k, v in dataset_rows(cfg.workdir).items() if not wanted or k in wanted}
    known = ResultStore(cfg.workdir).instances()
    client = docker_client()
    factory = DockerSandboxFactory(run_id=f"{cfg.mint.run_id}-rebuild")
    network = ensure_build_network(client, cfg.mint.build_network) if cfg.mint.build_network.enabled else None
    tree, ca = _tree_reader(cfg), _ca_bundle()
    certs = []
    for iid, row in sorted(rows.items()):
        console.print(f"rebuilding {escape(iid)} ...", soft_wrap=True)
        try:
            tar = tree(known[iid])
        except Exception as e:  # noqa: BLE001 - one row's missing mirror never stops the rest
            console.print(f"[yellow]{escape(iid)}: base tree unavailable: {escape(str(e))}[/yellow]", soft_wrap=True)
            continue
        cert = rebuild_row(row, tar, cfg.workdir, client=client, factory=factory,
                           run_id=f"{cfg.mint.run_id}-rebuild", ca_bundle=ca, network=network,
                           keep_image=keep_images, verify=verify)
        certs.append(cert)
        hist = "ok" if cert.history and all(h.ok for h in cert.history) else "NOT ok"
        console.print(f"  built {cert.built} in {cert.build_seconds:.0f}s, reproduced {cert.reproduced}, "
                      f"history {hist}{', error: ' + escape(cert.error) if cert.error else ''}", soft_wrap=True)
    path = write_summary(cfg.workdir, certs)
    console.print(f"{sum(c.reproduced for c in certs)}/{len(certs)} reproduced; summary {escape(str(path))}",
                  soft_wrap=True)


@app.command()
def report(workdir: Annotated[Path, typer.Argument(help="The work directory")],
           out: Annotated[Optional[Path], typer.Option("--out", help="HTML file (default WORKDIR/report.html)")] = None) -> None:
    """Write a self-contained HTML report with plots (needs the `report` extra: matplotlib):
    outcomes per language and repository, time per phase, verified yield against time and
    tokens, reuse share, failure causes.

    [b]Example:[/b] swemint report work
    """
    from pipeline.report import write_report

    try:
        path = write_report(workdir, out)
    except ImportError as e:
        err_console.print(f"[red]error:[/red] {escape(str(e))}: pip install 'swemint[report]'", soft_wrap=True)
        raise typer.Exit(2) from None
    console.print(f"report: {escape(str(path))}", soft_wrap=True)


@app.command()
def crawl(config: Annotated[Path, typer.Option("--config", "-c", help="Crawl config YAML, e.g. configs/nightly.yaml")],
          workdir: Annotated[Path, typer.Option("--workdir", "-w", help="Writes WORKDIR/crawl/instances.jsonl")],
          since_last: Annotated[bool, typer.Option("--since-last", help="Only PRs newer than the last run")] = False,
          sets: Sets = None) -> None:
    """Crawl GitHub (token from $GITHUB_TOKEN) and local mirrors for issue-PR pairs with tests.

    Writes SWE-bench rows to WORKDIR/crawl/instances.jsonl and every reject with its reason to
    WORKDIR/crawl/rejects.jsonl. [b]Example:[/b] swemint crawl -c configs/nightly.yaml -w /data/swemint --since-last
    """
    from pipeline.sources import crawl as run_crawl
    from pipeline.sources import load_crawl_config

    try:
        cfg = load_crawl_config(config, sets or [])
    except (ValidationError, ValueError, OSError) as e:
        err_console.print(f"[red]configuration error:[/red] {escape(str(e))}", soft_wrap=True)
        raise typer.Exit(2) from None
    report = run_crawl(cfg, workdir, since_last=since_last)
    console.print(f"accepted {report.accepted}, rejected {report.rejected}, errors {report.errors}; "
                  f"API requests {report.api.get('requests')} ({report.api.get('not_modified')} not modified); "
                  f"{report.total_instances} instances in {escape(str(report.instances_path))}", soft_wrap=True)
    for reason, n in sorted(report.reasons.items(), key=lambda kv: -kv[1])[:15]:
        console.print(f"  reject: {escape(reason)}: {n}", soft_wrap=True)
    if report.stopped:
        console.print(f"[yellow]stopped early:[/yellow] {escape(str(report.stopped))}", soft_wrap=True)
        raise typer.Exit(1)


def print_funnel(report) -> None:
    """Print the run's funnel (`WORKDIR/report.json` has it, with the cumulative one)."""
    f = report.funnel
    if not f:
        return
    units, minted, cost = f["units"], f["minted"], f["cost"]
    table = Table(title="swemint run: funnel")
    table.add_column("stage")
    table.add_column("this run", justify="right")
    table.add_row("repositories discovered", str(f["repositories"]["discovered"]))
    table.add_row("units seen", str(units["seen"]))
    for reason, n in sorted(units["rejected"].items(), key=lambda kv: -kv[1]):
        table.add_row(f"  rejected: {escape(reason)}", str(n))
    if units["errors"]:
        table.add_row("  crawl errors (retried next run)", str(units["errors"]))
    table.add_row("accepted", str(units["accepted"]))
    if units.get("from_instances_file"):
        table.add_row("rows of the instance file", str(units["from_instances_file"]))
    for outcome, n in minted["outcomes"].items():
        if n:
            table.add_row(f"  minted: {outcome}", str(n))
    table.add_row("verified", str(minted["verified"]))
    console.print(table)
    per = cost["per_verified"]
    first = "-" if f.get("first_verified_s") is None else f"{f['first_verified_s']:.1f}s"
    console.print(f"first verified row after {first}; wall {cost['wall_s']:.1f}s, CPU {cost['cpu_s']:.1f}s, "
                  f"{cost['tokens']} LLM tokens; per verified task: wall {_fmt(per['wall_s'])}, "
                  f"CPU {_fmt(per['cpu_s'])}, tokens {per['tokens'] if per['tokens'] is not None else '-'}",
                  soft_wrap=True)
    api = f.get("api") or {}
    if api.get("requests"):
        console.print(f"GitHub API: {api['requests']} requests ({api.get('not_modified', 0)} answered 304)",
                      soft_wrap=True)


def run_chain(cfg: PipelineConfig, mint_fn=None):
    """`pipeline.flow.run_flow` with a progress line per mint row, then the summaries; exits 2
    on unusable input, 1 when the crawl stopped early or every mint row is `infra_error`."""
    from pipeline.flow import run_flow

    gh = cfg.sources.github
    if not (cfg.instances or cfg.sources.local or (gh is not None and (gh.repos or gh.discovery is not None))):
        console.print("[yellow]no source configured[/yellow] (sources.github, sources.local or --instances): "
                      "only units accepted by earlier runs are minted", soft_wrap=True)
    with Progress(TextColumn("[bold]{task.description}"), TextColumn("{task.completed} minted"),
                  TimeElapsedColumn(), TextColumn("{task.fields[last]}"), console=console) as progress:
        task = progress.add_task("sources -> filter -> plan -> build", total=None, last="")

        def done(res) -> None:
            progress.update(task, advance=1, last=escape(f"{res.instance_id}: {res.outcome}"))

        try:
            report = run_flow(cfg, mint_fn=mint_fn, on_result=done)
        except (ValueError, OSError, SwemintError) as e:
            err_console.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True)
            raise typer.Exit(2) from None
    print_summary(report)
    print_funnel(report)
    console.print(f"report: {escape(str(cfg.workdir / 'report.json'))}", soft_wrap=True)
    if report.crawl is not None and report.crawl.stopped:
        console.print(f"[yellow]crawl stopped early:[/yellow] {escape(report.crawl.stopped)}", soft_wrap=True)
        raise typer.Exit(1)
    if report.missing_ids or (report.results and all(r.outcome == "infra_error" for r in report.results)):
        raise typer.Exit(1)
    return report


@app.command()
def run(config: ConfigFile = None, workdir: Workdir = None, instances: Instances = None, mirrors: Mirrors = None,
        workers: Workers = None, ray: UseRay = None, sets: Sets = None) -> None:
    """Repositories to a dataset: sources -> filter -> plan -> build -> export, streaming, in one job.

    Sources are the config's `sources` (GitHub: token from $GITHUB_TOKEN; local mirrors) and an
    instance file (`--instances`). A rerun mints only what is new since the watermarks and
    retries what `retry_outcomes` names; after a kill -9 it loses and doubles nothing. Writes the
    funnel to WORKDIR/report.json.

    [b]Examples:[/b]

      swemint run -c configs/nightly.yaml -w /data/swemint

      swemint run -c local.yaml -w work --workers 2 --set flow.streaming=false   # crawl, then mint

      swemint run -w work -i tasks.jsonl -m /work/.mirror --no-ray
    """
    cfg = config_from_options(config, sets, workdir=workdir, instances=instances, mirrors=mirrors, workers=workers,
                              use_ray=ray)
    run_chain(cfg)


@pool_app.command("list")
def pool_list(workdir: Workdir = None, repo: Annotated[Optional[str], typer.Option(help="owner/name")] = None,
              config: ConfigFile = None, sets: Sets = None) -> None:
    """List kept environments (read-only). [b]Example:[/b] swemint pool list --workdir work"""
    from envpool.pool import EnvPool

    import duckdb

    cfg = config_from_options(config, sets, workdir=workdir)
    try:
        records = EnvPool(cfg.pool_path, read_only=True).list(repo)
    except duckdb.Error as e:
        err_console.print(f"[red]error:[/red] cannot read {escape(str(cfg.pool_path))} ({type(e).__name__}); the "
                          "next `swemint mint` quarantines it and rebuilds the pool from the stored rows", soft_wrap=True)
        raise typer.Exit(2) from None
    table = Table(title=f"environment pool ({cfg.pool_path})")
    table.add_column("instance", no_wrap=True)
    for col in ("version", "base commit date", "interpreter", "image", "MB"):
        table.add_column(col, overflow="fold")
    for r in records:
        when = r.commit_time.date().isoformat() if r.commit_time else "-"
        table.add_row(escape(r.instance_id), escape(r.version or "-"), when, escape(r.interpreter),
                      escape(r.image_tag), f"{r.size_bytes / 1e6:.0f}")
    console.print(table)
    console.print(f"{len(records)} environments", soft_wrap=True)


@pool_app.command("refresh-tools")
def pool_refresh_tools(workdir: Workdir = None, ids: Ids = None, config: ConfigFile = None, sets: Sets = None) -> None:
    """Write the current grading tools (and a python3) into this work directory's verified images,
    so that their rows' eval scripts run: for pools minted before the tools existed.

    [b]Example:[/b] swemint pool refresh-tools --workdir work
    """
    from envpool.docker_sandbox import DockerSandboxFactory
    from envpool.pool import EnvPool
    from pipeline.imagetools import refresh_tools
    from pipeline.store import ResultStore, WorkdirLocked, driver_lock

    cfg = config_from_options(config, sets, workdir=workdir, ids=ids)
    store = ResultStore(cfg.workdir)
    factory = DockerSandboxFactory(run_id=cfg.mint.run_id, build_network=cfg.mint.build_network)
    pool = EnvPool(cfg.pool_path)
    try:
        with driver_lock(cfg.workdir):  # it rewrites rows and the pool: never beside a running driver
            done = _refresh_all(store, pool, factory, cfg, refresh_tools)
    except WorkdirLocked as e:
        err_console.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True)
        raise typer.Exit(1) from None
    console.print(f"{done} images refreshed", soft_wrap=True)


def _refresh_all(store, pool, factory, cfg, refresh_tools) -> int:
    from envpool.errors import SwemintError

    done = 0
    for res in store.results():
        if res.outcome != "verified" or not res.image or (cfg.ids and res.instance_id not in cfg.ids):
            continue
        try:
            new_id = refresh_tools(factory, res.image, run_id=cfg.mint.run_id, instance_id=res.instance_id)
        except (SwemintError, ValueError) as e:
            console.print(f"[yellow]{escape(res.instance_id)}: {escape(str(e))}[/yellow]", soft_wrap=True)
            continue
        update = {"image_id": new_id}
        if res.env is not None:
            update["env"] = res.env.model_copy(update={"image_id": new_id})
            pool.add(update["env"])
        store.write_result(res.model_copy(update=update))
        done += 1
        console.print(f"{escape(res.instance_id)}: {escape(res.image)} -> {new_id[:19]}", soft_wrap=True)
    return done


@app.command()
def demo(workdir: Workdir = None, workers: Workers = None, ray: UseRay = None, config: ConfigFile = None,
         sets: Sets = None) -> None:
    """Create a small demo repository and instance file, then mint them.

    [b]Example:[/b] swemint demo --workdir /tmp/swemint-demo --no-ray
    """
    cfg = config_from_options(config, sets, workdir=workdir)
    from pipeline.demo import make_demo

    mirrors, instances = make_demo(cfg.workdir / "demo")
    cfg = config_from_options(config, sets, workdir=workdir, workers=workers, use_ray=ray, mirrors=[mirrors],
                  instances=instances)
    _run(cfg)


def main() -> None:
    """Entry point of the `swemint` script."""
    app()


if __name__ == "__main__":
    main()
