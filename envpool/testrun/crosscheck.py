"""The trust rule's checks on plain values (stdlib only): one rule for the host and the image.

`envpool.testrun.trust.anomalies` (the minter, `swemint eval`, `grade()`) and the in-image status
tool of every exported row (`envpool.testrun.statuslines`, which runs on whatever `python3` an
environment image has) both call `findings`, so a published row's `eval_script` refuses exactly
the runs the minter refuses. See `envpool.testrun.trust` for what each check is for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from envpool.testrun.outcome import TestStatus, passed_like

Finding = tuple[str, str, bool]
"""(code, message, tamper): `tamper` when only something rewriting a report explains it."""

_FAILING = (TestStatus.FAILED, TestStatus.ERROR)


def disagreements(statuses: Mapping[str, TestStatus], other: Mapping[str, TestStatus]) -> list[str]:
    """Ids both status maps have whose pass/no-pass outcome differs, sorted."""
    return sorted(t for t, st in statuses.items() if t in other and passed_like(st) != passed_like(other[t]))


def findings(statuses: Mapping[str, TestStatus], collection_errors: Iterable[str] = (), *,
             exit_code: int | None = None, timed_out: bool = False, runner_exit: int | None = None,
             session_finished: bool | None = None, collected: int | None = None,
             parser_anomalies: Iterable[str] = (), tampered: Iterable[str] = (), report_too_large: bool = False,
             others: Mapping[str, Mapping[str, TestStatus]] | None = None,
             pytest_codes: bool = False) -> list[Finding]:
    """Why a run must not be graded ([] = trusted). Arguments as the fields of
    `trust.RunEvidence` (statuses of the report to grade, then the evidence; `others`: source name
    -> statuses of an independent report of the same run). Pure."""
    out: list[Finding] = [("channel", m, True) for m in tampered]
    if report_too_large:
        out.append(("too_large", "the report is over the size limit", False))
    if timed_out:
        out.append(("timed_out", "the run timed out before it finished", False))
    if session_finished is False and not timed_out:
        out.append(("unfinished", "the runner's session never finished (killed, os._exit, or its report was cut)",
                    False))
    out += [("parser", m, False) for m in parser_anomalies]
    failing = any(s in _FAILING for s in statuses.values())
    errors = list(collection_errors)
    if exit_code is not None and not timed_out:
        no_tests = 5 if pytest_codes else None
        if exit_code not in (0, no_tests) and not failing and not errors:
            out.append(("exit_status", f"exit code {exit_code} but no failed or errored test: output may be forged "
                                       "or the run was cut short", False))
        if exit_code == 0 and failing:
            out.append(("exit_status", "exit code 0 but failed or errored tests were reported", False))
        if pytest_codes and exit_code in (3, 4):
            out.append(("exit_status", f"pytest exit code {exit_code} "
                                       f"({'internal' if exit_code == 3 else 'usage'} error)", False))
        if runner_exit is not None and runner_exit != exit_code:
            out.append(("exit_status", f"the runner ended with status {runner_exit} but the process exited "
                                       f"{exit_code}", False))
    if collected is not None and len(statuses) < collected and not timed_out:
        out.append(("collected", f"{collected} tests collected but {len(statuses)} reported a result", False))
    for source, other in (others or {}).items():
        diff = disagreements(statuses, other)
        if diff:
            out.append(("sources", f"the {source} report disagrees with the runner's on {len(diff)} test(s), "
                                   f"e.g. {diff[0]}: a forged or rewritten report", True))
    return out
