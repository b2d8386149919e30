"""Memory before failure (EnvPilot, arXiv 2609.07357): the context-aware retrieval runs before the
build, and proven entries change the plan instead of waiting for the failure they describe.

The repository's context (language, the plan's toolchain, the commit's era, runners, manifests,
build systems, declared dependencies, the plan's commands; Python: its packaging profile) gives
likely-obstacle queries (`data/experiences/obstacles.yaml`) and the project's own query
(`RepoContext.profile_query`); each is ranked by BM25 over the entries *eligible* for the project
(`retrieve.eligible`: another repository's lesson only when the contexts match) and the lists are
fused by RRF (`Retriever.retrieve`, top `memory.before_plan_k`). The retrieval report (query,
top-k, scores, why) is a trajectory step. An entry changes the plan only when it is positive,
its reliability reaches `memory.before_plan_reliability` (hand-written entries start trusted,
learned ones earn it), it is specific to the project (`proactive`) and its actions mean
something before a build:

| action      | effect on the plan request                                                     |
|-------------|--------------------------------------------------------------------------------|
| toolchain   | the constraint, when the planned toolchain violates it and the tool is the plan's |
| apt         | Debian packages installed before the setup                                     |
| env         | environment variables                                                          |
| test_arg    | arguments for the test runner                                                  |
| pin/install | the ecosystem's (`Ecosystem.request_action`): its installer after the setup; Python: after the project, date bound kept |
| others      | the ecosystem's own kinds (`Ecosystem.memory_actions`: Python's uv_lift / uv_option) |

`shell` actions only run after a failure (a command out of context is not safe to run first).
An action that would install, pin or lift the project's own package (`RepoContext.own`) is left
out, with a trajectory step `own-package:<id>` saying why (`agents.memory.actions.own_refusals`).
"""

from __future__ import annotations

import json

from agents.diagnosis import version_of
from agents.ecosystems.base import Ecosystem, Plan, PlanRequest
from agents.ecosystems.toolchain import satisfies
from agents.memory.actions import bind_actions, own_refusals
from agents.memory.repo_context import RepoContext
from agents.memory.experience import memory_languages
from agents.models import StepRecord

def candidate_of(plan: Plan) -> str:
    """The plan's candidate as the rounds name it (`RoundRecord.candidate`): ``<ecosystem>:<build>``."""
    return f"{plan.ecosystem}:{plan.build}"


def own_packages(tree, language: str) -> list[str]:
    """The distributions the repository at `tree` builds itself, read by the ecosystems' manifest
    readers: Python's project name (`analyze_python`: pyproject `[project] name`, setup.cfg
    `[metadata] name`, setup.py `name=`), the root package.json's `name` (JavaScript /
    TypeScript) and the cargo packages (Rust, `cargo_manifest.analyze`); [] for other languages,
    without a tree, or when the manifest does not say. Never raises."""
    if tree is None:
        return []
    try:
        if language == "python":
            from agents.ecosystems.python.profile import analyze_python

            if not tree.file_set & {"setup.py", "setup.cfg", "pyproject.toml"}:
                return []
            name = analyze_python(tree).project_name
            return [name] if name else []
        if language in ("javascript", "typescript"):
            from agents.ecosystems.node.manifest import read_json

            name = read_json(tree, "package.json").get("name")
            return [name] if isinstance(name, str) and name else []
        if language == "rust":
            from agents.ecosystems.rust.cargo_manifest import analyze

            return [p.name for p in analyze(tree).packages if p.name]
    except Exception:  # noqa: BLE001 - an unreadable manifest names no package
        return []
    return []


