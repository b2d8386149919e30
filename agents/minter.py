"""Mint one instance: plan -> execute -> verify, ending in exactly one outcome row.

Phases (each timed, seconds): checkout (tree from the mirror) -> analysis -> setup (build
sandbox on the bridge network, repair loop) -> commit (environment image: dependencies
installed, repository at base_commit, no patch) -> before runs (base + test_patch, network
none) -> after runs (+ patch, network none), each run in a fresh container -> grading. Never raises for an instance's
problems: every path returns an `InstanceResult` (datatrove's "every outcome is a row").
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

from agents.analysis import analyze_python
from agents.config import MintConfig
from agents.dockerfile import render_dockerfile, render_setup_script
from agents.envimage import (cache_mounts, commit_image, commit_tracked_edits, image_size, image_tag_for,
                             lay_out_repository, plugin_files, release_cache, remove_image)
from agents.gitrepo import GitTree
from agents.models import EnvRecord, Instance, InstanceResult, StepRecord
from agents.policy import make_helper
from agents.polyglot import pick_ecosystem
from agents.polymint import mint_polyglot
from agents.python_plan import choose_python, pretend_version, runtime_env
from agents.python_setup import PythonEnvBuilder
from agents.reuse import derive_version, try_reuse
from agents.sides import apply_side_patches, time_left, trusted_runs, verification_sides
from agents.testconfig import configure_python_tests
from envpool import images
from envpool.errors import (EnvBuildError, InstanceInputError, PatchApplyError, SandboxTimeout, SwemintError,
                            TestsNotRunError)
from envpool.grading import grade
from envpool.naming import folder_name
from envpool.sandbox import SandboxSpec
from envpool.testrun.published import published_command
from envpool.testrun.pytest_runner import row_command, run_pytest_detailed
from envpool.testrun.trust import infrastructure_flags

__all__ = ["OUTCOME_OF_ERROR", "image_tag_for", "mint_instance"]


OUTCOME_OF_ERROR: tuple[tuple[type[SwemintError], str], ...] = (
    (PatchApplyError, "patch_failed"), (EnvBuildError, "env_failed"), (TestsNotRunError, "tests_not_run"),
    (SandboxTimeout, "timeout"), (SwemintError, "infra_error"))
"""Error class -> outcome, first match wins. InfraError and InstanceInputError (a missing mirror
or commit says nothing about the instance, as in the pipeline driver) end as `infra_error`."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class _Trajectory:
    """Appends each step to `trajectory.jsonl` as it happens (a crash keeps what ran); `flush`
    rewrites the file from the kept steps, so repair notes added to a step after it was written
    (`repair: ...`, read by the memory's learning) are in the final file."""

    def __init__(self, path: Path):
        self.path = path
        self.steps: list[StepRecord] = []
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")

    def __call__(self, step: StepRecord) -> None:
        self.steps.append(step)
        with self.path.open("a") as f:
            f.write(step.model_dump_json() + "\n")

    def flush(self) -> None:
        self.path.write_text("".join(s.model_dump_json() + "\n" for s in self.steps))


