"""Fixtures for the experience memory tests: the seed set, golden error logs, a fresh memory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agents.memory.api import ExperienceMemory, MemoryConfig
from agents.memory.experience import Experience
from agents.memory.experience_store import load_seed_files

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def seeds() -> list[Experience]:
    """The team's seed set, parsed once."""
    return load_seed_files()


@pytest.fixture(scope="session")
def golden() -> Callable[[str], str]:
    """`golden("uv_abi")` -> the text of tests/agents/memory/data/uv_abi.log (a real output)."""
    return lambda name: (DATA / f"{name}.log").read_text(encoding="utf-8")


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[ExperienceMemory]:
    """A fresh memory in a DuckDB file under tmp_path, seeded."""
    mem = ExperienceMemory.open(MemoryConfig(path=tmp_path / "memory.duckdb"))
    yield mem
    mem.close()
