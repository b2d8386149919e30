"""The repair chain beyond an ecosystem's own rules: the experience memory, then the LLM tool loop
(the policy's backends), for every ecosystem.

`RepairHelper` holds one instance's backends and bounds:

1. **Memory** (EnvPilot's trajectory-derived memory, arXiv 2609.07357): `memory_plans(...)`
   gives the plans whose error signature matches a failed step's output, best first, each at
   most once per instance. The caller applies the actions (`agents.execution.apply_actions`
   for every ecosystem; Python's builder applies its uv-specific kinds itself) and writes the
   step `memory:<id>`; the repair note `repair: experience <id>` is what `memory.learn` counts.
2. **LLM** (policies `hybrid` and `llm`): `llm_fix(...)` runs `agents.llm.run_tool_loop` with a
   `run_shell` executing in the build sandbox, the failed command, its output and the memory's
   matching entries in the prompt; the commands that succeeded are the repair (kept in the setup
   script and noted as JSON shell actions, so learning can distil them).

The Python builder calls the helper as `helper(builder, command, output, tried) -> fix key`
(`__call__`), which runs both steps with the builder's own action executor.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agents.memory.actions import own_refusals
from agents.models import StepRecord

SYSTEM_PROMPT = (
    "You repair the {language} test environment of a repository checked out at /testbed inside a "
    "Debian container ({toolchain}). Run shell commands with the run_shell tool to diagnose and fix "
    "the failure, then answer with one short sentence without calling a tool. Never edit files "
    "under /testbed that git tracks, never change the tests, and never download anything but "
    "packages from the package registries.{extra}")


def experience_block(helper, text: str, language: str) -> str:
    """The memory's top entries for a prompt (issue 30: planning, repair and attribution prompts
    carry the experience): those eligible for the project that match `text`, then the context
    retrieval's; "" without a memory or entries."""
    lessons = helper.lessons(text or "", language) if hasattr(helper, "lessons") else ""
    return f"\nExperience from earlier builds (entries of the memory, best first):\n{lessons}\n" if lessons else ""


