"""Execution agent: runs the setup script P step by step in the build sandbox, repairs on the spot,
and gives up after a bound *with a diagnosis* that goes back to planning.

The repair chain of a failed step, for every ecosystem, at most `repair.rounds` times per step:
the ecosystem's rules (`Ecosystem.repair`), then the shared diagnosis rules (a command, header or
library the image lacks -> the Debian package that Debian's file index names for it,
`agents.diagnosis` + `agents.debindex`; the query and its answer are trajectory steps
`debian-index`), then the experience memory (its actions run by
`apply_actions`), then the LLM tool loop (policy `hybrid`; under `llm` the model repairs every
failure and the rules are skipped). Each try is a trajectory step; rules are `recipe:<eco>:<n>`
for the n-th command and its retries, and each repair's note starts with `repair:`, so
`agents.memory.learn` sees one attempt chain. A repair by a hand-written rule (a diagnosis rule of
the data file, an ecosystem's data repair: `rule_entry_of`) is scored on the rule's entry by a
step `score:<id>` (agent `memory`, stage `setup-step`) after the retry: exit code 0 when the retry
passed or no longer shows the error the rule matched (`agents.memory.text.same_error`, learning's
notion), so a build that reports missing headers one at a time scores each header the rule
installed as worked. A retry killed by its time limit (`ExecResult.timed_out`, exit 124) or
by a SIGKILL (exit 137: the OOM killer; `agents.memory.learn.KILLED_EXIT_CODES`) gives that use
no score: its output is cut short, not the build past the rule's error, and a limit
says nothing about the repair; its `score:<id>` step has no exit code (`timed_out` in its note),
which learning counts neither as worked nor as failed (`agents.memory.learn.scores`). When
nothing repairs a step, `SetupOutcome.diagnosis`
says why in terms the loop acts on (a newer toolchain, another route); a memory `toolchain`
action is such a diagnosis too (it changes the plan, not the running build).

Before the first setup step, what the plan says the tests need (`Plan.needs`, `Plan.ci_packages`:
read from a test driver and the CI at analysis time) is answered by the index and installed.

`amend_commands` are what the loop adds to a committed environment after Verification found it
lacking (a Debian package, a module): run in a sandbox of that image and committed again.
"""

from __future__ import annotations

import json
import shlex
import time

from envpool.aptmirror import AptMirrorError, mirror_failure, retry_mirror
from agents.debindex import IndexUnavailable, index_for, unanswered
from agents.diagnosis import Diagnosis, diagnose
from agents.ecosystems.base import Ecosystem, Plan
from agents.ecosystems.debian import apt_install
from agents.ecosystems.runs import BuildJob, SetupOutcome
from agents.memory.knowledge import rule_for_fix, rule_of_repair
from agents.memory.learn import KILLED_EXIT_CODES
from agents.memory.text import same_error
from agents.models import StepRecord
from envpool.errors import SandboxTimeout
from envpool.sandbox import StepProgress


def _tail(text: str, n: int = 2000) -> str:
    return text[-n:]


def install_command(eco: Ecosystem, packages: list[str]) -> str | None:
    """The ecosystem's installer for `packages` (`Ecosystem.install_command`), or None."""
    return eco.install_command(packages) if packages else None


def action_commands(eco: Ecosystem, action, plan: Plan) -> tuple[list[str], dict[str, str], Diagnosis | None] | None:
    """What one memory action means during a build, for every ecosystem: (commands, env, a
    diagnosis for the planner); None when this ecosystem has no executor for it.

    `shell` -> the command; `env` -> the variable; `apt` -> `apt-get install`; `install` / `pin`
    -> the ecosystem's installer; `toolchain` -> a diagnosis asking the next plan for that
    toolchain; others (`test_arg`, an ecosystem's own kinds) -> None: they mean something before
    planning (`agents.memory.before`) or to the ecosystem's own builder (Python's).
    """
    kind = action.kind
    if kind == "shell":
        return [action.command], {}, None
    if kind == "env":
        return [], {action.name: action.value}, None
    if kind == "apt":
        return [apt_install(list(action.packages))], {}, None
    if kind in ("install", "pin"):
        cmd = install_command(eco, list(action.packages) if kind == "install" else [action.requirement])
        return ([cmd], {}, None) if cmd else None
    if kind == "toolchain":
        return [], {}, Diagnosis(kind="toolchain_too_old", detail=f"memory: use {action.tool} {action.version}",
                                 toolchain=action.version, rule="memory")
    return None


