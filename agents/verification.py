"""Verification agent: the before/after runs of one test configuration in an environment image,
the grading, and an *attribution* of any result short of verified to the agent that can fix it.

Sides (SWE-bench's Fail-to-Pass): "before" applies the test_patch to the base commit, "after"
the test_patch then the patch, run `verify.before_runs` / `verify.after_runs` times within the
instance's deadline, every run in a fresh sandbox of the image with no network (nothing one run
leaves behind -- a daemon, a rewritten file -- reaches the next). Each run goes through the
ecosystem's `run_tests` hook (Python: pytest with swemint's report plugin over the authenticated
channel) or `run_plan_tests` (the plan's command and parser, `envpool.evaluation.run_report`).
One trust rule for every ecosystem (`envpool.testrun.trust`): a run with an anomaly is never
graded, its anomalies go into the row (`<side>#<n>: <anomaly>`); a run showing tampering refuses
the instance (`tests_not_run`, final); a side without a trusted run did not run (`timeout` when
every run timed out; when no run reported any test, the runs' output is still diagnosed, so a
missing tool or an empty selection goes back to the loop).

A test absent from every before run is FAIL_TO_PASS when it passes after (SWE-bench: the
test_patch added it, or its file failed to load) -- unless the before runs stopped midway: when
every before run of a runner other than pytest reports an aborted unit (a collection error,
e.g. Redis' Tcl helper printing ``[exception]``, which ends the unit's remaining tests), a test
absent before counts only when the test_patch's changed lines name it (`aborted_before_scope`);
the others were cut off by the abort and are in neither list, as in gold. A unit that *stopped
early* (`envpool.grading.STOPPED_EARLY`: a Go package whose test binary panicked or exited,
``<pkg> [stopped early: panic]``; a Catch2 run that stopped) is such an abort, and on either side
a test its binary never reached is not observed in that run (`envpool.grading.observed`): not a
FAIL_TO_PASS, PASS_TO_PASS or flaky test by its absence. Under the adaptive policy such a first
run never decides at once (`agents.adaptive.cut_short`).

The fix may not touch what grades it, whatever route its tooling takes: a `verified` fix whose
`patch` changes files that configure how the project is built or its tests run (the rule set's
`tooling`: dotfiles, `*.config.*`, Makefiles, CMake, manifests, pyproject.toml...) gets a third
side, `core` = base + the patch without those hunks + test_patch (same order, same reset, its
own snapshot), one run targeted at the FAIL_TO_PASS ids (again in full when that run misses
one). An id that does not pass there depends on the fix's tooling: `invalid_task`
(`_Sides.core_check`). Path rules refuse the routes known; this holds for the ones nobody
listed yet.

Attribution (`Attribution.kind`), rules first, then the LLM under `hybrid` when they find none:
- `environment`: the image lacks a tool, a library or a module (the run's output or a touched
  test's failure names it) -> Execution adds it (`packages`, `install`);
- `toolchain`: a touched test is skipped for a version reason, or the fix needs a newer standard
  library (`toolchain` is the constraint) -> a plan on another toolchain;
- `test_config`: the configuration ran no test or selected nothing -> the next configuration;
- `task`: the task itself: every touched test passes before the fix too, or nothing the patch
  changes is exercised -> final;
- `flaky`: the tests that would be FAIL_TO_PASS change between runs -> final;
- `genuine`: tests ran, and they fail after the fix for no environment reason -> final.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.debindex import Need
from agents.diagnosis import Diagnosis, diagnose
from agents.context import MintRun
from agents.ecosystems.base import Plan, is_pytest
from agents.ecosystems.runs import OUTPUT_TAIL, TestRun
from agents.models import Instance, StepRecord
from envpool.errors import PatchApplyError, SandboxTimeout, TestsNotRunError
from envpool.sandbox import StepProgress
from envpool.grading import grade, in_failed_collector, test_name
from envpool.evalscript import reset_in_sandbox, reset_test_files
from envpool.patches import apply_patch, changed_lines, names_test_file, new_modules, paths_after, touched_words
from envpool.testrun.limits import limit_env
from envpool.testrun.status import TestRunReport, TestStatus

MIN_RUN_SECONDS = 30
"""A run starts only when at least this many seconds remain before the instance's deadline."""

AttributionKind = Literal["verified", "environment", "toolchain", "test_config", "task", "flaky", "genuine",
                          "unknown"]


class Attribution(BaseModel):
    """Who can fix a result short of `verified` (see the module docstring).

    `packages`: Debian packages (`environment` with `install="system"`) or modules
    (`install="module"`); `needs`: what the image lacks, for Debian's file index to answer with
    packages (`install="system"`, `agents.debindex`); `toolchain`: the constraint for the next plan; `rule`: the rule id
    or `llm`; `detail`: one line of evidence.
    """

    model_config = ConfigDict(extra="forbid")
    kind: AttributionKind
    detail: str = ""
    packages: list[str] = Field(default_factory=list)
    install: Literal["system", "module", ""] = ""
    needs: list[Need] = Field(default_factory=list)
    toolchain: str | None = None
    rule: str = ""
    evidence: str = ""
    """The output line a rule matched (the memory learns the loop's fix under it)."""