def context_for(run, profile, plan: Plan, eco: Ecosystem | None = None) -> RepoContext | None:
    """The memory's RepoContext of this instance (None when its language is outside the memory's
    vocabulary): the project's profile (manifests, build systems, runners, CI files, declared
    dependencies), its repository, and the plan's setup and test commands; what the ecosystem
    read of the repository (`eco.context_facts`: Python's packaging profile) takes the runners'
    and flags' place and adds its files and declared bounds when it has anything. `own`: the
    project's own packages, the ecosystem's facts' (`RepoFacts.own`) or else `own_packages`."""
    lang = run.language
    if lang not in memory_languages():
        return None
    created = run.instance.created
    era = created.year if created else run.tree.commit_time.year
    toolchain = version_of(plan.toolchain)
    commands = [c[:300] for c in list(plan.setup_commands)[:8] + [getattr(plan, "test_command", "") or ""] if c]
    extra = {"repo": run.instance.repo, "build_systems": list(profile.build_systems), "commands": commands,
             "candidate": candidate_of(plan)}
    facts = eco.context_facts(plan) if eco is not None else None
    extra["own"] = (facts.own if facts is not None else []) or own_packages(run.tree, lang)
    if facts is not None:
        return RepoContext(ecosystem=lang, toolchain=toolchain, era=era, frameworks=facts.frameworks,
                           files=list(dict.fromkeys(list(profile.manifests) + list(profile.ci) + facts.files)),
                           declared={**{d: "" for d in profile.dependencies}, **facts.declared}, flags=facts.flags,
                           **extra)
    flags = [] if any(f.endswith((".lock", "-lock.json", "-lock.yaml", "go.sum")) for f in run.tree.files[:5000]
                      if f.count("/") == 0) else ["no_lockfile"]
    if any(f.startswith("vendor/") for f in run.tree.files[:5000]):
        flags.append("vendored")
    return RepoContext(ecosystem=lang, toolchain=toolchain, era=era, frameworks=list(profile.runners),
                       files=list(profile.manifests) + list(profile.ci), declared={d: "" for d in profile.dependencies},
                       flags=flags, **extra)


def _apply(action, plan: Plan, eco: Ecosystem | None, request: PlanRequest) -> str | None:
    """Change `request` for one bound action; the change as text, or None when it means nothing
    before a build (or is already so). `pin` / `install` and the ecosystem's own kinds are the
    ecosystem's (`Ecosystem.request_action`)."""
    kind = action.kind
    if kind == "toolchain":
        if eco is None or action.tool not in eco.tools or request.toolchain:
            return None
        used = version_of(plan.toolchain)
        if used and satisfies(used, action.version):
            return None
        request.toolchain = action.version
        return f"toolchain {action.tool} {action.version}"
    if kind == "apt":
        new = [p for p in action.packages if p not in request.apt]
        request.apt += new
        return f"apt {' '.join(new)}" if new else None
    if kind == "env":
        if plan.env.get(action.name) == action.value or request.env.get(action.name) == action.value:
            return None
        request.env[action.name] = action.value
        return f"env {action.name}"
    if kind == "test_arg":
        if action.arg in request.test_args:
            return None
        request.test_args.append(action.arg)
        return f"test arg {action.arg}"
    if eco is not None and (kind in ("pin", "install") or kind in eco.memory_actions):
        return eco.request_action(request, action)
    return None


def proactive(hit, gate: float) -> bool:
    """Whether a retrieved entry may change a plan before anything failed: positive, reliability
    at least `gate`, and specific to this project -- a lesson of the same repository, or an
    entry whose context matches the project's (`retrieve.eligible`: another repository's lesson
    only on a shared dependency, or on the build system once it has worked in several
    repositories, `retrieve.learned_match`; a build system alone is not enough). Another
    repository's lesson must also have been scored at least once beyond the run that taught it
    (it earns trust); a hand-written entry must declare its context itself (not one read off its actions:
    the seed set keeps its behaviour, it acts after failures) and have been found by a
    likely-obstacle template whose conditions (era, toolchain, declared bounds) hold."""
    e = hit.experience
    if e.negative or e.reliability < gate:
        return False
    if hit.why.startswith("same repository"):
        return True
    if "context:" not in hit.why:
        return False
    if e.provenance.hand_written:  # its author's context, and a template whose conditions hold found it
        return not e.context.derived and any(q not in ("profile", "same-repository", "context") for q in hit.queries)
    return e.times_applied >= 2


def retrieval_report(stage: str, ctx: RepoContext | None, hits, rules=(), query: str = "",
                     k: int | None = None) -> str:
    """The retrieval report of one consultation (a trajectory step's note, JSON): stage, the
    templates that held, the project's query, `k` (the top-k asked; None when the caller gave
    none) and the hits with scores, where each came from (`source`, `via`) and why it was chosen
    (`why`: why it may serve the project and which queries or lists found it; `Hit.report`)."""
    return json.dumps({"stage": stage, "repo": ctx.repo if ctx else "", "templates": list(rules),
                       "query": query[:400], "k": k, "hits": [h.report() for h in hits]})