def step_progress(job: BuildJob) -> StepProgress | None:
    """The progress-scaled limit of a setup step (issue 25, S11; `envpool.sandbox.StepProgress`):
    past `timeouts.setup_step` a step goes on while it printed within `timeouts.setup_step_idle`
    seconds, up to `timeouts.setup_step_ceiling` and never past the instance's deadline (at
    least `setup_step`). None when `setup_step_idle` is None."""
    t = job.config.timeouts
    if t.setup_step_idle is None:
        return None
    left = job.deadline - time.monotonic()
    return StepProgress(idle=t.setup_step_idle, ceiling=max(t.setup_step, min(t.setup_step_ceiling, left)))


def run_setup(job: BuildJob) -> SetupOutcome:
    """Run `job.plan.setup_commands` then `job.plan.post_commands` in `job.sb` with the repair
    chain (module docstring); `job.plan.env` is updated in place by memory `env` actions.
    Never raises for a failing step (the outcome carries the diagnosis); raises SandboxTimeout
    when the instance's time runs out between steps."""
    plan, eco, config = job.plan, job.eco, job.config
    rounds = config.repair.rounds
    done: list[str] = []
    failed: list[tuple[str, int]] = []
    tried: set[str] = set()
    rules = config.policy != "llm"
    first = system_packages(job)
    if first:
        r = run_step(job, first, f"recipe:{eco.name}:needs", label="setup",
                     note="what the plan's tests need, from Debian's index")
        if r.ok:
            done.append(first)
        else:
            failed.append((first, r.exit_code or 0))
    for n, cmd in enumerate(list(plan.setup_commands) + list(plan.post_commands)):
        if time.monotonic() > job.deadline:
            raise SandboxTimeout("instance time limit reached during setup", instance_id=job.instance.instance_id,
                                 log_path=job.log_path)
        rule = f"recipe:{eco.name}:{n}"
        r = run_step(job, cmd, rule, label="setup", progress=True)
        used = 0
        while not r.ok and used < rounds:
            fix, env, note, source, diag, ran = _next_repair(job, cmd, r.output, tried, rules)
            if diag is not None:
                failed.append((cmd, r.exit_code or 0))
                return SetupOutcome(ok=False, commands=done, env=dict(plan.env), failed=failed, diagnosis=diag,
                                    reason=diag.detail)
            if fix is None:
                break
            used += 1
            tried.add("\n".join(fix) + json.dumps(env, sort_keys=True))
            plan.env.update(env)
            codes = []
            for f in fix:
                if ran:  # the LLM's loop ran them already
                    done.append(f)
                    continue
                fr = run_step(job, f, f"{source}:cmd", label="repair")
                codes.append(fr.exit_code)
                if fr.ok:
                    done.append(f)
            # the repair itself, as one step with a command (learning reads only such steps)
            shown = " && ".join(fix) or "export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
            job.traj(StepRecord(agent="execution", rule=source, command=shown,
                                exit_code=next((c for c in codes if c), 0), note=f"repair: {note}",
                                output_excerpt=json.dumps({"commands": fix, "env": env})[:2000]))
            failed.append((cmd, r.exit_code or 0))
            before = r
            r = run_step(job, cmd, rule, label="setup-retry", progress=True)
            if entry := rule_entry_of(eco.name, source, fix):  # a hand-written rule's use: did the retry get past it
                if r.timed_out or r.exit_code in KILLED_EXIT_CODES:  # killed (a limit, SIGKILL): no score
                    job.traj(StepRecord(agent="memory", rule=f"score:{entry}", exit_code=None,
                                        note=json.dumps({"stage": "setup-step", "step": rule, "passed": False,
                                                         "error_gone": None, "timed_out": r.timed_out,
                                                         "exit": r.exit_code})))
                else:
                    gone = not same_error(_tail(before.output), _tail(r.output))
                    job.traj(StepRecord(agent="memory", rule=f"score:{entry}", exit_code=0 if r.ok or gone else 1,
                                        note=json.dumps({"stage": "setup-step", "step": rule, "passed": r.ok,
                                                         "error_gone": gone})))
        if not r.ok:
            why = "timed out" if r.timed_out else f"exit {r.exit_code}"
            reason = f"{eco.name} setup step failed ({why}): {cmd[:200]} :: {_tail(r.output, 600).strip()}"
            diag = diagnose(r.output, eco.name, plan.toolchain, eco=eco)
            failed.append((cmd, r.exit_code or 0))
            return SetupOutcome(ok=False, commands=done, env=dict(plan.env), failed=failed, reason=reason,
                                diagnosis=diag, timed_out=r.timed_out)
        done.append(cmd)
    return SetupOutcome(ok=True, commands=done, env=dict(plan.env), test_env=dict(plan.env), failed=failed)