class Verdict(BaseModel):
    """What one verification concluded: the outcome (`verified`, `no_fail_to_pass`,
    `tests_not_run`, `timeout`), its reason, our FAIL_TO_PASS / PASS_TO_PASS / flaky lists,
    the row's `test_command`, the runs' `anomalies` (`<side>#<n>: <anomaly>`: why a run was not
    graded) and the attribution."""

    model_config = ConfigDict(extra="forbid")
    outcome: str
    reason: str = ""
    FAIL_TO_PASS: list[str] = Field(default_factory=list)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    flaky: list[str] = Field(default_factory=list)
    test_command: str = ""
    anomalies: list[str] = Field(default_factory=list)
    attribution: Attribution
    output_tail: str = ""
    """The tail of the runs' console output (after runs, then before runs): what the knowledge
    store's signatures are matched against at test time (`agents.flow.Loop.feedback`)."""


def _tail_of(runs: dict[str, list[TestRun]]) -> str:
    return "\n".join(r.output_tail for side in ("after", "before") for r in runs.get(side, []))[-OUTPUT_TAIL:]


def sides(instance: Instance, before_runs: int, after_runs: int,
          core: str | None = None) -> list[tuple[str, list[tuple[str, str]], int]]:
    """[("before", [test_patch], before_runs), ("after", [patch, test_patch], after_runs)]: the after
    side in the published order of SWE-bench's harness, a row's `eval_script` and `swemint eval`
    (`apply_side_patches` resets the test files before a test_patch that is not first). With
    `core` (the patch without its tooling hunks, `envpool.patches.tooling_split`) a third,
    ("core", [core_patch, test_patch], 1), in the after side's order (`_Sides.core_check`)."""
    out = [("before", [("test_patch", instance.test_patch)], before_runs),
           ("after", [("patch", instance.patch), ("test_patch", instance.test_patch)], after_runs)]
    if core is not None:
        out.append(("core", [("core_patch", core), ("test_patch", instance.test_patch)], 1))
    return out


def apply_side_patches(sb, side: str, patches: list[tuple[str, str]], methods: dict[str, str], instance_id: str,
                       log_path: Path | None, language: str | None = None) -> None:
    """Apply `patches` (name, diff text) in order in sandbox `sb`, recording in `methods[name]`
    how each applied (`envpool.patches.apply_patch`'s answer). A test_patch after another patch
    is applied as SWE-bench does, its files reset to HEAD first (`envpool.evalscript.
    reset_test_files`) -- and before that every test path of the one rule set the earlier patch
    changed or added goes back to the base tree (`envpool.evalscript.reset_in_sandbox`, the groups of
    `language`): a test edit hidden in the fix cannot make a FAIL_TO_PASS. Raises PatchApplyError
    ("<name> does not apply (<side>): ...") for the first that does not apply, TestsNotRunError
    when the reset fails."""
    for n, (name, text) in enumerate(patches):
        if name == "test_patch" and n:
            r = reset_in_sandbox(sb, language, label=f"{side}:reset-test-paths")
            if not r.ok:
                raise TestsNotRunError(f"the test paths could not be reset to the base tree ({side}): "
                                       f"{r.output.strip()[-500:]}", instance_id=instance_id, log_path=log_path)
            reset = reset_test_files(text)
            if reset:
                sb.exec(reset, timeout=120, log_label=f"{side}:reset-tests")
        try:
            methods[name] = apply_patch(sb, text, label=f"{side}:{name}")
        except PatchApplyError as e:
            raise PatchApplyError(f"{name} does not apply ({side}): {e.message}", instance_id=instance_id,
                                  log_path=log_path) from e


def time_left(deadline: float, side: str, instance_id: str, log_path: Path | None) -> float:
    """Seconds left before `deadline` (a `time.monotonic()` value) for a run of `side`. Raises
    SandboxTimeout when fewer than MIN_RUN_SECONDS remain."""
    remaining = deadline - time.monotonic()
    if remaining < MIN_RUN_SECONDS:
        raise SandboxTimeout(f"instance time limit reached in the {side} runs", instance_id=instance_id,
                             log_path=log_path)
    return remaining


def trusted(run: TestRun) -> bool:
    """Whether a run may be graded: the trust rule found no anomaly (`envpool.testrun.trust`,
    one rule for pytest and every other runner)."""
    return not run.anomalies


def _touched(test_id: str, files: list[str]) -> bool:
    return not files or any(test_id == f or test_id.startswith(f + "::") or f in test_id for f in files)


def _stopped_units(before: list[TestRunReport], after: list[TestRunReport]) -> set[str]:
    """Ids that failed as one unit before and hold test ids after: a before id X, not passing,
    with no before id under it (``X::...``) and some after id under it. A ctest test whose Catch2
    or doctest binary did not build before the fix (the test_patch uses the fix's API), so its
    cases are absent before only because the unit stopped."""
    from envpool.testrun.status import TestStatus as S

    before_ids = {t for r in before for t in r.statuses}
    failed = {t for r in before for t, st in r.statuses.items() if st not in (S.PASSED, S.XPASS)}
    under_before = {t.rsplit("::", k)[0] for t in before_ids for k in range(1, t.count("::") + 1)}
    under_after = {t.rsplit("::", k)[0] for r in after for t in r.statuses for k in range(1, t.count("::") + 1)}
    return {x for x in failed if x in under_after and x not in under_before}


