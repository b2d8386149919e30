"""The experience memory as one object: store + retriever + learning, and the calls the backends
make (EnvPilot's Trajectory-Derived Memory, arXiv 2609.07357).

Rule backend, when a step fails::

    plans = memory.actions_for(error_text, "python", variables={"project_version": "4.5.0"})
    for plan in plans:            # best first; apply one, rerun the step
        ...apply plan.actions...; step.note = f"repair: experience {plan.experience_id}"

After the instance: `memory.learn(trajectory, "python", instance_id)` (counts the outcome of the
referenced entries, and distils new lessons). The LLM backend puts
`format_for_prompt(memory.retrieve_for_error(...))` or `memory.retrieve(context)` in its prompt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.memory.actions import bind_actions, error_variables
from agents.memory.repo_context import RULES_FILE, ObstacleRules, RepoContext
from agents.memory.learn import DistilConfig, distil
from agents.memory.experience import Action, Experience, RuleAction, actions_key
from agents.memory.rank import Embedder
from agents.memory.retrieve import Hit, RetrievalConfig, Retriever
from agents.memory.experience_store import SEED_DIR, ExperienceStore
from agents.models import StepRecord


class MemoryConfig(BaseModel):
    """Where the memory lives and how it retrieves.

    `path`: the DuckDB file (None: in memory, nothing kept). Keep it under the run's work
    directory, outside the repository. `seed_dir`: seed JSONL files loaded at open (None: none).
    """

    model_config = ConfigDict(extra="forbid")
    path: Path | None = None
    seed_dir: Path | None = SEED_DIR
    rules_file: Path = RULES_FILE
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    distil: DistilConfig = Field(default_factory=DistilConfig)


class ActionPlan(BaseModel):
    """The actions of one matching entry, placeholders bound from the error and the caller.

    `complete`: no action was dropped for an unbound placeholder (`unbound` names them).
    `reliability`: the entry's smoothed success rate (see Experience.reliability).
    """

    model_config = ConfigDict(extra="forbid")
    experience_id: str
    actions: list[Action]
    solution: str
    via: Literal["signature", "bm25"]
    reliability: float
    unbound: list[str] = Field(default_factory=list)

    @property
    def complete(self) -> bool:
        """True when every action could be bound."""
        return not self.unbound


class ExperienceMemory:
    """Store + retriever + learning. One writer: keep one instance per DuckDB file.

    Args:
        store: an open ExperienceStore.
        config: MemoryConfig (retrieval and distillation settings).
        embedder: optional dense embedder (used when `config.retrieval.embeddings`).
    """

    def __init__(self, store: ExperienceStore, config: MemoryConfig | None = None,
                 embedder: Embedder | None = None):
        self.store = store
        self.config = config or MemoryConfig()
        self.embedder = embedder
        self._rules = ObstacleRules.load(self.config.rules_file)
        self._retriever: Retriever | None = None
        self._revision = -1

    @classmethod
    def open(cls, config: MemoryConfig | None = None, embedder: Embedder | None = None) -> ExperienceMemory:
        """Open (or create) the store at `config.path` and load the seed set into it.
        Raises SeedError when a seed file is invalid."""
        config = config or MemoryConfig()
        store = ExperienceStore(config.path or ":memory:")
        if config.seed_dir is not None:
            store.load_seed(config.seed_dir)
        return cls(store, config, embedder)

    def close(self) -> None:
        """Close the store."""
        self.store.close()

    @property
    def retriever(self) -> Retriever:
        """A Retriever over the current entries (rebuilt after any write to the store)."""
        if self._retriever is None or self._revision != self.store.revision:
            self._retriever = Retriever(self.store.all(), self.config.retrieval, self._rules, self.embedder)
            self._revision = self.store.revision
        return self._retriever

    def retrieve(self, context: RepoContext, k: int | None = None, extra_queries: Sequence[str] = ()) -> list[Hit]:
        """Context-aware retrieval (likely-obstacle queries, plus `extra_queries` -> BM25 per query
        -> RRF -> top k)."""
        return self.retriever.retrieve(context, k=k, extra_queries=extra_queries)

    def retrieve_for_error(self, error_text: str, ecosystem: str, k: int | None = None,
                           ctx: RepoContext | None = None) -> list[Hit]:
        """Entries for a failed step's output (signature matches first, then BM25); with `ctx`,
        only those eligible for that project (`retrieve.eligible`)."""
        return self.retriever.retrieve_for_error(error_text, ecosystem, k=k, ctx=ctx)

    def dropped_entries(self) -> list[Experience]:
        """The entries below the floor (`Experience.dropped` with the retrieval's floor and
        min_uses), and the lessons bound to a rule that is (`Retriever.dropped`): never retrieved,
        applied or consulted."""
        return self.retriever.dropped()

    def dropped_rules(self, engine: str = "diagnosis") -> frozenset[str]:
        """The rules of `engine` whose entries fell below the floor (the rule engine skips them)."""
        return frozenset(a.rule for e in self.dropped_entries() if e.provenance.source == "rule"
                         for a in e.actions if isinstance(a, RuleAction) and a.engine == engine)

    def actions_for(self, error_text: str, ecosystem: str, variables: Mapping[str, str] | None = None,
                    k: int = 3, signature_only: bool = True, ctx: RepoContext | None = None) -> list[ActionPlan]:
        """Actions to try for a failed step, best first, at most `k` plans.

        Only entries whose error_signature matches the text are used unless `signature_only` is
        false (then BM25 hits follow). Placeholders are bound from the signature's groups, the
        error (`site_package`, `missing_module`) and `variables` (the caller's facts, e.g.
        project_version, ca_bundle, commit_date); `variables` win. A plan is left out when it has no
        action, or when matching negative entries with the same actions failed at least as often
        as the entry worked (known not to work here).
        """
        hits = self.retriever.retrieve_for_error(error_text, ecosystem, k=max(k * 4, 10), include_negative=True,
                                                 ctx=ctx)
        failed: dict[str, int] = {}  # actions -> how often they were seen not to fix this error
        for h in hits:
            if h.experience.negative and h.via == "signature" and h.experience.actions:
                bound, _ = bind_actions(h.experience.actions, {**error_variables(h.experience, error_text),
                                                               **(variables or {})})
                key = actions_key(bound)
                failed[key] = failed.get(key, 0) + h.experience.times_applied
        plans: list[ActionPlan] = []
        for h in hits:
            e = h.experience
            if e.negative or e.moves or (signature_only and h.via != "signature"):
                continue  # a lesson of moves is replayed before the build (`agents.memory.replay`), never here
            runnable = [a for a in e.actions if not isinstance(a, RuleAction)]  # rules act through their engine
            bound, unbound = bind_actions(runnable, {**error_variables(e, error_text), **(variables or {})})
            if not bound or failed.get(actions_key(bound), -1) >= e.times_worked:
                continue
            plans.append(ActionPlan(experience_id=e.id, actions=bound, solution=e.solution,
                                    via="signature" if h.via == "signature" else "bm25",
                                    reliability=e.reliability, unbound=unbound))
            if len(plans) >= k:
                break
        return plans

    def record_outcome(self, exp_id: str, worked: bool, instance_id: str | None = None, repo: str = "") -> Experience:
        """Count one application of entry `exp_id` (raises UnknownExperience). The retriever is
        updated in place (counters only), not rebuilt."""
        fresh = self._retriever is not None and self._revision == self.store.revision
        exp = self.store.record_outcome(exp_id, worked, instance_id, repo)
        if fresh and self._retriever is not None and self._retriever.replace(exp):
            self._revision = self.store.revision
        return exp

    def learn(self, trajectory: Sequence[StepRecord], ecosystem: str, instance_id: str,
              repo: str = "") -> list[Experience]:
        """Distil the instance's trajectory into new or reinforced entries and score the uses it
        records (see `learn.distil`); `repo` keys its lessons (`EntryContext.repos`)."""
        return distil(trajectory, ecosystem, instance_id, store=self.store, cfg=self.config.distil, repo=repo)


def actions_for(error_text: str, ecosystem: str, memory: ExperienceMemory,
                variables: Mapping[str, str] | None = None, k: int = 3) -> list[list[Action]]:
    """The bare action lists of `memory.actions_for` (signature matches only), best first."""
    return [p.actions for p in memory.actions_for(error_text, ecosystem, variables, k)]

