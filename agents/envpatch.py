"""EnvPatch agent: make a pooled environment of another instance *of the same repository* fit
this one (MEnvAgent, arXiv 2601.22859, "environment reuse"), for every ecosystem. The result is
*accepted only when it verifies* (the flow grades it like any environment and falls back to a
full build otherwise). An environment of another repository is never a candidate: its instance
tier holds what that repository's build code wrote; across repositories only the dependency tier
is shared (`agents.tiers`).

For a candidate whose toolchain fits the plan, a build sandbox is started from its image,
/testbed is replaced by this instance's tree (top-level folders the old tree's git ignores --
`target/`, `node_modules/` -- stay, so an incremental build reuses them; caches outside /testbed
stay anyway), and the ecosystem's `adapt` runs (an ecosystem that `adapts`, Python: `EnvPatch`,
which syncs the project's dependencies and probes the tests; by default the plan's own setup
commands run again on the warm caches). The setup script is the candidate's followed by the increments; the Dockerfile
is the candidate's followed by this tree's layout and the increments
(`agents.dockerfile.render_reused_dockerfile`), so it builds what the image holds. The sandbox is
committed as this instance's image, labelled `swemint.reused_from`; the row keeps the
candidate's dependency layer (`dependency_key`).
"""

from __future__ import annotations

import time

from agents.context import Environment, MintRun
from agents.dockerfile import render_reused_dockerfile, render_setup_script
from agents.ecosystems.base import Plan
from agents.envimage import commit_image, image_tag_for, lay_out_repository
from agents.ecosystems.runs import BuildJob
from agents.execution import run_setup
from agents.models import EnvRecord, StepRecord
from envpool.errors import SandboxTimeout, SwemintError
from envpool.quoting import comment


def fits(cand: EnvRecord, plan: Plan, repo: str) -> str:
    """Why `cand` cannot be adapted for `plan` ("" when it can): another repository (never reused
    across repositories), a language no ecosystem serves together with the plan's
    (`agents.ecosystems.kin`: JavaScript and TypeScript fit each other), or another toolchain than
    the plan's where the ecosystem does not adapt an environment itself (`Ecosystem.adapts`:
    Python's EnvPatch keeps the candidate's interpreter)."""
    import agents.ecosystems as registry

    if cand.repo != repo:
        return f"another repository ({cand.repo}): environments are reused only within their repository"
    if cand.language and plan.language and cand.language not in registry.kin(plan.language):
        return f"language {cand.language} != {plan.language}"
    eco = registry.by_name(plan.ecosystem)
    adapts = eco is not None and eco.adapts
    if not adapts and cand.interpreter and cand.interpreter != plan.toolchain:
        return f"toolchain {cand.interpreter} != {plan.toolchain}"
    return ""


def toolchain_only_misfit(cand: EnvRecord, plan: Plan, repo: str) -> bool:
    """Whether `cand` misfits `plan` only by its toolchain's version (same repository and
    language, another toolchain): its download caches can still seed a build (`agents.seed`)."""
    why = fits(cand, plan, repo)
    return why.startswith("toolchain ")


def _scripts(cand: EnvRecord, run: MintRun, commands: list[str], env: dict[str, str], failed,
             keep_ignored: bool) -> tuple[str, str]:
    """The setup script (the candidate's, then the increments) and the Dockerfile (the candidate's,
    then this tree laid over it and the increments) of the adapted environment."""
    inst = run.instance
    tail = render_setup_script(commands, env, failed).split("\n", 3)[3]  # drop shebang, set, cd
    script = (cand.setup_script.rstrip("\n") + f"\n# --- swemint: environment of {comment(cand.instance_id)} reused "
              f"for {comment(inst.instance_id)} @ {comment(inst.base_commit)}; incremental commands:\n" + tail)
    dockerfile = render_reused_dockerfile(candidate_dockerfile=cand.dockerfile, candidate_commit=cand.base_commit,
                                          reused_from=cand.instance_id, repo=inst.repo, base_commit=inst.base_commit,
                                          commands=commands, env=env, keep_ignored=keep_ignored)
    return script, dockerfile


