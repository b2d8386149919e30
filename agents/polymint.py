"""Minting for ecosystems other than Python: plan (an `Ecosystem`) -> setup -> test runs.

The minter (`agents.minter`) hands an instance here when `agents.polyglot.pick_ecosystem`
claims its tree. Phases and their timings (seconds) are the Python path's: `setup` (sandbox on
the bridge network from the toolchain image, /testbed laid out, `plan.setup_commands` one by one
with the ecosystem's `repair`), `commit` (the environment image), `before` / `after` (network
none, `plan.test_command` rerun `verify.before_runs` / `verify.after_runs` times, each run in a
fresh container). Each run's raw
report is parsed by `envpool.testrun.polyglot.get_any_parser(plan.parser)`; a run whose
`check()` finds anomalies (counts that disagree, a cut stream) is never graded (the polyglot
parsers' contract). Reuse across instances is Python-only for now; the same-instance pooled
image (`--reverify`) works here too.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

from agents.dockerfile import render_dockerfile, render_setup_script
from agents.envimage import commit_image, commit_tracked_edits, image_size, image_tag_for, lay_out_repository
from agents.gitrepo import GitTree
from agents.models import EnvRecord, Instance, InstanceResult, StepRecord
from agents.polyglot.base import Ecosystem, PolyPlan
from agents.sides import apply_side_patches, time_left, trusted_runs, verification_sides
from envpool.errors import EnvBuildError, SandboxTimeout
from envpool.evaluation import run_report_command
from envpool.patches import files_in_patch
from envpool.sandbox import SandboxSpec
from envpool.testrun import trust
from envpool.testrun.published import published_command
from envpool.testrun.status import TestRunReport

__all__ = ["mint_polyglot", "run_poly_tests"]

MAX_REPAIR_ROUNDS = 2
"""Repairs tried per failing setup command (each followed by one retry of the command)."""


def _tail(text: str, n: int = 2000) -> str:
    return text[-n:]


def run_poly_tests(sb, plan: PolyPlan, *, timeout: float, known_tests: set[str] | None = None,
                   log_label: str = "tests") -> tuple[TestRunReport, list[str], str]:
    """Run `plan.test_command` once in `sb` (/testbed) and parse its report.

    Returns (report, anomalies, command): the anomalies of `envpool.testrun.trust` (the
    parser's own checks -- counts, cut streams --, a timeout, a report over the size limit or
    missing altogether); a run with any must not be graded. The report file (when
    `plan.report_path`) is removed before the run so a stale one is never read, and read with
    the sandbox's size limit. `known_tests`: ids from other runs, so a unit that fails to build
    marks them FAILED. `timeout` in seconds (the run is killed after it).
    """
    command = f"cd /testbed && {'rm -f ' + shlex.quote(plan.report_path) + '; ' if plan.report_path else ''}" \
              f"{plan.test_command}"
    rep, found = run_report_command(sb, plan.test_command, plan.parser, report_path=plan.report_path,
                                    parser_options=plan.parser_options, env=plan.env, timeout=timeout,
                                    known_tests=known_tests, log_label=log_label)
    return rep, found, command


def stored_test_command(plan: PolyPlan, command: str) -> str:
    """The runner part of the row's `test_command` (`envpool.testrun.published.published_command`
    puts the test files back first): `command` made to run as is in the environment image with
    `docker run --network none <image> bash -c '<test_command>'` -- the plan's environment
    exported first (the image's ENV has it too) and the report (`plan.report_path`) printed at the
    end, so the parser's input is on stdout."""
    exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in sorted(plan.env.items()))
    tail = f"; cat {shlex.quote(plan.report_path)}" if plan.report_path else ""
    return f"{exports}{command}{tail}"


def _memory_fix(helper, language: str, output: str, traj) -> tuple[list[str], dict[str, str], str] | None:
    """Shell commands and env from the first stored experience whose error signature matches
    `output` and that was not applied yet in this instance: (commands, env, note) or None.
    Only `shell` and `env` actions apply outside Python; others are skipped."""
    memory = getattr(helper, "memory", None)
    if memory is None or not getattr(helper, "use_memory_actions", True):
        return None
    try:
        plans = memory.actions_for(output, language, variables={"ca_bundle": "/opt/swemint/ca.pem"},
                                   k=getattr(helper, "k", 3))
    except Exception as e:  # noqa: BLE001 - a memory problem never fails a build
        traj(StepRecord(agent="execution", rule="memory:error", note=f"{type(e).__name__}: {e}"))
        return None
    for plan in plans:
        if plan.experience_id in helper.applied:
            continue
        commands = [a.command for a in plan.actions if a.kind == "shell"]
        env = {a.name: a.value for a in plan.actions if a.kind == "env"}
        if not commands and not env:
            continue
        helper.applied.append(plan.experience_id)
        return commands, env, f"experience {plan.experience_id}"
    return None


