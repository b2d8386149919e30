"""The `swemint` command line: one Typer app, a sub-command per stage (SWE-bench cli.py style).

Every command follows `pipeline.cli_common`'s conventions: `-h`, `-v/-q`, `--json` (a summary on
stdout), `-w WORKDIR`, one-line errors with a non-zero exit, and help that shows the effective
default of every option (the value `configs/default.yaml` gives when the option is not passed).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
import yaml
from pydantic import ValidationError
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)
from rich.table import Table

from envpool.errors import SwemintError
from pipeline.cli_common import (MODE, JsonOut, Quiet, Verbose, console, conventions, dataset_workdir, emit,
                                 err_console, escape, fail, os_error_line, require_workdir, version_callback, warn)
from pipeline.pipeline_config import DEFAULT_CONFIG, PipelineConfig, load_config
from pipeline.configerrors import explain

app = typer.Typer(name="swemint", no_args_is_help=True, rich_markup_mode="rich",
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="Turn real repositories into verifiable SWE-bench tasks.\n\n"
                       "[b]Example:[/b] swemint mint --instances tasks.jsonl --mirrors mirrors/ "
                       "--workdir work --workers 2\n\n"
                       "Every command takes -h, -v/-q and --json (a machine-readable summary on stdout).")
pool_app = typer.Typer(no_args_is_help=True, help="Inspect the environment pool (WORKDIR/pool.duckdb).",
                       context_settings={"help_option_names": ["-h", "--help"]})
app.add_typer(pool_app, name="pool")
memory_app = typer.Typer(no_args_is_help=True, help="Inspect the experience memory's knowledge store "
                         "(WORKDIR/memory/experiences.duckdb), read-only.",
                         context_settings={"help_option_names": ["-h", "--help"]})
app.add_typer(memory_app, name="memory")


@app.callback()
def _global(version: Annotated[bool, typer.Option("--version", callback=version_callback, is_eager=True,
                                                  help="Print swemint's version and exit")] = False,
            verbose: Verbose = 0, quiet: Quiet = False, json_out: JsonOut = False) -> None:
    """Turn real repositories into verifiable SWE-bench tasks."""
    MODE.verbose, MODE.quiet, MODE.json = verbose, quiet, json_out


def _defaults() -> dict:
    try:
        from pipeline.yamlio import read_yaml

        return read_yaml(DEFAULT_CONFIG) if DEFAULT_CONFIG.is_file() else {}
    except (OSError, ValueError, yaml.YAMLError):
        return {}


_DEFAULTS = _defaults()


def _default(key: str, fallback: str = "none") -> str:
    """The effective default of a top-level config key (configs/default.yaml), as help shows it."""
    v = _DEFAULTS.get(key)
    if key == "use_ray" and isinstance(v, bool):
        return "--ray" if v else "--no-ray"
    return fallback if v is None or v == [] else str(v)


Instances = Annotated[Optional[Path], typer.Option("--instances", "-i", help="SWE-bench .jsonl/.json/.parquet "
                                                   "(config: instances)",
                                                   show_default=_default("instances"))]
Mirrors = Annotated[Optional[list[Path]], typer.Option("--mirrors", "-m", help="Folder of bare git mirrors "
                                                       "(owner+name/repo or owner/name.git; repeatable; config: mirrors)",
                                                       show_default=_default("mirrors"))]
Workdir = Annotated[Optional[Path], typer.Option("--workdir", "-w", help="State, logs, pool, dataset (config: workdir)",
                                                 show_default=_default("workdir"))]
Limit = Annotated[Optional[int], typer.Option(help="First N instances after the filters (config: limit)",
                                              show_default=_default("limit", "all"))]
Workers = Annotated[Optional[int], typer.Option(help="Build slots: instances in flight at once (config: workers)",
                                                show_default=_default("workers"))]
Ids = Annotated[Optional[list[str]], typer.Option("--ids", help="Instance ids (repeatable or comma-separated)",
                                                  show_default="all")]
IdsFile = Annotated[Optional[Path], typer.Option("--ids-file", help="File of instance ids, one per line",
                                                 show_default="none")]
Language = Annotated[Optional[str], typer.Option(help="Only this language, e.g. python", show_default="all")]
UseRay = Annotated[Optional[bool], typer.Option("--ray/--no-ray", help="Run on Ray or in-process (threads) (config: use_ray)",
                                                show_default=_default("use_ray"))]
ConfigFile = Annotated[Optional[Path], typer.Option("--config", "-c", help="YAML config layered on "
                                                    "configs/default.yaml", show_default="none")]
Sets = Annotated[Optional[list[str]], typer.Option("--set", "-s", help="Override, e.g. mint.run_id=nightly "
                                                   "(repeatable)", show_default="none")]
LongSets = Annotated[Optional[list[str]], typer.Option("--set", help="Override, e.g. mint.limits.cpus=4 "
                                                       "(repeatable)", show_default="none")]
Reverify = Annotated[Optional[bool], typer.Option("--reverify", help="Re-verify verified instances in their "
                                                  "pooled environments (no setup)", show_default="off")]
SUMMARY_FILE = "summary.json"
"""WORKDIR/summary.json: the `--json` summary of the last `mint` / `demo` / `bench` / `run`."""


def _config_error(lines: list[str]) -> None:
    first, more = lines[0], len(lines) - 1
    for line in lines[1:]:
        err_console.print(f"[red]configuration error:[/red] {escape(line)}", soft_wrap=True)
    fail(first + (f" (and {more} more above)" if more else ""), 2, label="configuration error")


def config_from_options(config: Path | None, sets: list[str] | None, **flags) -> PipelineConfig:
    """`load_config` from CLI options (None / empty = not given); exits with code 2 and one line
    per problem on an error: a missing config or ids file, YAML that does not parse, unknown keys
    (with the closest known key: "did you mean"), bad values, a missing instance file or mirror
    folder."""
    if flags.get("ids"):
        flags["ids"] = [x.strip() for v in flags["ids"] for x in v.split(",") if x.strip()]
    if config is not None and not Path(config).is_file():
        fail(f"config file not found: {config}", 2, label="configuration error")
    if flags.get("ids_file") is not None and not Path(flags["ids_file"]).is_file():
        fail(f"ids file not found: {flags['ids_file']}")
    try:
        cfg = load_config(config, sets or [], **{k: (v or None) if isinstance(v, list) else v
                                                  for k, v in flags.items()})
    except ValidationError as e:
        _config_error(explain(e, PipelineConfig))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        fail(f"{config}{where}: not valid YAML ({getattr(e, 'problem', None) or e})", 2, label="configuration error")
    except OSError as e:
        fail(os_error_line(e, "config file"), 2, label="configuration error")
    except ValueError as e:
        fail(str(e), 2, label="configuration error")
    llm = cfg.mint.llm
    if cfg.mint.policy != "rules" and llm is not None and llm.api_key_env and not os.environ.get(llm.api_key_env):
        fail(f"mint.policy {cfg.mint.policy} needs the API key in ${llm.api_key_env} (mint.llm.api_key_env), "
             "which is not set", 2, label="configuration error")
    if cfg.instances is not None and str(cfg.instances) != "demo" and not Path(cfg.instances).is_file():
        fail(f"instance file not found: {cfg.instances}")
    missing = [str(m) for m in cfg.mirrors if not Path(m).is_dir()]
    if missing:
        fail(f"mirror folder not found: {', '.join(missing)}")
    return cfg


def _fmt(v: float | None, unit: str = "s") -> str:
    return "-" if v is None else f"{v:.1f}{unit}"


class InFlight:
    """What a progress bar shows beside the count: the instances started and not finished, and
    the last one that finished (`start(id)`, `end(id, note)`, `text()`)."""

    def __init__(self):
        self.ids: dict[str, float] = {}
        self.last = ""

    def start(self, iid: str) -> None:
        self.ids[iid] = time.monotonic()

    def end(self, iid: str, note: str) -> None:
        self.ids.pop(iid, None)
        self.last = f"{iid}: {note}"

    def text(self) -> str:
        now = time.monotonic()
        running = sorted(self.ids.items(), key=lambda kv: kv[1])
        shown = ", ".join(f"{i} {now - t:.0f}s" for i, t in running[:2])
        more = f" +{len(running) - 2}" if len(running) > 2 else ""
        flight = f"in flight: {shown}{more}" if running else ""
        return escape(" | ".join(x for x in (flight, f"last: {self.last}" if self.last else "") if x))


def progress_bar(bar: bool = True) -> Progress:
    """A rich progress display: description, bar, done/total, elapsed, ETA (rich's estimate from
    the rate so far) and what is in flight; disabled under `-q` and `--json`."""
    cols = [TextColumn("[bold]{task.description}")]
    if bar:
        cols += [BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn()]
    else:
        cols += [TextColumn("{task.completed} minted"), TimeElapsedColumn()]
    cols.append(TextColumn("{task.fields[flight]}"))
    return Progress(*cols, console=console, disable=MODE.quiet or MODE.json)


def finished_line(progress: Progress, task, iid: str, note: str) -> None:
    """After `progress` advanced: when its console is not a terminal (output sent to a file or a
    pipe, where rich draws the display only once, when it stops), print one plain line per finished
    instance, `<done>/<total> <iid>: <note> (<elapsed>s)`, so that a log shows the run as it goes.
    Nothing on a terminal (the live display is there) or when the display is off (-q, --json)."""
    if progress.disable or progress.console.is_terminal:
        return
    t = next(t for t in progress.tasks if t.id == task)
    total = "?" if t.total is None else f"{t.total:.0f}"
    progress.console.print(f"{t.completed:.0f}/{total} {escape(iid)}: {escape(note)} ({t.elapsed or 0:.0f}s)",
                           soft_wrap=True, highlight=False)


def _run(cfg: PipelineConfig, mint_fn=None, command: str = "mint"):
    from pipeline.driver import run_mint

    if cfg.instances is None:
        fail("no instance file: pass --instances or set `instances` in the config")
    flight = InFlight()
    with progress_bar() as progress:
        task = progress.add_task("minting", total=None, flight="")

        def plan(n: int, skipped: int) -> None:
            progress.update(task, total=n, description=f"minting ({skipped} already done)")

        def started(iid: str) -> None:
            flight.start(iid)
            progress.update(task, flight=flight.text())

        def done(res) -> None:
            flight.end(res.instance_id, res.outcome)
            progress.update(task, advance=1, flight=flight.text())
            finished_line(progress, task, res.instance_id, res.outcome)

        try:
            report = run_mint(cfg, mint_fn=mint_fn, on_plan=plan, on_result=done, on_start=started)
        except OSError as e:
            fail(os_error_line(e) if e.filename else str(e))
        except (ValueError, SwemintError) as e:
            fail(str(e))
    print_summary(report)
    summary = mint_summary(report, cfg, command)
    write_summary(cfg.workdir, summary)
    code = 1 if report.missing_ids or (report.results and all(r.outcome == "infra_error" for r in report.results)) \
        else 0
    if report.missing_ids:
        err_console.print(f"[red]error:[/red] {len(report.missing_ids)} requested id(s) not in the instance file: "
                          f"{escape(', '.join(report.missing_ids[:10]))}", soft_wrap=True)
    elif code:
        err_console.print("[red]error:[/red] every instance that ran ended infra_error (see the reasons above): "
                          "the input or the host needs attention", soft_wrap=True)
    if command == "mint" or command == "demo":
        emit({**summary, "exit_code": code})
    if code:
        raise typer.Exit(code)
    return report


def _row_summary(r) -> dict:
    return {"instance_id": r.instance_id, "outcome": r.outcome, "reason": (r.reason or "").splitlines()[0][:300]
            if r.reason else "", "FAIL_TO_PASS": len(r.FAIL_TO_PASS), "PASS_TO_PASS": len(r.PASS_TO_PASS),
            "seconds": r.timings.get("total"), "round": r.round, "image": r.image or None}


def mint_summary(report, cfg: PipelineConfig, command: str) -> dict:
    """The machine-readable summary of a mint (`--json`, WORKDIR/summary.json): counts by
    outcome (this run, all selected), time statistics, bad rows, missing ids, the dataset's
    paths and one entry per instance."""
    counts = report.counts()
    return {"command": command, "workdir": str(cfg.workdir), "selected": len(report.selected),
            "ran": len(report.results), "skipped": len(report.skipped),
            "outcomes": {o: t for o, (_, t) in counts.items() if t},
            "outcomes_this_run": {o: n for o, (n, _) in counts.items() if n},
            "bad_rows": len(report.load_errors), "missing_ids": list(report.missing_ids),
            "wall_seconds": round(report.wall_s, 2), **{k: v for k, v in report.stats().items()},
            "dataset": {k: str(v) for k, v in report.dataset.items()}, "notes": list(report.export_notes),
            "instances": [_row_summary(r) for r in sorted(report.results + report.skipped,
                                                          key=lambda r: r.instance_id)]}


def write_summary(workdir: Path, summary: dict) -> Path | None:
    """Write `summary` to WORKDIR/summary.json (atomically); None when the folder is gone."""
    from pipeline.store import atomic_write

    path = Path(workdir) / SUMMARY_FILE
    try:
        atomic_write(path, json.dumps(summary, indent=1, sort_keys=True, default=str) + "\n")
    except OSError:
        return None
    return path


def print_summary(report) -> None:
    """Print bad input rows, the outcome table, time statistics and the dataset paths."""
    for e in report.load_errors[:20]:
        console.print(f"[yellow]skipped bad input row:[/yellow] {escape(str(e))}", soft_wrap=True)
    if len(report.load_errors) > 20:
        console.print(f"[yellow]... {len(report.load_errors) - 20} more bad rows[/yellow]", soft_wrap=True)
    if report.missing_ids:
        missing = escape(", ".join(report.missing_ids))
        console.print(f"[yellow]ids not in the instance file:[/yellow] {escape(str(missing))}", soft_wrap=True)
    rows = sorted(report.results + report.skipped, key=lambda r: r.instance_id)
    if 0 < len(rows) <= 40:
        detail = Table(title="instances")
        for col in ("instance_id", "outcome", "FAIL_TO_PASS", "PASS_TO_PASS", "seconds", "reason / image"):
            detail.add_column(col, justify="right" if col in ("FAIL_TO_PASS", "PASS_TO_PASS", "seconds") else "left")
        for r in rows:
            secs = r.timings.get("total")
            note = r.image if r.outcome == "verified" else r.reason.splitlines()[0][:80] if r.reason else ""
            detail.add_row(escape(r.instance_id), r.outcome, str(len(r.FAIL_TO_PASS)), str(len(r.PASS_TO_PASS)),
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
    for note in getattr(report, "export_notes", []):
        warn(note)


@app.command()
@conventions
def mint(instances: Instances = None, mirrors: Mirrors = None, workdir: Workdir = None, limit: Limit = None,
         workers: Workers = None, ids: Ids = None, ids_file: IdsFile = None, language: Language = None,
         ray: UseRay = None, config: ConfigFile = None, sets: Sets = None, reverify: Reverify = None) -> None:
    """Mint instances into verified tasks; a rerun skips finished ones (verified are never redone).

    Writes WORKDIR/instances/<id>/, pool.duckdb, dataset/ and summary.json (what --json prints).
    Exit 0 when the batch ran, 1 when requested ids are missing or every row is infra_error,
    2 on unusable input.

    [b]Examples:[/b]

      swemint mint -i tasks.jsonl -m mirrors/ -w work --limit 5 --no-ray

      swemint mint -i tasks.jsonl -m mirrors/ -w work --workers 4 --ids-file ids.txt

      swemint mint -c my.yaml --set mint.run_id=nightly --set mint.timeouts.instance=1800

      swemint mint -i tasks.jsonl -m mirrors/ -w work --reverify   # warm: tests in pooled images
    """
    cfg = config_from_options(config, sets, instances=instances, mirrors=mirrors, workdir=workdir, limit=limit,
                  workers=workers, ids=ids, ids_file=ids_file, language=language, use_ray=ray, reverify=reverify)
    _run(cfg)


@app.command()
@conventions
def bench(instances: Instances = None, mirrors: Mirrors = None, workdir: Workdir = None, limit: Limit = None,
          workers: Workers = None, ids: Ids = None, ids_file: IdsFile = None, language: Language = None,
          ray: UseRay = None, config: ConfigFile = None, sets: Sets = None, reverify: Reverify = None,
          score_only: Annotated[bool, typer.Option(help="Score stored results, mint nothing")] = False) -> None:
    """Mint (skipping finished instances) and score our F2P/P2P lists against the gold lists.

    Writes WORKDIR/bench.json. [b]Example:[/b] swemint bench -i dev.jsonl -m mirrors/ -w work --ids-file core.txt
    """
    from pipeline.bench import SCORE_COLUMNS, write_bench
    from pipeline.bench import bench as score
    from pipeline.instances import load_and_select
    from pipeline.store import ResultStore

    cfg = config_from_options(config, sets, instances=instances, mirrors=mirrors, workdir=workdir, limit=limit,
                  workers=workers, ids=ids, ids_file=ids_file, language=language, use_ray=ray, reverify=reverify)
    if score_only or cfg.instances is None:
        require_workdir(cfg.workdir, "swemint bench --score-only")
    sel = None
    if cfg.instances is not None:
        try:
            sel = load_and_select(cfg.instances, ids=cfg.ids or None, ids_file=cfg.ids_file, language=cfg.language,
                                  limit=cfg.limit).instances
        except OSError as e:
            fail(os_error_line(e))
        except (ValueError, SwemintError) as e:
            fail(str(e))
    store = ResultStore(cfg.workdir, read_only=True)  # the mint below is the driver, with its own store
    gold = store.instances()
    if sel is not None:
        gold.update({i.instance_id: i for i in sel})
        wanted = {i.instance_id for i in sel}
    else:
        wanted = set(gold)
    if not score_only:
        _run(cfg, command="bench")
    results = [r for r in store.results() if r.instance_id in wanted]
    report = score(results, gold)
    path = write_bench(report, cfg.workdir / "bench.json")
    table = Table(title="swemint bench")
    table.add_column("instance", no_wrap=True)
    for col in ("outcome", "F2P recall", "F2P precision", "P2P agreement"):
        table.add_column(col)
    for r in report["instances"]:
        cells = [r.get(k) for k in SCORE_COLUMNS]
        table.add_row(escape(r["instance_id"]), escape(r["outcome"]),
                      *(f"{c:.2f}" if isinstance(c, float) else escape(str("-" if c is None else c)) for c in cells))
    console.print(table)
    console.print(json.dumps(report["aggregate"], indent=1, default=str))
    console.print(f"bench written to {escape(str(path))}", soft_wrap=True)
    emit({"command": "bench", "workdir": str(cfg.workdir), "bench": str(path), "aggregate": report["aggregate"],
          "instances": report["instances"]})


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


Formats = ("parquet", "swebench-task-repo")


@app.command()
@conventions
def export(dest: Annotated[Optional[Path], typer.Argument(help="Task repository folder (= --out)")] = None,
           workdir: Workdir = None, mirrors: Mirrors = None, config: ConfigFile = None, sets: Sets = None,
           fmt: Annotated[str, typer.Option("--format", help="parquet (WORKDIR/dataset) or swebench-task-repo")] = "parquet",
           out: Annotated[Optional[Path], typer.Option("--out", help="Task repository folder (swebench-task-repo)",
                                                       show_default="none")] = None,
           json_strings: Annotated[bool, typer.Option("--json-strings", help="FAIL_TO_PASS / PASS_TO_PASS as JSON "
                                                      "strings, as in the HF copies of SWE-bench")] = False,
           license: Annotated[Optional[list[str]], typer.Option(
               "--license", help="Keep only rows under these SPDX ids (repeatable or comma-separated)",
               show_default="every row")] = None,
           permissive: Annotated[bool, typer.Option(help="Keep only rows under a permissive licence "
                                                    "(pipeline.licenses.PERMISSIVE)")] = False,
           embed_tool: Annotated[bool, typer.Option(help="Eval scripts carry the status tool (~110 KB a row), for "
                                                    "images minted before they carried one")] = False,
           push_to_hub: Annotated[Optional[str], typer.Option(
               "--push-to-hub", help="Then upload WORKDIR/dataset to this Hugging Face dataset (OWNER/NAME; token "
                                     "from $HF_TOKEN); refused while a verified row's image is a local tag",
               show_default="none")] = None,
           dataset_name: Annotated[str, typer.Option(help="Dataset the task repository publishes")] = "swemint/tasks",
           tag_images: Annotated[bool, typer.Option(help="Tag local images under the names swebench derives "
                                                    "for a task repository")] = False,
           wait: Annotated[float, typer.Option(help="Seconds to wait for a running driver's lock")] = 600.0) -> None:
    """Write the dataset from the stored results: WORKDIR/dataset/{verified,all}.parquet and its
    card README.md, or (--format swebench-task-repo) SWE-bench v5's task folders.

    Each row's `license` is read from its repository's licence file at base_commit, in the mirrors
    (-m, else those the last mint recorded). Runs under the driver's lock (WORKDIR/driver.lock):
    it waits for a running `mint` (which exports when it ends) or another export, up to `--wait`
    seconds. Says so when verified rows name local image tags (nobody else can pull them) or
    images without the status tool their eval scripts call.

    [b]Examples:[/b] swemint export --workdir work

      swemint export -w work --permissive --push-to-hub me/my-tasks

      swemint export -w work -m mirrors/ --format swebench-task-repo tasks
    """
    from pipeline.licenses import PERMISSIVE
    from pipeline.store import ResultStore, WorkdirLocked, driver_lock

    cfg = config_from_options(config, sets, workdir=workdir, mirrors=mirrors)
    require_workdir(cfg.workdir, "swemint export")
    if fmt not in Formats:
        fail(f"unknown format {fmt} ({', '.join(Formats)})")
    if fmt == "swebench-task-repo" and ((out or dest) is None or not cfg.mirrors):
        fail("swebench-task-repo needs a folder (DIR or --out) and --mirrors (the base trees)")
    if push_to_hub and fmt != "parquet":
        fail("--push-to-hub publishes the parquet dataset (--format parquet)")
    keep = sorted({x.strip() for v in license or [] for x in v.split(",") if x.strip()} |
                  (set(PERMISSIVE) if permissive else set())) or None
    store = ResultStore(cfg.workdir, read_only=True)  # the lock orders it with a driver; it moves no row
    try:
        with driver_lock(cfg.workdir, wait=wait):
            summary = _export(store, cfg, fmt, out or dest, json_strings, dataset_name, tag_images,
                              mirrors_given=mirrors is not None, licenses=keep, embed_tool=embed_tool)
    except WorkdirLocked as e:
        fail(f"{e}; it exports the dataset when it ends", 1)
    if push_to_hub:
        summary["hub"] = _push(cfg.workdir / "dataset", push_to_hub)
    emit({"command": "export", "workdir": str(cfg.workdir), "format": fmt, **summary})


def _push(dataset_dir: Path, repo_id: str) -> str:
    from pipeline.hub import PublishRefused, hand_command, push

    try:
        url = push(dataset_dir, repo_id)
    except PublishRefused as e:
        fail(str(e))
    except ImportError:
        fail(f"--push-to-hub needs huggingface_hub (pip install 'swemint[hub]'); or upload by hand: "
             f"{hand_command(repo_id, dataset_dir)}")
    except Exception as e:  # noqa: BLE001 - the Hub's own errors (auth, network): one line
        fail(f"upload to {repo_id} failed: {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}", 1)
    console.print(f"published: {escape(url)}", soft_wrap=True)
    return url


def _export(store, cfg, fmt: str, out: Path | None, json_strings: bool, dataset_name: str, tag_images: bool, *,
            mirrors_given: bool = False, licenses: list[str] | None = None, embed_tool: bool = False) -> dict:
    from pipeline.export import export_dataset

    results = store.results()
    verified = sum(r.outcome == "verified" for r in results)
    if fmt == "parquet":
        notes: list[str] = []
        paths = export_dataset(store, json_strings=json_strings, mirrors=cfg.mirrors if mirrors_given else None,
                               licenses=licenses, embed_tool=embed_tool, notes=notes)
        console.print(f"{verified} verified of {len(results)} results", soft_wrap=True)
        for name, path in paths.items():
            console.print(f"dataset ({name}): {escape(str(path))}", soft_wrap=True)
        for note in notes:
            warn(note)
        return {"verified": verified, "results": len(results), "dataset": {k: str(v) for k, v in paths.items()},
                "notes": notes, "licenses": licenses}
    from pipeline.export import export_task_repo

    rep = export_task_repo(store, out, _tree_reader(cfg), dataset=dataset_name, ca_bundle=_ca_bundle(),
                           tag_images=tag_images, embed_tool=embed_tool)
    console.print(f"{rep['tasks']} tasks written to {escape(str(out))}", soft_wrap=True)
    for iid, why in rep["skipped"].items():
        warn(f"skipped {iid}: {why}")
    return {"tasks": rep["tasks"], "out": str(out), "skipped": rep["skipped"]}


@app.command("eval")
@conventions
def eval_(dataset_arg: Annotated[Optional[Path], typer.Argument(
              metavar="[DATASET]", help="Dataset folder or parquet, as `swebench eval DATASET` takes it "
                                        "(= --dataset)", show_default=False)] = None,
          predictions: Annotated[Optional[str], typer.Option(
              "--predictions", "-p", "--predictions_path", "--predictions-path",
              help="JSONL/JSON predictions, or `gold` / `empty`", show_default="none")] = None,
          gold: Annotated[bool, typer.Option("--gold", help="Grade the rows' own patches (= -p gold)")] = False,
          workdir: Workdir = None,
          dataset: Annotated[Optional[Path], typer.Option(
              "--dataset", "-d", "--dataset_name", "--dataset-name",
              help="Dataset folder or parquet", show_default="the rows of WORKDIR's store")] = None,
          split: Annotated[str, typer.Option("--split", "-s", help="Split of a dataset folder: verified or "
                                             "all_outcomes (only verified rows are graded)")] = "verified",
          out: Annotated[Optional[Path], typer.Option(
              "--out", "--report-dir", "--report_dir", help="Reports folder",
              show_default="WORKDIR/evaluations/RUN_ID; with a DATASET and no -w: the evaluations/RUN_ID of the "
                           "work directory holding it, else ./evaluations/RUN_ID")] = None,
          run_id: Annotated[str, typer.Option("--run-id", "--run_id", "-id", help="Names the reports folder")] = "eval",
          workers: Annotated[Optional[int], typer.Option(
              "--workers", "-j", "--max_workers", "--max-workers", help="Instances graded at once",
              show_default=_default("workers"))] = None,
          ids: Annotated[Optional[list[str]], typer.Option(
              "--ids", "-i", "--instance", "--instance_ids", "--instance-ids",
              help="Only these instance ids (repeatable or comma-separated)", show_default="all")] = None,
          timeout: Annotated[float, typer.Option("--timeout", "-t", help="Seconds per test run")] = 1800,
          config: ConfigFile = None, sets: LongSets = None,
          ray: Annotated[Optional[bool], typer.Option(
              "--ray/--no-ray", help="Accepted as other commands take it: eval grades on this host's Docker "
                                     "engine in threads (--workers), never on Ray; --ray is refused",
              show_default="no Ray")] = None,
          modal: Annotated[Optional[str], typer.Option("--modal", hidden=True)] = None,
          _ignored: Annotated[Optional[list[str]], typer.Option(
              "--open_file_limit", "--open-file-limit", "--namespace", "--cache_level", "--cache-level",
              hidden=True, help="swebench options with no meaning here (ignored)")] = None) -> None:
    """Grade model predictions in the rows' pooled images (no network), SWE-bench's rules;
    resumable (finished instances are kept), parallel (--workers threads on this host's Docker
    engine; no Ray: --no-ray is accepted, --ray refused).

    Accepts `swebench eval`'s spellings (DATASET, --gold, -i/--instance, -j, -s, -t, --run-id,
    --report-dir) and `python -m swebench.harness.run_evaluation`'s (--dataset_name,
    --predictions_path, --instance_ids, --max_workers, --run_id, --report_dir). Exit 1 when
    predictions name ids the dataset does not hold (the others are graded) or when the engine
    could not grade a row (an image missing, the daemon down: infrastructure, graded again by a
    rerun), 2 when nothing can be graded (no such ids, no rows, no predictions file).

    [b]Examples:[/b] swemint eval -p preds.jsonl -w work --workers 2

      swemint eval -p gold -w work --run-id gold-check

      swemint eval work/dataset --gold -j 2 --run-id check      # swebench eval's spelling
    """
    from pipeline.evaluate import dataset_rows, evaluate, load_predictions

    if modal and modal.lower() not in ("false", "0", "no"):
        fail("--modal: swemint grades on the local Docker engine only")
    if ray:
        fail("--ray: swemint eval grades on this host's Docker engine in threads (--workers), not on Ray")
    if gold:
        if predictions not in (None, "gold"):
            fail("pass either --gold or --predictions, not both")
        predictions = "gold"
    if predictions is None:
        fail("pass --predictions FILE (or gold / empty), or --gold")
    if dataset_arg is not None and dataset is not None and dataset_arg != dataset:
        fail(f"two datasets given: {dataset_arg} and --dataset {dataset}")
    dataset = dataset or dataset_arg
    cfg = config_from_options(config, sets, workdir=workdir, workers=workers, ids=ids)
    if dataset is not None:
        if not dataset.exists():
            fail(f"dataset not found: {dataset} (a folder written by `swemint export`, or a .parquet file; "
                 "swemint grades local rows, not Hugging Face ids)")
    else:
        require_workdir(cfg.workdir, "swemint eval")
    refused: list[str] = []
    try:
        rows = dataset_rows(cfg.workdir, dataset, split=split, refused=refused)
    except OSError as e:
        fail(os_error_line(e, "dataset file"))
    except ValueError as e:
        fail(str(e))
    for line in refused:
        warn(f"skipped bad dataset row: {line}")
    if not rows:
        fail(f"no verified row in {dataset or cfg.workdir}: nothing to grade")
    if cfg.ids:
        unknown_sel = [i for i in cfg.ids if i not in rows]
        if unknown_sel:
            fail(f"{len(unknown_sel)} id(s) not in the dataset: {', '.join(unknown_sel[:10])} "
                 f"({len(rows)} verified rows)")
        rows = {k: v for k, v in rows.items() if k in set(cfg.ids)}
    try:
        preds = load_predictions(predictions, rows)
    except OSError as e:
        fail(os_error_line(e, "predictions file"))
    except ValueError as e:
        fail(str(e))
    unknown = sorted({p["instance_id"] for p in preds} - set(rows))
    known = [p for p in preds if p["instance_id"] in rows]
    if preds and not known:
        fail(f"no prediction names an instance of the dataset: {', '.join(unknown[:10])}"
             f"{' ...' if len(unknown) > 10 else ''} ({len(rows)} verified rows)")
    if not preds:
        fail(f"no predictions in {predictions}")
    if unknown:
        warn(f"{len(unknown)} prediction(s) name ids not in the dataset (not graded): {', '.join(unknown[:10])}"
             f"{' ...' if len(unknown) > 10 else ''}")
    if out is None:  # next to the work directory's other reports when there is one (`swemint report` shows them)
        home = cfg.workdir if workdir is not None or dataset is None else dataset_workdir(dataset) or Path.cwd()
        out = home / "evaluations" / run_id
    limits = {"cpus": cfg.mint.limits.cpus, "memory": cfg.mint.limits.memory, "pids": cfg.mint.limits.pids}
    flight = InFlight()
    with progress_bar() as progress:
        task = progress.add_task("grading", total=len(known), flight="")

        def started(iid: str) -> None:
            flight.start(iid)
            progress.update(task, flight=flight.text())

        def done(r) -> None:
            note = "resolved" if r.resolved else "error" if r.error else "unresolved"
            flight.end(r.instance_id, note)
            progress.update(task, advance=1, flight=flight.text())
            finished_line(progress, task, r.instance_id, note)

        report = evaluate(rows, preds, out, workers=cfg.workers, timeout=timeout, run_id=f"{cfg.mint.run_id}-eval",
                          limits=limits, on_result=done, on_start=started)
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
    infra = report["infra_error_ids"]
    code = 1 if unknown or infra else 0
    emit({"command": "eval", "report": str(out / "report.json"), "exit_code": code,
          **{k: v for k, v in report.items() if k != "instances"}})
    problems = []
    if unknown:
        problems.append(f"{len(unknown)} prediction(s) were not graded: their ids are not in the dataset")
    if infra:
        first = report["instances"][infra[0]].get("error") or ""
        problems.append(f"{len(infra)} row(s) could not be graded, the engine failed (not the patches): "
                        f"{', '.join(infra[:5])}{' ...' if len(infra) > 5 else ''} ({first[:200]}); "
                        "rerun the same command once the images are back to grade them")
    if code:
        err_console.print(f"[red]error:[/red] {escape('; '.join(problems))}", soft_wrap=True)
        raise typer.Exit(code)


@app.command()
@conventions
def rebuild(workdir: Workdir = None, mirrors: Mirrors = None, ids: Ids = None, ids_file: IdsFile = None,
            verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Rerun the before/after grading in "
                                                 "the rebuilt image")] = True,
            keep_images: Annotated[bool, typer.Option(help="Keep the rebuilt images")] = False,
            config: ConfigFile = None, sets: Sets = None) -> None:
    """Build verified rows' Dockerfiles from scratch (docker build --no-cache), rerun the
    before/after grading in the rebuilt image and record whether the labels reproduce
    (WORKDIR/rebuild/<id>.json, the dataset's `rebuild` column).

    [b]Example:[/b] swemint rebuild --verify -w work -m mirrors/ --ids a,b
    """
    from agents.dockerfile import earlier_trees
    from envpool.docker_sandbox import DockerSandboxFactory, docker_client
    from envpool.netguard import ensure_build_network
    from pipeline.evaluate import dataset_rows
    from pipeline.rebuild import RebuildOptions, rebuild_row
    from pipeline.rebuild import write_summary as write_rebuild_summary
    from pipeline.store import ResultStore

    cfg = config_from_options(config, sets, workdir=workdir, mirrors=mirrors, ids=ids, ids_file=ids_file)
    require_workdir(cfg.workdir, "swemint rebuild")
    from pipeline.instances import read_ids_file

    wanted = set(cfg.ids) | (set(read_ids_file(cfg.ids_file)) if cfg.ids_file else set())
    all_rows = dataset_rows(cfg.workdir)
    if wanted - set(all_rows):
        fail(f"not verified rows of {cfg.workdir}: {', '.join(sorted(wanted - set(all_rows))[:10])}")
    rows = {k: v for k, v in all_rows.items() if not wanted or k in wanted}
    known = ResultStore(cfg.workdir, read_only=True).instances()
    client = docker_client()
    factory = DockerSandboxFactory(run_id=f"{cfg.mint.run_id}-rebuild")
    network = ensure_build_network(client, cfg.mint.build_network) if cfg.mint.build_network.enabled else None
    tree, ca = _tree_reader(cfg), _ca_bundle()
    options = RebuildOptions(run_id=f"{cfg.mint.run_id}-rebuild", network=network, keep_image=keep_images,
                             verify=verify)
    certs = []
    for iid, row in sorted(rows.items()):
        console.print(f"rebuilding {escape(iid)} ...", soft_wrap=True)
        try:
            tar = tree(known[iid])
            earlier = {c: tree(known[iid].model_copy(update={"base_commit": c}))
                       for c in earlier_trees(row.get("dockerfile") or "")}
        except Exception as e:  # noqa: BLE001 - one row's missing mirror never stops the rest
            warn(f"{iid}: base tree unavailable: {e}")
            continue
        cert = rebuild_row(row, tar, cfg.workdir, client=client, factory=factory, options=options, ca_bundle=ca,
                           earlier=earlier)
        certs.append(cert)
        hist = "ok" if cert.history and all(h.ok for h in cert.history) else "NOT ok"
        console.print(f"  built {cert.built} in {cert.build_seconds:.0f}s, reproduced {cert.reproduced}, "
                      f"history {hist}{', error: ' + escape(cert.error) if cert.error else ''}", soft_wrap=True)
    path = write_rebuild_summary(cfg.workdir, certs)
    console.print(f"{sum(c.reproduced for c in certs)}/{len(certs)} reproduced; summary {escape(str(path))}",
                  soft_wrap=True)
    emit({"command": "rebuild", "rows": len(rows), "rebuilt": len(certs), "reproduced": sum(c.reproduced for c in certs),
          "summary": str(path), "certificates": [c.model_dump(mode="json") for c in certs]})


@app.command()
@conventions
def report(workdir_arg: Annotated[Optional[Path], typer.Argument(
               metavar="[WORKDIR]", help="Deprecated spelling of -w WORKDIR", show_default=False)] = None,
           workdir: Workdir = None,
           out: Annotated[Optional[Path], typer.Option("--out", help="HTML file",
                                                       show_default="WORKDIR/report.html")] = None) -> None:
    """Write a self-contained HTML report with plots (needs the `report` extra: matplotlib):
    a per-instance table with links to each log and trajectory, outcomes per language and
    repository, time per phase, verified yield against time and tokens, reuse share, failure
    causes, the funnel of `swemint run`, and the results of `swemint eval` and `swemint bench`.

    [b]Example:[/b] swemint report -w work
    """
    from pipeline.report import write_report

    if workdir_arg is not None:
        if workdir is not None and workdir != workdir_arg:
            fail(f"two work directories given: {workdir_arg} and -w {workdir}")
        warn(f"`swemint report WORKDIR` is deprecated: use `swemint report -w {workdir_arg}`")
    wd = (workdir or workdir_arg or Path(str(_DEFAULTS.get("workdir") or "work"))).expanduser().absolute()
    require_workdir(wd, "swemint report")
    try:
        path = write_report(wd, out)
    except ImportError as e:
        fail(f"{e}: pip install 'swemint[report]'")
    except OSError as e:
        fail(os_error_line(e, "output file"))
    console.print(f"report: {escape(str(path))}", soft_wrap=True)
    emit({"command": "report", "workdir": str(wd), "report": str(path)})


@app.command()
@conventions
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
    from pipeline.sources.crawl_config import CrawlConfig

    if not Path(config).is_file():
        fail(f"config file not found: {config}", 2, label="configuration error")
    try:
        cfg = load_crawl_config(config, sets or [])
    except ValidationError as e:
        _config_error(explain(e, CrawlConfig))
    except yaml.YAMLError as e:
        fail(f"{config}: not valid YAML ({getattr(e, 'problem', None) or e})", 2, label="configuration error")
    except OSError as e:
        fail(os_error_line(e, "config file"), 2, label="configuration error")
    except ValueError as e:
        fail(str(e), 2, label="configuration error")
    report = run_crawl(cfg, workdir, since_last=since_last)
    console.print(f"accepted {report.accepted}, rejected {report.rejected}, errors {report.errors}; "
                  f"API requests {report.api.get('requests')} ({report.api.get('not_modified')} not modified); "
                  f"{report.total_instances} instances in {escape(str(report.instances_path))}", soft_wrap=True)
    for reason, n in sorted(report.reasons.items(), key=lambda kv: -kv[1])[:15]:
        console.print(f"  reject: {escape(reason)}: {n}", soft_wrap=True)
    emit({"command": "crawl", "accepted": report.accepted, "rejected": report.rejected, "errors": report.errors,
          "api": report.api, "instances": str(report.instances_path), "total_instances": report.total_instances,
          "reasons": report.reasons, "stopped": report.stopped, "exit_code": 1 if report.stopped else 0})
    if report.stopped:
        warn(f"stopped early: {report.stopped}")
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
    """`pipeline.streaming.run_flow` with a progress line (minted so far, what is in flight), then
    the summaries; exits 2 on unusable input, 1 when the crawl stopped early or every mint row
    is `infra_error`."""
    from pipeline.streaming import run_flow

    gh = cfg.sources.github
    if not (cfg.instances or cfg.sources.local or (gh is not None and (gh.repos or gh.discovery is not None))):
        warn("no source configured (--repo, --instances, sources.github or sources.local): only units accepted "
             "by earlier runs are minted")
    flight = InFlight()
    with progress_bar(bar=False) as progress:
        task = progress.add_task("sources -> filter -> plan -> build", total=None, flight="")

        def started(iid: str) -> None:
            flight.start(iid)
            progress.update(task, flight=flight.text())

        def done(res) -> None:
            flight.end(res.instance_id, res.outcome)
            progress.update(task, advance=1, flight=flight.text())
            finished_line(progress, task, res.instance_id, res.outcome)

        try:
            report = run_flow(cfg, mint_fn=mint_fn, on_result=done, on_start=started,
                              on_total=lambda n: progress.update(task, total=max(n, 1)))
        except OSError as e:
            fail(os_error_line(e) if e.filename else str(e))
        except (ValueError, SwemintError) as e:
            fail(str(e))
    print_summary(report)
    print_funnel(report)
    console.print(f"report: {escape(str(cfg.workdir / 'report.json'))}", soft_wrap=True)
    summary = {**mint_summary(report, cfg, "run"), "funnel": report.funnel,
               "report": str(cfg.workdir / "report.json")}
    stopped = report.crawl.stopped if report.crawl is not None else None
    code = 1 if stopped or report.missing_ids or (
        report.results and all(r.outcome == "infra_error" for r in report.results)) else 0
    summary["exit_code"] = code
    write_summary(cfg.workdir, summary)
    emit(summary)
    if stopped:
        warn(f"crawl stopped early: {stopped}")
    if report.missing_ids:
        err_console.print(f"[red]error:[/red] {len(report.missing_ids)} requested id(s) not in the instance file: "
                          f"{escape(', '.join(report.missing_ids[:10]))}", soft_wrap=True)
    if code:
        raise typer.Exit(code)
    return report


def repo_sources(cfg: PipelineConfig, repos: list[str], last: int | None) -> list[str]:
    """Add `--repo owner/name` sources to `cfg.sources`: the repository's local mirror when one of
    `cfg.mirrors` holds it (merge and squash units of its history: no GitHub, no token), else
    GitHub's merged PRs (`sources.github.repos`; token from the variable `api.token_env` names).
    `last`: at most that many units per repository (commits of a mirror, PRs on GitHub). Returns
    one line per repository saying which source it got. Exits 2 on a malformed name."""
    from pipeline.repos import RepoResolver
    from pipeline.sources.crawl_config import GitHubConfig, LocalRepoConfig

    resolver = RepoResolver(cfg.mirrors, cfg.repos.model_copy(update={"allow_clone": False}))
    lines = []
    for repo in repos:
        if repo.count("/") != 1 or not all(repo.split("/")):
            fail(f"--repo {repo}: not owner/name")
        try:
            git_dir = resolver.resolve(repo) if cfg.mirrors else None
        except SwemintError:
            git_dir = None
        if git_dir is not None:
            cfg.sources.local.append(LocalRepoConfig(repo=repo, git_dir=git_dir, max_commits=last))
            lines.append(f"{repo}: local mirror {git_dir}")
            continue
        if cfg.sources.github is None:
            cfg.sources.github = GitHubConfig()
        gh = cfg.sources.github
        if repo not in gh.repos:
            gh.repos.append(repo)
        if last is not None:
            gh.pairs.max_pulls_per_repo = last
        lines.append(f"{repo}: GitHub (token from ${gh.api.token_env})")
    return lines


@app.command()
@conventions
def run(config: ConfigFile = None, workdir: Workdir = None, instances: Instances = None, mirrors: Mirrors = None,
        repo: Annotated[Optional[list[str]], typer.Option(
            "--repo", "-r", help="Repository owner/name to mint from (repeatable): its mirror under --mirrors "
                                 "if one holds it, else GitHub's PRs ($GITHUB_TOKEN)", show_default="none")] = None,
        last: Annotated[Optional[int], typer.Option(
            help="With --repo: at most this many units per repository (the newest)", show_default="all")] = None,
        workers: Workers = None, ray: UseRay = None, sets: Sets = None) -> None:
    """Repositories to a dataset: sources -> filter -> plan -> build -> export, streaming, in one job.

    Sources are `--repo owner/name` (no YAML needed), an instance file (`--instances`) and the
    config's `sources` (GitHub: token from $GITHUB_TOKEN; local mirrors). A rerun mints only what
    is new since the watermarks and retries what `retry_outcomes` names; after a kill -9 it loses
    and doubles nothing. Writes the funnel to WORKDIR/report.json and the summary to
    WORKDIR/summary.json.

    [b]Examples:[/b]

      swemint run --repo pallets/click -m mirrors/ -w work --last 20     # a local mirror, no token

      GITHUB_TOKEN=... swemint run --repo me/my-project -w work          # GitHub

      swemint run -c configs/nightly.yaml -w /data/swemint

      swemint run -w work -i tasks.jsonl -m mirrors/ --no-ray
    """
    cfg = config_from_options(config, sets, workdir=workdir, instances=instances, mirrors=mirrors, workers=workers,
                              use_ray=ray)
    if last is not None and not repo:
        fail("--last goes with --repo")
    for line in repo_sources(cfg, list(repo or []), last):
        console.print(f"source: {escape(line)}", soft_wrap=True)
    run_chain(cfg)


@pool_app.command("list")
@conventions
def pool_list(workdir: Workdir = None, repo: Annotated[Optional[str], typer.Option(help="owner/name",
                                                                                  show_default="all")] = None,
              config: ConfigFile = None, sets: Sets = None) -> None:
    """List kept environments (read-only). [b]Example:[/b] swemint pool list --workdir work"""
    from envpool.pool import EnvPool

    import duckdb

    cfg = config_from_options(config, sets, workdir=workdir)
    require_workdir(cfg.workdir, "swemint pool list")
    try:
        records = EnvPool(cfg.pool_path, read_only=True).list(repo)
    except duckdb.Error as e:
        fail(f"cannot read {cfg.pool_path} ({type(e).__name__}); the next `swemint mint` quarantines it and "
             "rebuilds the pool from the stored rows")
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
    emit({"command": "pool list", "pool": str(cfg.pool_path),
          "environments": [{"instance_id": r.instance_id, "repo": r.repo, "version": r.version,
                            "commit_time": r.commit_time, "interpreter": r.interpreter, "image": r.image_tag,
                            "image_id": r.image_id, "size_bytes": r.size_bytes} for r in records]})


@pool_app.command("refresh-tools")
@conventions
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
    require_workdir(cfg.workdir, "swemint pool refresh-tools")
    from pipeline.pipeline_config import minted_run_id

    cfg.mint.run_id = minted_run_id(cfg)  # refreshed images keep the run's label (`pool prune --all`)
    store = ResultStore(cfg.workdir)
    factory = DockerSandboxFactory(run_id=cfg.mint.run_id, build_network=cfg.mint.build_network)
    pool = EnvPool(cfg.pool_path)
    try:
        with driver_lock(cfg.workdir):  # it rewrites rows and the pool: never beside a running driver
            done = _refresh_all(store, pool, factory, cfg, refresh_tools)
    except WorkdirLocked as e:
        fail(str(e), 1)
    console.print(f"{done} images refreshed", soft_wrap=True)
    emit({"command": "pool refresh-tools", "refreshed": done})


def _refresh_all(store, pool, factory, cfg, refresh_tools) -> int:
    from envpool.errors import SwemintError

    done = 0
    for res in store.results():
        if res.outcome != "verified" or not res.image or (cfg.ids and res.instance_id not in cfg.ids):
            continue
        try:
            new_id = refresh_tools(factory, res.image, run_id=cfg.mint.run_id, instance_id=res.instance_id,
                                   mirror=cfg.mint.repair)
        except (SwemintError, ValueError) as e:
            warn(f"{res.instance_id}: {e}")
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
@conventions
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
    _run(cfg, command="demo")


EVAL_NARGS = ("--instance_ids", "--instance-ids")
"""Options of `python -m swebench.harness.run_evaluation` that take several values (argparse
`nargs="+"`); `expand_nargs` spells them as repeated options for click."""


def expand_nargs(argv: list[str]) -> list[str]:
    """`eval ... --instance_ids a b c --run_id x` -> `eval ... --instance_ids a --instance_ids b
    --instance_ids c --run_id x` (only after the `eval` command; other words pass unchanged)."""
    if "eval" not in argv:
        return argv
    out, i = [], 0
    start = argv.index("eval")
    while i < len(argv):
        word = argv[i]
        out.append(word)
        i += 1
        if i > start and word in EVAL_NARGS:
            values = []
            while i < len(argv) and not argv[i].startswith("-"):
                values.append(argv[i])
                i += 1
            out += [v for n, val in enumerate(values) for v in ((word, val) if n else (val,))]
    return out


@pool_app.command("du")
@conventions
def pool_du(workdir: Workdir = None, config: ConfigFile = None, sets: Sets = None,
            top: Annotated[int, typer.Option(help="Repositories shown (largest first)")] = 20) -> None:
    """Bytes of the pool's environments on this node's engine and in the registry, per language
    and per repository: unique (only its images use them: what evicting it frees) and shared
    (toolchain and dependency layers, layers of reused environments); `other` = images that are
    no pooled environment (toolchains). Registry bytes are compressed.

    [b]Example:[/b] swemint pool du --workdir work --set registry=127.0.0.1:5000
    """
    from pipeline.pool_cli import du

    cfg = config_from_options(config, sets, workdir=workdir)
    require_workdir(cfg.workdir, "swemint pool du")
    du(cfg, top)


@pool_app.command("prune")
@conventions
def pool_prune(workdir: Workdir = None, config: ConfigFile = None, sets: Sets = None,
               engine_bytes: Annotated[Optional[str], typer.Option(help="Budget of each node's engine, e.g. 200G",
                                                                   show_default="budget.engine_bytes")] = None,
               registry_bytes: Annotated[Optional[str], typer.Option(help="Budget of the registry, e.g. 2T",
                                                                     show_default="budget.registry_bytes")] = None,
               evict_published: Annotated[bool, typer.Option("--evict-published", help="Also delete registry "
                                                             "images that verified rows name by digest")] = False,
               dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what a real run would evict on each "
                                                     "engine and in the registry; change nothing")] = False,
               everything: Annotated[bool, typer.Option("--all", help="Remove every image of this work "
                                                        "directory's run (environments and dependency layers, "
                                                        "label swemint.run), no budget; other runs' images stay")] = False,
               ray: Annotated[bool, typer.Option("--ray/--no-ray", help="Every node of the Ray cluster "
                                                 "($RAY_ADDRESS), or only this host's engine")] = False,
               wait: Annotated[float, typer.Option(help="Seconds to wait for a running driver")] = 0.0) -> None:
    """Apply the pool's disk budgets now. On each node's engine the least recently used
    environments are untagged until it fits (a registry copy stays pullable; an environment with
    no copy left leaves the pool, so its next reuse builds); in the registry, manifests no row
    names go first, published ones only with --evict-published (the bytes come back at the
    registry's garbage collection). Leftovers of finished instances (containers, unpooled images)
    are swept first. Every eviction is recorded in the pool (table `evictions`). A budget of 0
    evicts every environment it may. Exit 1 when an engine could not be reached.

    [b]Examples:[/b] swemint pool prune --workdir work --engine-bytes 200G --ray

      swemint pool prune --workdir work --all --dry-run     # what removing the run's images frees
    """
    from pipeline.pool_cli import prune

    cfg = config_from_options(config, sets, workdir=workdir)
    require_workdir(cfg.workdir, "swemint pool prune")
    prune(cfg, engine_bytes, registry_bytes, evict_published, dry_run, ray, wait, everything)


StorePath = Annotated[Optional[Path], typer.Option("--path", help="The knowledge store's DuckDB file (instead "
                                                 "of -w's WORKDIR/memory/experiences.duckdb)",
                                                 show_default="mint.memory.path")]


def _memory_store(workdir: Path | None, path: Path | None, config: Path | None, sets: list[str] | None,
                  command: str) -> tuple[Path, float, int]:
    """The store's file (`--path`, else the configuration's `mint.memory_path()` in an existing
    work directory) and the floor and minimum uses that decide `dropped`."""
    cfg = config_from_options(config, sets, workdir=workdir)
    if path is None:
        require_workdir(cfg.workdir, command)
    mem = cfg.mint.memory
    return (path or cfg.mint.memory_path()), mem.floor, mem.min_uses


@memory_app.command("list")
@conventions
def memory_list(workdir: Workdir = None, path: StorePath = None, config: ConfigFile = None, sets: Sets = None,
                ecosystem: Annotated[Optional[str], typer.Option(help="Only this language (python, cpp, go, ...: "
                                                                 "a memory language; `any`: entries for every "
                                                                 "language)", show_default="all")] = None,
                source: Annotated[Optional[str], typer.Option(help="Only seed, rule or learned entries",
                                                              show_default="all")] = None,
                dropped: Annotated[Optional[bool], typer.Option("--dropped/--kept", help="Only entries dropped below "
                                                                "the floor / only the others",
                                                                show_default="all")] = None) -> None:
    """List the knowledge store's entries (read-only): id, ecosystem, source (seed, rule,
    learned), reliability (as the code computes it), applied/worked counters, dropped (below
    mint.memory.floor after mint.memory.min_uses uses; never a negative entry) and negative.

    A negative entry is a learned lesson that a repair did NOT fix an error: its actions are the
    repair that failed, or none when no fix was found. Its worked count stays 0 and applied counts
    the instances that met the error unfixed (for one with no actions nothing was applied). It
    only keeps the memory's own repairs from offering those actions again, never the ecosystems'
    rule repairs; one with no actions changes nothing (docs/concepts.md, "Negative lessons").

    [b]Example:[/b] swemint memory list -w work --source learned
    """
    from pipeline.memory_cli import list_entries

    store, floor, min_uses = _memory_store(workdir, path, config, sets, "swemint memory list")
    list_entries(store, floor, min_uses, ecosystem, source, dropped)


@memory_app.command("show")
@conventions
def memory_show(entry_id: Annotated[str, typer.Argument(metavar="ID", help="The entry's id")],
                workdir: Workdir = None, path: StorePath = None, config: ConfigFile = None,
                sets: Sets = None) -> None:
    """Show one entry of the knowledge store (read-only): problem, solution, signature, actions,
    context, provenance, counters, and its reliability with the formula's inputs.

    "negative" after the source marks a lesson that a repair did NOT fix the error: its actions
    are the repair that failed, or "(none)" when no fix was found (solution "no fix found"); its
    applied count is the instances that met the error unfixed (docs/concepts.md, "Negative
    lessons").

    [b]Example:[/b] swemint memory show py-markupsafe-soft-unicode -w work
    """
    from pipeline.memory_cli import show_entry

    store, floor, min_uses = _memory_store(workdir, path, config, sets, "swemint memory show")
    show_entry(store, entry_id, floor, min_uses)


def main() -> None:
    """Entry point of the `swemint` script (and of `python -m swemint`)."""
    app(args=expand_nargs(sys.argv[1:]), prog_name="swemint")


if __name__ == "__main__":
    main()
