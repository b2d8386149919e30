"""Grading a candidate patch in an environment image: apply it, run the row's tests, judge.

The rules are SWE-bench harness v5's (`swebench/harness/grading.py`, 5.0.2) on our statuses:
a FAIL_TO_PASS test succeeds when it passes (PASSED / XPASS, not under a failed collector);
skipped, failed, errored, XFAIL or absent is a failure. A PASS_TO_PASS test is kept when it
passes *or is skipped*; anything else (absent included) is a failure. `resolved` = every
FAIL_TO_PASS and every PASS_TO_PASS test succeeds. A run whose report cannot be trusted (the
pytest cross-checks of `envpool.testrun.pytest_runner`, the polyglot parsers' anomalies, no test
reached) is an error, never a grade.

`evaluate_patch` does one candidate in a fresh sandbox of the image with no network: the
candidate patch first (`envpool.patches.apply_patch`, the minter's ladder), then every test path
the candidate changed or added back to the base tree (`envpool.testpaths`: test files, helpers,
fixtures, conftest files, runner configuration -- wider than SWE-bench, which resets only the
test_patch's files), the files the test_patch touches reset to HEAD and the test_patch applied,
then one run of the row's tests.
"""

from __future__ import annotations

import re
import shlex
import time
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from envpool.errors import InfraError, PatchApplyError, SwemintError
from envpool.evalscript import reset_in_sandbox, reset_test_files
from envpool.grading import in_failed_collector
from envpool.patches import apply_patch
from envpool.sandbox import SandboxSpec
from envpool.testrun.outcome import TestStatus, passed_like
from envpool.testrun.status import TestRunReport


class TestsSpec(BaseModel):
    """How a row's tests run. `kind` "pytest": `test_files` with `python` (swemint's pytest
    runner, plugin report first); "poly": `test_command` as stored in the row, its report read
    from `report_path` (None: its output) by polyglot parser `parser` with `parser_options`.
    `env`: the sandbox's environment (e.g. the Python venv on PATH)."""

    __test__ = False
    model_config = ConfigDict(extra="forbid")
    kind: str = Field(pattern="^(pytest|poly)$")
    test_command: str = ""
    parser: str = "pytest_plugin"
    parser_options: dict = Field(default_factory=dict)
    report_path: str | None = None
    test_files: list[str] = Field(default_factory=list)
    python: str = "/opt/venv/bin/python"
    env: dict[str, str] = Field(default_factory=dict)


class SideResult(BaseModel):
    """Successes and failures of one list (SWE-bench's `tests_status` entry)."""

    model_config = ConfigDict(extra="forbid")
    success: list[str] = Field(default_factory=list)
    failure: list[str] = Field(default_factory=list)


class EvalReport(BaseModel):
    """The grade of one candidate patch on one row.

    SWE-bench's per-instance fields (`patch_is_None`, `patch_exists`,
    `patch_successfully_applied`, `resolved`, `tests_status` with FAIL_TO_PASS / PASS_TO_PASS
    successes and failures) plus: `reward` (1.0 when resolved, else 0.0: the binary reward of
    SWE-RL-style training), `f2p_rate` / `p2p_rate` (shares that succeeded, 1.0 for an empty
    list), `error` (why it could not be graded: patch does not apply, tests untrusted, engine),
    `patch_method`, `source` (which report the statuses came from), `seconds`, `infra_error`
    (the `error` came from the engine, InfraError: an image missing, the daemon down; no grade of
    the candidate: `swemint eval` exits 1 and a resumed eval grades it again).
    """

    model_config = ConfigDict(extra="forbid")
    instance_id: str
    model_name_or_path: str = ""
    patch_is_None: bool = False
    patch_exists: bool = False
    patch_successfully_applied: bool = False
    resolved: bool = False
    tests_status: dict[str, SideResult] = Field(default_factory=dict)
    reward: float = 0.0
    f2p_rate: float = 0.0
    p2p_rate: float = 0.0
    error: str | None = None
    patch_method: str = ""
    source: str = ""
    seconds: float = 0.0
    infra_error: bool = False


