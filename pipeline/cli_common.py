"""What every `swemint` command shares: output modes, one-line errors, work-directory checks.

Conventions (those of pip, git and swebench's own CLI):

- `-h` / `--help` everywhere; `swemint --version`.
- `-v` (INFO log lines of the pipeline on stderr; `-vv` DEBUG), `-q` (no progress bars, tables or
  notes: errors and warnings only), `--json` (one JSON object, the command's summary, on stdout;
  everything a person reads goes to stderr). They are accepted before the command
  (`swemint -q mint ...`) and after it (`swemint mint ... -q`).
- A bad input exits non-zero with one line naming the cause: 2 for input the command cannot use
  (a missing file, a folder that is not a work directory, a configuration error), 1 when the
  command ran but what it was asked for is not there (ids missing from the input) or nothing it
  ran says anything about the instances (every row `infra_error`). With `--json` the line is
  also the summary: `{"ok": false, "error": "...", "exit_code": N}`.

`conventions` is the decorator that gives a command the three options; `emit` writes the
summary; `fail` the error line.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape as _markup_escape

from envpool.quoting import LogFormatter, terminal_text


def escape(text: object) -> str:
    """Text from an instance, a repository or its output, for the console: control characters
    but newline and tab escaped (`envpool.quoting.terminal_text`: no ANSI or OSC sequence reaches
    the terminal; Rich passes ESC through), then Rich markup escaped (`[red]` stays text)."""
    return _markup_escape(terminal_text(text))

console = Console(width=None if sys.stdout.isatty() else 200)  # logs get whole ids, not `acme__calc…`
"""What a person reads: stdout, or stderr under `--json`; silent under `-q`."""
err_console = Console(stderr=True)
"""Errors and warnings: always stderr, shown under `-q` too."""

LOGGERS = ("pipeline", "agents", "envpool")
"""swemint's loggers, the ones `-v` shows."""
WORKDIR_MARKERS = ("instances", "pool.duckdb", "mint_config.json", "dataset", "crawl", "driver.log",
                   "input_errors.jsonl")
"""What a swemint work directory holds (any one of them)."""


@dataclass
class OutputMode:
    """The output mode of the running command: `verbose` (count of -v), `quiet`, `json`."""

    verbose: int = 0
    quiet: bool = False
    json: bool = False


MODE = OutputMode()
"""The current command's mode (set by the app's callback and by `conventions`)."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("swemint")
    except PackageNotFoundError:  # a checkout without an install
        return "unknown (not installed)"


def version_callback(value: bool) -> None:
    """`--version`: print `swemint X.Y.Z` and exit 0."""
    if value:
        typer.echo(f"swemint {_version()}")
        raise typer.Exit(0)


Verbose = Annotated[int, typer.Option("--verbose", "-v", count=True, show_default=False,
                                      help="Log the pipeline's progress on stderr (-vv: debug)")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Errors and warnings only: no progress, tables or notes")]
JsonOut = Annotated[bool, typer.Option("--json", help="Print a machine-readable summary (one JSON object) on "
                                                      "stdout; human output goes to stderr")]


@contextmanager
def output_mode(verbose: int = 0, quiet: bool = False, json_out: bool = False):
    """Apply an output mode for the block: where `console` writes, whether it is silent, and the
    log level and handler of swemint's loggers; everything is put back afterwards (the CLI runs
    in-process in tests)."""
    old = OutputMode(MODE.verbose, MODE.quiet, MODE.json)
    MODE.verbose, MODE.quiet, MODE.json = max(verbose, MODE.verbose), quiet or MODE.quiet, json_out or MODE.json
    old_file, old_quiet = console._file, console.quiet  # noqa: SLF001 - rich keeps None for "sys.stdout now"
    if MODE.json:
        console.file = sys.stderr
    console.quiet = MODE.quiet
    handler = None
    levels = {name: logging.getLogger(name).level for name in LOGGERS}
    if MODE.verbose or MODE.quiet:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(LogFormatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        level = logging.ERROR if MODE.quiet and not MODE.verbose else \
            logging.DEBUG if MODE.verbose > 1 else logging.INFO
        handler.setLevel(level)
        for name in LOGGERS:
            logging.getLogger(name).setLevel(min(level, logging.INFO))  # the driver's log file wants INFO
        logging.getLogger().addHandler(handler)
    try:
        yield MODE
    finally:
        if handler is not None:
            logging.getLogger().removeHandler(handler)
            for name, lvl in levels.items():
                logging.getLogger(name).setLevel(lvl)
        console._file, console.quiet = old_file, old_quiet  # noqa: SLF001
        MODE.verbose, MODE.quiet, MODE.json = old.verbose, old.quiet, old.json


def reflow(doc: str | None) -> str | None:
    """A docstring as help text: the lines of each paragraph joined (Typer's rich mode keeps the
    source's line breaks), paragraphs whose lines are indented (examples) kept as written."""
    if not doc:
        return doc
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(p if any(line.startswith(" ") for line in p.splitlines()) else " ".join(
        line.strip() for line in p.splitlines()) for p in paragraphs)


def conventions(fn):
    """Give a Typer command `-v/--verbose`, `-q/--quiet` and `--json` (appended to its
    signature, so Typer shows them), help text reflowed (`reflow`), and run it under
    `output_mode`."""
    sig = inspect.signature(fn, eval_str=True)
    extra = [inspect.Parameter("verbose", inspect.Parameter.KEYWORD_ONLY, default=0, annotation=Verbose),
             inspect.Parameter("quiet", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=Quiet),
             inspect.Parameter("json_out", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=JsonOut)]
    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in sig.parameters.values()]

    @functools.wraps(fn)
    def wrapper(*args, verbose: int = 0, quiet: bool = False, json_out: bool = False, **kwargs):
        with output_mode(verbose, quiet, json_out):
            try:
                return fn(*args, **kwargs)
            except ValueError as e:  # a row a newer swemint wrote, a path leading out of where a
                from envpool.quoting import UnsafePath  # command writes: one line, exit 2, every command
                from pipeline.store import NewerRow

                if isinstance(e, (NewerRow, UnsafePath)):
                    fail(str(e))
                raise

    wrapper.__signature__ = sig.replace(parameters=[*params, *extra])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {}  # typer reads the signature's (evaluated) annotations
    wrapper.__doc__ = reflow(fn.__doc__)
    return wrapper