def aborted_before_scope(test_patch: str, before: list[TestRunReport],
                         after: list[TestRunReport]) -> set[str] | None:
    """The `absent_scope` (`envpool.grading.grade`) for before runs that stopped midway.

    None (the plain rule) unless unidiff can read the test_patch and either (1) every before run
    reports a collection error and one of them is the file (or other prefix) of no test id -- an
    abort message, not a file that failed to load -- or (2) a unit failed whole before and holds
    test ids after (`_stopped_units`: a ctest test whose Catch2 binary did not build). Then: the
    top-level names (`test_name`) of the after runs' tests that occur in a line the test_patch
    adds or removes, or whose id lies under a collection error (`envpool.grading.in_failed_collector`,
    AVA's title prefixes too: a test file that failed to load before stays FAIL_TO_PASS). redis/redis-9733: the new test raises, the Tcl helper stops, the
    two tests after it in the file are absent before; gold lists only the new one."""
    if not before:
        return None
    changed = changed_lines(test_patch)
    if not changed:  # a test_patch unidiff cannot read: keep the plain rule
        return None
    text = "\n".join(line for lines in changed.values() for line in lines)
    ids = {t for r in after for t in r.statuses}
    errors = {e.rstrip("/") for r in before for e in r.collection_errors if e.strip()}
    # an abort: every before run has a collection error, and one names no test (not a file that failed to load)
    def under(t: str, e: str) -> bool:  # a plain prefix, or an AVA title prefix of the file
        return t.startswith(e) or in_failed_collector(t, (e,))

    aborted = all(r.collection_errors for r in before) and not all(any(under(t, e) for t in ids) for e in errors)
    if not aborted and not _stopped_units(before, after):
        return None
    return {n for t in ids if (n := test_name(t)) and (n in text or any(under(t, e) for e in errors))}


def judge(before: list[TestRunReport], after: list[TestRunReport], *, aborted_exits: frozenset[int] = frozenset(),
          absent_scope: set[str] | None = None) -> tuple[str, str, object]:
    """(outcome, reason, Grade or None) from trusted runs: a side whose every run timed out
    before reporting is `timeout`; no test reached after the patch (or a runner that stopped
    before reaching tests on every before run: an exit of `aborted_exits`, the ecosystem's
    `aborted_exit_codes`, pytest's 3/4) is `tests_not_run`; else
    `verified` with >= 1 FAIL_TO_PASS, or `no_fail_to_pass`. `absent_scope`: the plan's
    ``state["absent_scope"]`` (`envpool.grading.grade`)."""
    for side, reps in (("before", before), ("after", after)):
        if reps and all(r.timed_out and not r.statuses for r in reps):
            return "timeout", f"the {side} test run timed out before reporting any test", None
    if not any(r.tests_ran for r in after):
        last = after[-1] if after else TestRunReport()
        return "tests_not_run", ("the runner reached no test after the patch (exit "
                                 f"{last.exit_code}; collection errors: {last.collection_errors[:3]})"), None
    if aborted_exits and not any(r.tests_ran for r in before) and all(r.exit_code in aborted_exits for r in before):
        return "tests_not_run", f"the runner failed before reaching tests (exit {before[-1].exit_code})", None
    g = grade(before, after, None, absent_scope)
    if g.FAIL_TO_PASS:
        return "verified", f"{len(g.FAIL_TO_PASS)} FAIL_TO_PASS, {len(g.PASS_TO_PASS)} PASS_TO_PASS, " \
                           f"{len(g.flaky)} flaky", g
    return "no_fail_to_pass", "no test fails before and passes after the patch", g


def named_in_patch(ids, test_patch: str) -> list[str]:
    """The ids of `ids` whose `test_name` is a word of `test_patch`'s changed lines or hunk
    headers (`envpool.patches.touched_words`), sorted; [] when none is or the patch cannot be
    read. For runners whose ids do not name the test file (a ctest test with TAP or Catch2 cases
    inside: ``uv_test::spawn_exit_code``), these are the tests the test_patch touches."""
    words = touched_words(test_patch) if test_patch else set()
    return sorted(t for t in ids if (n := test_name(t)) and n in words)


def attribute(outcome: str, g, before: list[TestRun], after: list[TestRun], plan: Plan, eco,
              test_patch: str = "") -> Attribution:
    """The rules' attribution of a verification (module docstring); `unknown` when none fits.
    The touched tests: ids that name a test file of the plan; else, for runners whose ids name no
    file, those named in `test_patch`'s changed lines (`named_in_patch`); else every id."""
    if outcome == "verified":
        return Attribution(kind="verified")
    files = list(plan.test_files)
    after_reps = [r.report for r in after]
    skips = "\n".join(reason for r in after_reps for tid, reason in r.reasons.items()
                      if _touched(tid, files) and r.statuses.get(tid) == TestStatus.SKIPPED)
    failing = "\n".join(reason for r in after_reps for tid, reason in r.reasons.items()
                        if _touched(tid, files) and r.statuses.get(tid) != TestStatus.SKIPPED)
    output = "\n".join(r.output_tail for r in after + before)
    d: Diagnosis | None = diagnose(skips, eco.name, plan.toolchain, scope="skip", eco=eco) if skips else None
    d = d or diagnose(failing + "\n" + output, eco.name, plan.toolchain, eco=eco)
    if d is not None:
        if d.kind.startswith("toolchain"):
            return Attribution(kind="toolchain", detail=d.detail, toolchain=d.toolchain, rule=d.rule)
        if d.kind == "missing_system":
            return Attribution(kind="environment", detail=d.detail, packages=d.packages, needs=d.needs,
                               install="system", rule=d.rule, evidence=d.evidence)
        if d.kind == "missing_module":
            return Attribution(kind="environment", detail=d.detail, packages=d.packages, install="module", rule=d.rule)
    if outcome == "tests_not_run" or not any(r.statuses for r in after_reps):
        return Attribution(kind="test_config", detail="the test configuration ran no test", rule="no-tests")
    if g is None:
        return Attribution(kind="unknown", detail=outcome)
    ids = {t for r in after_reps for t in r.statuses}
    # pytest ids start with the file; other runners' ids (packages, classes) rarely name it
    touched = [t for t in ids if _touched(t, files)] or \
        ([] if is_pytest(plan.parser) else (named_in_patch(ids, test_patch) or sorted(ids)))
    if not touched:
        return Attribution(kind="test_config", detail="no test of the touched files ran", rule="no-touched-tests")
    if g.flaky and any(t in g.flaky for t in touched):
        return Attribution(kind="flaky", detail=f"{len(g.flaky)} flaky: {g.flaky[:3]}", rule="flaky")
    if all(t in g.PASS_TO_PASS for t in touched):
        return Attribution(kind="task", detail="every touched test passes before the fix too", rule="passes-before")
    if all(all(r.statuses.get(t) == TestStatus.SKIPPED for r in after_reps) for t in touched):
        return Attribution(kind="unknown", detail="every touched test is skipped after the fix: "
                                                  + (skips[:200] or "no reason given"), rule="skipped")
    return Attribution(kind="genuine", detail="touched tests fail after the fix", rule="fails-after")


