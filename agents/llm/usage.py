"""Token and cost accounting per instance and per agent, dumpable to JSON for the trajectory and
the dataset row (idea: mini-swe-agent's `GLOBAL_MODEL_STATS`, but keyed, and not global).

`UsageLedger.to_dict()` has the shape

    {"total": Usage, "by_agent": {agent: Usage},
     "by_instance": {instance_id: {"total": Usage, "by_agent": {agent: Usage}}}}

where a `Usage` is `{"calls", "cached_calls", "failed_calls", "requests", "prompt_tokens",
"completion_tokens", "cost_usd", "unpriced_requests"}`. Calls made without an instance id count in
`total` and `by_agent` only. Cache hits count as `cached_calls` and add no tokens or cost: the
ledger counts what was spent.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from pydantic import BaseModel, ConfigDict


class Usage(BaseModel):
    """What some LLM calls spent. Tokens are counts, `cost_usd` is in US dollars."""

    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    """`complete()` calls that returned a result (cached ones included)."""
    cached_calls: int = 0
    """Calls answered from the on-disk cache (no request, no cost)."""
    failed_calls: int = 0
    """Calls that raised an `LLMError`."""
    requests: int = 0
    """HTTP requests sent (retries and repair rounds included)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_requests: int = 0
    """Requests whose cost litellm could not compute (unknown model, no `cost` override): cost 0."""

    def add(self, other: Usage) -> None:
        """Add `other` into this one, in place."""
        for name in Usage.model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.cost_usd = round(self.cost_usd, 10)  # no 0.7000000000000001 in the dumps


class UsageLedger:
    """Thread-safe totals of `Usage`, by agent and by instance."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.total = Usage()
        self.by_agent: dict[str, Usage] = {}
        self.by_instance: dict[str, dict[str, Usage]] = {}

    def record(self, agent: str, instance_id: str | None, delta: Usage) -> None:
        """Add `delta` to the total, to `agent`, and to (`instance_id`, `agent`) when given."""
        with self._lock:
            self.total.add(delta)
            self.by_agent.setdefault(agent, Usage()).add(delta)
            if instance_id is not None:
                self.by_instance.setdefault(instance_id, {}).setdefault(agent, Usage()).add(delta)

    def for_instance(self, instance_id: str) -> dict:
        """`{"total": {...}, "by_agent": {agent: {...}}}` of one instance (zeros if unseen)."""
        with self._lock:
            agents = self.by_instance.get(instance_id, {})
            total = Usage()
            for u in agents.values():
                total.add(u)
            return {"total": total.model_dump(), "by_agent": {a: u.model_dump() for a, u in agents.items()}}

    def to_dict(self) -> dict:
        """The whole ledger as plain JSON-able dicts (shape in the module docstring)."""
        with self._lock:
            ids = list(self.by_instance)
            out = {"total": self.total.model_dump(),
                   "by_agent": {a: u.model_dump() for a, u in self.by_agent.items()}}
        out["by_instance"] = {i: self.for_instance(i) for i in ids}
        return out

    def dump(self, path: Path | str) -> Path:
        """Write `to_dict()` as JSON to `path`; returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True), encoding="utf-8")
        return path
