"""Experience memory (EnvPilot's Trajectory-Derived Memory, arXiv 2609.07357): known obstacles of
building test environments and their fixes, stored in DuckDB, retrieved by repository context or
by error text (BM25 + Reciprocal Rank Fusion), and learned from trajectories.

Modules: `experience` (Experience, actions), `experience_store` (DuckDB, seed loading), `text` (error text,
signatures), `rank` (BM25, RRF), `repo_context` (likely-obstacle queries), `retrieve`, `learn`,
`actions` (placeholders, repair notes), `api` (ExperienceMemory, the backends' entry point).
"""

from agents.memory.api import ActionPlan, ExperienceMemory, MemoryConfig, actions_for
from agents.memory.repo_context import RepoContext, context_from_python_profile
from agents.memory.learn import distil
from agents.memory.experience import Action, Experience
from agents.memory.retrieve import Hit, RetrievalConfig, Retriever, format_for_prompt
from agents.memory.experience_store import ExperienceStore, load_seed_files

__all__ = ["Action", "ActionPlan", "Experience", "ExperienceMemory", "ExperienceStore", "Hit", "MemoryConfig",
           "RepoContext", "RetrievalConfig", "Retriever", "actions_for", "context_from_python_profile", "distil",
           "format_for_prompt", "load_seed_files"]
