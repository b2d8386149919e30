"""Whether a test run may be graded: one rule for pytest and every other runner.

`anomalies(evidence)` returns what makes a run's report untrustworthy; a run with any anomaly
is never graded (`grading.grade` only ever sees trusted runs), and the anomalies go into the
instance's row. An anomaly with `tamper=True` can only be explained by something writing to or
rewriting the report; the minter then refuses to grade the whole instance (its code is working
against the harness), not only that run.

The checks, each a thing a forger must get right *consistently*:

- **the channel** (pytest): frames that do not verify, junk on the channel, gaps, records after
  the seal or from another process (`channel.read_channel`) -- tamper;
- **session finished**: the runner's own end-of-run record is there (pytest: the sealed
  `session_finish`; others: their parser's end markers, see `parser_anomalies`);
- **exit status**: the process's exit code agrees with the runner's own status (pytest's
  `session_finish.exitstatus`) and with the results (nonzero with nothing failing or broken,
  zero with failures, pytest's internal/usage errors 3 and 4);
- **collected versus reported**: every collected test reported a result;
- **totals**: counts the runner printed agree with the tests parsed (the polyglot parsers'
  `check`);
- **independent sources**: where the runner also wrote other reports of the same run (pytest's
  JUnit XML and its `-rA` summary), a test that one source calls passed and another calls not
  passed -- tamper (a forged summary or JUnit file, or a report rewritten in place);
- **bounds**: a report over the size limit, a stream cut short, a run that timed out.

What no check here can catch: code inside the runner's process that changes the outcomes before
any report is written (a `conftest.py` hook rewriting reports, a monkeypatched runner) produces
consistent evidence everywhere. Such files are test infrastructure under the one rule set
(`envpool.testpaths`): a fix that touches them is no valid task (`invalid_task`), `infra_files`
flags a test_patch that does, and every graded side resets them to the base tree before the
test_patch is applied (`envpool.evalscript.reset_test_paths`). See docs/security.md "Grading integrity".
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from envpool.patches import grading_paths
from envpool.testpaths import rules_for
from envpool.testrun import crosscheck
from envpool.testrun.status import TestRunReport


class Anomaly(BaseModel):
    """One reason not to grade a run: a short `code`, the `message` and whether only tampering
    explains it (`tamper`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    code: str
    message: str
    tamper: bool = False

    def __str__(self) -> str:
        return f"{'tamper: ' if self.tamper else ''}{self.message}"


class RunEvidence(BaseModel):
    """Everything known about one test run, for `anomalies`.

    `report`: the parsed results to grade (pytest: from the authenticated channel). `exit_code`:
    the process's exit code when it is the runner's verdict (pytest), None when the command's
    exit code is not (most polyglot test commands). `runner_exit`: the runner's own exit status
    as it reported it (pytest's session), None when unknown. `session_finished`: the runner's
    end-of-run record arrived (None: the runner has no such record). `collected`: tests the
    runner collected (None: unknown). `parser_anomalies`: the parser's own findings (counts,
    cut streams). `tampered`: channel findings. `report_too_large`: the report went over the
    size limit. `others`: independent reports of the same run (source name -> report).
    `pytest_codes`: the runner is pytest (exit codes 3/4/5 have pytest's meaning).
    """

    model_config = ConfigDict(extra="forbid")
    report: TestRunReport
    exit_code: int | None = None
    runner_exit: int | None = None
    session_finished: bool | None = None
    collected: int | None = None
    parser_anomalies: list[str] = Field(default_factory=list)
    tampered: list[str] = Field(default_factory=list)
    report_too_large: bool = False
    others: dict[str, TestRunReport] = Field(default_factory=dict)
    pytest_codes: bool = False


def anomalies(ev: RunEvidence) -> list[Anomaly]:
    """Why the run of `ev` must not be graded ([] = trusted); see the module docstring. Pure: the
    checks are `envpool.testrun.crosscheck.findings`, which the in-image status tool runs too."""
    rep = ev.report
    found = crosscheck.findings(rep.statuses, rep.collection_errors, exit_code=ev.exit_code, timed_out=rep.timed_out,
                                runner_exit=ev.runner_exit, session_finished=ev.session_finished,
                                collected=ev.collected, parser_anomalies=ev.parser_anomalies, tampered=ev.tampered,
                                report_too_large=ev.report_too_large,
                                others={k: v.statuses for k, v in ev.others.items()}, pytest_codes=ev.pytest_codes)
    return [Anomaly(code=c, message=m, tamper=t) for c, m, t in found]


def tampering(found: list[Anomaly]) -> list[Anomaly]:
    """The anomalies of `found` that only tampering explains."""
    return [a for a in found if a.tamper]


# -- test infrastructure ------------------------------------------------------------------------

def infra_files(patch: str, language: str | None = None) -> list[str]:
    """Files `patch` touches that configure or extend the test runner, sorted: test
    infrastructure by name (conftest files, plugins, start-up hooks, jest/mocha/karma set-up,
    phpunit.xml, spec_helper.rb...) and shared configuration files whose changes touch the
    runner (a `[tool:pytest]` section, a package.json `"jest"` key, CMake `add_test`) -- the
    `support` and `config` kinds of the one rule set (`envpool.testpaths`, the groups of
    `language`; None: all). Never raises."""
    rules = rules_for(language)
    return sorted(p for p in grading_paths(patch, rules) if rules.is_support(p) or rules.kind(p) == "config")


def infrastructure_flags(patch: str, test_patch: str, language: str | None = None) -> list[str]:
    """The row's flag: `patch:<file>` and `test_patch:<file>` for every test-infrastructure file
    each patch touches (the test_patch adding fixtures to a `conftest.py` is common and benign;
    the fix touching one is worth a look)."""
    return [f"patch:{f}" for f in infra_files(patch, language)] + \
        [f"test_patch:{f}" for f in infra_files(test_patch, language)]