def mint_instance(instance: Instance, repo_path: Path, config: MintConfig, factory=None,
                  env: EnvRecord | None = None, candidates: list[EnvRecord] | None = None,
                  llm=None) -> InstanceResult:
    """Build, verify and (if verified) keep the environment of one instance.

    With `env` (this instance's pooled environment, e.g. on `swemint mint --reverify`) and its
    image present, setup is skipped and the tests run in that image (the warm path); the pooled
    image is never removed here. With `candidates` (pooled environments of *other* instances of
    the repository, best first) and `config.reuse.enabled`, each is adapted by EnvPatch before a
    full build is attempted (`agents.reuse`; MEnvAgent, arXiv 2601.22859): the row then records
    `reused_from` and `incremental_commands`. `llm`: an LLMClient for the `llm` / `hybrid` policy
    (default: a gateway from `config.llm`; tests pass `FakeLLM`).

    Args:
        instance: the SWE-bench-format instance (gold lists are never read here).
        repo_path: host git directory (bare mirror) holding `base_commit`.
        config: MintConfig (workdir, limits, timeouts, reruns).
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
                         version=instance.version, started_at=_now(), trajectory_path=str(idir / "trajectory.jsonl"))
    t0 = time.monotonic()
    traj = _Trajectory(idir / "trajectory.jsonl")
    borrowed = {r.image_tag for r in ([env] if env else []) + list(candidates or [])}
    helper = None
    try:
        if factory is None:
            from envpool.docker_sandbox import DockerSandboxFactory
            factory = DockerSandboxFactory(run_id=config.run_id, build_network=config.build_network,
                                           output_cap=config.limits.output_bytes,
                                           report_cap=config.limits.report_bytes)
        helper = make_helper(config, iid, llm=llm)
        _mint(instance, Path(repo_path), config, factory, res, idir, log_path, traj, env,
              candidates if config.reuse.enabled else None, helper)
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
    res.timings["total"] = round(time.monotonic() - t0, 2)
    res.finished_at = _now()
    if res.outcome != "verified" and res.image and res.image not in borrowed:
        remove_image(factory, res.image)
        res.image, res.image_id, res.env = "", "", None
    # result.json is the driver's (pipeline.store, its one writer): a worker abandoned at its
    # deadline must never overwrite the driver's `timeout` row
    with log_path.open("a") as f:
        f.write(f"\n# outcome: {res.outcome}: {res.reason}\n")
    return res


def _mint(instance: Instance, repo_path: Path, config: MintConfig, factory, res: InstanceResult,
          idir: Path, log_path: Path, traj: _Trajectory, pooled: EnvRecord | None = None,
          candidates: list[EnvRecord] | None = None, helper=None) -> None:
    iid = instance.instance_id
    deadline = time.monotonic() + config.timeouts.instance
    t = time.monotonic()
    tree = GitTree(repo_path, instance.base_commit, instance_id=iid)
    if not instance.test_patch.strip() or not instance.patch.strip():
        raise InstanceInputError("empty patch or test_patch", instance_id=iid)
    eco = pick_ecosystem(tree, instance.language)
    if eco is not None:
        mint_polyglot(eco, instance, tree, config, factory, res, idir, log_path, traj, deadline, pooled, helper)
        return
    tests = configure_python_tests(instance.test_patch)
    res.test_files = tests.test_files
    res.parser = tests.parser
    if not tests.test_files:
        raise TestsNotRunError("test_patch touches no Python test file", instance_id=iid, log_path=log_path)
    spec = SandboxSpec(image="", run_id=config.run_id, instance_id=iid, network="bridge",
                       **config.limits.sandbox_fields())
    if pooled is not None and image_size(factory, pooled.image_tag) > 0 and pooled.base_commit == instance.base_commit:
        res.image, res.image_id, res.reused_from = pooled.image_tag, pooled.image_id, pooled.instance_id
        res.interpreter, res.setup_script, res.dockerfile = pooled.interpreter, pooled.setup_script, pooled.dockerfile
        res.installed_packages = pooled.installed_packages
        res.timings["setup"] = 0.0
        traj(StepRecord(agent="setup", rule="pool:same-instance", note=f"reusing {pooled.image_tag}"))
        commit_time, interpreter = pooled.commit_time, pooled.interpreter
    else:
        res.timings["checkout+analysis"] = round(time.monotonic() - t, 2)
        if not (candidates and try_reuse(instance, tree, tests, config, factory, res, idir, log_path, traj, spec,
                                         candidates, deadline, helper)):
            _build(instance, tree, tests, config, factory, res, idir, log_path, traj, spec, deadline,
                   time.monotonic(), helper)
        commit_time, interpreter = tree.commit_time, res.interpreter
    test_spec = spec.model_copy(update={"image": res.image, "network": "none", "env": runtime_env()})
    res.test_infra_files = infrastructure_flags(instance.patch, instance.test_patch)
    runs = {}
    for side, patches, n in verification_sides(instance, config.verify):
        t = time.monotonic()
        outcomes = []
        for i in range(n):
            remaining = time_left(deadline, side, iid, log_path)
            with factory.sandbox(test_spec, log_path) as sb:  # every run in a fresh container
                apply_side_patches(sb, side, patches, res.patch_methods, iid, log_path)
                run = run_pytest_detailed(sb, tests.test_files, python=tests.python,
                                          timeout=min(config.timeouts.test_run, remaining),
                                          per_test_timeout=config.timeouts.per_test, log_label=f"{side}#{i + 1}")
            rep = run.report
            outcomes.append((rep, run.anomalies, run.tampered))
            if side == "after" and not res.test_command:
                res.test_command = published_command(instance.test_patch, instance.patch,
                                                     row_command(run.command, config.timeouts.per_test))
            traj(StepRecord(agent="verification", rule=f"{side}#{i + 1}", command=run.command,
                            exit_code=rep.exit_code, duration=round(rep.duration, 2),
                            note=f"{len(rep.statuses)} tests, source={rep.source}, anomalies={run.anomalies[:3]}, "
                                 f"collection_errors={rep.collection_errors[:5]}"))
        runs[side] = trusted_runs(side, outcomes, res, iid, log_path)
        res.timings[side] = round(time.monotonic() - t, 2)
    _judge(res, runs["before"], runs["after"], iid, log_path)
    if res.outcome == "verified":
        res.env = EnvRecord(instance_id=iid, repo=instance.repo, version=derive_version(instance, tree),
                            base_commit=instance.base_commit, commit_time=commit_time,
                            created_at=instance.created_at, interpreter=interpreter, image_tag=res.image,
                            image_id=res.image_id, size_bytes=image_size(factory, res.image),
                            setup_script=res.setup_script, dockerfile=res.dockerfile,
                            test_command=res.test_command, parser=res.parser, route=config.images.route,
                            installed_packages=res.installed_packages)


def _build(instance: Instance, tree: GitTree, tests, config: MintConfig, factory, res: InstanceResult,
           idir: Path, log_path: Path, traj, spec: SandboxSpec, deadline: float, t: float, helper=None) -> None:
    """Analysis -> interpreter -> setup with repairs -> environment image (res.image)."""
    iid = instance.instance_id
    profile = analyze_python(tree)
    choice = choose_python(profile, instance.created, images.available_pythons(config.images))
    res.interpreter = choice.version
    res.substitutions = choice.substitutions
    base_image = images.ensure_python_image(choice.version, config.images)
    res.timings["checkout+analysis"] = round(res.timings.get("checkout+analysis", 0.0) + time.monotonic() - t, 2)
    traj(StepRecord(agent="analysis", rule="rules", note=profile.model_dump_json()))
    traj(StepRecord(agent="setup", rule="choose_python", note=choice.model_dump_json()))
    version = pretend_version(instance, tree, profile.package_version)
    spec = spec.model_copy(update={"image": base_image,
                                   "cache_mounts": cache_mounts(config, iid, instance.repo)})
    t = time.monotonic()
    with factory.sandbox(spec, log_path) as sb:
        lay_out_repository(sb, tree, instance.base_commit, log_path=log_path)
        builder = PythonEnvBuilder(sb, tree, profile, choice, instance.created, version,
                                   step_timeout=config.timeouts.setup_step, on_step=traj, helper=helper,
                                   rule_repairs=config.policy != "llm")
        setup = builder.build(tests.test_files)
        res.installed_packages = setup.installed_packages
        failed = [(s.command, s.exit_code or 0) for s in setup.steps if s.exit_code not in (0, None) and s.command]
        res.setup_script = render_setup_script(setup.commands, setup.env, failed)
        res.dockerfile = render_dockerfile(base_image=base_image, repo=instance.repo,
                                           base_commit=instance.base_commit, commands=setup.commands,
                                           env=setup.env, files=plugin_files())
        (idir / "setup.sh").write_text(res.setup_script)
        (idir / "Dockerfile").write_text(res.dockerfile)
        res.timings["setup"] = round(res.timings.get("reuse", 0.0) + time.monotonic() - t, 2)
        if not setup.ok:
            raise EnvBuildError(setup.reason, instance_id=iid, log_path=log_path)
        if time.monotonic() > deadline:
            raise SandboxTimeout("instance time limit reached during setup", instance_id=iid, log_path=log_path)
        commit_tracked_edits(sb, traj)
        t = time.monotonic()
        tag = image_tag_for(iid, {"base": base_image, "commands": setup.commands, "env": setup.env},
                            config.run_id)
        res.image, res.image_id = commit_image(sb, factory, config.image_repository, tag,
                                               {"swemint.instance": iid, "swemint.run": config.run_id})
        res.timings["commit"] = round(time.monotonic() - t, 2)


def _judge(res: InstanceResult, before, after, iid: str, log_path: Path, pytest: bool = True) -> None:
    """Outcome from the trusted runs of each side (`agents.sides.trusted_runs`: timeouts and
    untrustworthy reports are already out): runs that never reached the tests are not grades.
    `pytest`: the runs are pytest's (exit codes 3/4 mean it never reached a test)."""
    for side, reps in (("before", before), ("after", after)):
        if all(r.timed_out and not r.statuses for r in reps):
            raise SandboxTimeout(f"the {side} test run timed out before reporting any test", instance_id=iid,
                                 log_path=log_path)
    if not any(r.tests_ran for r in after):
        raise TestsNotRunError("the runner reached no test after the patch (exit "
                               f"{after[-1].exit_code}; collection errors: {after[-1].collection_errors[:3]})",
                               instance_id=iid, log_path=log_path)
    if pytest and not any(r.tests_ran for r in before) and all(r.exit_code in (3, 4) for r in before):
        raise TestsNotRunError(f"the runner failed before reaching tests (exit {before[-1].exit_code})",
                               instance_id=iid, log_path=log_path)
    g = grade(before, after, None)
    res.FAIL_TO_PASS = g.FAIL_TO_PASS
    res.PASS_TO_PASS = g.PASS_TO_PASS
    res.flaky_tests = g.flaky
    if g.FAIL_TO_PASS:
        res.outcome = "verified"
        res.reason = f"{len(g.FAIL_TO_PASS)} FAIL_TO_PASS, {len(g.PASS_TO_PASS)} PASS_TO_PASS, {len(g.flaky)} flaky"
    else:
        res.outcome = "no_fail_to_pass"
        res.reason = "no test fails before and passes after the patch"