def _setup(sb, eco: Ecosystem, plan: PolyPlan, config, traj, log_path: Path, iid: str,
           helper=None, language: str | None = None) -> list[str]:
    """Run the setup commands with bounded repairs (the ecosystem's rules, then the experience
    memory); returns the commands that made the environment. `plan.env` is updated in place by
    memory `env` actions. Step rules are `recipe:<n>` for the n-th command and its retries, and
    each repair's note starts with `repair:`, so `agents.memory.learn` sees one attempt chain."""
    done: list[str] = []
    tried: set[str] = set()
    for n, cmd in enumerate(plan.setup_commands):
        rule = f"recipe:{eco.name}:{n}"
        r = sb.exec(cmd, timeout=config.timeouts.setup_step, env=plan.env or None, log_label="setup")
        traj(StepRecord(agent="execution", rule=rule, command=cmd, exit_code=r.exit_code,
                        output_excerpt=_tail(r.output), duration=round(r.duration, 2)))
        rounds = 0
        while not r.ok and rounds < MAX_REPAIR_ROUNDS:
            fix, env, note = eco.repair(plan, cmd, r.output, tried), {}, ""
            if fix:
                note = json.dumps([{"kind": "shell", "command": f} for f in fix])
                source = f"repair:{eco.name}"
            else:
                found = _memory_fix(helper, language or eco.name, r.output, traj)
                if not found:
                    break
                fix, env, note = found
                source = f"memory:{note.split()[-1]}"
            rounds += 1
            tried.add("\n".join(fix) + json.dumps(env, sort_keys=True))
            plan.env.update(env)
            codes = []
            for f in fix:
                fr = sb.exec(f, timeout=config.timeouts.setup_step, env=plan.env or None, log_label="repair")
                traj(StepRecord(agent="execution", rule=f"{source}:cmd", command=f, exit_code=fr.exit_code,
                                output_excerpt=_tail(fr.output), duration=round(fr.duration, 2)))
                codes.append(fr.exit_code)
                done.append(f)
            # the repair itself, as one step with a command (learning reads only such steps)
            traj(StepRecord(agent="execution", rule=source, command=" && ".join(fix) or "export " + " ".join(
                f"{k}={v}" for k, v in env.items()), exit_code=next((c for c in codes if c), 0),
                note=f"repair: {note}", output_excerpt=json.dumps({"commands": fix, "env": env})[:2000]))
            r = sb.exec(cmd, timeout=config.timeouts.setup_step, env=plan.env or None, log_label="setup-retry")
            traj(StepRecord(agent="execution", rule=rule, command=cmd, exit_code=r.exit_code,
                            output_excerpt=_tail(r.output), duration=round(r.duration, 2)))
        if not r.ok:
            why = "timed out" if r.timed_out else f"exit {r.exit_code}"
            raise EnvBuildError(f"{eco.name} setup step failed ({why}): {cmd[:200]} :: "
                                f"{_tail(r.output, 600).strip()}", instance_id=iid, log_path=log_path)
        done.append(cmd)
    return done


