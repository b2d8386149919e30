"""Repairs beyond the rules: the experience memory, then the LLM tool loop (the policy's backends).

`RepairHelper` is what `PythonEnvBuilder` calls when its own rules find no repair for a failed
`uv pip install` or probe (`helper(builder, command, output, tried) -> fix key | None`):

1. **Memory** (EnvPilot's trajectory-derived memory, arXiv 2609.07357): `memory.actions_for(...)`
   gives plans whose error signature matches the output; the first plan not yet applied in this
   instance is applied (action kinds mapped below) and a step `rule="memory:<id>"` is written to
   the trajectory. The fix key `experience <id>` becomes the failed step's note
   (`repair: experience <id>`), which `memory.learn` counts as an application of that entry.
2. **LLM** (policies `hybrid` and `llm`): `agents.llm.run_tool_loop` with a `run_shell` that runs
   in the build sandbox (observations truncated by the loop), the failed command, its output and
   the memory's matching entries (`format_for_prompt`) in the prompt. Its successful commands are
   kept in the setup script and noted as JSON shell actions, so learning can distil them.

Action kinds -> effect: `uv_lift` -> the package's date bound lifted, wheels only; `uv_option`
`no_build_isolation` -> `--no-build-isolation`; `pin` / `install` -> `uv pip install`; `env` ->
the build environment; `shell` -> a recorded command. `apt`, `toolchain`, `test_arg` and
`prerelease_allow` are not applicable to a running Python build and are skipped.
"""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any

from agents.models import StepRecord

if TYPE_CHECKING:  # pragma: no cover
    from agents.python_setup import PythonEnvBuilder