def judge(report: TestRunReport, fail_to_pass: list[str], pass_to_pass: list[str]) -> dict[str, SideResult]:
    """SWE-bench's `tests_status` from one run's statuses (pure; rules in the module docstring)."""
    def status(tid: str) -> TestStatus | None:
        return None if in_failed_collector(tid, report.collection_errors) else report.statuses.get(tid)

    f2p, p2p = SideResult(), SideResult()
    for tid in fail_to_pass:
        (f2p.success if passed_like(status(tid)) else f2p.failure).append(tid)
    for tid in pass_to_pass:
        st = status(tid)
        (p2p.success if passed_like(st) or st == TestStatus.SKIPPED else p2p.failure).append(tid)
    return {"FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p}


def _rate(side: SideResult) -> float:
    n = len(side.success) + len(side.failure)
    return 1.0 if n == 0 else len(side.success) / n


class ReportRun(NamedTuple):
    """One run of a report command: the parsed `report`, the `anomalies` (why it must not be
    graded, `envpool.testrun.trust`) and the console `output` (as the sandbox capped it)."""

    report: TestRunReport
    anomalies: list[str]
    output: str


def run_report(sb, command: str, parser: str, *, report_path: str | None = None,
               parser_options: dict | None = None, env: dict[str, str] | None = None,
               timeout: float = 1800, known_tests: set[str] | None = None,
               log_label: str = "tests") -> ReportRun:
    """Run a polyglot test `command` in `sb` (from /testbed) and parse its report with
    `envpool.testrun.registry.get_parser(parser)`: the file `report_path` (removed first,
    so a stale one is never read; a missing file parses as empty) or else the command's output.
    The anomalies are the parser's checks and `envpool.testrun.trust`'s rule (one for every
    runner: exit status, totals, size limits, timeouts, no report at all); a report with
    anomalies has `tests_ran=False` and is never graded. `known_tests`: ids from other runs, so
    a unit that fails to build marks them FAILED. `timeout` seconds."""
    from envpool.testrun.polyglot.common import ReportParser
    from envpool.testrun.registry import get_parser

    from envpool.errors import OutputTooLarge
    from envpool.testrun import trust

    pre = f"rm -f {shlex.quote(report_path)}; " if report_path else ""
    r = sb.exec(f"cd /testbed && {pre}{command}", timeout=timeout, env=env or None, log_label=log_label)
    raw: bytes | str = r.output
    too_large = r.truncated and not report_path
    if report_path:
        try:
            raw = sb.get_file(report_path)
        except (FileNotFoundError, IsADirectoryError):
            raw = b""
        except OutputTooLarge:
            slim = read_slim(sb, report_path, parser)
            raw, too_large = (slim, False) if slim is not None else (b"", True)
    p = get_parser(parser)
    opts = dict(parser_options or {})
    if known_tests and isinstance(p, ReportParser):
        opts["known_tests"] = sorted(known_tests)
    limit = run_limit(env)
    if limit is not None and isinstance(p, ReportParser):
        opts.setdefault("per_test_timeout", limit)
    rep = p(raw, **opts)
    checks = p.check(raw, **opts) if isinstance(p, ReportParser) else []
    rep = rep.model_copy(update={"exit_code": r.exit_code, "timed_out": r.timed_out, "duration": r.duration})
    found = [str(a) for a in trust.anomalies(trust.RunEvidence(report=rep, parser_anomalies=checks,
                                                               report_too_large=too_large))]
    if not rep.statuses and not rep.collection_errors and not r.timed_out and not too_large:
        found.append(NO_REPORT)
    if found:
        rep = rep.model_copy(update={"tests_ran": False})
    return ReportRun(rep, found, r.output)


def run_limit(env: dict[str, str] | None) -> float | None:
    """The per-test limit (seconds) a run's environment gives its runners
    (`envpool.testrun.limits.PER_TEST_ENV`), else None (the parsers' default applies)."""
    from envpool.testrun.limits import PER_TEST_ENV

    try:
        value = float((env or {})[PER_TEST_ENV])
    except (KeyError, ValueError):
        return None
    return value if value > 0 else None


def read_slim(sb, report_path: str, parser: str) -> bytes | None:
    """A report over the sandbox's report limit read as a stream (`envpool.testrun.slim`):
    every test's status kept, captured output past a bound dropped; None when `parser`'s format
    cannot be slimmed, the sandbox cannot stream, or what is kept still exceeds the limit (or
    more than `RAW_REPORT_FACTOR` times it comes in)."""
    from envpool.testrun.slim import SLIMMABLE, SlimStats, slim_xml

    stream = getattr(sb, "stream_file", None)
    cap = getattr(sb, "report_cap", None)
    if parser not in SLIMMABLE or stream is None or not cap:
        return None
    stats = SlimStats()
    try:
        return slim_xml(stream(report_path), limit=cap, stats=stats, max_read=cap * RAW_REPORT_FACTOR)
    except (FileNotFoundError, IsADirectoryError):
        return None


RAW_REPORT_FACTOR = 32
"""A report streamed for slimming is abandoned past this many times the report limit."""

NO_REPORT = "no report: the runner reported no test and no unit that failed to build"
"""The anomaly of a run whose report holds nothing at all."""


def run_report_command(sb, command: str, parser: str, **kwargs) -> tuple[TestRunReport, list[str]]:
    """`run_report` without the output: (report, anomalies)."""
    run = run_report(sb, command, parser, **kwargs)
    return run.report, run.anomalies


_PYTHON = re.compile(r"(\S+) -m pytest\b")


def python_of(test_command: str, default: str = "/opt/venv/bin/python") -> str:
    """The interpreter a stored pytest command runs (`<python> -m pytest ...`)."""
    m = _PYTHON.search(test_command)
    return m.group(1) if m else default


def run_tests(sb, spec: TestsSpec, *, timeout: float, known: set[str]) -> tuple[TestRunReport, list[str]]:
    """One run of the row's tests in `sb`: (report, reasons it must not be graded)."""
    if spec.kind == "pytest":
        from envpool.testrun.pytest_runner import run_pytest_detailed

        run = run_pytest_detailed(sb, spec.test_files, python=spec.python, timeout=timeout, log_label="eval")
        # as the minter's judge: a run whose report was tampered with is never a grade; nor one
        # that failed the other cross-checks or reached no test, unless a file failed to collect
        # (the candidate broke an import: its tests are absent, i.e. failing)
        if run.tampered:
            return run.report, [f"the report was tampered with or its sources disagree: {'; '.join(run.tampered)}"]
        if not run.report.tests_ran and not run.report.collection_errors:
            if run.anomalies:
                return run.report, [f"the run failed the cross-checks: {'; '.join(run.anomalies)}"]
            return run.report, [f"pytest reached no test (exit {run.report.exit_code})"]
        return run.report, []
    rep, found = run_report_command(sb, spec.test_command, spec.parser, report_path=spec.report_path,
                                    parser_options=spec.parser_options, timeout=timeout, known_tests=known,
                                    log_label="eval")
    if not found and not rep.tests_ran and not rep.collection_errors:
        found = ["the report shows no test"]
    return rep, found


class GradedRow(BaseModel):
    """What grading reads of one dataset row: `instance_id`, the environment `image` (a tag the
    engine has or pulls), how its tests run (`tests`), its `test_patch`, the `FAIL_TO_PASS` /
    `PASS_TO_PASS` test ids (the runner's own form) and `language` (which test-path rules reset
    the candidate's test edits; None: every group's)."""

    model_config = ConfigDict(extra="forbid")
    instance_id: str
    image: str
    tests: TestsSpec
    test_patch: str
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str]
    language: str | None = None