def run_step(job: BuildJob, cmd: str, rule: str, *, label: str, note: str = "", progress: bool = False):
    """Run one setup command in `job.sb` (the plan's env; `progress`: the progress-scaled limit,
    `step_progress`) and record it as the trajectory step `rule`. A failure apt blames on the
    Debian mirror (`envpool.aptmirror.mirror_failure`: mid-sync, a hash or size mismatch, a name
    that does not resolve) is tried again with backoff (`mint.repair.mirror_*`), each attempt a
    step; still failing so, raises `AptMirrorError` (outcome `infra_error`: the mirror's failure
    says nothing about the repository). Returns the ExecResult otherwise, failed or not."""
    config, plan = job.config, job.plan
    tries = [0]

    def attempt(k: int):
        tries[0] = k
        r = job.sb.exec(cmd, timeout=config.timeouts.setup_step, env=plan.env or None, log_label=label,
                        progress=step_progress(job) if progress else None)
        said = note
        if k > 1:
            said = f"{note}; " * bool(note) + f"attempt {k} of {config.repair.mirror_attempts}: the Debian mirror failed"
        job.traj(StepRecord(agent="execution", rule=rule, command=cmd, exit_code=r.exit_code,
                            output_excerpt=_tail(r.output), duration=round(r.duration, 2), note=said))
        return r

    r = retry_mirror(attempt, lambda r: not r.ok and mirror_failure(r.output) is not None, config.repair)
    if not r.ok and (line := mirror_failure(r.output)):
        why = "timed out" if r.timed_out else f"exit {r.exit_code}"
        raise AptMirrorError(f"{job.eco.name} setup step failed ({why}, {tries[0]} attempt(s)): apt could not use "
                             f"the Debian mirror (infrastructure): {cmd[:200]} :: {line}", line=line,
                             instance_id=job.instance.instance_id, log_path=job.log_path)
    return r


def rule_entry_of(ecosystem: str, source: str, fix: list[str]) -> str | None:
    """The knowledge-store entry of a rule repair made by `source` with commands `fix`
    (`agents.memory.knowledge.rule_of_repair`: a `diagnosis:<rule>` of the data file, or an
    ecosystem's data repair whose commands are `fix`), None for other repairs (the memory's own
    are scored by their `repair: experience <id>` note; the LLM's are learned unless they are a
    data repair's commands). Learning recognises the same repairs from the trajectory."""
    return rule_of_repair(ecosystem, source, fix)