def mint_polyglot(eco: Ecosystem, instance: Instance, tree: GitTree, config, factory, res: InstanceResult,
                  idir: Path, log_path: Path, traj, deadline: float, pooled: EnvRecord | None = None,
                  helper=None) -> None:
    """Plan, build (or take the pooled image of this instance), run and grade one instance of
    ecosystem `eco`; fills `res` in place. Raises SwemintError subclasses (the minter maps them
    to outcomes): EnvBuildError (no plan / setup failed), PatchApplyError, SandboxTimeout,
    TestsNotRunError (from the judge). `helper`: the minter's RepairHelper (its experience
    memory repairs setup failures the ecosystem's rules do not)."""
    from agents.minter import _judge  # the Python path's judge, shared

    iid = instance.instance_id
    t = time.monotonic()
    touched = files_in_patch(instance.test_patch)
    plan = eco.plan(tree, instance, touched, config.images)
    res.interpreter, res.substitutions = plan.toolchain, list(plan.substitutions)
    res.parser, res.test_files = plan.parser, list(plan.test_files)
    traj(StepRecord(agent="analysis", rule=f"ecosystem:{eco.name}", note=plan.model_dump_json()[:4000]))
    res.timings["checkout+analysis"] = round(time.monotonic() - t, 2)
    (idir / "plan.json").write_text(plan.model_dump_json(indent=2))
    spec = SandboxSpec(image=plan.image, run_id=config.run_id, instance_id=iid, network="bridge",
                       env=dict(plan.env), **config.limits.sandbox_fields())
    if pooled is not None and image_size(factory, pooled.image_tag) > 0 and pooled.base_commit == instance.base_commit:
        res.image, res.image_id, res.reused_from = pooled.image_tag, pooled.image_id, pooled.instance_id
        res.setup_script, res.dockerfile = pooled.setup_script, pooled.dockerfile
        res.timings["setup"] = 0.0
        traj(StepRecord(agent="setup", rule="pool:same-instance", note=f"reusing {pooled.image_tag}"))
    else:
        t = time.monotonic()
        with factory.sandbox(spec, log_path) as sb:
            lay_out_repository(sb, tree, instance.base_commit, log_path=log_path)
            commands = _setup(sb, eco, plan, config, traj, log_path, iid, helper, instance.language)
            res.setup_script = render_setup_script(commands, plan.env)
            res.dockerfile = render_dockerfile(base_image=plan.image, repo=instance.repo,
                                               base_commit=instance.base_commit, commands=commands,
                                               env=plan.env, files={})
            (idir / "setup.sh").write_text(res.setup_script)
            (idir / "Dockerfile").write_text(res.dockerfile)
            res.timings["setup"] = round(time.monotonic() - t, 2)
            if time.monotonic() > deadline:
                raise SandboxTimeout("instance time limit reached during setup", instance_id=iid, log_path=log_path)
            commit_tracked_edits(sb, traj)
            t = time.monotonic()
            tag = image_tag_for(iid, {"base": plan.image, "commands": commands, "env": plan.env}, config.run_id)
            res.image, res.image_id = commit_image(sb, factory, config.image_repository, tag,
                                                   {"swemint.instance": iid, "swemint.run": config.run_id},
                                                   env=plan.env or None)
            res.timings["commit"] = round(time.monotonic() - t, 2)
    test_spec = spec.model_copy(update={"image": res.image, "network": "none"})
    res.test_infra_files = trust.infrastructure_flags(instance.patch, instance.test_patch)
    runs: dict[str, list[TestRunReport]] = {}
    known: set[str] = set()
    for side, patches, n in verification_sides(instance, config.verify):
        t = time.monotonic()
        outcomes = []
        for i in range(n):
            remaining = time_left(deadline, side, iid, log_path)
            with factory.sandbox(test_spec, log_path) as sb:  # every run in a fresh container
                apply_side_patches(sb, side, patches, res.patch_methods, iid, log_path)
                rep, found, command = run_poly_tests(sb, plan, timeout=min(config.timeouts.test_run, remaining),
                                                     known_tests=known or None, log_label=f"{side}#{i + 1}")
            if not res.test_command and side == "after":
                res.test_command = published_command(instance.test_patch, instance.patch,
                                                     stored_test_command(plan, command))
            traj(StepRecord(agent="verification", rule=f"{side}#{i + 1}", command=command,
                            exit_code=rep.exit_code, duration=round(rep.duration, 2),
                            note=f"{len(rep.statuses)} tests, source={rep.source}, anomalies={found[:3]}, "
                                 f"collection_errors={rep.collection_errors[:5]}"))
            outcomes.append((rep, found, []))
            if not found:
                known |= set(rep.statuses)
        runs[side] = trusted_runs(side, outcomes, res, iid, log_path)
        res.timings[side] = round(time.monotonic() - t, 2)
    _judge(res, runs["before"], runs["after"], iid, log_path, pytest=False)
    if res.outcome == "verified":
        res.env = EnvRecord(instance_id=iid, repo=instance.repo, version=instance.version,
                            base_commit=instance.base_commit, commit_time=tree.commit_time,
                            created_at=instance.created_at, language=eco.name, interpreter=plan.toolchain, image_tag=res.image,
                            image_id=res.image_id, size_bytes=image_size(factory, res.image),
                            setup_script=res.setup_script, dockerfile=res.dockerfile,
                            test_command=res.test_command, parser=res.parser, route=plan.route,
                            installed_packages="")