def evaluate_patch(factory, row: GradedRow, patch: str | None, *, model: str = "", timeout: float = 1800,
                   run_id: str = "eval", log_path: Path | None = None, limits: dict | None = None) -> EvalReport:
    """Grade candidate `patch` (None: SWE-bench's `patch_is_None`) on one `row` in a fresh
    sandbox of `row.image` (`factory.sandbox`, network none). After the candidate, every test path
    it changed or added goes back to the base tree (`envpool.evalscript.reset_in_sandbox` with the
    rules of the row's `language`: test files, helpers, conftest files, runner configuration),
    then the test_patch's files, then the test_patch is applied: a candidate that edits what
    grades it gets no reward for it. Never raises for the candidate's or the row's problems:
    they end in `error` (and `resolved=False`); an engine failure (InfraError) is reported the
    same way, with its message."""
    instance_id, spec = row.instance_id, row.tests
    fail_to_pass, pass_to_pass = row.FAIL_TO_PASS, row.PASS_TO_PASS
    rep = EvalReport(instance_id=instance_id, model_name_or_path=model)
    t0 = time.monotonic()
    if patch is None:
        rep.patch_is_None = True
        return rep
    rep.patch_exists = True
    sandbox_spec = SandboxSpec(image=row.image, run_id=run_id, instance_id=instance_id, network="none",
                               env=dict(spec.env), **(limits or {}))
    try:
        with factory.sandbox(sandbox_spec, log_path) as sb:
            try:
                rep.patch_method = apply_patch(sb, patch, label="model_patch", instance_id=instance_id)
            except PatchApplyError as e:
                rep.error = f"patch does not apply: {e.message[:1500]}"
                return rep
            rep.patch_successfully_applied = True
            r = reset_in_sandbox(sb, row.language)
            if not r.ok:
                rep.error = f"the test paths could not be reset to the base tree: {r.output.strip()[-500:]}"
                return rep
            reset = reset_test_files(row.test_patch)
            if reset:
                sb.exec(reset, timeout=120, log_label="reset-tests")
            try:
                apply_patch(sb, row.test_patch, label="test_patch", instance_id=instance_id)
            except PatchApplyError as e:
                rep.error = f"test_patch does not apply after the candidate: {e.message[:1500]}"
                return rep
            report, problems = run_tests(sb, spec, timeout=timeout, known=set(fail_to_pass) | set(pass_to_pass))
            rep.source = report.source
            if report.timed_out:
                problems = [f"tests timed out after {timeout:g}s", *problems]
            if problems:
                rep.error = "tests not graded: " + "; ".join(problems)[:1500]
                return rep
            rep.tests_status = judge(report, fail_to_pass, pass_to_pass)
    except SwemintError as e:
        rep.error = f"{type(e).__name__}: {e.message}"
        rep.infra_error = isinstance(e, InfraError)
        return rep
    finally:
        rep.seconds = round(time.monotonic() - t0, 2)
    f2p, p2p = rep.tests_status["FAIL_TO_PASS"], rep.tests_status["PASS_TO_PASS"]
    rep.f2p_rate, rep.p2p_rate = _rate(f2p), _rate(p2p)
    rep.resolved = not f2p.failure and not p2p.failure
    rep.reward = 1.0 if rep.resolved else 0.0
    return rep