def _next_repair(job: BuildJob, cmd: str, output: str, tried: set[str], rules: bool):
    """(commands, env, note, source, diagnosis, already run) of the next repair of `cmd`; commands
    None when nothing repairs it; a diagnosis when the plan must change instead."""
    eco, plan = job.eco, job.plan
    if rules:
        fix = eco.repair(plan, cmd, output, tried)
        entry = rule_for_fix(eco.name, fix) if fix else None
        if fix and entry is not None and entry in getattr(job.helper, "dropped", ()):
            fix = None  # a data repair the memory dropped below its floor
        if fix:
            return fix, {}, json.dumps([{"kind": "shell", "command": f} for f in fix]), f"repair:{eco.name}", None, False
        diag = diagnose(output, eco.name, plan.toolchain, eco=eco)
        if diag is not None and diag.kind == "missing_system":
            pkgs = resolve_packages(job.index, diag, job.sb)
            fix = [apt_install(pkgs)] if pkgs else []
            if fix and "\n".join(fix) + "{}" not in tried:
                return fix, {}, json.dumps([{"kind": "apt", "packages": pkgs}]), f"diagnosis:{diag.rule}", \
                    None, False
        if diag is not None and diag.kind == "missing_module" and (cmd_ := install_command(eco, diag.packages)):
            fix = [cmd_]
            if "\n".join(fix) + "{}" not in tried:
                return fix, {}, json.dumps([{"kind": "install", "packages": diag.packages}]), \
                    f"diagnosis:{diag.rule}", None, False
    helper = job.helper
    if helper is None:
        return None, {}, "", "", None, False
    variables = {"ca_bundle": "/opt/swemint/ca.pem", **(job.extra.get("variables") or {})}
    for mp in helper.memory_plans(output, job.language, variables, on_step=job.traj):
        commands: list[str] = []
        env: dict[str, str] = {}
        diag = None
        for a in mp.actions:
            got = action_commands(eco, a, plan)
            if got is None:
                continue
            commands += got[0]
            env.update(got[1])
            diag = diag or got[2]
        if not commands and not env and diag is None:
            continue
        key = "\n".join(commands) + json.dumps(env, sort_keys=True)
        if key in tried and diag is None:
            continue
        helper.mark_applied(mp, on_step=job.traj)
        if diag is not None:
            diag.detail = f"experience {mp.experience_id}: {diag.detail}"
            return None, {}, "", "", diag, False
        return commands, env, f"experience {mp.experience_id}", f"memory:{mp.experience_id}", None, False
    if helper.llm is not None:
        def execute(c: str) -> tuple[int, str]:
            r = job.sb.exec(c, timeout=job.config.timeouts.setup_step, env=plan.env or None, log_label="llm")
            job.traj(StepRecord(agent="execution", rule="llm:execution", command=c, exit_code=r.exit_code,
                                output_excerpt=_tail(r.output), duration=round(r.duration, 2)))
            return r.exit_code, r.output

        done, _ = helper.llm_fix(cmd, output, language=job.language, toolchain=plan.toolchain, execute=execute,
                                 on_step=job.traj, hint=eco.repair_hint)
        if done:
            return done, {}, json.dumps([{"kind": "shell", "command": c} for c in done]), "llm", None, True
    return None, {}, "", "", None, False


def resolve_packages(index, diag: Diagnosis, sb=None, *, strict: bool = False) -> list[str]:
    """The Debian packages of a `missing_system` diagnosis: its `packages`, then what `index`
    (a `DebianIndex`, None: none) answers for its `needs` (commands `sb` has are not asked).
    `strict`: a need the index could not answer (unavailable: the mirror, not Debian) raises
    `agents.debindex.IndexUnavailable` (an InfraError) naming it and the mirror's error, the
    diagnosis in its message; otherwise it is left out (the step's note says why)."""
    pkgs = list(diag.packages)
    if diag.needs and index is not None:
        got, answers = index.resolve(list(diag.needs), sb)
        if strict:
            run = index.run
            try:
                unanswered(answers, instance_id=run.instance.instance_id, log_path=run.log_path)
            except IndexUnavailable as e:
                raise IndexUnavailable(e.needs, f"{e.why} (needed by {diag.rule}: {diag.detail[:300]})",
                                       instance_id=e.instance_id, log_path=e.log_path) from None
        pkgs += [p for p in got if p not in pkgs]
    return pkgs


def system_packages(job: BuildJob) -> str | None:
    """The command installing what `job.plan` says its tests need (`Plan.needs` answered by the
    index, `Plan.ci_packages` this suite has), or None when nothing is missing."""
    plan, index = job.plan, job.index
    if index is None or not (plan.needs or plan.ci_packages):
        return None
    pkgs, _ = index.resolve(list(plan.needs), job.sb) if plan.needs else ([], [])
    if plan.ci_packages:
        pkgs += [p for p in index.available(list(plan.ci_packages)) if p not in pkgs]
    return apt_install(pkgs) if pkgs else None


