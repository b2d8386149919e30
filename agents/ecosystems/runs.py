"""What an ecosystem and the agents that drive it share to build an environment and run its tests:
the build job an ecosystem's `build` / `adapt` hooks receive, the outcome they return, one test
run and the plain way of running a plan's tests and storing its command.

It sits below the agents (`agents.execution`, `agents.verification` use it as the ecosystems
do), so an ecosystem never imports the agent that drives it: Execution hands its generic
runner of setup commands to an ecosystem through `BuildJob.run_setup`.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agents.diagnosis import Diagnosis
from agents.ecosystems.plans import Plan
from envpool.testrun.limits import DEFAULT_PER_TEST, PER_TEST_ENV, limit_env
from envpool.testrun.status import TestRunReport

OUTPUT_TAIL = 8000
"""Characters of a test run's console output kept for diagnosis (`TestRun.output_tail`)."""


class SetupOutcome(BaseModel):
    """What Execution (or an ecosystem's `build` / `adapt` hook) made of P.

    `ok`: the environment is ready. `commands`: the commands that made it, in order (the setup
    script). `env`: the environment of setup commands (baked into the image); `test_env`: the
    environment of test runs. `failed`: (command, exit code) of attempts that failed and were
    repaired or skipped. `diagnosis`: why it failed (`ok` False). `installed_packages`: a
    freeze of what was installed, where the ecosystem has one. `timed_out`: the step that failed
    ran out of its time (`timeouts.setup_step`), which says nothing of the plan on a loaded host.
    """

    model_config = ConfigDict(extra="forbid")
    ok: bool
    commands: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    test_env: dict[str, str] = Field(default_factory=dict)
    failed: list[tuple[str, int]] = Field(default_factory=list)
    installed_packages: str = ""
    timed_out: bool = False
    reason: str = ""
    diagnosis: Diagnosis | None = None


@dataclass
class BuildJob:
    """What one environment build needs: the build sandbox (repository at /testbed), the
    ecosystem and its plan, the instance and its tree, the mint config, the repair helper
    (`agents.repair.RepairHelper` or None), the trajectory callback, the log, the deadline
    (`time.monotonic()` value) and the row's language."""

    sb: Any
    eco: Any
    plan: Plan
    instance: Any
    tree: Any
    config: Any
    helper: Any | None
    traj: Any
    log_path: Path
    deadline: float
    language: str
    candidate: Any | None = None
    extra: dict = field(default_factory=dict)
    index: Any | None = None
    """The `agents.debindex.DebianIndex` of the plan's base image (None: no index queries)."""
    dependency: Any | None = None
    """The `agents.tiers.DependencyTier` the build sandbox stands on (None: the toolchain image):
    its commands already ran, an ecosystem's `build` hook skips what they did."""
    run_setup: Callable[[BuildJob], SetupOutcome] | None = None
    """Execution's generic runner (`agents.execution.run_setup`: the plan's setup and post
    commands with the repair chain), for an ecosystem's `build` hook that runs some commands the
    generic way (Python: the request's apt / pre commands before its own builder)."""


class TestRun(BaseModel):
    """One run of T: the parsed `report`, its `anomalies` (`envpool.testrun.trust`: a run with
    any is not graded), `tampered` (the subset only tampering explains), the `command` as run,
    and the tail of its console output (diagnosis only)."""

    __test__ = False
    model_config = ConfigDict(extra="forbid")
    report: TestRunReport
    anomalies: list[str] = Field(default_factory=list)
    tampered: list[str] = Field(default_factory=list)
    command: str = ""
    output_tail: str = ""


def run_plan_tests(sb, plan: Plan, *, timeout: float, known_tests: set[str] | None = None,
                   log_label: str = "tests", env: dict[str, str] | None = None) -> TestRun:
    """Run `plan.test_command` once in `sb` (/testbed) and parse its report with `plan.parser`
    (`envpool.evaluation.run_report`: the report file removed first, read within the sandbox's
    size limit; the trust rule's anomalies). `known_tests`: ids from other runs, so a unit that
    fails to build marks them FAILED. `timeout` in seconds. `env`: the run's environment
    (default `plan.env`)."""
    from envpool.evaluation import run_report

    pre = f"rm -f {shlex.quote(plan.report_path)}; " if plan.report_path else ""
    run_env = env if env is not None else plan.env
    got = run_report(sb, plan.test_command, plan.parser, report_path=plan.report_path,
                     parser_options=plan.parser_options, env=run_env, timeout=timeout, known_tests=known_tests,
                     log_label=log_label)
    return TestRun(report=got.report, anomalies=list(got.anomalies), command=f"cd /testbed && {pre}{plan.test_command}",
                   output_tail=got.output[-OUTPUT_TAIL:])


def stored_test_command(plan: Plan, command: str, per_test_timeout: float | None = None) -> str:
    """The runner part of the row's `test_command` (`envpool.testrun.published.published_command`
    puts the test files back first): `command` made to run as is in the environment image with
    `docker run --network none <image> bash -c '<test_command>'` -- the plan's environment
    exported first (the image's ENV has it too) and the report (`plan.report_path`) printed at the
    end, so the parser's input is on stdout."""
    env = dict(plan.env)
    if PER_TEST_ENV in command:  # the runner's per-test limit (`envpool.testrun.limits`)
        env.update(limit_env(per_test_timeout if per_test_timeout is not None else DEFAULT_PER_TEST))
    exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in sorted(env.items()))
    tail = f"; cat {shlex.quote(plan.report_path)}" if plan.report_path else ""
    return f"{exports}{command}{tail}"
