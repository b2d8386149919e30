"""The seams of the agents in one short file (as mini-swe-agent declares its interfaces): the
ecosystem, the repair backend, the LLM client and, re-exported from the harness layer, the
sandbox. Everything else in `agents` is an implementation of or a caller of these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from agents.ecosystems.base import Ecosystem
from agents.llm.types import LLMClient
from envpool.sandbox import Sandbox, SandboxFactory


class RepairBackend(Protocol):
    """What Execution and the other agents ask beyond the rules (`agents.repair.RepairHelper`):
    the experience memory's plans for a failed step, the LLM's repair of it, and one structured
    question per agent. `memory` / `llm` are None when that backend is off."""

    memory: Any
    llm: LLMClient | None
    llm_leads: bool

    def memory_plans(self, output: str, language: str, variables: dict[str, str] | None = None,
                     skip: Callable[[list], bool] | None = None, on_step=None) -> list:
        """Plans of the memory entries whose signature matches `output`, not yet applied."""
        ...

    def mark_applied(self, plan, on_step=None) -> str:
        """Record that `plan` is applied (once per instance); its step rule."""
        ...

    def llm_fix(self, command: str, output: str, *, language: str, toolchain: str,
                execute: Callable[[str], tuple[int, str]], on_step=None, hint: str = "") -> tuple[list[str], str]:
        """The LLM tool loop on a failed command: (the commands that succeeded, a note). `hint`:
        what the ecosystem says a repairer should know (`Ecosystem.repair_hint`)."""
        ...

    def consult(self, system: str, task: str, model, agent: str, rule: str, traj):
        """One structured answer validated by `model` (or None), recorded as a step."""
        ...

    def usage(self) -> dict[str, Any]:
        """The instance's LLM usage by agent (tokens, USD)."""
        ...


__all__ = ["Ecosystem", "LLMClient", "RepairBackend", "Sandbox", "SandboxFactory"]
