"""Run pytest in a sandbox so that the result shape does not depend on the repository's config.

The command (`pytest_command`) is

    python -m pytest -p swemint_pytest_report -rA --tb=short -o cache_dir=<run dir>/cache
        -o addopts=<sanitised addopts> -p no:randomly -p no:sugar
        --junitxml=<run dir>/junit.xml -o junit_family=xunit1
        --continue-on-collection-errors <test files>

- `-o addopts=...` replaces the repository's addopts (pytest.ini, setup.cfg [tool:pytest],
  tox.ini [pytest], pyproject [tool.pytest.ini_options] / [tool.pytest], pytest.toml) by a
  sanitised copy: options that change the *shape* of the result are dropped (xdist `-n`, `-q`,
  `-v`, `--cov*`, `--color`, `-x`, `--maxfail`, `--lf/--ff/--sw`, `--reruns`, `--junitxml`,
  `--pdb` ...), options that change *what* runs or how are kept (`-p pytester`,
  `--doctest-modules`, `--strict-markers`, `-m`, `-W` ...). `PYTEST_ADDOPTS` is unset.
- The cache plugin stays on (conftests and tests may use `config.cache`), but writes outside the
  repository (`-o cache_dir`, created before the run: astropy 2.x's plugin reads that ini as its
  own cache folder and creates `astropy/` inside it); our equivalent of `-p no:cacheprovider`.
- `--continue-on-collection-errors` (pytest >= 3.0): a test file that fails to import no longer
  stops the whole run, so the other files' tests still report (else they would all be absent
  before and wrongly become FAIL_TO_PASS); the failing file is recorded as a collection error.
- Environment: COLUMNS=200, NO_COLOR=1, PY_COLORS=0, PYTHONDONTWRITEBYTECODE=1, CI/BUILD_NUMBER/
  FORCE_COLOR/CLICOLOR_FORCE/PYTEST_ADDOPTS unset, SWEMINT_CHANNEL=3 and SWEMINT_KEY=stdin (the
  report channel), SWEMINT_TEST_TIMEOUT, and the plugin folder (`/opt/swemint/plugins`) first
  on PYTHONPATH.

Results come only from the plugin's records, received as signed frames on the report channel
(`envpool.testrun.channel`: fd 3 is the exec's stderr, the console goes to stdout). The JUnit XML
and the `-rA` summary of the same run are parsed as independent evidence and compared with them
(`envpool.testrun.trust`); they are never graded (they are what the code under test can forge).
"""

from __future__ import annotations

import configparser
import logging
import posixpath
import re
import shlex
import tomllib
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from envpool.errors import OutputTooLarge
from envpool.sandbox import Sandbox
from envpool.testrun import channel, parsers, trust
from envpool.testrun.status import TestRunReport

log = logging.getLogger(__name__)

PLUGIN_NAME = "swemint_pytest_report"
PLUGIN_SOURCE = Path(__file__).parent / "plugins" / f"{PLUGIN_NAME}.py"
PLUGIN_DIR = "/opt/swemint/plugins"
"""Where the plugin is copied in the sandbox (put first on PYTHONPATH)."""
RUN_ROOT = "/tmp/swemint"
"""Per-run folders `<RUN_ROOT>/<label>-<hex>/` hold report.jsonl, junit.xml and the cache."""

# -- addopts ------------------------------------------------------------------------------------

CONFIG_NAMES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml",
                "tox.ini", "setup.cfg")
"""Config files in pytest's order of precedence within one folder (pytest 9 reads *.toml)."""

_DROP_FLAGS = {
    "-q", "--quiet", "-v", "--verbose", "-x", "--exitfirst", "--lf", "--last-failed", "--ff",
    "--failed-first", "--nf", "--new-first", "--sw", "--stepwise", "--sw-skip", "--stepwise-skip",
    "--cache-clear", "--pdb", "--trace", "-f", "--looponfail", "-d", "--cov-append", "--cov-branch",
    "--no-cov", "--no-cov-on-fail", "--self-contained-html", "--json-report",
}
"""Options without an argument that are dropped from addopts."""