SERVICES_START_TIMEOUT = 180.0
"""Seconds the servers of `Plan.services` get to start before a test run (PostgreSQL waits up
to 60 s for itself, MariaDB 60 s, Redis 30 s)."""


def start_services(sb, plan: Plan, label: str, env: dict[str, str] | None, traj) -> None:
    """Start the servers the CI provides for the tests (`Plan.services`;
    `agents.ecosystems.service_provision`) in the run's sandbox `sb`, recorded as a
    `verification` step `<label>:services`. A start that fails is recorded and the run goes
    on (its tests then fail: the report says so); nothing for a plan without services."""
    if not plan.services:
        return
    from agents.ecosystems.service_provision import start_command

    cmd = start_command()
    r = sb.exec(cmd, timeout=SERVICES_START_TIMEOUT, env=env or None, log_label=f"{label}:services")
    traj(StepRecord(agent="verification", rule=f"{label}:services", command=cmd, exit_code=r.exit_code,
                    duration=round(r.duration, 2), output_excerpt=r.output[-1500:],
                    note="started " + "; ".join(n.label() for n in plan.services)))


def targeted_plan(eco, plan: Plan, ids: list[str]) -> Plan | None:
    """`plan` narrowed to the test ids `ids` by the ecosystem's `targeted_plan` (None: the
    ecosystem cannot select single tests, or not these; the rerun is then full)."""
    if not ids:
        return None
    try:
        return eco.targeted_plan(plan, list(ids))
    except (ValueError, KeyError):
        return None


def build_command(eco, plan: Plan) -> str | None:
    """The ecosystem's compile-once command for `plan` (`Ecosystem.build_command`: compiles what
    the test command would and runs no test), or None."""
    return eco.build_command(plan)


def worth_compiling_once(plan: Plan, min_kb: int) -> bool:
    """Whether a side's snapshot build pays: the sources the build compiles
    (``plan.state["compiled_source_kb"]``, where the ecosystem measured them) are at least
    `min_kb` KiB (`verify.compile_once_min_source_kb`); True where unmeasured or `min_kb` is 0."""
    kb = plan.state.get("compiled_source_kb")
    return not min_kb or not isinstance(kb, (int, float)) or kb >= min_kb