def adapt_environment(run: MintRun, eco, plan: Plan, cand: EnvRecord) -> Environment | None:
    """Adapt `cand` (module docstring); None when it does not fit or its adaptation fails (a
    trajectory step `reuse:fallback` says why). Raises SandboxTimeout when the instance's time
    runs out."""
    cfg, iid = run.config, run.iid
    t = time.monotonic()
    run.traj(StepRecord(agent="envpatch", rule="candidate", note=f"{cand.instance_id} (same_repo; {cand.image_tag}, "
                                                                  f"version {cand.version}, toolchain {cand.interpreter})"))
    why = fits(cand, plan, run.instance.repo)
    if why:
        run.traj(StepRecord(agent="envpatch", rule="fallback", note=f"{cand.instance_id}: {why}"))
        return None
    own = eco.adapts
    try:
        spec = run.spec(cand.image_tag, "bridge", env=plan.env, caches=plan.state.get("caches"))
        with run.factory.sandbox(spec, run.log_path) as sb:
            lay_out_repository(sb, run.tree, run.instance.base_commit, replace=True, keep_ignored=not own,
                               log_path=run.log_path)
            job = BuildJob(sb=sb, eco=eco, plan=plan.model_copy(deep=True), instance=run.instance, tree=run.tree,
                           config=cfg, helper=run.helper, traj=run.traj, log_path=run.log_path, deadline=run.deadline,
                           language=run.language, candidate=cand, run_setup=run_setup)
            outcome = eco.adapt(job, cand)
            if not outcome.ok:
                run.traj(StepRecord(agent="envpatch", rule="fallback", duration=round(time.monotonic() - t, 2),
                                    note=f"{cand.instance_id}: {outcome.reason[:500]}"))
                return None
            script, dockerfile = _scripts(cand, run, outcome.commands, outcome.env, outcome.failed,
                                          keep_ignored=not own)
            interpreter = cand.interpreter if own else plan.toolchain
            (run.idir / "setup.sh").write_text(script)
            (run.idir / "Dockerfile").write_text(dockerfile)
            tc = time.monotonic()
            tag = image_tag_for(iid, {"reuse": cand.image_id or cand.image_tag, "commands": outcome.commands,
                                      "env": outcome.env}, cfg.run_id)
            image, image_id = commit_image(sb, run.factory, cfg.image_repository, tag,
                                           {"swemint.instance": iid, "swemint.run": cfg.run_id,
                                            "swemint.reused_from": cand.instance_id}, env=(outcome.test_env or outcome.env) or None,
                                           mirror=cfg.repair)
            run.made_images.append(image)
            run.res.timings["commit"] = round(run.res.timings.get("commit", 0.0) + time.monotonic() - tc, 2)
    except SandboxTimeout:
        raise
    except SwemintError as e:
        run.traj(StepRecord(agent="envpatch", rule="fallback", note=f"{cand.instance_id}: {type(e).__name__}: "
                                                                    f"{e.message[:500]}"))
        return None
    run.traj(StepRecord(agent="envpatch", rule="reused", duration=round(time.monotonic() - t, 2),
                        note=f"{cand.instance_id}: {len(outcome.commands)} command(s)"))
    return Environment(image=image, image_id=image_id, source="reused", setup_script=script, dockerfile=dockerfile,
                       commands=list(outcome.commands), env=dict(outcome.env),
                       test_env=dict(outcome.test_env or plan.env), installed_packages=outcome.installed_packages,
                       interpreter=interpreter, reused_from=cand.instance_id, reuse_kind="same_repo",
                       dependency_key=cand.dependency_key, dependency_image_id=cand.dependency_image_id)