def emit(summary: dict[str, Any]) -> None:
    """Under `--json`: write `summary` (plus `"ok": true` unless given) as one JSON line on stdout."""
    if MODE.json:
        sys.stdout.write(json.dumps({"ok": True, **summary}, default=str, sort_keys=True) + "\n")
        sys.stdout.flush()


def fail(message: str, code: int = 2, *, label: str = "error") -> NoReturn:
    """Print `label: message` as one line on stderr (and, under `--json`, the error as the
    summary on stdout), then exit with `code`."""
    err_console.print(f"[red]{label}:[/red] {escape(message)}", soft_wrap=True)
    if MODE.json:
        sys.stdout.write(json.dumps({"ok": False, "error": f"{label}: {message}", "exit_code": code}) + "\n")
        sys.stdout.flush()
    raise typer.Exit(code)


def warn(message: str) -> None:
    """A one-line warning on stderr (shown under `-q` too)."""
    err_console.print(f"[yellow]warning:[/yellow] {escape(message)}", soft_wrap=True)


def os_error_line(e: OSError, what: str = "file") -> str:
    """One line for an OSError: `<what> not found: PATH`, `permission denied: PATH`, ... instead
    of Python's `[Errno 2] No such file or directory: 'PATH'`."""
    path = e.filename if e.filename is not None else ""
    if isinstance(e, FileNotFoundError):
        return f"{what} not found: {path}"
    if isinstance(e, PermissionError):
        return f"permission denied: {path}"
    if isinstance(e, IsADirectoryError):
        return f"{what} is a folder, not a file: {path}"
    if isinstance(e, NotADirectoryError):
        return f"not a folder: {path}"
    return f"{path}: {e.strerror or e}" if path else str(e)


def is_workdir(path: Path) -> bool:
    """Whether `path` is a swemint work directory (holds one of `WORKDIR_MARKERS`)."""
    return path.is_dir() and any((path / m).exists() for m in WORKDIR_MARKERS)


def dataset_workdir(dataset: Path) -> Path | None:
    """The work directory a dataset lies in, or None: `dataset` is a dataset folder (or a parquet
    file in one) whose parent is a work directory by a marker other than the dataset folder itself
    (`WORKDIR/dataset` as `swemint mint` and `export` write it). A folder merely holding a
    `dataset` folder (a copy someone downloaded) is not one."""
    folder = dataset if dataset.is_dir() else dataset.parent
    parent = folder.absolute().parent
    return parent if any((parent / m).exists() for m in WORKDIR_MARKERS if m != "dataset") else None


def require_workdir(path: Path, command: str) -> Path:
    """`path` when it is a work directory; else exit 2 with one line: missing, not a folder, or
    a folder swemint never wrote to (a mistyped path). Read-only commands call it so that they
    never create or write into a wrong folder."""
    if not path.exists():
        fail(f"work directory not found: {path} ({command} reads a folder written by `swemint mint`, "
             "`run` or `demo`; pass it with -w)")
    if not path.is_dir():
        fail(f"not a folder: {path} (the work directory, -w)")
    if not is_workdir(path):
        fail(f"not a swemint work directory: {path} (none of {', '.join(WORKDIR_MARKERS[:4])}, ...; "
             "is the path mistyped?)")
    return path