class _Sides:
    """The runs of one verification (`verify`): each in a fresh sandbox, of the side's snapshot
    when it has one (`compile_once`), else of the environment image with the side's patches
    applied; its cost recorded (`agents.cost`), its anomalies and the row's test command kept."""

    def __init__(self, run: MintRun, spec, plan: Plan, eco, config, env: dict[str, str] | None):
        self.factory, self.spec, self.instance, self.plan, self.eco, self.config = (run.factory, spec, run.instance,
                                                                                   plan, eco, config)
        self.deadline, self.log_path, self.traj, self.env = run.deadline, run.log_path, run.traj, env
        self.tree = run.tree  # base_commit's tree (`agents.gitrepo.GitTree`)
        self.methods, self.timings, self.cost = run.res.patch_methods, run.res.timings, run.cost
        self.patches = {side: p for side, p, _ in sides(self.instance, 1, 1)}
        self.runs: dict[str, list[TestRun]] = {"before": [], "after": []}
        self.known: set[str] = set()
        self.known_before: set[str] = set()
        self.anomalies: list[str] = []
        self.test_command = ""
        self.tampered: Verdict | None = None
        cmd = build_command(eco, plan) if getattr(config.verify, "compile_once", False) else None
        if cmd and not worth_compiling_once(plan, getattr(config.verify, "compile_once_min_source_kb", 0)):
            self.traj(StepRecord(agent="verification", rule="compile-once:skipped",
                                 note=f"{plan.state.get('compiled_source_kb')} KiB of sources compiled, under "
                                      f"verify.compile_once_min_source_kb: every run builds for itself"))
            cmd = None
        self.build = cmd
        self.snapshots: dict[str, str | None] = {}

    def run_once(self, sb, side: str, i: int, plan: Plan, timeout: float, known: set[str],
                 snapshot: bool = False) -> TestRun:
        """Run `i` (1-based) of `side` in `sb` (patches applied) of `plan` (the full one or a
        targeted one) with the verification's environment: the ecosystem's `run_tests` (by default
        `run_plan_tests`), recorded as a `verification` step `<side>#<i>`. `known`: ids of earlier
        runs; `timeout` seconds; `snapshot`: `sb` runs the side's compile-once snapshot (the
        ecosystem's `snapshot_env` is added)."""
        eco, config, traj, env = self.eco, self.config, self.traj, self.env
        label = f"{side}#{i}"
        limit = limit_env(config.timeouts.per_test)  # the runners' per-test limit (`envpool.testrun.limits`)
        built = eco.snapshot_env(self.plan) if snapshot else {}
        run = eco.run_tests(sb, plan, timeout=timeout, known_tests=known or None, log_label=label,
                            per_test_timeout=config.timeouts.per_test,
                            env={**(env if env is not None else plan.env), **limit, **built})
        rep = run.report
        traj(StepRecord(agent="verification", rule=label, command=run.command, exit_code=rep.exit_code,
                        duration=round(rep.duration, 2),
                        note=f"{len(rep.statuses)} tests, source={rep.source}, anomalies={run.anomalies[:3]}, "
                             f"collection_errors={rep.collection_errors[:5]}"))
        return run

    def _phase(self, name: str):
        from contextlib import nullcontext

        return self.cost.phase(name) if self.cost is not None else nullcontext()

    def _time(self, key: str, t: float) -> None:
        self.timings[key] = round(self.timings.get(key, 0.0) + time.monotonic() - t, 2)

    def snapshot(self, side: str) -> str | None:
        """The side's snapshot image (built on first use; None without a build command, or when
        the build timed out: every run then builds for itself). The build's limit is the run limit,
        extended while it keeps printing as a setup step's is (`timeouts.setup_step_idle`, up to
        `setup_step_ceiling` and the instance's deadline). The build runs in a fresh sandbox
        of the environment image, network none: the side's patches, then `build` (its exit code
        is not a verdict: a test that does not compile before the fix fails in the runs)."""
        if side in self.snapshots:
            return self.snapshots[side]
        self.snapshots[side] = None
        if not self.build:
            return None
        from agents.envimage import image_tag_for
        from envpool.mtimes import snapshot_ready

        iid = self.instance.instance_id
        timeout = min(self.config.timeouts.test_run, time_left(self.deadline, side, iid, self.log_path))
        t = time.monotonic()
        with self.factory.sandbox(self.spec, self.log_path) as sb:
            apply_side_patches(sb, side, self.patches[side], self.methods, iid, self.log_path,
                               self.instance.language)
            # the build records the modification times the snapshot keeps and finds git's index
            # fresh (`envpool.mtimes`)
            sb.exec(snapshot_ready(self.spec.workdir), timeout=min(300.0, timeout), log_label=f"{side}:settle")
            # a build that keeps printing goes on past the run limit, as a setup step does (S11's
            # StepProgress): a header the patch changes rebuilds a large C++ library on the after side
            t_cfg = self.config.timeouts
            progress = None if t_cfg.setup_step_idle is None else StepProgress(
                idle=t_cfg.setup_step_idle, ceiling=max(timeout, min(t_cfg.setup_step_ceiling,
                                                                     time_left(self.deadline, side, iid, self.log_path))))
            r = sb.exec(f"cd /testbed && {self.build}", timeout=timeout, env=self.env or None,
                        log_label=f"{side}:build", progress=progress)
            self.traj(StepRecord(agent="verification", rule=f"{side}:build", command=self.build,
                                 exit_code=r.exit_code, duration=round(r.duration, 2),
                                 output_excerpt="" if r.ok else r.output[-1500:]))
            if not r.timed_out:
                tag = image_tag_for(f"{iid}-{side}-snapshot", {"image": self.spec.image, "build": self.build},
                                    self.config.run_id)
                sb.commit(f"{self.config.image_repository}-snapshot", tag,
                          labels={"swemint.instance": iid, "swemint.run": self.config.run_id,
                                  "swemint.snapshot": side})
                self.snapshots[side] = f"{self.config.image_repository}-snapshot:{tag}"
        if self.cost is not None:
            self.cost.run(f"{side}:build", "build", time.monotonic() - t)
        return self.snapshots[side]

    def remove_snapshots(self) -> None:
        """Remove the snapshot images (never raises)."""
        from agents.envimage import remove_image

        for ref in self.snapshots.values():
            if ref:
                remove_image(self.factory, ref)

    def run(self, side: str, targets: list[str] | None) -> TestRun | None:
        """One run of `side` (targeted at `targets`, or full); None once a run was tampered
        with (`tampered` holds the verdict). Raises SandboxTimeout at the deadline and
        PatchApplyError for a patch that does not apply."""
        if self.tampered is not None:
            return None
        iid = self.instance.instance_id
        i = len(self.runs[side]) + 1
        phase = side if i == 1 or side == "core" else "reruns"  # core#2 (a missed target) is the tooling check's
        plan = self.plan
        if targets is not None:
            plan = targeted_plan(self.eco, self.plan, targets)
            if plan is None:
                plan, targets = self.plan, None
        t = time.monotonic()
        with self._phase(side):
            image = self.snapshot(side)
            if i == 1:
                self._time(side, t)
        t = time.monotonic()
        timeout = min(self.config.timeouts.test_run, time_left(self.deadline, side, iid, self.log_path))
        spec = self.spec if image is None else self.spec.model_copy(update={"image": image})
        with self._phase(phase):
            with self.factory.sandbox(spec, self.log_path) as sb:  # every run in a fresh container
                if image is None:
                    apply_side_patches(sb, side, self.patches[side], self.methods, iid, self.log_path,
                               self.instance.language)
                # ids known from earlier runs (a unit that fails to build marks them FAILED): for a
                # before run only the before side's, as when every before run came first -- an id
                # the after side brought would stop being absent before (`absent_scope`)
                known = self.known_before if side == "before" else self.known
                start_services(sb, plan, f"{side}#{i}", self.env, self.traj)
                run = self.run_once(sb, side, i, plan, timeout, known, snapshot=image is not None)
        self._time(phase, t)
        if targets is not None:
            run = run.model_copy(update={"report": run.report.model_copy(update={"selected": list(targets)})})
        if self.cost is not None:
            self.cost.run(f"{side}#{i}", "targeted" if targets is not None else "full", time.monotonic() - t,
                          tests=len(run.report.statuses))
        self.runs[side].append(run)
        self.anomalies += [f"{side}#{i}: {a}" for a in run.anomalies]
        if targets is None and side != "core":  # the first full run (before#1) whose probe printed its scope
            self.pin_scope(run, label=f"{side}#{i}")
        if side == "after" and not self.test_command and targets is None:
            from envpool.testrun.published import published_command

            body = self.eco.stored_test_command(self.plan, run.command, per_test_timeout=self.config.timeouts.per_test)
            if self.plan.services:
                from agents.ecosystems.service_provision import stored_command

                body = stored_command(body)
            self.test_command = published_command(self.instance.test_patch, self.instance.patch, body,
                                                  self.instance.language)
        if run.tampered:
            self.tampered = Verdict(outcome="tests_not_run", test_command=self.test_command, anomalies=self.anomalies,
                                    reason=f"grading refused: the {side} run's report was tampered with "
                                           f"({run.tampered[0]})",
                                    attribution=Attribution(kind="task", detail=run.tampered[0][:300], rule="tampered"))
            return None
        if trusted(run):
            self.known |= set(run.report.statuses)
            if side == "before":
                self.known_before |= set(run.report.statuses)
        return run

    def pin_scope(self, run: TestRun, label: str) -> None:
        """When the plan's test command probes its own scope (Java's first before run is its
        selection probe: `Ecosystem.scoped_plan`), the scope `run` chose becomes the plan's test
        command for every later run and the row's."""
        pinned = self.eco.scoped_plan(self.plan, run)
        if pinned is None:
            return
        self.plan = pinned
        self.traj(StepRecord(agent="verification", rule="scope", command=pinned.test_command,
                             note=f"{label} chose the scope {pinned.state.get('scope')!r}: every later run runs it"))

    def schedule(self) -> None:
        """The runs of `verify.policy` (`agents.adaptive`)."""
        from agents import adaptive

        vc = self.config.verify
        if getattr(vc, "policy", "fixed") != "adaptive":
            for side, targets in adaptive.fixed(vc.before_runs, vc.after_runs):
                if self.run(side, targets) is None and self.tampered is not None:
                    return
            return
        b, a = self.run("before", None), self.run("after", None)
        if self.tampered is not None:
            return
        short = None
        if b is not None and a is not None and trusted(b) and trusted(a):
            names = touched_words(self.instance.patch) | touched_words(self.instance.test_patch)
            short = next((f"{label} was cut short ({why})" for label, why in (
                ("before#1", adaptive.cut_short(b.report, a.report, names)),
                ("after#1", adaptive.cut_short(a.report, b.report, names))) if why), None)
        if short is not None:  # graded, but its absences decide nothing: the rest in full, as `fixed`
            self.traj(StepRecord(agent="verification", rule="adaptive:cut-short",
                                 note=f"{short}: no decision after two runs, the remaining runs in full"[:2000]))
            todo = adaptive.fixed(vc.before_runs - 1, vc.after_runs - 1)
        elif b is not None and a is not None and trusted(b) and trusted(a):
            scope = self.plan.state.get("absent_scope")
            if scope is None and not is_pytest(self.plan.parser):
                scope = aborted_before_scope(self.instance.test_patch, [b.report], [a.report])
            cands, differ = adaptive.candidates(b.report, a.report, set(scope) if scope is not None else None)
            if not cands:
                self.traj(StepRecord(agent="verification", rule="adaptive:decided",
                                     note="no FAIL_TO_PASS candidate after before#1 and after#1: no reruns"))
                return
            targets = adaptive.targets_of(cands, differ, a.report)
            self.traj(StepRecord(agent="verification", rule="adaptive:targets",
                                 note=f"{len(cands)} candidate(s), {len(differ)} differing; reruns "
                                      + (f"targeted at {len(targets)} id(s)" if targets else "in full")))
            todo = adaptive.reruns(vc.before_runs, vc.after_runs, targets,
                                   full_before_rerun=getattr(vc, "full_before_rerun", False))
        else:  # a first run that cannot be graded: the rest in full, as `fixed`
            todo = adaptive.fixed(vc.before_runs - 1, vc.after_runs - 1)
        for side, targets in todo:
            self.run(side, targets)
            if self.tampered is not None:
                return

    def _new_module_tests(self, failing: list[str], run) -> list[str]:
        """The ids of `failing` excused by the new-module rule: the fix creates a module
        (`envpool.patches.new_modules`: its build file and its registration in the parent build;
        the folder holds no file at base_commit), the id names a test file of the test_patch inside
        that module (`names_test_file`) and the core run (`run`, None: nothing is excused) did not
        run it (absent, under a failed collector, or the run's build failed: a `[build failed]`
        unit, whose ids the runners list) -- without the fix's build files the module is no part of
        the build, so its tests cannot run there. A test of any other module, or one that ran and
        failed, is never excused (the fix's tooling may not vouch for tests outside the module it
        creates). Class: a fix that adds a module with its tests (java-design-patterns-3564's
        shape; tests/agents/test_tooling_check.py, test_java_moves_docker.py)."""
        if run is None or not failing:
            return []
        base = self.tree.file_set
        modules = [m for m in new_modules(self.instance.patch) if not any(f.startswith(m + "/") for f in base)]
        if not modules:  # a folder that holds files at base_commit is not created by the fix
            return []
        owned = [f for f in paths_after(self.instance.test_patch) if any(f.startswith(m + "/") for m in modules)]
        errors = list(run.report.collection_errors)
        built = not any(c.endswith("[build failed]") for c in errors)  # the runners' mark of a failed build

        def ran(t: str) -> bool:
            return built and t in run.report.statuses and not in_failed_collector(t, errors)

        return [t for t in failing if owned and not ran(t) and names_test_file(t, owned)]

    def core_check(self, verdict: Verdict) -> Verdict:
        """The tooling check of a `verified` verdict (`verify.tooling_check`): when the fix changes
        build or test tooling (`envpool.patches.tooling_split` under the rule set's `tooling`), one
        run of the `core` side -- base + the patch without its tooling hunks + test_patch, applied
        and reset as the after side (`apply_side_patches`; its own snapshot under compile-once) --
        targeted at the FAIL_TO_PASS ids (full where the ecosystem cannot target; run again in
        full, `core#2`, when the targeted run does not observe one of them, `observed`: absent
        from its report, not under a failed unit -- a selection the runner read otherwise). Every
        FAIL_TO_PASS id must pass there; one that does not means the fix's effect on its tests
        depends on its tooling (a runner option, a plugin, a transform, a build flag): outcome
        `invalid_task`, attribution `task` (rule `core`), the reason naming the tooling paths and
        the ids. A fix that is tooling alone has the before side as its core: decided without a
        run. The verdict as it is otherwise (no tooling hunk: no run). Steps `core#1` (the run;
        `core#2` the full one) and `core:decided`. Raises SandboxTimeout at the deadline."""
        if verdict.outcome != "verified" or not getattr(self.config.verify, "tooling_check", True):
            return verdict
        from envpool.grading import observed, passes_in
        from envpool.patches import tooling_split

        split = tooling_split(self.instance.patch, self.instance.language)
        if not split.paths:
            return verdict
        f2p = list(verdict.FAIL_TO_PASS)
        paths = ", ".join(split.paths[:5]) + (f" (+{len(split.paths) - 5} more)" if len(split.paths) > 5 else "")
        why = ""
        if not split.core.strip():
            failing, why = f2p, "the fix is nothing but tooling hunks: its core is the before side"
        else:
            self.patches["core"] = sides(self.instance, 1, 1, core=split.core)[-1][1]
            self.runs.setdefault("core", [])
            try:
                run = self.run("core", f2p)
                if run is not None and trusted(run) and run.report.selected is not None and \
                        not all(observed(run.report, t) for t in f2p):
                    run = self.run("core", None)  # the selection missed a target: the core in full
            except PatchApplyError as e:
                run, why = None, f"the fix without its tooling hunks does not apply: {e.message[:300]}"
            if self.tampered is not None:
                return self.tampered
            if run is not None and not trusted(run):
                why = f"the core run cannot be trusted: {run.anomalies[0]}"
            failing = f2p if run is None or why else [t for t in f2p if not passes_in(run.report, t)]
            excused = self._new_module_tests(failing, run)
            failing = [t for t in failing if t not in excused]
            if excused and not failing:
                why = ""
        if not failing:
            extra = (f"; {len(excused)} of them in a module the fix creates, not run without its build files "
                     f"({', '.join(new_modules(self.instance.patch))})" if split.core.strip() and excused else "")
            self.traj(StepRecord(agent="verification", rule="core:decided",
                                 note=f"every FAIL_TO_PASS test ({len(f2p)}) passes without the fix's tooling "
                                      f"hunks ({paths}){extra}: verified stands"))
            return verdict.model_copy(update={"anomalies": list(self.anomalies)})
        ids = ", ".join(failing[:3]) + (f" (+{len(failing) - 3} more)" if len(failing) > 3 else "")
        reason = (f"the fix's FAIL_TO_PASS holds only with its build/test-tooling changes ({paths}): "
                  f"{len(failing)} of {len(f2p)} FAIL_TO_PASS test(s) do not pass without them: {ids}"
                  + (f" ({why})" if why else ""))
        self.traj(StepRecord(agent="verification", rule="core:decided", exit_code=1, note=reason[:2000]))
        return Verdict(outcome="invalid_task", reason=reason, test_command=verdict.test_command,
                       anomalies=list(self.anomalies),
                       attribution=Attribution(kind="task", rule="core", detail=f"tooling: {paths}; failing: {ids}"[:300]))