def amend_commands(eco: object, kind: str, packages: list[str]) -> list[str]:
    """The commands adding what Verification found missing: Debian `packages` (kind
    `missing_system`) or modules through the ecosystem's installer (`missing_module`)."""
    if kind == "missing_system" and packages:
        return [apt_install(packages)]
    if kind == "missing_module":
        cmd = install_command(eco, packages)
        return [cmd] if cmd else []
    return []


# -- environments ---------------------------------------------------------------------------

def build_environment(run, eco, plan: Plan, seed: tuple[str, list[str]] | None = None):
    """A full build of `plan` in tiers (`agents.tiers`): the plan's dependency tier (shared across
    repositories by key; None: the toolchain image), then the instance tier in a build sandbox of
    it (bridge network, the plan's caches mounted): /testbed laid out, the ecosystem's `build`
    (by default `run_setup`), the setup script and Dockerfile written (also when the build fails),
    the image committed with the test runs' environment in its ENV (Python's installer settings stay
    out of it). `seed`: (image, folders) copied into the sandbox before the setup when there is
    no dependency tier (`agents.seed`: a reuse candidate on another toolchain version). Returns
    (Environment or None, SetupOutcome). Raises SandboxTimeout at the deadline."""
    from agents.context import Environment
    from agents.dockerfile import render_dockerfile, render_setup_script
    from agents.envimage import (commit_image, commit_tracked_edits, image_tag_for, lay_out_repository,
                                 restore_conflicting_edits)
    from agents.ecosystems.service_provision import service_env
    from agents.tiers import dependency_tier

    cfg, res, iid = run.config, run.res, run.iid
    t = time.monotonic()
    tier = dependency_tier(run, eco, plan)
    spec = run.spec(tier.image if tier else plan.image, "bridge", env=plan.env, caches=plan.state.get("caches"))
    with run.factory.sandbox(spec, run.log_path) as sb:
        if seed is not None and tier is None:
            from agents.seed import seed_paths

            copied = seed_paths(run.factory, sb, seed[0], seed[1])
            if copied:
                run.traj(StepRecord(agent="setup", rule="reuse:seeded",
                                    note=f"{', '.join(copied)} from {seed[0]} (a candidate on another toolchain "
                                         "version: its downloads, not its build)"))
        lay_out_repository(sb, run.tree, run.instance.base_commit, log_path=run.log_path)
        job = BuildJob(sb=sb, eco=eco, plan=plan, instance=run.instance, tree=run.tree, config=cfg, helper=run.helper,
                       traj=run.traj, log_path=run.log_path, deadline=run.deadline, language=run.language,
                       index=index_for(run, plan.image) if cfg.repair.debian_index else None, dependency=tier,
                       run_setup=run_setup)
        outcome = eco.build(job)
        restored = restore_conflicting_edits(sb, [run.instance.test_patch, run.instance.patch], run.traj) \
            if outcome.ok else []
        setup_script = render_setup_script((tier.commands if tier else []) + outcome.commands, outcome.env,
                                           outcome.failed)
        dockerfile = render_dockerfile(base_image=plan.image, repo=run.instance.repo,
                                       base_commit=run.instance.base_commit, commands=outcome.commands,
                                       env=outcome.env, files=eco.dockerfile_files(), restore=restored, dependency=tier)
        (run.idir / "setup.sh").write_text(setup_script)
        (run.idir / "Dockerfile").write_text(dockerfile)
        res.setup_script, res.dockerfile, res.installed_packages = setup_script, dockerfile, outcome.installed_packages
        res.timings["setup"] = round(res.timings.get("setup", 0.0) + time.monotonic() - t, 2)
        if not outcome.ok:
            return None, outcome
        if time.monotonic() > run.deadline:
            raise SandboxTimeout("instance time limit reached during setup", instance_id=iid, log_path=run.log_path)
        commit_tracked_edits(sb, run.traj)
        t = time.monotonic()
        tag = image_tag_for(iid, {"base": tier.image_id if tier else plan.image, "commands": outcome.commands,
                                  "env": outcome.env}, cfg.run_id)
        svc = service_env(plan.services)  # where the CI's servers are, also for runners whose test env is their own
        image, image_id = commit_image(sb, run.factory, cfg.image_repository, tag,
                                       {"swemint.instance": iid, "swemint.run": cfg.run_id},
                                       env={**svc, **(outcome.test_env or outcome.env)} or None, mirror=cfg.repair)
        run.made_images.append(image)
        res.timings["commit"] = round(res.timings.get("commit", 0.0) + time.monotonic() - t, 2)
    return Environment(image=image, image_id=image_id, source="built", setup_script=setup_script,
                       dockerfile=dockerfile, commands=list(outcome.commands), env=dict(outcome.env),
                       test_env={**svc, **(outcome.test_env or plan.env)}, installed_packages=outcome.installed_packages,
                       interpreter=plan.toolchain, dependency_key=tier.key if tier else None,
                       dependency_image_id=tier.image_id if tier else None), outcome