_DROP_WITH_ARG = {
    "-n", "--numprocesses", "--dist", "--maxprocesses", "--tx", "--rsyncdir", "--max-worker-restart",
    "--color", "--code-highlight", "--maxfail", "--reruns", "--reruns-delay", "--only-rerun",
    "--count", "--repeat-scope", "--junitxml", "--junit-xml", "--junitprefix", "--junit-prefix",
    "--resultlog", "--result-log", "--report-log", "--json-report-file", "--html",
    "--cov-report", "--cov-config", "--cov-fail-under", "--cov-context", "--lfnf",
    "--last-failed-no-failures", "--pdbcls", "--tb", "-r", "--verbosity", "--cache-dir",
    "--basetemp",
}
"""Options with an argument (`--opt X` or `--opt=X`) that are dropped from addopts."""

_OPTIONAL_ARG = {"--cov"}
"""Options whose argument is optional (argparse nargs='?': takes the next non-option token)."""

_SHORT_WITH_ARG = set("kmpnrcoW")
_SHORT_DROP = set("qvxfd")


def sanitise_addopts(addopts: str | Sequence[str]) -> tuple[list[str], list[str]]:
    """Split addopts into (kept tokens, dropped tokens).

    `addopts` is the ini string (shell-split like pytest does) or a TOML list. Short-option
    clusters are taken apart (`-vx` drops both, `-sv` keeps `-s`; `-n4`/`-nauto` dropped; `-p
    pytester` kept). Positional arguments are kept. Never raises on odd quoting (falls back to
    whitespace splitting).
    """
    if isinstance(addopts, str):
        try:
            tokens = shlex.split(addopts)
        except ValueError:
            tokens = addopts.split()
    else:
        tokens = [str(t) for t in addopts]
    kept: list[str] = []
    dropped: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if tok.startswith("--"):
            name = tok.split("=", 1)[0]
            if name in _DROP_FLAGS:
                dropped.append(tok)
            elif name in _DROP_WITH_ARG:
                dropped.append(tok)
                if "=" not in tok and nxt is not None:
                    dropped.append(nxt)
                    i += 1
            elif name in _OPTIONAL_ARG:
                dropped.append(tok)
                if "=" not in tok and nxt is not None and not nxt.startswith("-"):
                    dropped.append(nxt)
                    i += 1
            elif name.startswith("--cov"):  # other pytest-cov flags
                dropped.append(tok)
            else:
                kept.append(tok)
        elif tok.startswith("-") and len(tok) > 1 and not tok[1].isdigit():
            i = _short_cluster(tok, nxt, i, kept, dropped)
        else:
            kept.append(tok)
        i += 1
    return kept, dropped


def _short_cluster(tok: str, nxt: str | None, i: int, kept: list[str], dropped: list[str]) -> int:
    """Take apart `-abc` (argparse rules); returns the index of the last token consumed."""
    keep_chars = ""
    body = tok[1:]
    for j, ch in enumerate(body):
        if ch in _SHORT_WITH_ARG:
            arg = body[j + 1:]
            consumed = i
            if not arg and nxt is not None:
                arg, consumed = nxt, i + 1
            if keep_chars:
                kept.append("-" + keep_chars)
            if ch in ("n", "r"):
                dropped.append(f"-{ch}{arg}")
            else:
                kept.extend([f"-{ch}", arg] if consumed != i else [f"-{ch}{arg}"])
            return consumed
        if ch in _SHORT_DROP:
            dropped.append("-" + ch)
        else:
            keep_chars += ch
    if keep_chars:
        kept.append("-" + keep_chars)
    return i