def verify(run: MintRun, spec, plan: Plan, eco, config, *, env: dict[str, str] | None = None) -> Verdict:
    """Before and after runs of `plan`'s T in image `spec.image` (network none, every run in a
    fresh sandbox of `run.factory`; with `verify.compile_once` from its side's snapshot) for
    `run.instance`, scheduled by `verify.policy` (`agents.adaptive`), graded and attributed (module
    docstring), within `run.deadline`, each step in `run.traj`. Into `run.res`: the patch methods
    applied and `timings`, wall seconds added under `before` / `after` (each side's first run and
    its build) and `reruns`; container CPU into `run.cost` (`agents.cost.CostMeter`). `env`: the
    test runs' environment (None: the plan's). A `verified` verdict then meets the tooling check
    (`_Sides.core_check`, `verify.tooling_check`: a fix changing build or test tooling runs its
    `core` side, timed and costed under `core`). Raises PatchApplyError (a patch does not apply)
    and SandboxTimeout (the instance's time ran out); everything else is a Verdict."""
    s = _Sides(run, spec, plan, eco, config, env)
    try:
        s.schedule()
        return s.core_check(_graded(s, run.instance, plan, eco))
    finally:
        s.remove_snapshots()


def _graded(s: _Sides, instance: Instance, plan: Plan, eco) -> Verdict:
    """The verdict of the before and after runs `s` made (`verify`)."""
    if s.tampered is not None:
        return s.tampered
    runs, anomalies, test_command = s.runs, s.anomalies, s.test_command
    ok = {side: [r for r in every if trusted(r)] for side, every in runs.items()}
    for side in ("before", "after"):
        every = runs[side]
        if not every or ok[side]:
            continue
        if all(r.report.timed_out for r in every):
            return Verdict(outcome="timeout", reason=f"the {side} test run timed out before it finished",
                           test_command=test_command, anomalies=anomalies,
                           attribution=Attribution(kind="unknown", detail="timed out", rule="timeout"))
        first = next((a for r in every for a in r.anomalies), "no run")
        if any(r.report.statuses for r in every):  # results that cannot be trusted: final
            return Verdict(outcome="tests_not_run", reason=f"no {side} run's report can be trusted: {first}",
                           test_command=test_command, anomalies=anomalies,
                           attribution=Attribution(kind="unknown", detail="untrustworthy reports", rule="untrusted"))
        # no run reported anything: nothing is graded, but the output still says why (a missing
        # tool, a module, an empty selection) and the loop can act on it
        att = attribute("tests_not_run", None, runs["before"], runs["after"], plan, eco, instance.test_patch)
        return Verdict(outcome="tests_not_run", reason=f"the {side} runs reported no test: {first}",
                       test_command=test_command, anomalies=anomalies, attribution=att, output_tail=_tail_of(runs))
    scope = plan.state.get("absent_scope")
    before_reps, after_reps = [r.report for r in ok["before"]], [r.report for r in ok["after"]]
    if scope is None and not is_pytest(plan.parser):
        scope = aborted_before_scope(instance.test_patch, [r for r in before_reps if r.selected is None],
                                     [r for r in after_reps if r.selected is None])
    outcome, reason, g = judge(before_reps, after_reps,
                               aborted_exits=eco.aborted_exit_codes(plan),
                               absent_scope=set(scope) if scope is not None else None)
    att = attribute(outcome, g, ok["before"], ok["after"], plan, eco, instance.test_patch)
    return Verdict(outcome=outcome, reason=reason, FAIL_TO_PASS=g.FAIL_TO_PASS if g else [],
                   PASS_TO_PASS=g.PASS_TO_PASS if g else [], flaky=g.flaky if g else [], test_command=test_command,
                   anomalies=anomalies, attribution=att, output_tail=_tail_of(ok) if outcome != "verified" else "")


