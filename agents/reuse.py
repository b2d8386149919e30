"""Environment reuse (MEnvAgent, arXiv 2601.22859): make this instance's environment from a pooled
environment of another instance of the same repository instead of building it from scratch.

For each candidate (best first, as `envpool.pool.EnvPool.find` orders them: same version, the
nearest newer commit, any), a container is started from its image, the repository is replaced by
this instance's tree at base_commit (the venv under /opt stays), and `agents.envpatch.EnvPatch`
re-installs the project (`--no-deps`, editable compat), probes test collection and repairs within
a bound. When the probe passes, the container is committed as this instance's image; its setup
script is the candidate's plus the increments, its Dockerfile the candidate's steps (at this
commit) plus the increments. Otherwise the next candidate, then the full build. Grading is not
touched: the before/after runs happen in the committed image exactly as after a full build.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from agents.analysis import analyze_python
from agents.config import MintConfig
from agents.dockerfile import docker_env_value, render_setup_script, run_line
from agents.envimage import cache_mounts, commit_image, commit_tracked_edits, image_tag_for, lay_out_repository
from agents.envpatch import EnvPatch
from agents.gitrepo import GitTree
from agents.models import EnvRecord, Instance, InstanceResult, StepRecord
from agents.python_plan import PY, choose_python, pretend_version
from envpool.errors import SandboxTimeout, SwemintError

_XY = re.compile(r"\d+\.\d+")


def derive_version(instance: Instance, tree: GitTree | None) -> str | None:
    """The package's major.minor at base_commit, the key of the pool's `same_version` tier.

    `instance.version` when it looks like a release (`X.Y`, `X.Y.Z`: SWE-bench); otherwise (a PR
    number in SWE-bench Multilingual, or none) the version the packaging declares at the commit
    (setup.py / setup.cfg / pyproject), else `__version__` in a top-level module, else the nearest
    tag, cut to `X.Y`. None when nothing says.
    """
    v = (instance.version or "").strip()
    if re.fullmatch(r"\d+\.\d+(\.\d+)*", v):
        return v
    if tree is None:
        return None
    found = analyze_python(tree).package_version
    if not found or not _XY.match(found):
        for path in sorted(f for f in tree.files if f.count("/") <= 2 and
                           f.endswith(("__init__.py", "_version.py", "version.py", "__about__.py"))
                           and "test" not in f)[:20]:
            m = re.search(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", tree.read(path) or "", re.M)
            if m and _XY.match(m.group(1)):
                found = m.group(1)
                break
        else:
            found = tree.describe() or None
    m = _XY.search(found or "")
    return m.group(0) if m else None


def _dockerfile(cand: EnvRecord, instance: Instance, increments: list[str], env: dict[str, str]) -> str:
    """The candidate's Dockerfile, checked out at this instance's commit, plus the increments."""
    text = cand.dockerfile.replace(f"@ {cand.base_commit}", f"@ {instance.base_commit} (reusing {cand.instance_id})", 1)
    text = text.replace(cand.base_commit, instance.base_commit)
    lines = [text.rstrip("\n"), f"# swemint: incremental commands (EnvPatch) on top of {cand.instance_id}"]
    lines += [f"ENV {k}={docker_env_value(v)}" for k, v in sorted(env.items()) if f"ENV {k}=" not in text]
    lines += [run_line(c) for c in increments]
    return "\n".join(lines) + "\n"


def _setup_script(cand: EnvRecord, instance: Instance, increments: list[str], env: dict[str, str]) -> str:
    """The candidate's setup script, then this instance's increments (with its environment)."""
    tail = render_setup_script(increments, env).split("\n", 3)[3]  # drop shebang, set, cd
    return (cand.setup_script.rstrip("\n") + f"\n# --- swemint: environment of {cand.instance_id} reused for "
            f"{instance.instance_id} @ {instance.base_commit}; incremental commands:\n" + tail)


def try_reuse(instance: Instance, tree: GitTree, tests, config: MintConfig, factory, res: InstanceResult,
              idir: Path, log_path: Path, traj, spec, candidates: list[EnvRecord], deadline: float,
              helper=None) -> bool:
    """Try `candidates` in order; on success fill `res` (image, scripts, `reused_from`,
    `incremental_commands`, timings "setup"/"reuse"/"commit") and return True. False: do a full
    build (each failure is a trajectory step). Raises SandboxTimeout when the instance's time
    runs out; other errors of one candidate (missing image, engine) only end that candidate."""
    t0 = time.monotonic()
    profile = analyze_python(tree)
    version = pretend_version(instance, tree, profile.package_version)
    for cand in candidates:
        if cand.instance_id == instance.instance_id or cand.repo != instance.repo:
            continue
        if time.monotonic() > deadline:
            raise SandboxTimeout("instance time limit reached while reusing", instance_id=instance.instance_id,
                                 log_path=log_path)
        choice = choose_python(profile, instance.created, [cand.interpreter or "3.11"])
        sspec = spec.model_copy(update={"image": cand.image_tag,
                                        "cache_mounts": cache_mounts(config, instance.instance_id, instance.repo)})
        t = time.monotonic()
        traj(StepRecord(agent="reuse", rule="candidate", note=f"{cand.instance_id} ({cand.image_tag}, "
                                                              f"version {cand.version}, python {cand.interpreter})"))
        try:
            with factory.sandbox(sspec, log_path) as sb:
                lay_out_repository(sb, tree, instance.base_commit, replace=True, log_path=log_path)
                patch = EnvPatch(sb, tree, profile, choice, instance.created, version,
                                 rounds=config.reuse.patch_rounds, step_timeout=config.timeouts.setup_step,
                                 on_step=traj, helper=helper, rule_repairs=config.policy != "llm")
                if not patch.run(tests.test_files, instance.test_patch):
                    traj(StepRecord(agent="reuse", rule="fallback", note=f"{cand.instance_id}: {patch.reason}",
                                    duration=round(time.monotonic() - t, 2)))
                    continue
                commit_tracked_edits(sb, traj)
                increments = list(patch.commands)
                freeze = sb.exec(f"uv pip freeze --python {PY}", timeout=300, log_label="freeze")
                res.installed_packages = "".join(x + "\n" for x in freeze.output.splitlines()
                                                 if x and not x.startswith("Using ")) if freeze.ok else ""
                res.interpreter, res.reused_from, res.incremental_commands = choice.version, cand.instance_id, increments
                res.substitutions = [f"environment reused from {cand.instance_id}"]
                res.setup_script = _setup_script(cand, instance, increments, patch.builder.env)
                res.dockerfile = _dockerfile(cand, instance, increments, patch.builder.env)
                (idir / "setup.sh").write_text(res.setup_script)
                (idir / "Dockerfile").write_text(res.dockerfile)
                res.timings["setup"] = round(time.monotonic() - t0, 2)
                res.timings["reuse"] = res.timings["setup"]
                tc = time.monotonic()
                tag = image_tag_for(instance.instance_id, {"reuse": cand.image_id or cand.image_tag,
                                                           "commands": increments, "env": patch.builder.env},
                                    config.run_id)
                res.image, res.image_id = commit_image(sb, factory, config.image_repository, tag,
                                                       {"swemint.instance": instance.instance_id,
                                                        "swemint.run": config.run_id,
                                                        "swemint.reused_from": cand.instance_id})
                res.timings["commit"] = round(time.monotonic() - tc, 2)
                traj(StepRecord(agent="reuse", rule="reused", duration=round(time.monotonic() - t, 2),
                                note=f"{cand.instance_id}: {len(increments)} incremental command(s)"))
                return True
        except SandboxTimeout:
            raise
        except SwemintError as e:
            traj(StepRecord(agent="reuse", rule="fallback", note=f"{cand.instance_id}: {type(e).__name__}: "
                                                                 f"{e.message[:500]}"))
    res.timings["reuse"] = round(time.monotonic() - t0, 2)
    return False