def addopts_from_config(name: str, text: str) -> str | list[str] | None:
    """The addopts a pytest config file sets: a string (ini), a list (TOML), "" when the file
    is a pytest config without addopts, or None when it is not a pytest config at all (pytest
    then looks further). Never raises: an unreadable file counts as not a pytest config."""
    base = posixpath.basename(name)
    try:
        if base.endswith(".toml"):
            data = tomllib.loads(text)
            if base in ("pytest.toml", ".pytest.toml"):
                table = data.get("pytest", data.get("tool", {}).get("pytest"))
                return (table or {}).get("addopts", "") if table is not None else ""
            tool = data.get("tool", {}).get("pytest")
            if not isinstance(tool, dict):
                return None
            opts = tool.get("ini_options", tool) if "ini_options" in tool else tool
            return opts.get("addopts", "")
        cp = configparser.ConfigParser(interpolation=None, strict=False)
        cp.read_string(text)
    except Exception:
        return "" if base in ("pytest.ini", ".pytest.ini") else None
    section = {"setup.cfg": "tool:pytest"}.get(base, "pytest")
    if not cp.has_section(section):
        return "" if base in ("pytest.ini", ".pytest.ini") else None
    return cp.get(section, "addopts", fallback="")


def config_dirs(test_files: Iterable[str]) -> list[str]:
    """Folders (relative, "" = the workdir) pytest searches for its config, nearest first:
    from the common ancestor of the test files' folders up to the workdir. A node id
    (``tests/t.py::test_x[a/b]``) counts as its file."""
    files = [f.split("::", 1)[0] for f in test_files]
    dirs = [posixpath.dirname(posixpath.normpath(f)) for f in files
            if f and not posixpath.isabs(f) and not f.startswith("..")]
    common = posixpath.commonpath(dirs) if dirs else ""
    out = []
    while True:
        out.append(common)
        if not common:
            return out
        common = posixpath.dirname(common)


def read_addopts(sandbox: Sandbox, test_files: Sequence[str],
                 workdir: str = "/testbed") -> tuple[str | list[str], str | None]:
    """(addopts, config path) of the config file pytest will use in `sandbox` ("" and None when
    none is found). Reads files with `sandbox.get_file`."""
    for d in config_dirs(test_files):
        for name in CONFIG_NAMES:
            path = posixpath.join(workdir, d, name)
            try:
                text = sandbox.get_file(path).decode("utf-8", errors="replace")
            except FileNotFoundError:
                continue
            opts = addopts_from_config(name, text)
            if opts is not None:
                return opts, path
    return "", None


# -- command ------------------------------------------------------------------------------------

class PytestPaths(BaseModel):
    """Where one run writes in the sandbox (all outside the repository)."""

    model_config = ConfigDict(extra="forbid")
    run_dir: str
    report: str
    junit: str
    cache: str

    @classmethod
    def new(cls, label: str = "tests") -> PytestPaths:
        """A fresh run folder `<RUN_ROOT>/<label>-<8 hex>`."""
        safe = "".join(c if c.isalnum() or c in "_.-" else "_" for c in label)[:60]
        d = f"{RUN_ROOT}/{safe}-{uuid.uuid4().hex[:8]}"
        return cls(run_dir=d, report=f"{d}/report.jsonl", junit=f"{d}/junit.xml", cache=f"{d}/cache")


def pytest_command(test_files: Sequence[str], *, python: str = "python",
                   addopts: str | Sequence[str] = "", paths: PytestPaths | None = None,
                   plugin: bool = True, continue_on_collection_errors: bool = True,
                   extra_args: Sequence[str] = ()) -> str:
    """The pytest command line (a shell string) for a dataset row or a sandbox.

    `addopts`: the repository's raw addopts (sanitised here with `sanitise_addopts`).
    `paths`: where the JUnit XML and cache go (default `/tmp/swemint/run`); `plugin`: load
    `swemint_pytest_report` (needs PYTHONPATH, see `pytest_env`). `extra_args` come before
    the test files.
    """
    paths = paths or PytestPaths(run_dir=f"{RUN_ROOT}/run", report=f"{RUN_ROOT}/run/report.jsonl",
                                 junit=f"{RUN_ROOT}/run/junit.xml", cache=f"{RUN_ROOT}/run/cache")
    kept, _ = sanitise_addopts(addopts)
    args = [python, "-m", "pytest"]
    if plugin:
        args += ["-p", PLUGIN_NAME]
    args += ["-rA", "--tb=short", "-o", f"cache_dir={paths.cache}", "-o",
             f"addopts={shlex.join(kept)}", "-p", "no:randomly", "-p", "no:sugar"]
    if not any("no:junitxml" in k for k in kept):
        args += [f"--junitxml={paths.junit}", "-o", "junit_family=xunit1"]
    if continue_on_collection_errors:
        args.append("--continue-on-collection-errors")
    args += list(extra_args)
    args += list(test_files)
    return shlex.join(args)


