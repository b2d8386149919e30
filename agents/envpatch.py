"""EnvPatch agent: make a pooled environment of another instance fit this one (MEnvAgent, arXiv
2601.22859, "environment reuse"), for every ecosystem. The result is *accepted only when it
verifies* (the flow grades it like any environment and falls back to a full build otherwise).

For a candidate whose toolchain fits the plan, a build sandbox is started from its image,
/testbed is replaced by this instance's tree (top-level folders the old tree's git ignores --
`target/`, `node_modules/` -- stay, so an incremental build reuses them; caches outside /testbed
stay anyway), and the ecosystem's `adapt` hook runs (Python: `EnvPatch`, which syncs the project's
dependencies and probes the tests, its increments on top of the candidate's script); without
the hook the plan's own setup commands run again on the warm caches (the setup script and
Dockerfile are then the plan's own, complete from the toolchain image). The sandbox is committed
as this instance's image, labelled `swemint.reused_from`.
"""

from __future__ import annotations

import time

from agents.context import Environment, MintRun
from agents.dockerfile import render_dockerfile, render_setup_script, run_line
from agents.ecosystems.base import Plan, hook
from agents.envimage import commit_image, image_tag_for, lay_out_repository
from agents.execution import Job, run_setup
from agents.models import EnvRecord, StepRecord
from envpool.errors import SandboxTimeout, SwemintError
from envpool.quoting import comment, docker_env_value, env_name


def fits(cand: EnvRecord, plan: Plan, same_repo: bool) -> str:
    """Why `cand` cannot be adapted for `plan` ("" when it can): another language, or (for a
    candidate of another repository, or outside Python) another toolchain than the plan's."""
    if cand.language and plan.language and cand.language != plan.language and \
            {cand.language, plan.language} - {"javascript", "typescript"}:
        return f"language {cand.language} != {plan.language}"
    if plan.ecosystem != "python" or not same_repo:
        if cand.interpreter and cand.interpreter != plan.toolchain:
            return f"toolchain {cand.interpreter} != {plan.toolchain}"
    return ""


def _python_scripts(cand: EnvRecord, run: MintRun, increments: list[str], env: dict[str, str]) -> tuple[str, str]:
    """The candidate's setup script and Dockerfile (checked out at this commit) plus the increments."""
    inst = run.instance
    text = cand.dockerfile.replace(f"@ {cand.base_commit}",
                                   f"@ {inst.base_commit} (reusing {comment(cand.instance_id)})", 1)
    text = text.replace(cand.base_commit, inst.base_commit)
    lines = [text.rstrip("\n"), f"# swemint: incremental commands (EnvPatch) on top of {comment(cand.instance_id)}"]
    lines += [f"ENV {env_name(k)}={docker_env_value(v)}" for k, v in sorted(env.items()) if f"ENV {k}=" not in text]
    lines += [run_line(c) for c in increments]
    tail = render_setup_script(increments, env).split("\n", 3)[3]  # drop shebang, set, cd
    script = (cand.setup_script.rstrip("\n") + f"\n# --- swemint: environment of {comment(cand.instance_id)} reused "
              f"for {comment(inst.instance_id)} @ {comment(inst.base_commit)}; incremental commands:\n" + tail)
    return script, "\n".join(lines) + "\n"


def adapt_environment(run: MintRun, eco, plan: Plan, cand: EnvRecord, kind: str,
                      overlap: float | None = None) -> Environment | None:
    """Adapt `cand` (module docstring); None when it does not fit or its adaptation fails (a
    trajectory step `reuse:fallback` says why). `kind`: `same_repo` or `similar_repo`. Raises
    SandboxTimeout when the instance's time runs out."""
    cfg, iid = run.config, run.iid
    t = time.monotonic()
    run.traj(StepRecord(agent="envpatch", rule="candidate", note=f"{cand.instance_id} ({kind}"
                        + (f", overlap {overlap:.2f}" if overlap is not None else "")
                        + f"; {cand.image_tag}, version {cand.version}, toolchain {cand.interpreter})"))
    why = fits(cand, plan, kind == "same_repo")
    if why:
        run.traj(StepRecord(agent="envpatch", rule="fallback", note=f"{cand.instance_id}: {why}"))
        return None
    own = hook(eco, "adapt")
    try:
        spec = run.spec(cand.image_tag, "bridge", env=plan.env, caches=plan.state.get("caches"))
        with run.factory.sandbox(spec, run.log_path) as sb:
            lay_out_repository(sb, run.tree, run.instance.base_commit, replace=True, keep_ignored=own is None,
                               log_path=run.log_path)
            job = Job(sb=sb, eco=eco, plan=plan.model_copy(deep=True), instance=run.instance, tree=run.tree, config=cfg,
                      helper=run.helper, traj=run.traj, log_path=run.log_path, deadline=run.deadline,
                      language=run.language, candidate=cand)
            outcome = own(job, cand) if own else run_setup(job)
            if not outcome.ok:
                run.traj(StepRecord(agent="envpatch", rule="fallback", duration=round(time.monotonic() - t, 2),
                                    note=f"{cand.instance_id}: {outcome.reason[:500]}"))
                return None
            if own is not None:
                script, dockerfile = _python_scripts(cand, run, outcome.commands, outcome.env)
                interpreter = cand.interpreter
            else:
                script = render_setup_script(outcome.commands, outcome.env, outcome.failed)
                dockerfile = render_dockerfile(base_image=plan.image, repo=run.instance.repo,
                                               base_commit=run.instance.base_commit, commands=outcome.commands,
                                               env=outcome.env, files={})
                interpreter = plan.toolchain
            (run.idir / "setup.sh").write_text(script)
            (run.idir / "Dockerfile").write_text(dockerfile)
            tc = time.monotonic()
            tag = image_tag_for(iid, {"reuse": cand.image_id or cand.image_tag, "commands": outcome.commands,
                                      "env": outcome.env}, cfg.run_id)
            image, image_id = commit_image(sb, run.factory, cfg.image_repository, tag,
                                           {"swemint.instance": iid, "swemint.run": cfg.run_id,
                                            "swemint.reused_from": cand.instance_id}, env=(outcome.test_env or outcome.env) or None)
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
                       interpreter=interpreter, reused_from=cand.instance_id, reuse_kind=kind, reuse_overlap=overlap)