ATTRIBUTION_PROMPT = (
    "You attribute why a SWE-bench-style verification did not verify: the tests of the test patch ran "
    "before the fix (expected to fail) and after it (expected to pass) in a Docker image. Say who can "
    "fix it: environment (the image lacks a Debian package or a module: list them, install=system or "
    "module), toolchain (another interpreter/compiler version is needed: give a constraint such as "
    ">=3.11), test_config (the configuration ran the wrong tests), task (the task itself is broken), "
    "flaky, or genuine (the tests genuinely fail after the fix).")


def llm_attribution(helper, instance: Instance, plan: Plan, verdict: Verdict, traj) -> Attribution | None:
    """Ask the LLM for an attribution the rules could not make (`hybrid`, `llm`); None without a
    model or a valid answer. The answer is validated by `Attribution`; `rule` is set to `llm`."""
    if helper is None or helper.llm is None:
        return None
    task = (f"Repository {instance.repo}, ecosystem {plan.ecosystem} ({plan.toolchain}); tests {plan.test_files}.\n"
            f"Outcome: {verdict.outcome}: {verdict.reason}\nRules' attribution: {verdict.attribution.model_dump()}\n"
            f"Test patch (head):\n{instance.test_patch[:2000]}")
    from agents.repair import experience_block

    task += experience_block(helper, verdict.output_tail or verdict.reason, instance.language or plan.ecosystem)
    att = helper.consult(ATTRIBUTION_PROMPT, task, Attribution, "verification", "llm:attribution", traj)
    return att.model_copy(update={"rule": "llm"}) if att is not None else None