UNSET_ENV = ("CI", "BUILD_NUMBER", "GITHUB_ACTIONS", "TF_BUILD", "FORCE_COLOR", "CLICOLOR_FORCE",
             "PYTEST_ADDOPTS", "SWEMINT_REPORT", "SWEMINT_TEST_TIMEOUT", "SWEMINT_CHANNEL", "SWEMINT_KEY")
"""Variables removed before pytest starts (CI detection and colour forcing change the output)."""

CHANNEL_FD = 3
"""The descriptor the plugin writes its frames to (the exec's stderr, or stdout in a row's command)."""


def pytest_env(paths: PytestPaths | None = None, per_test_timeout: float | None = None,
               channel: bool = True) -> dict[str, str]:
    """Variables exported before pytest starts (PYTHONPATH is prefixed separately): the
    channel's descriptor and `SWEMINT_KEY=stdin` when `channel` (`paths` is accepted for older
    callers and unused)."""
    env = {"COLUMNS": "200", "NO_COLOR": "1", "PY_COLORS": "0", "PYTHONDONTWRITEBYTECODE": "1"}
    if channel:
        env.update({"SWEMINT_CHANNEL": str(CHANNEL_FD), "SWEMINT_KEY": "stdin"})
    if per_test_timeout:
        env["SWEMINT_TEST_TIMEOUT"] = f"{float(per_test_timeout):g}"
    return env


def pytest_script(command: str, paths: PytestPaths, per_test_timeout: float | None = None,
                  workdir: str = "/testbed", plugin: bool = True, channel_to: str = "stderr") -> str:
    """The bash script run in the sandbox: environment set-up, fresh run folder, the command.

    The plugin's channel is fd 3, pointed at the exec's stderr (`channel_to="stderr"`: the host
    reads it apart from the console, which goes to stdout) or at stdout (`"stdout"`: one stream
    for a harness; the frames are mixed into the console)."""
    env = pytest_env(paths, per_test_timeout, channel=plugin)
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    redirect = f"exec {CHANNEL_FD}>&2 2>&1" if channel_to == "stderr" else f"exec {CHANNEL_FD}>&1"
    return "\n".join([
        f"unset {' '.join(UNSET_ENV)}",
        redirect,
        f"export {exports}",
        f"export PYTHONPATH={PLUGIN_DIR}${{PYTHONPATH:+:$PYTHONPATH}}",
        # the cache folder exists before pytest starts: a project plugin that reads the
        # `cache_dir` ini as its own (astropy 2.x's config plugin) creates a folder inside it
        f"rm -rf {shlex.quote(paths.run_dir)} && mkdir -p {shlex.quote(paths.run_dir)} {shlex.quote(paths.cache)}",
        f"cd {shlex.quote(workdir)}",
        command,
    ])


def row_command(run_command: str, per_test_timeout: float | None = None) -> str:
    """The pytest part of a dataset row's `test_command`, one line, from the command of a run
    (`PytestRun.command`, its random run folder replaced by `RUN_ROOT/run`): the plugin's frames
    go to stdout with the console; give the key on stdin (`channel.key_line`) to have them
    signed, else they are unauthenticated. Parser: `pytest_channel`."""
    paths = PytestPaths(run_dir=f"{RUN_ROOT}/run", report=f"{RUN_ROOT}/run/report.jsonl",
                        junit=f"{RUN_ROOT}/run/junit.xml", cache=f"{RUN_ROOT}/run/cache")
    command = re.sub(re.escape(RUN_ROOT) + r"/[A-Za-z0-9_.]+-[0-9a-f]{8}/", f"{RUN_ROOT}/run/", run_command)
    return " && ".join(line for line in pytest_script(command, paths, per_test_timeout, channel_to="stdout")
                       .split("\n") if not line.startswith("cd "))


