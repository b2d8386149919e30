"""Mint one instance of any language: plan -> environment -> verify -> feedback, in bounded rounds,
ending in exactly one outcome row (datatrove's "every outcome is a row").

The agents (each a module with typed inputs and outputs): Repository Analysis
(`agents.analysis`: profile and ranked candidate plans), Environment Setup (`agents.setup`: B and
P), Test Configuration (`agents.testconfig`: T), Execution (`agents.execution`: runs P, repairs,
gives up with a `Diagnosis`), Verification (`agents.verification`: before/after runs, grading, an
`Attribution`) and EnvPatch (`agents.envpatch`: a pooled environment adapted). This module holds
the loop and its bounds and nothing language-specific.

1. Analysis -> candidates. None can be built: `hybrid`/`llm` ask the LLM for a plan; otherwise
   `env_failed` naming what is missing (a `language: java` row with only build.xml: "Ant build
   (build.xml): no route"), never another language's path.
2. Memory before planning (EnvPilot's context-aware retrieval: profile -> likely-obstacle queries
   -> BM25 lists -> RRF, top-k; under `llm` it runs before the LLM's plan and goes into its
   prompt, `agents.planner.Planner.make_plan`): proven entries change the plan before anything fails; the lesson
   of the moves that verified this repository's (or an exactly matching context's) earlier rows
   in round >= 2 is replayed into round 1's plan (`agents.memory.replay`), and a row verified in
   round >= 2 leaves such a lesson (a `lesson:moves` step the driver learns).
3. Rounds, at most `loop.max_rounds` (and `loop.max_builds` full builds; an amended image asked by
   the last round runs past the budget, `loop.amend_rounds` times at most). Round 1's environment
   is this instance's pooled image (`--reverify`), else a reuse candidate adapted by EnvPatch,
   else a full build. Execution giving up with a diagnosis re-plans (another toolchain, the next
   candidate route, an LLM plan under `hybrid`). Verification's attribution goes to whoever can
   fix it: `environment` -> Execution amends the image (a module, or the Debian package that
   Debian's file index names for a missing command, header or library: `agents.debindex`);
   `toolchain` -> a plan on another toolchain; `test_config` -> the next test configuration (the
   LLM's under `hybrid` when the rules have none left); a reused environment that does not verify
   -> a full build, unless the result is the task's own (`task`); `genuine` / `flaky` -> final.
   A round that gave nothing to grade (no test ran, none of the touched tests ran, a test the
   test_patch adds never ran: `agents.moves.stalled`) gets the ecosystem's generic next moves
   once its own configurations are used up, before the LLM's (`agents.moves`: the build that
   owns the touched path, the CI's command, project options that gate tests, the whole suite,
   discovery after the test_patch, scripts and make targets graded by exit status); the round
   a move shapes records it (`RoundRecord.move`, `evidence`, a `move:<kind>` step).
   Every round is a `RoundRecord` in the row and a `flow` step in the trajectory; the row reports
   the round that verified (or the last one).
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from agents.analysis import RepoProfile
from agents.debindex import index_for, unanswered
from agents.diagnosis import unreachable_source
from agents.mint_config import MintConfig
from agents.context import Environment, MintRun, Trajectory
from agents.cost import CostMeter, policy_of
from agents.ecosystems.base import PlanRequest, TestSpec
from agents.envimage import image_size, release_cache, remove_image
from agents.envpatch import adapt_environment
from agents.execution import amend_commands, amend_environment, build_environment
from agents.gitrepo import GitTree
from agents.diagnosis import DROPPED
from agents.memory.before import memory_before_plan
from agents.memory.knowledge import diagnosis_entry, diagnosis_rule_ids, rule_entry_id
from agents.memory.replay import lesson_step, replay_moves, request_data, stall_class
from agents.memory.uses import UseLedger
from agents.models import EnvRecord, Instance, InstanceResult, RoundRecord, StepRecord
from agents.moves import MoveContext, candidates, merged_request, stalled
from agents.planner import Planner
from agents.policy import make_helper
from agents.reuse import derive_version
from agents.verification import Attribution, Verdict, llm_attribution, verify
from envpool.imagestore import store_of, use_store
from envpool.errors import EnvBuildError, InstanceInputError, InvalidTaskError, PatchApplyError, SandboxTimeout, \
    SwemintError, TestsNotRunError
from envpool.naming import folder_name
from envpool.patches import grading_paths_problem, paths_after, shared_files_problem
from envpool.sandbox import engine_isolation
from envpool.testrun.trust import infrastructure_flags

__all__ = ["OUTCOME_OF_ERROR", "mint_instance"]

OUTCOME_OF_ERROR: tuple[tuple[type[SwemintError], str], ...] = (
    (InvalidTaskError, "invalid_task"), (PatchApplyError, "patch_failed"), (EnvBuildError, "env_failed"),
    (TestsNotRunError, "tests_not_run"),
    (SandboxTimeout, "timeout"), (SwemintError, "infra_error"))
"""Error class -> outcome, first match wins. InfraError and InstanceInputError (a missing mirror
or commit says nothing about the instance, as in the pipeline driver) end as `infra_error`."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def mint_instance(instance: Instance, repo_path: Path, config: MintConfig, factory=None,
                  env: EnvRecord | None = None, candidates: list[EnvRecord] | None = None,
                  llm=None, profile: RepoProfile | None = None) -> InstanceResult:
    """Build, verify and (if verified) keep the environment of one instance, any language.

    With `env` (this instance's pooled environment, e.g. on `swemint mint --reverify`) and its
    image present, setup is skipped and the tests run in that image. With `candidates` (pooled
    environments of *other* instances of the same repository, best first; one of another
    repository is refused by `agents.envpatch.fits`) and `config.reuse.enabled`, each is adapted
    by EnvPatch and accepted only when it verifies (MEnvAgent, arXiv 2601.22859): the row then
    records `reused_from`, `reuse_kind` and `incremental_commands`. A full build stands on the
    plan's dependency tier when its ecosystem has one (`agents.tiers`): the row records
    `dependency_key` and `dependency_image_id`. `llm`: an LLMClient for the `llm` / `hybrid`
    policy (default: a gateway from `config.llm`; tests pass `FakeLLM`). `profile`: the Repository Analysis of
    `base_commit` when a plan stage already made it (`pipeline.stages.PlanStage`); it is used
    only when its `commit` is the instance's, else the analysis runs here.

    Args:
        instance: the SWE-bench-format instance (gold lists are never read here).
        repo_path: host git directory (bare mirror) holding `base_commit`.
        config: MintConfig (workdir, limits, timeouts, reruns, loop bounds).
        factory: a SandboxFactory (default: Docker, labelled with `config.run_id`).

    Returns:
        InstanceResult with exactly one outcome. Never raises for instance problems; a failure
        of the Docker engine becomes `infra_error`. Logs and artifacts go to
        `config.workdir/instances/<envpool.naming.folder_name(id)>/`; the row itself is the
        caller's to store (the pipeline driver writes `result.json`).
    """
    iid = instance.instance_id
    idir = Path(config.workdir) / "instances" / folder_name(iid)
    idir.mkdir(parents=True, exist_ok=True)
    log_path = idir / "run.log"
    log_path.write_text(f"# swemint {iid} started {_now()}\n")
    res = InstanceResult(instance_id=iid, repo=instance.repo, outcome="infra_error", log_path=str(log_path),
                         version=instance.version, started_at=_now(), trajectory_path=str(idir / "trajectory.jsonl"),
                         language=instance.language)
    t0 = time.monotonic()
    meter = CostMeter()
    traj = Trajectory(idir / "trajectory.jsonl")
    borrowed = {r.image_tag for r in ([env] if env else []) + list(candidates or [])}
    helper = None
    run = None
    try:
        if factory is None:
            from envpool.docker_sandbox import DockerSandboxFactory
            factory = DockerSandboxFactory(run_id=config.run_id, build_network=config.build_network,
                                           output_cap=config.limits.output_bytes,
                                           report_cap=config.limits.report_bytes)
        meter.attach(factory)
        res.isolation = engine_isolation(factory)
        helper = make_helper(config, iid, llm=llm)
        if not instance.test_patch.strip() or not instance.patch.strip():
            raise InstanceInputError("empty patch or test_patch", instance_id=iid)
        res.test_infra_files = infrastructure_flags(instance.patch, instance.test_patch, instance.language)
        trees: list[GitTree] = []

        def base_text(path: str) -> str | None:  # the fix's configuration files as base_commit has them
            if not trees:
                trees.append(GitTree(Path(repo_path), instance.base_commit, instance_id=iid))
            return trees[0].read(path)

        # the fix may not touch what grades it (its configuration files judged against their base text)
        if invalid := grading_paths_problem(instance.patch, instance.language, base_text):
            raise InvalidTaskError(invalid, instance_id=iid)
        if shared := shared_files_problem(instance.patch, instance.test_patch):
            raise InstanceInputError(shared, instance_id=iid)
        tree = trees[0] if trees else GitTree(Path(repo_path), instance.base_commit, instance_id=iid)
        run = MintRun(instance=instance, tree=tree, config=config, factory=factory, res=res, idir=idir,
                      log_path=log_path, traj=traj, deadline=t0 + config.timeouts.instance, helper=helper,
                      touched=paths_after(instance.test_patch), cost=meter)
        # toolchain images on the sandboxes' engine (a fake's store in tests); what building a
        # missing one costs is the row's image_cpu_s, not its process CPU (`agents.cost`)
        with use_store(store_of(factory)), meter.watching_images():
            Loop(run, env, list(candidates or []) if config.reuse.enabled else [], profile).go()
    except SwemintError as e:
        res.outcome = next(o for cls, o in OUTCOME_OF_ERROR if isinstance(e, cls))
        res.reason = f"input: {e.message}" if isinstance(e, InstanceInputError) else e.message
    except Exception as e:  # a bug of ours: never lose the row
        res.outcome, res.reason = "infra_error", f"internal error: {type(e).__name__}: {e}"
    finally:
        traj.flush()
        release_cache(config, iid, instance.repo)
        if helper is not None:
            res.llm_usage = helper.usage()
            if helper.memory is not None:
                helper.memory.close()
    if res.outcome != "verified" and run is not None and (lacking := lacking_blobs(run.tree, log_path)):
        res.reason = (f"{res.reason}; the mirror lacks {len(lacking)} file(s) this run names: "
                      f"{', '.join(lacking[:3])} (blobs a partial mirror does not hold)")
    if res.outcome == "env_failed":
        res.unreachable = unreachable_source(res.reason)
        if res.unreachable and res.substitutes_tried:  # network-bound only after its substitutes failed
            res.reason += f"; substitutes tried: {'; '.join(res.substitutes_tried)[:600]}"
    res.timings["total"] = round(time.monotonic() - t0, 2)
    res.finished_at = _now()
    keep = res.image if res.outcome == "verified" else None
    for image in (run.made_images if run else []):
        if image != keep and image not in borrowed:
            remove_image(factory, image)
    meter.detach()
    res.cost = meter.record(policy_of(config))
    if res.outcome != "verified" and res.image and res.image not in borrowed:
        res.image, res.image_id, res.env = "", "", None
    # result.json is the driver's (pipeline.store, its one writer): a worker abandoned at its
    # deadline must never overwrite the driver's `timeout` row
    with log_path.open("a") as f:
        f.write(f"\n# outcome: {res.outcome}: {res.reason}\n")
    return res


