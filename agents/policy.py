"""The repair policy of one instance: which backends help the rules (`MintConfig.policy`).

- `rules`: rules, then the experience memory (when `memory.enabled`);
- `hybrid`: rules, memory, then the LLM tool loop (needs `llm`);
- `llm`: the LLM repairs every failure, the memory's entries in its prompt (needs `llm`).

Workers never write the memory (DuckDB allows one writer per file; the pipeline driver is it):
`worker_memory` copies the file's entries into an in-memory store, holding the file read-only for
milliseconds, and falls back to the seed set when the file is absent or locked.
"""

from __future__ import annotations

import logging

from agents.mint_config import MintConfig
from agents.repair import RepairHelper

log = logging.getLogger(__name__)


def worker_memory(config: MintConfig):
    """An in-memory `ExperienceMemory` for one worker: the entries of `config.memory_path()` when
    it can be read, else the seed set. None when the memory is disabled or cannot be opened."""
    if not config.memory.enabled:
        return None
    from agents.memory.api import ExperienceMemory, MemoryConfig
    from agents.memory.experience_store import ExperienceStore

    from agents.memory.retrieve import RetrievalConfig

    path = config.memory_path()
    retrieval = RetrievalConfig(floor=config.memory.floor, min_uses=config.memory.min_uses)
    try:
        if path.is_file():
            try:
                with ExperienceStore(path, read_only=True) as src:
                    entries = src.all()
                mem = ExperienceMemory.open(MemoryConfig(path=None, seed_dir=None, retrieval=retrieval))
                mem.store.add_many(entries, keep_counters=False)
                return mem
            except Exception as e:  # noqa: BLE001 - locked by the driver mid-write: use the seeds
                log.info("experience memory %s not readable (%s): using the seed set", path, e)
        return ExperienceMemory.open(MemoryConfig(path=None, retrieval=retrieval))
    except Exception as e:  # noqa: BLE001 - a broken seed set must not stop minting
        log.warning("experience memory unavailable: %s", e)
        return None


def make_helper(config: MintConfig, instance_id: str, llm=None, memory=None) -> RepairHelper | None:
    """The `RepairHelper` of `config.policy` for one instance, or None when nothing helps the rules.

    `llm`: an `LLMClient` to use (tests pass `FakeLLM`); default under `llm` / `hybrid`: an
    `LLMGateway(config.llm)`. `memory`: an `ExperienceMemory` (default: `worker_memory(config)`).
    Raises ValueError when the policy needs a model and none is configured or given.
    """
    if config.policy != "rules" and llm is None:
        if config.llm is None:
            raise ValueError(f"policy {config.policy!r} needs an `llm` block in the mint config")
        from agents.llm import LLMGateway

        llm = LLMGateway(config.llm)
    if config.policy == "rules":
        llm = None
    memory = memory if memory is not None else worker_memory(config)
    if memory is None and llm is None:
        return None
    return RepairHelper(memory, llm, use_memory_actions=config.policy != "llm", k=config.memory.k,
                        llm_max_steps=config.llm_max_steps, llm_max_repairs=config.llm_max_repairs,
                        instance_id=instance_id, llm_leads=config.policy == "llm")