# -- running ------------------------------------------------------------------------------------

class PytestRun(BaseModel):
    """Everything one `run_pytest_detailed` call learnt.

    `report`: the results from the authenticated channel (source "plugin"; empty when no
    verified record arrived). `command`: the pytest command line. `anomalies`: why the run must
    not be graded (`trust.anomalies`, as text; empty when it may be), `tampered`: the subset
    only tampering explains. `timeouts`: node ids stopped by the per-test limit.
    `plugin_exitstatus`: pytest's own exit status from the sealed session record (None: the
    session never finished). `collected`: tests collected per the plugin. `dropped_addopts`:
    what was removed. `sources`: the independent reports of the same run that were compared
    (`junit`, `log`).
    """

    model_config = ConfigDict(extra="forbid")
    report: TestRunReport
    command: str
    config_path: str | None = None
    dropped_addopts: list[str] = Field(default_factory=list)
    anomalies: list[str] = Field(default_factory=list)
    tampered: list[str] = Field(default_factory=list)
    timeouts: list[str] = Field(default_factory=list)
    plugin_exitstatus: int | None = None
    collected: int | None = None
    plugin_loaded: bool = True
    sources: dict[str, TestRunReport] = Field(default_factory=dict)
    output_tail: str = ""
    """The last OUTPUT_TAIL characters of the run's console output (for diagnosis, never graded)."""


OUTPUT_TAIL = 8000


NOTHING_FAILING = "but no failed or errored test"
"""Marker of the anomaly "nonzero exit, nothing failing" in the cross-checks' messages."""


def cross_check(report: TestRunReport, plugin_exitstatus: int | None = None,
                plugin_loaded: bool = True, collected: int | None = None) -> list[str]:
    """`trust.anomalies` of a pytest report, as text (pure): exit status against results and
    against the session's own status, the session finished (when the report is the plugin's),
    collected versus reported; a report from the JUnit XML or the log is itself an anomaly
    (those are the sources the code under test can forge)."""
    finished = (plugin_exitstatus is not None) if plugin_loaded and report.source == "plugin" else None
    ev = trust.RunEvidence(report=report, exit_code=report.exit_code, runner_exit=plugin_exitstatus,
                           session_finished=finished, collected=collected, pytest_codes=True)
    out = [str(a) for a in trust.anomalies(ev)]
    if report.source in ("junit", "log"):
        out.append(f"plugin report missing; results from the {report.source} fallback")
    return out


def _read(sandbox: Sandbox, path: str) -> bytes | None:
    try:
        return sandbox.get_file(path)
    except (FileNotFoundError, IsADirectoryError, OutputTooLarge):
        return None


def install_plugin(sandbox: Sandbox) -> str:
    """Copy the plugin into the sandbox at PLUGIN_DIR; returns its path there."""
    dest = f"{PLUGIN_DIR}/{PLUGIN_NAME}.py"
    sandbox.put_file(dest, PLUGIN_SOURCE.read_bytes())
    return dest