class RepairHelper:
    """Memory, then LLM, for failures the rules do not repair (see module docstring).

    Args:
        memory: an `agents.memory.ExperienceMemory` (None: no memory).
        llm: an `agents.llm.LLMClient` (None: no LLM; `FakeLLM` in tests).
        use_memory_actions: apply memory plans (False under the `llm` policy: the memory then
            only goes into the prompt).
        k: memory plans fetched per failure.
        llm_max_steps: model turns per LLM repair; llm_max_repairs: LLM repairs per instance.
        instance_id: for usage accounting.
        llm_leads: the `llm` policy (the model plans and attributes first, the rules are its tools).
    """

    def __init__(self, memory=None, llm=None, *, use_memory_actions: bool = True, k: int = 3,
                 llm_max_steps: int = 8, llm_max_repairs: int = 3, instance_id: str | None = None,
                 llm_leads: bool = False):
        self.memory = memory
        self.llm = llm
        self.use_memory_actions = use_memory_actions
        self.k = k
        self.llm_max_steps = llm_max_steps
        self.llm_max_repairs = llm_max_repairs
        self.instance_id = instance_id
        self.llm_leads = llm_leads
        self.applied: list[str] = []
        """Experience ids applied in this instance, in order (each at most once)."""
        self.context = None
        """The project's `agents.memory.RepoContext` once the loop knows it (retrieval is then
        specific to the project: another repository's lesson only when the contexts match)."""
        self.dropped: frozenset[str] = frozenset()
        """Ids of the entries below the memory's floor (rule repairs among them are not run)."""
        self.context_hits: list = []
        """The entries the context retrieval ranked before planning (for the LLM's prompts)."""
        self.context_hits_for = None
        """The `RepoContext` `context_hits` were retrieved for (`agents.memory.before.context_retrieval`)."""
        self.llm_repairs = 0
        self.llm_calls = 0
        """LLM requests made for this instance by any agent (repairs, plans, attributions)."""

    # -- memory ---------------------------------------------------------------------------
    def memory_plans(self, output: str, language: str, variables: dict[str, str] | None = None,
                     skip: Callable[[list], bool] | None = None, on_step=None) -> list:
        """The memory's plans for a failed step's `output` (signature matches, best first), not yet
        applied in this instance and not refused by `skip(actions)`. [] without a memory, when
        memory actions are off (the `llm` policy), or when the memory fails (noted as a step).

        Every path applying memory actions after a failure takes its plans here (the Python
        builder, `agents.execution`, the flow's test-time consultation): an action that would
        install, pin or lift the project's own package (`self.context.own`,
        `agents.memory.actions.own_refusals`) is left out of its plan, with a step
        `own-package:<id>` saying why; a plan with no action left is not offered."""
        if self.memory is None or not self.use_memory_actions:
            return []
        try:
            plans = self.memory.actions_for(output, language, variables=variables or {}, k=self.k, ctx=self.context)
        except Exception as e:  # noqa: BLE001 - a memory problem never fails a build
            if on_step:
                on_step(StepRecord(agent="execution", rule="memory:error", note=f"{type(e).__name__}: {e}"))
            return []
        own = list(getattr(self.context, "own", None) or [])
        out = []
        for p in plans:
            if p.experience_id in self.applied:
                continue
            kept, refused = own_refusals(p.actions, own)
            for why in refused:
                if on_step:
                    on_step(StepRecord(agent="execution", rule=f"own-package:{p.experience_id}",
                                       note=f"not applied: {why}"[:2000]))
            if not kept:
                continue
            if refused:
                p = p.model_copy(update={"actions": kept})
            if not (skip and skip(p.actions)):
                out.append(p)
        return out

    def mark_applied(self, plan, on_step=None) -> str:
        """Record that `plan` is being applied (once per instance); returns its step rule."""
        self.applied.append(plan.experience_id)
        rule = f"memory:{plan.experience_id}"
        if on_step:
            on_step(StepRecord(agent="execution", rule=rule,
                               note=f"applying experience {plan.experience_id} ({plan.via}, reliability "
                                    f"{plan.reliability:.2f}): {plan.solution[:300]} | actions: "
                                    + json.dumps([a.model_dump() for a in plan.actions])[:600]))
        return rule

    def lessons(self, output: str, language: str, k: int = 5) -> str:
        """The memory's entries for `output` (those eligible for the project), then the top
        entries of the context retrieval, formatted for a prompt ("" without a memory)."""
        if self.memory is None:
            return ""
        try:
            from agents.memory.retrieve import format_for_prompt

            hits = self.memory.retrieve_for_error(output, language, k=k, ctx=self.context) if output.strip() else []
            seen = {h.experience.id for h in hits}
            hits += [h for h in self.context_hits[:k] if h.experience.id not in seen]
            return format_for_prompt(hits, max_chars=3000)
        except Exception:  # noqa: BLE001
            return ""

    # -- LLM ------------------------------------------------------------------------------
    def llm_fix(self, command: str, output: str, *, language: str, toolchain: str,
                execute: Callable[[str], tuple[int, str]], on_step=None, hint: str = "") -> tuple[list[str], str]:
        """One LLM repair of a failed `command`: the tool loop runs commands through `execute`
        (which records them); returns (the commands that succeeded, a note). ([], "") without a
        model or once `llm_max_repairs` are spent; an LLM error is a note, never a raise."""
        if self.llm is None or self.llm_repairs >= self.llm_max_repairs:
            return [], ""
        from agents.llm import ToolLoopConfig, run_tool_loop
        from agents.llm.llm_errors import LLMError

        self.llm_repairs += 1
        lessons = self.lessons(output, language)
        task = (f"This command failed in the build environment:\n{command}\n\nIts output (tail):\n"
                f"{output[-3000:]}\n\n" + (f"Experience from earlier builds:\n{lessons}\n\n" if lessons else "")
                + "Fix the environment so that the command succeeds when it is run again.")
        done: list[str] = []

        def run(cmd: str) -> tuple[int, str]:
            code, out = execute(cmd)
            if code == 0:
                done.append(cmd)
            return code, out

        prompt = SYSTEM_PROMPT.format(language=language, toolchain=toolchain or "its toolchain",
                                      extra=f" {hint}" if hint else "")
        try:
            loop = run_tool_loop(self.llm, system_prompt=prompt, task=task, execute=run, agent="execution",
                                 instance_id=self.instance_id, config=ToolLoopConfig(max_steps=self.llm_max_steps))
            self.llm_calls += loop.usage.calls
            note = f"llm {loop.stopped}, {len(loop.steps)} commands, {loop.usage.prompt_tokens}+" \
                   f"{loop.usage.completion_tokens} tokens: {(loop.final_text or '')[:200]}"
            tokens = loop.usage.prompt_tokens + loop.usage.completion_tokens
        except LLMError as e:
            note, tokens = f"llm failed: {type(e).__name__}: {e}", 0
        if on_step:
            on_step(StepRecord(agent="execution", rule="llm:repair", note=note, tokens=tokens))
        return done, note

    def ask(self, messages: list[dict], model, agent: str):
        """One structured LLM call for an agent (`analysis`, `testconfig`, `verification`):
        `model` validates the answer. Returns (parsed model or None, tokens, note); never raises."""
        if self.llm is None:
            return None, 0, "no model"
        from agents.llm.llm_errors import LLMError

        try:
            r = self.llm.complete(messages, response_model=model, agent=agent, instance_id=self.instance_id)
        except LLMError as e:
            return None, 0, f"llm failed: {type(e).__name__}: {e}"
        self.llm_calls += max(r.requests, 1)
        return r.parsed, r.prompt_tokens + r.completion_tokens, f"{r.prompt_tokens}+{r.completion_tokens} tokens"

    def consult(self, system: str, task: str, model, agent: str, rule: str, traj):
        """`ask` with a system and a user message, the answer (or why there is none) recorded as
        the trajectory step `rule` of `agent` with its tokens. The parsed model or None."""
        parsed, tokens, note = self.ask([{"role": "system", "content": system}, {"role": "user", "content": task}],
                                        model, agent=agent)
        traj(StepRecord(agent=agent, rule=rule, tokens=tokens,
                        note=(parsed.model_dump_json() if parsed is not None else f"no answer: {note}")[:4000]))
        return parsed

    # -- the Python builder's entry point ----------------------------------------------------
    def __call__(self, builder, command: str, output: str, tried: set[str]) -> str | None:
        """Memory then LLM for the Python builder: `builder.memory_variables()`,
        `builder.apply_action(action, rule)` and `builder.repeats_rule(actions, tried)` are its
        executor. Returns the fix key (`experience <id>` or the LLM's commands as JSON) or None."""
        for plan in self.memory_plans(output, "python", builder.memory_variables(),
                                      skip=lambda acts: builder.repeats_rule(acts, tried), on_step=builder.record):
            rule = self.mark_applied(plan, on_step=builder.record)
            if any([builder.apply_action(a, rule) for a in plan.actions]):  # every action runs
                return f"experience {plan.experience_id}"

        def execute(cmd: str) -> tuple[int, str]:
            r = builder.run(cmd, "llm:execution")
            return r.exit_code, r.output

        done, _ = self.llm_fix(command, output, language="python", toolchain=f"Python {builder.choice.version}",
                               execute=execute, on_step=builder.record, hint=builder.repair_hint)
        return json.dumps([{"kind": "shell", "command": c} for c in done]) if done else None

    def usage(self) -> dict[str, Any]:
        """This instance's LLM usage `{"total": ..., "by_agent": ...}` ({} without an LLM or calls)."""
        ledger = getattr(self.llm, "usage", None)
        if ledger is None or self.instance_id is None or not (self.llm_repairs or self.llm_calls):
            return {}
        return ledger.for_instance(self.instance_id)