SYSTEM_PROMPT = (
    "You repair the Python test environment of a repository checked out at /testbed inside a "
    "Debian container. The virtualenv is /opt/venv (activated; install with `uv pip install`). "
    "Run shell commands with the run_shell tool to diagnose and fix the failure, then answer with "
    "one short sentence without calling a tool. Never edit files under /testbed that git tracks, "
    "never change the tests, and never download anything but packages from the package index.")


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
    """

    def __init__(self, memory=None, llm=None, *, use_memory_actions: bool = True, k: int = 3,
                 llm_max_steps: int = 8, llm_max_repairs: int = 3, instance_id: str | None = None):
        self.memory = memory
        self.llm = llm
        self.use_memory_actions = use_memory_actions
        self.k = k
        self.llm_max_steps = llm_max_steps
        self.llm_max_repairs = llm_max_repairs
        self.instance_id = instance_id
        self.applied: list[str] = []
        """Experience ids applied in this instance, in order (each at most once)."""
        self.llm_repairs = 0

    def __call__(self, builder: PythonEnvBuilder, command: str, output: str, tried: set[str]) -> str | None:
        fix = self._memory(builder, output, tried) if self.use_memory_actions else None
        return fix or self._llm(builder, command, output)

    # -- memory ---------------------------------------------------------------------------
    def _variables(self, b: PythonEnvBuilder) -> dict[str, str]:
        return {"project_version": b.env.get("SETUPTOOLS_SCM_PRETEND_VERSION", ""),
                "python_version": b.choice.version, "commit_date": b.choice.exclude_newer[:10],
                "ca_bundle": "/opt/swemint/ca.pem", "venv": "/opt/venv"}

    def _memory(self, b: PythonEnvBuilder, output: str, tried: set[str] | None = None) -> str | None:
        if self.memory is None:
            return None
        try:
            plans = self.memory.actions_for(output, "python", variables=self._variables(b), k=self.k)
        except Exception as e:  # noqa: BLE001 - a memory problem never fails a build
            b.steps.append(StepRecord(agent="execution", rule="memory:error", note=f"{type(e).__name__}: {e}"))
            return None
        for plan in plans:
            if plan.experience_id in self.applied or repeats_rule(plan.actions, tried or set()):
                continue
            self.applied.append(plan.experience_id)
            rule = f"memory:{plan.experience_id}"
            step = StepRecord(agent="execution", rule=rule,
                              note=f"applying experience {plan.experience_id} ({plan.via}, reliability "
                                   f"{plan.reliability:.2f}): {plan.solution[:300]} | actions: "
                                   + json.dumps([a.model_dump() for a in plan.actions])[:600])
            b.steps.append(step)
            if b.on_step:
                b.on_step(step)
            if any([apply_action(b, a, rule) for a in plan.actions]):  # every action runs
                return f"experience {plan.experience_id}"
        return None

    # -- LLM ------------------------------------------------------------------------------
    def _llm(self, b: PythonEnvBuilder, command: str, output: str) -> str | None:
        if self.llm is None or self.llm_repairs >= self.llm_max_repairs:
            return None
        from agents.llm import ToolLoopConfig, run_tool_loop
        from agents.llm.errors import LLMError

        self.llm_repairs += 1
        lessons = ""
        if self.memory is not None:
            try:
                from agents.memory.retrieve import format_for_prompt

                lessons = format_for_prompt(self.memory.retrieve_for_error(output, "python", k=5), max_chars=3000)
            except Exception:  # noqa: BLE001
                lessons = ""
        task = (f"This command failed in the build environment:\n{command}\n\nIts output (tail):\n"
                f"{output[-3000:]}\n\n" + (f"Experience from earlier builds:\n{lessons}\n\n" if lessons else "")
                + "Fix the environment so that the command succeeds when it is run again.")
        done: list[str] = []

        def execute(cmd: str) -> tuple[int, str]:
            r = b.run(cmd, "llm:execution")
            if r.ok:
                done.append(cmd)
            return r.exit_code, r.output

        try:
            loop = run_tool_loop(self.llm, system_prompt=SYSTEM_PROMPT, task=task, execute=execute,
                                 agent="execution", instance_id=self.instance_id,
                                 config=ToolLoopConfig(max_steps=self.llm_max_steps))
            note = f"llm {loop.stopped}, {len(loop.steps)} commands, {loop.usage.prompt_tokens}+" \
                   f"{loop.usage.completion_tokens} tokens: {(loop.final_text or '')[:200]}"
            tokens = loop.usage.prompt_tokens + loop.usage.completion_tokens
        except LLMError as e:
            note, tokens = f"llm failed: {type(e).__name__}: {e}", 0
        step = StepRecord(agent="execution", rule="llm:repair", note=note, tokens=tokens)
        b.steps.append(step)
        if b.on_step:
            b.on_step(step)
        if not done:
            return None
        return json.dumps([{"kind": "shell", "command": c} for c in done])

    def usage(self) -> dict[str, Any]:
        """This instance's LLM usage `{"total": ..., "by_agent": ...}` ({} without an LLM or calls)."""
        ledger = getattr(self.llm, "usage", None)
        if ledger is None or self.instance_id is None or not self.llm_repairs:
            return {}
        return ledger.for_instance(self.instance_id)


def repeats_rule(actions, tried: set[str]) -> bool:
    """True when every action only redoes a repair the rules already made in this step
    (`tried` keys: `lift|exempt|upgrade <pkg>`, `isolation`): applying it cannot help."""
    def done(a) -> bool:
        if a.kind == "uv_lift":
            return any(f"{verb} {a.package.lower()}" in tried for verb in ("lift", "exempt", "upgrade"))
        if a.kind == "uv_option":
            return a.option == "no_build_isolation" and "isolation" in tried
        return False
    return bool(actions) and all(done(a) for a in actions)


def apply_action(b: PythonEnvBuilder, action, rule: str) -> bool:
    """Apply one memory action to builder `b` (see the module docstring); True when it took effect."""
    kind = action.kind
    if kind == "uv_lift":
        pkg = action.package.lower()
        b.uv.package_dates[pkg] = b.lifted
        if pkg not in b.uv.no_build:
            b.uv.no_build.append(pkg)
        return True
    if kind == "uv_option":
        if action.option == "no_build_isolation" and not b.uv.no_build_isolation:
            b.uv.no_build_isolation = True
            return True
        return False
    if kind == "pin":
        return b.uv_install(shlex.quote(action.requirement), rule).ok
    if kind == "install":
        return b.uv_install(" ".join(shlex.quote(p) for p in action.packages), rule).ok
    if kind == "env":
        b.env[action.name] = action.value
        return True
    if kind == "shell":
        return b.run(action.command, rule).ok
    return False