def lacking_blobs(tree: GitTree, log_path: Path, limit: int = 64 << 20) -> list[str]:
    """The paths of `tree.missing_blobs` (files the mirror has no blob for, left out of the
    checkout: `agents.gitrepo.GitTree.archive`) whose file name (>= 5 characters) occurs in the
    first `limit` bytes of the instance's log -- a run that read or downloaded them. Sorted; []
    when nothing is missing or the log cannot be read. astropy-14995: the fetched snapshot lacks
    ``astropy/utils/iers/data/eopc04.1962-now`` (a file of 4 MiB or more), pytest's configure
    hook tries to download it and every run stops before a test."""
    missing = [m for m in getattr(tree, "missing_blobs", []) if len(PurePosixPath(m).name) >= 5]
    if not missing:
        return []
    try:
        with log_path.open("rb") as f:
            text = f.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return []
    return sorted(m for m in missing if PurePosixPath(m).name in text)


class Loop(Planner):
    """The rounds of one instance (module docstring) on top of its `Planner`. `go()` fills
    `run.res` or raises a SwemintError the caller maps to an outcome."""

    def __init__(self, run: MintRun, pooled: EnvRecord | None, candidates: list[EnvRecord],
                 profile: RepoProfile | None = None):
        super().__init__(run, profile)
        self.pooled = pooled
        self.reuse = candidates
        self.builds = 0
        self.pending_evidence: tuple[str, str, str] | None = None
        self.verdict_plan = None
        self.uses = UseLedger(run.traj)

    def go(self) -> None:
        """The loop (module docstring), with the rules the memory dropped below its floor skipped
        by the diagnosis engine for this instance (`agents.diagnosis.DROPPED`). When it ends (or
        raises), the uses of memory no recorded round scored get an unscored `score:` step
        (`agents.memory.uses.UseLedger.close`: outcome "no round")."""
        memory = getattr(self.run.helper, "memory", None)
        dropped: frozenset[str] = frozenset()
        if memory is not None:
            try:
                dropped = memory.dropped_rules()
                self.run.helper.dropped = frozenset(e.id for e in memory.dropped_entries())
            except Exception as e:  # noqa: BLE001 - the memory never fails a build
                self.run.traj(StepRecord(agent="memory", rule="dropped:error", note=f"{type(e).__name__}: {e}"))
        if dropped:
            self.run.traj(StepRecord(agent="memory", rule="dropped", note=", ".join(sorted(dropped))[:2000]))
        token = DROPPED.set(dropped)
        why = "the loop ended after the round that recorded it"
        try:
            self._go()
        except BaseException as e:
            why = f"the loop ended: {type(e).__name__}"
            raise
        finally:
            DROPPED.reset(token)
            self.uses.close(self.round_no, why)

    # -- the loop -----------------------------------------------------------------------------
    def _go(self) -> None:
        run = self.run
        self.analyse()
        self.make_plan()
        first = ""
        while not self.tests and self.ci + 1 < len(self.cands):
            # S20: a polyglot root (pyproject.toml beside go.mod / Cargo.toml) whose first candidate
            # owns none of the touched tests: the next candidate, before any build
            why = f"the {self.plan.ecosystem} rules select no test of the test patch ({', '.join(run.touched[:5])})"
            first = first or why
            run.traj(StepRecord(agent="setup", rule=f"plan:{self.cands[self.ci].label}",
                                note=f"{why}: next candidate {self.cands[self.ci + 1].label}"[:2000]))
            self.ci += 1
            try:
                self.make_plan(why=why)
            except EnvBuildError:
                break
        if not self.tests:  # the rules have no test configuration: the plan is the LLM's or none
            why = first or f"the {self.plan.ecosystem} rules select no test of the test patch ({', '.join(run.touched[:5])})"
            if self.llm_planned or not self._llm_plan(why):
                raise TestsNotRunError(why, instance_id=run.iid, log_path=run.log_path)
        used: list[str] = []
        request = memory_before_plan(run, self.profile, self.plan, self.eco, self.request, uses=used)
        if request != self.request:  # `replan` takes the request: compare before it runs
            if self.replan(request, "memory"):
                for eid in used:
                    self.uses.use(eid, "before-plan", "changed the plan")
            else:
                self.request = PlanRequest()
        if self.pooled is None or self.pooled.base_commit != run.instance.base_commit:
            replay_moves(self, self.uses)  # the moves that verified this repository's earlier rows, up front
        env: Environment | None = None
        source = "first"
        verdict: Verdict | None = None
        verdict_round, verdict_env, last_failure, last_timed_out = 0, None, "", False
        budget, n = self.cfg.loop.max_rounds, 0
        while n < budget:
            n += 1
            self.round_no = n
            if run.remaining() < 30:
                raise SandboxTimeout("instance time limit reached between rounds", instance_id=run.iid,
                                     log_path=run.log_path)
            record = RoundRecord(round=n, candidate=f"{self.plan.ecosystem}:{self.plan.build}",
                                 toolchain=self.plan.toolchain)
            self.uses.start_round()
            if self.pending_move is not None:
                record.move, record.evidence = self.pending_move.kind, self.pending_move.evidence[:300]
            env, outcome = self.environment(source, env)
            record.source = env.source if env else "built"
            if env is None:
                d = outcome.diagnosis
                bound = self.toolchain_bound(d.toolchain, d.rule) if d is not None and d.kind == "toolchain_too_old" \
                    else ""
                last_failure = f"{bound}: {outcome.reason}" if bound else (outcome.reason or "setup failed")
                last_timed_out = bool(getattr(outcome, "timed_out", False))
                record.outcome, record.reason = "replan", outcome.reason[:300]
                self._moved(record)
                if bound:  # the newest toolchain here already stands in for a newer one: no retry helps
                    run.traj(StepRecord(agent="flow", rule="toolchain-bound", note=f"{bound}; {d.detail}"[:2000]))
                next_step = None if bound else self.on_setup_failure(outcome)
                if next_step and (eid := diagnosis_entry(outcome.diagnosis)):
                    self.uses.use(eid, "setup", next_step)
                record.feedback = next_step or ""
                self._record(record)
                if not next_step:
                    break
                source = "build"
                continue
            test = self.tests[self.ti]
            record.test = test.name
            verdict, verdict_round, verdict_env = self.verify(env, test), n, env
            record.outcome, record.reason = verdict.outcome, verdict.reason[:300]
            record.attribution = f"{verdict.attribution.kind}: {verdict.attribution.detail}"[:300]
            self._learned_feedback(verdict)
            self._moved(record)
            if verdict.outcome == "verified":
                self._record(record)
                self._lesson(n, record)
                self.finish(n, verdict, env)
                return
            action, env2 = self.feedback(verdict, env)
            if action is None and verdict.outcome == "tests_not_run" and n < budget:
                action = self.next_candidate(verdict.reason)  # S29: another candidate may run the tests
            record.feedback = f"{action}: move {self.pending_move.kind}" if action and self.pending_move else \
                action or ""
            self._record(record)
            if action is None:
                att = verdict.attribution
                if att.kind == "toolchain" and (bound := self.toolchain_bound(att.toolchain, att.rule)):
                    verdict = verdict.model_copy(update={"reason": f"{bound}: {verdict.reason}"})
                self.finish(n, verdict, env)
                return
            if action == "amend":
                env, source = env2, "amended"
                if n == budget and budget < self.cfg.loop.max_rounds + self.cfg.loop.amend_rounds:
                    budget += 1  # class R: the amended image costs no build; its round runs past the budget
                    run.traj(StepRecord(agent="flow", rule="round-budget", note=(
                        f"round {n + 1} past loop.max_rounds {self.cfg.loop.max_rounds}: an amended image "
                        f"(loop.amend_rounds {self.cfg.loop.amend_rounds})")))
            elif action == "retest":
                source = "same"
            else:  # replan / rebuild
                source = "build"
        if verdict is None:
            if last_timed_out:  # the last build ran out of time: `timeout`, retried by a rerun, never final
                raise SandboxTimeout(last_failure, instance_id=run.iid, log_path=run.log_path)
            raise EnvBuildError(last_failure or "no round produced an environment", instance_id=run.iid,
                                log_path=run.log_path)
        if last_failure and verdict_round < len(run.res.rounds):  # a later round's build failed: say so
            verdict = verdict.model_copy(update={"reason": f"{verdict.reason}; round {len(run.res.rounds)}: "
                                                           f"{last_failure[:300]}"})
        self.finish(verdict_round, verdict, verdict_env)

    def _record(self, record: RoundRecord) -> None:
        self.uses.score(record.round, record.outcome, built=record.outcome != "replan")
        self.run.res.rounds.append(record)
        self.run.traj(StepRecord(agent="flow", rule=f"round#{record.round}", note=record.model_dump_json()))

    def environment(self, source: str, current: Environment | None):
        """(Environment, None) for this round, or (None, SetupOutcome) when the build failed."""
        run = self.run
        if source in ("same", "amended"):
            return current, None
        if source == "first":
            pooled = self._pooled()
            if pooled is not None:
                return pooled, None
            t = time.monotonic()
            for cand in self.reuse:
                if run.remaining() < 60:
                    break
                with run.cost.phase("reuse"):
                    env = adapt_environment(run, self.eco, self.plan, cand)
                if env is not None:
                    run.res.timings["reuse"] = round(time.monotonic() - t, 2)
                    run.res.timings["setup"] = round(run.res.timings.get("setup", 0.0) + time.monotonic() - t, 2)
                    return env, None
            if self.reuse:
                run.res.timings["reuse"] = round(time.monotonic() - t, 2)
                run.res.timings["setup"] = round(run.res.timings.get("setup", 0.0) + time.monotonic() - t, 2)
        if self.builds >= self.cfg.loop.max_builds:
            from agents.ecosystems.runs import SetupOutcome
            return None, SetupOutcome(ok=False, reason=f"{self.builds} full builds already (loop.max_builds)")
        self.builds += 1
        with run.cost.phase("setup"):
            return build_environment(run, self.eco, self.plan, seed=self._seed())

    def _seed(self) -> tuple[str, list[str]] | None:
        """(image, folders) to seed a full build with (`agents.seed`, `cache.warm`): the first reuse
        candidate of this repository rejected only for another toolchain version, with the
        ecosystem's `portable_paths` -- adapted rather than discarded (MEnvAgent's EnvPatch)."""
        from agents.envpatch import toolchain_only_misfit
        from agents.seed import portable_paths

        if not getattr(self.cfg.cache, "warm", False):
            return None
        paths = portable_paths(self.eco, self.plan)
        cand = next((c for c in self.reuse if toolchain_only_misfit(c, self.plan, self.run.instance.repo)), None)
        return (cand.image_tag, paths) if cand is not None and paths else None

    def _pooled(self) -> Environment | None:
        rec, run = self.pooled, self.run
        if rec is None or rec.base_commit != run.instance.base_commit or image_size(run.factory, rec.image_tag) <= 0:
            return None
        run.res.timings["setup"] = 0.0
        run.traj(StepRecord(agent="setup", rule="pool:same-instance", note=f"reusing {rec.image_tag}"))
        return Environment(image=rec.image_tag, image_id=rec.image_id, source="pooled", setup_script=rec.setup_script,
                           dockerfile=rec.dockerfile, installed_packages=rec.installed_packages,
                           interpreter=rec.interpreter or self.plan.toolchain, reused_from=rec.instance_id,
                           test_env=dict(self.plan.env), dependency_key=rec.dependency_key,
                           dependency_image_id=rec.dependency_image_id)

    def verify(self, env: Environment, test: TestSpec) -> Verdict:
        run = self.run
        plan = self.verdict_plan = self.plan.with_test(test)
        run.res.test_files, run.res.parser = list(plan.test_files), plan.parser
        spec = run.spec(env.image, "none", env=env.test_env or plan.env)
        return verify(run, spec, plan, self.eco, self.cfg, env=env.test_env or plan.env)

    # -- feedback -----------------------------------------------------------------------------
    def feedback(self, verdict: Verdict, env: Environment) -> tuple[str | None, Environment | None]:
        """(action, amended environment) for a verdict short of verified: `amend`, `retest`,
        `replan`, `rebuild`, or (None, None) when the verdict is final."""
        att = verdict.attribution
        if verdict.outcome in ("timeout", "invalid_task"):  # invalid_task: the tooling check, final
            return None, None
        leads = getattr(self.run.helper, "llm_leads", False)
        if (att.kind == "unknown" or leads) and att.rule not in ("untrusted", "tampered", "timeout"):
            asked = llm_attribution(self.run.helper, self.run.instance, self.plan, verdict, self.run.traj)
            if asked is not None:
                att = asked
        key = f"{att.kind}:{att.rule}:{','.join(att.packages + [n.label for n in att.needs])}:{att.toolchain}"
        if env.source == "reused" and att.kind != "task":
            self.run.traj(StepRecord(agent="flow", rule="reuse:rejected",
                                     note=f"{env.reused_from} does not verify ({verdict.outcome}: {att.kind}); "
                                          "full build"))
            return "rebuild", None
        if key in self.done:
            return self._move(verdict)
        self.done.add(key)
        if att.kind == "environment" and att.install == "module":
            att = att.model_copy(update={"packages": [p for p in att.packages if not self._own_module(p)]})
        if att.kind == "environment" and att.install == "system" and att.needs and self.cfg.repair.debian_index:
            found, answers = index_for(self.run, self.plan.image).resolve(list(att.needs))
            unanswered(answers, instance_id=self.run.iid, log_path=self.run.log_path)  # the mirror's: infra_error
            att = att.model_copy(update={"packages": list(att.packages) + [p for p in found if p not in att.packages]})
            pip_names, pip_cmds = self._ci_pip([a.need.name for a in answers
                                                if a.chosen is None and a.need.kind == "command"])
        else:
            pip_names, pip_cmds = [], []
        rule_entry = rule_entry_id("diagnosis", att.rule) if att.rule in diagnosis_rule_ids() else None
        if att.kind == "environment" and (att.packages or pip_cmds):
            kind = "missing_system" if att.install == "system" else "missing_module"
            cmds = amend_commands(self.eco, kind, att.packages) if kind == "missing_system" else \
                self._install(att.packages)
            cmds = cmds + pip_cmds
            if cmds:
                self._evidence(att, ([{"kind": "apt" if kind == "missing_system" else "install",
                                       "packages": att.packages}] if att.packages else []) +
                               ([{"kind": "install", "packages": pip_names}] if pip_names else []))
                why = att.detail + (f"; the CI installs {' '.join(pip_names)} from PyPI" if pip_names else "")
                with self.run.cost.phase("setup"):
                    amended = amend_environment(self.run, self.eco, self.plan, env, cmds, why)
                if amended is not None:
                    if rule_entry:
                        self.uses.use(rule_entry, "attribution", f"amend: {' '.join(att.packages)}")
                    if att.packages:
                        self.shape("amend", att.detail, packages=list(att.packages),
                                   install="system" if kind == "missing_system" else "module")
                    if pip_names:
                        self.shape("amend", att.detail, packages=list(pip_names), install="ci_pip")
                    return "amend", amended
        if att.kind == "toolchain" and (bound := self.toolchain_bound(att.toolchain, att.rule)):
            self.run.traj(StepRecord(agent="flow", rule="toolchain-bound", note=f"{bound}; {att.detail}"[:2000]))
            return None, None  # final: the reason names the substitute (`_go`)
        if att.kind == "toolchain" and att.toolchain:
            self._evidence(att, [{"kind": "toolchain", "tool": self.plan.ecosystem, "version": att.toolchain}])
            if self.replan(self._toolchain_request(att.toolchain, att.detail), att.detail):
                self.shape("toolchain", att.detail, request={"toolchain": att.toolchain})
                if rule_entry:
                    self.uses.use(rule_entry, "attribution", f"toolchain {att.toolchain}")
                return "replan", None
        if att.kind == "test_config" and self.ti + 1 < len(self.tests):
            self.ti += 1
            self.shape("test_config", att.detail, test=self.tests[self.ti].name)
            return "retest", None
        acted = self._memory_at_test(verdict, env)
        if acted[0] is not None:
            return acted
        moved = self._move(verdict)
        if moved[0] is not None:
            return moved
        if att.kind == "test_config":
            spec = self.llm_tests(att.detail)
            if spec is not None:
                self.tests.append(spec)
                self.ti = len(self.tests) - 1
                return "retest", None
        return None, None

    def _memory_at_test(self, verdict: Verdict, env: Environment) -> tuple[str | None, Environment | None]:
        """The memory consulted where failures happen now, at test time: for a verdict the rules
        did not act on (an attribution of test configuration, missing tool, toolchain or unknown),
        the first entry eligible for the project whose signature matches the test run's output
        and whose actions can act here -- `apt`/`install` amend the environment; `toolchain`,
        `env`, `test_arg` and the others plan again (`agents.memory.before._apply`). A use of
        stage `test`, scored by the next round. (None, None) when nothing acted."""
        from agents.memory.before import _apply

        helper, att = self.run.helper, verdict.attribution
        if getattr(helper, "memory", None) is None or not getattr(helper, "use_memory_actions", True) \
                or att.kind in ("genuine", "flaky", "task") or att.rule in ("untrusted", "tampered", "timeout"):
            return None, None
        text = verdict.output_tail or verdict.reason
        lang = self.run.language
        if not text.strip() or not lang:
            return None, None
        plans = helper.memory_plans(text, lang, {"ca_bundle": "/opt/swemint/ca.pem"}, on_step=self.run.traj)
        for plan in plans:
            pkgs = [p for a in plan.actions if a.kind in ("apt", "install") for p in a.packages]
            kind = "missing_system" if any(a.kind == "apt" for a in plan.actions) else "missing_module"
            if pkgs:
                cmds = amend_commands(self.eco, kind, pkgs) if kind == "missing_system" else self._install(pkgs)
                if not cmds:
                    continue
                helper.mark_applied(plan, on_step=self.run.traj)
                with self.run.cost.phase("setup"):
                    amended = amend_environment(self.run, self.eco, self.plan, env, cmds, f"experience {plan.experience_id}")
                if amended is not None:
                    self.uses.use(plan.experience_id, "test", f"amend: {' '.join(pkgs)}")
                    return "amend", amended
                continue
            new = self.request.model_copy(deep=True)
            changes = [c for a in plan.actions if (c := _apply(a, self.plan, self.eco, new))]
            if not changes:
                continue
            helper.mark_applied(plan, on_step=self.run.traj)
            new.reasons.append(f"memory {plan.experience_id}")
            if self.replan(new, f"memory {plan.experience_id}"):
                self.uses.use(plan.experience_id, "test", ", ".join(changes))
                return "replan", None
        return None, None

    def _ci_pip(self, commands: list[str]) -> tuple[list[str], list[str]]:
        """(PyPI names, install commands) for the commands the image lacks and Debian has no
        package for that the project's CI installs from PyPI under the same name (``pip install
        --user cram``: `agents.ecosystems.ci.pip_tool_commands`): Execution amends the image
        with them beside the Debian packages. ([], []) when there is none. The class: test tools
        of non-Python projects that only PyPI has."""
        from agents.ecosystems.ci import pip_tool_commands

        if not commands or self.run.tree is None:
            return [], []
        return pip_tool_commands(self.run.tree, commands)

    def _move(self, verdict: Verdict) -> tuple[str | None, None]:
        """The cheapest untried generic move (`agents.moves`) for a stalled round: ("retest",
        None) with its test configuration appended, ("replan", None) after planning again with
        its request merged into the current one (a move whose request does not plan is passed
        over), (None, None) when the round did not stall or no move is left."""
        run = self.run
        why = stalled(verdict, self.eco, run.instance.test_patch)
        if not why:
            return None, None
        att = verdict.attribution
        ctx = MoveContext(tree=run.tree, instance=run.instance, plan=self.verdict_plan or self.plan,
                          touched=list(run.touched), why=why, outcome=verdict.outcome, reason=verdict.reason,
                          attribution=f"{att.kind}: {att.detail}", output=verdict.output_tail,
                          ran=verdict.FAIL_TO_PASS + verdict.PASS_TO_PASS + verdict.flaky,
                          tried=list(self.tests[:self.ti + 1]))
        for move in candidates(self.eco, ctx, self.moves_tried):
            self.moves_tried.add(move.ident())
            if move.test is not None:
                self.tests.append(move.test)
                self.ti = len(self.tests) - 1
                action = "retest"
                self.shape(move.kind, move.evidence, stall=stall_class(why), test=move.test.name)
            elif self.replan(merged_request(self.request, move.request, f"move {move.kind}: {move.evidence}"),
                             move.evidence):
                action = "replan"
                self.shape(move.kind, move.evidence, request=request_data(move.request))
            else:
                continue
            self.pending_move = move
            run.traj(StepRecord(agent="flow", rule="move", note=f"{why} -> {move.kind} ({move.serves}): "
                                                                 f"{move.evidence}"[:2000]))
            return action, None
        return None, None

    def _lesson(self, n: int, record: RoundRecord) -> None:
        """A row verified in round `n` >= 2: the moves that shaped its rounds on the verified
        candidate become a `lesson:moves` step, which the driver's learning stores keyed by
        repository and build context (`agents.memory.replay`). Nothing without a memory."""
        if getattr(self.run.helper, "memory", None) is None:
            return
        ctx = getattr(self.run.helper, "context", None)
        lesson = self.shapes.lesson(n, record.candidate, record.test, list(ctx.build_systems) if ctx else
                                    list(self.profile.build_systems))
        if lesson is not None:
            self.run.traj(lesson_step(lesson))

    def _moved(self, record: RoundRecord) -> None:
        """Close the move that shaped this round: a `move:<kind>` step (exit 0 when the round
        verified, else 1, with the round's reason) the memory can learn from."""
        move, self.pending_move = self.pending_move, None
        if move is None:
            return
        what = move.test.test_command if move.test is not None else move.request.model_dump_json(exclude_defaults=True)
        # no `command`: the experience memory's attempt chains (`agents.memory.learn`) read executed
        # steps; a move is scored by the round it shaped, its rule and exit code say which worked
        self.run.traj(StepRecord(agent="flow", rule=f"move:{move.kind}",
                                 exit_code=0 if record.outcome == "verified" else 1,
                                 note=f"{move.evidence} | {what}"[:2000],
                                 output_excerpt="" if record.outcome == "verified" else record.reason[-2000:]))

    def _own_module(self, name: str) -> bool:
        """Whether `name`'s top-level module is the repository's own (never installed from a registry)."""
        top = name.split(".")[0].split("/")[0]
        tree = self.run.tree
        return any(tree.exists(p) for p in (f"{top}/__init__.py", f"src/{top}/__init__.py", f"{top}.py",
                                           f"lib/{top}.js", f"{top}/package.json")) or \
            any(f.startswith((f"{top}/", f"src/{top}/")) for f in tree.files[:20000])

    def _install(self, packages: list[str]) -> list[str]:
        cmd = self.eco.install_command(packages, self.plan)
        return [cmd] if cmd else []

    def _evidence(self, att: Attribution, actions: list[dict]) -> None:
        """A failed `feedback:<repo>` step now and its passing twin once the next round verifies,
        so the memory learns the loop's fix like a repaired setup step."""
        rule = f"feedback:{self.run.instance.repo}"
        self.run.traj(StepRecord(agent="verification", rule=rule, command=f"attribution {att.kind}", exit_code=1,
                                 output_excerpt=(att.evidence or att.detail)[-2000:]))
        self.pending_evidence = (rule, f"attribution {att.kind}", json.dumps(actions))

    def _learned_feedback(self, verdict: Verdict) -> None:
        if self.pending_evidence is None:
            return
        rule, command, actions = self.pending_evidence
        self.pending_evidence = None
        ok = verdict.outcome == "verified"
        self.run.traj(StepRecord(agent="verification", rule=rule, command=command, exit_code=0 if ok else 1,
                                 note=f"repair: {actions}", output_excerpt="" if ok else verdict.reason[-2000:]))

    # -- the row ------------------------------------------------------------------------------
    def finish(self, n: int, verdict: Verdict | None, env: Environment | None) -> None:
        run, res = self.run, self.run.res
        if verdict is None or env is None:
            raise EnvBuildError("no round produced an environment", instance_id=run.iid, log_path=run.log_path)
        res.round = n
        res.outcome, res.reason = verdict.outcome, verdict.reason  # type: ignore[assignment]
        if len(res.rounds) > 1:
            res.reason += f" (round {n} of {len(res.rounds)})"
        res.FAIL_TO_PASS, res.PASS_TO_PASS, res.flaky_tests = verdict.FAIL_TO_PASS, verdict.PASS_TO_PASS, verdict.flaky
        res.test_command = verdict.test_command
        res.anomalies = list(verdict.anomalies)
        plan = self.verdict_plan or self.plan  # the plan of the verdict, not a later one that failed to build
        res.test_files, res.parser = list(plan.test_files), plan.parser
        (run.idir / "plan.json").write_text(plan.model_dump_json(indent=2, exclude={"state"}))  # the export reads it
        res.image, res.image_id = env.image, env.image_id
        res.setup_script, res.dockerfile = env.setup_script, env.dockerfile
        res.installed_packages = env.installed_packages or res.installed_packages
        res.interpreter = env.interpreter or plan.toolchain
        if env.source in ("reused", "pooled") or (env.source == "amended" and env.reused_from):
            res.reused_from = env.reused_from
        res.dependency_key, res.dependency_image_id = env.dependency_key, env.dependency_image_id
        if env.source == "reused" or (env.source == "amended" and env.reuse_kind):
            res.reuse_kind = env.reuse_kind
            res.incremental_commands = list(env.commands)
            res.substitutions = [f"environment reused from {env.reused_from}"] + list(res.substitutions)
        if res.outcome == "verified":
            res.env = EnvRecord(instance_id=run.iid, repo=run.instance.repo,
                                version=derive_version(run.instance, run.tree, self.eco), base_commit=run.instance.base_commit,
                                commit_time=run.tree.commit_time, created_at=run.instance.created_at,
                                language=run.language or "python", interpreter=res.interpreter, image_tag=env.image,
                                image_id=env.image_id, size_bytes=image_size(run.factory, env.image),
                                setup_script=env.setup_script, dockerfile=env.dockerfile,
                                test_command=res.test_command, parser=res.parser, route=plan.route,
                                installed_packages=env.installed_packages,
                                dependencies="\n".join(self.profile.dependencies),
                                dependency_key=env.dependency_key, dependency_image_id=env.dependency_image_id)