def run_pytest_detailed(sandbox: Sandbox, test_files: Sequence[str], *, python: str = "python",
                        timeout: float = 1800, per_test_timeout: float | None = None,
                        log_label: str = "tests", workdir: str = "/testbed",
                        addopts: str | Sequence[str] | None = None,
                        continue_on_collection_errors: bool = True,
                        extra_args: Sequence[str] = ()) -> PytestRun:
    """Run pytest on `test_files` (paths relative to `workdir`) in `sandbox`; never raises on
    test failures (InfraError from the sandbox propagates).

    Args:
        python: interpreter to run `-m pytest` with (e.g. "/opt/venv/bin/python").
        timeout: whole-run limit in seconds; a run that hits it is not graded
            (`report.timed_out`, an anomaly), but what the plugin sent is kept in the report.
        per_test_timeout: per-test call-phase limit in seconds (SWEMINT_TEST_TIMEOUT), or None.
        addopts: the repository's addopts; None reads them from the config file pytest will
            use in the sandbox.
        log_label: names the run folder and the log lines.

    The results come from the plugin's frames on the report channel, signed with a key drawn
    for this run and given on stdin (`envpool.testrun.channel`); the JUnit XML and the `-rA`
    summary of the same run are parsed too, but only to be compared with them
    (`trust.anomalies`). A run whose report is missing, forged, cut, over the size limit or
    inconsistent has anomalies and `tests_ran=False`: it must not be graded.
    """
    config_path = None
    if addopts is None:
        addopts, config_path = read_addopts(sandbox, test_files, workdir)
    _, dropped = sanitise_addopts(addopts)
    install_plugin(sandbox)
    paths = PytestPaths.new(log_label)
    command = pytest_command(test_files, python=python, addopts=addopts, paths=paths, plugin=True,
                             extra_args=extra_args, continue_on_collection_errors=continue_on_collection_errors)
    script = pytest_script(command, paths, per_test_timeout, workdir)
    key = channel.new_key()
    res = sandbox.exec(script, timeout=timeout, workdir=workdir, log_label=log_label, stdin=channel.key_line(key),
                       channel=True)
    chan = channel.read_channel(res.channel, key, truncated=res.channel_truncated)
    records = chan.records
    finish = next((r for r in reversed(records) if r.get("kind") == "session_finish"), None)
    exitstatus = finish.get("exitstatus") if finish and isinstance(finish.get("exitstatus"), int) else None
    counts = [r.get("count") for r in records if r.get("kind") == "collected"]
    collected = counts[-1] if counts and isinstance(counts[-1], int) else None
    loaded = any(r.get("kind") == "session_start" for r in records)
    report = parsers.parse_pytest_records(records).model_copy(update={
        "exit_code": res.exit_code, "timed_out": res.timed_out, "duration": res.duration,
        "log_path": str(getattr(sandbox, "log_path", None) or "") or None})
    sources = {}
    junit_raw = _read(sandbox, paths.junit)
    if junit_raw:
        sources["junit"] = parsers.parse_pytest_junit(junit_raw, known_files=test_files)
    sources["log"] = parsers.parse_pytest_log(res.output)
    ev = trust.RunEvidence(report=report, exit_code=res.exit_code, runner_exit=exitstatus,
                           session_finished=chan.sealed if loaded else None, collected=collected,
                           tampered=chan.tampered, report_too_large=res.channel_truncated,
                           others={k: v for k, v in sources.items() if v.statuses}, pytest_codes=True)
    found = trust.anomalies(ev)
    if not loaded and not chan.tampered:
        found.append(trust.Anomaly(code="no_report", message="no authenticated report: the plugin sent no record "
                                   "(it did not load, or pytest never started)"))
    if found:
        report = report.model_copy(update={"tests_ran": False})
    for a in found:
        log.warning("[%s] %s", log_label, a)
    return PytestRun(report=report, command=command, config_path=config_path, dropped_addopts=dropped,
                     anomalies=[str(a) for a in found], tampered=[str(a) for a in trust.tampering(found)],
                     timeouts=[str(r.get("nodeid")) for r in records if r.get("kind") == "timeout"],
                     plugin_exitstatus=exitstatus, collected=collected, plugin_loaded=loaded, sources=sources,
                     output_tail=res.output[-OUTPUT_TAIL:])


def run_pytest(sandbox: Sandbox, test_files: Sequence[str], *, python: str = "python",
               timeout: float = 1800, per_test_timeout: float | None = None,
               log_label: str = "tests", workdir: str = "/testbed",
               addopts: str | Sequence[str] | None = None) -> TestRunReport:
    """`run_pytest_detailed(...)`'s report: statuses, collection errors, exit code, timed_out,
    tests_ran (False when the run must not be graded), duration (seconds) and source ("plugin",
    or "none" when no record arrived)."""
    return run_pytest_detailed(sandbox, test_files, python=python, timeout=timeout,
                               per_test_timeout=per_test_timeout, log_label=log_label,
                               workdir=workdir, addopts=addopts).report