def context_retrieval(run, profile, plan: Plan, eco, stage: str = "before-plan") -> tuple[RepoContext | None, list]:
    """The project's context for `plan` and, with `memory.before_plan`, its context retrieval.

    The context is set on the helper (`helper.context`: retrieval after failures and at test time
    is specific to the project, issue 30) and recorded (a `memory` `context` step) whatever
    `memory.before_plan`; with it on, the top `memory.before_plan_k` entries are retrieved, kept
    for the LLM's prompts (`helper.context_hits`, and the context they were retrieved for in
    `helper.context_hits_for`) and reported (a `retrieval` step whose report names `stage`).
    Returns (context, hits): (None, []) without a memory or for a language outside the memory's
    vocabulary; hits [] with `memory.before_plan` off. Raises what the memory raises."""
    cfg = run.config
    helper = run.helper
    memory = getattr(helper, "memory", None)
    if memory is None:
        return None, []
    ctx = context_for(run, profile, plan, eco)
    if ctx is None:
        return None, []
    helper.context = ctx  # retrieval after failures is specific to the project too (issue 30)
    run.traj(StepRecord(agent="memory", rule="context", note=ctx.model_dump_json()))
    if not cfg.memory.before_plan:
        return ctx, []
    hits = memory.retrieve(ctx, k=cfg.memory.before_plan_k)
    helper.context_hits, helper.context_hits_for = hits, ctx
    run.traj(StepRecord(agent="memory", rule="retrieval", note=retrieval_report(
        stage, ctx, hits, [r.id for r in memory.retriever.rules.queries(ctx)], ctx.profile_query(),
        k=cfg.memory.before_plan_k)))
    return ctx, hits


def context_before_llm_plan(run, profile, plan: Plan, eco) -> None:
    """The context retrieval for the rules' `plan` (`context_retrieval`, stage "before-llm-plan"),
    run before the LLM is asked for its plan under `llm`, so the planning prompt's experience
    block (`agents.repair.experience_block`, which adds `helper.context_hits`) carries the
    project's entries. `memory_before_plan` reuses it when the plan kept has the same context.
    Never raises (a memory problem is a trajectory step)."""
    try:
        context_retrieval(run, profile, plan, eco, stage="before-llm-plan")
    except Exception as e:  # noqa: BLE001 - the memory never fails a build
        run.traj(StepRecord(agent="memory", rule="before-plan:error", note=f"{type(e).__name__}: {e}"))


def memory_before_plan(run, profile, plan: Plan, eco, request: PlanRequest, uses: list[str] | None = None) -> PlanRequest:
    """`request` with the changes proven memory entries make before planning (module docstring);
    the same request when the memory is off, empty or has nothing proven. The project's context
    (a `memory` `context` step), the retrieval report (`retrieval`) and the hits (for the LLM's
    prompts: `helper.context_hits`) are recorded whatever the policy (`context_retrieval`; when
    the retrieval already ran for the same context before the LLM's plan, `context_before_llm_plan`,
    its hits are reused and nothing is recorded again); under `llm` nothing is applied. `uses`
    receives the ids of the entries applied (the loop scores them). Never raises (a memory
    problem is a trajectory step)."""
    cfg = run.config
    helper = run.helper
    if getattr(helper, "memory", None) is None:
        return request
    try:
        ctx = context_for(run, profile, plan, eco)
        if ctx is None:
            return request
        if cfg.memory.before_plan and ctx == getattr(helper, "context_hits_for", None):
            hits = helper.context_hits  # retrieved for this very context before the LLM's plan
        elif not cfg.memory.before_plan and ctx == getattr(helper, "context", None):
            return request  # this very context was set and recorded before the LLM's plan
        else:
            ctx, hits = context_retrieval(run, profile, plan, eco)
            if ctx is None or not cfg.memory.before_plan:
                return request
    except Exception as e:  # noqa: BLE001 - the memory never fails a build
        run.traj(StepRecord(agent="memory", rule="before-plan:error", note=f"{type(e).__name__}: {e}"))
        return request
    if not getattr(helper, "use_memory_actions", True):
        return request
    new = request.model_copy(deep=True)
    applied: list[str] = []
    variables = {"python_version": version_of(plan.toolchain) or "", "ca_bundle": "/opt/swemint/ca.pem"}
    for h in hits:
        e = h.experience
        if not proactive(h, cfg.memory.before_plan_reliability):
            continue
        bound, _ = bind_actions(e.actions, variables)
        bound, refused = own_refusals(bound, ctx.own)
        for why in refused:
            run.traj(StepRecord(agent="memory", rule=f"own-package:{e.id}", note=f"not applied: {why}"[:2000]))
        changes = [c for a in bound if (c := _apply(a, plan, eco, new))]
        if changes:
            applied.append(f"{e.id}: {', '.join(changes)}")
            new.reasons.append(f"memory {e.id}")
            if uses is not None:
                uses.append(e.id)
    run.traj(StepRecord(agent="memory", rule="before-plan",
                        note=f"{len(hits)} entries retrieved ({', '.join(h.experience.id for h in hits[:10])}); "
                             f"applied: {applied or 'none'}"[:2000]))
    return new if applied else request