def amend_environment(run, eco, plan: Plan, env, commands: list[str], why: str):
    """`commands` run in a build sandbox of `env.image` and committed as a new image (Execution
    adding what Verification found missing). Returns the amended Environment, or None when a
    command fails (each command is a trajectory step `amend`)."""
    from agents.context import Environment
    from agents.dockerfile import run_line
    from envpool.quoting import comment
    from agents.envimage import commit_image, image_tag_for

    cfg, iid = run.config, run.iid
    t = time.monotonic()
    with run.factory.sandbox(run.spec(env.image, "bridge", env=env.env), run.log_path) as sb:
        for cmd in commands:
            r = sb.exec(cmd, timeout=cfg.timeouts.setup_step, env=env.env or None, log_label="amend")
            run.traj(StepRecord(agent="execution", rule="amend", command=cmd, exit_code=r.exit_code,
                                output_excerpt=_tail(r.output), duration=round(r.duration, 2), note=why[:300]))
            if not r.ok:
                return None
        tag = image_tag_for(iid, {"amend": env.image_id or env.image, "commands": commands}, cfg.run_id)
        image, image_id = commit_image(sb, run.factory, cfg.image_repository, tag,
                                       {"swemint.instance": iid, "swemint.run": cfg.run_id}, env=env.env or None,
                                       mirror=cfg.repair)
        run.made_images.append(image)
    run.res.timings["setup"] = round(run.res.timings.get("setup", 0.0) + time.monotonic() - t, 2)
    script = env.setup_script.rstrip("\n") + f"\n# swemint: added after verification ({comment(why[:120])})\n" + \
        "\n".join(commands) + "\n"
    dockerfile = env.dockerfile.rstrip("\n") + "\n# swemint: added after verification\n" + \
        "\n".join(run_line(c) for c in commands) + "\n"
    (run.idir / "setup.sh").write_text(script)
    (run.idir / "Dockerfile").write_text(dockerfile)
    return Environment(**{**env.model_dump(), "image": image, "image_id": image_id, "source": "amended",
                          "setup_script": script, "dockerfile": dockerfile,
                          "commands": list(env.commands) + list(commands)})


# -- who executes a memory action ----------------------------------------------------------------

def executable(language: str, action) -> bool:
    """Whether some executor runs memory `action` for a repository of `language` (vocabulary
    name; `any` = every language), before planning (`agents.memory.before`) or after a failure
    (`run_setup`, Python's builder): `shell` / `env` / `apt` everywhere; other kinds where an
    ecosystem serving `language` executes them (`Ecosystem.executes`: an installer for `install`
    / `pin`, runner arguments for `test_arg`, its tools for `toolchain`, its own kinds)."""
    import agents.ecosystems as registry
    from agents.ecosystems.base import SHARED_ACTIONS

    if action.kind in SHARED_ACTIONS:
        return True
    if language == "any":
        return False
    return any(e.executes(action) for e in registry.serving(language))
