"""Fixtures of the source tests: the fake GitHub server, a recording sleep, the token env."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # `tests.fakes` must import however pytest was started
    sys.path.insert(0, str(ROOT))

from tests.fakes.github_server import FakeGitHub  # noqa: E402
from tests.pipeline.sources.support import TOKEN  # noqa: E402


@pytest.fixture
def server():
    """The fake GitHub with the hand-written fixtures of tests/data/github."""
    with FakeGitHub() as srv:
        yield srv



@pytest.fixture
def env(monkeypatch) -> dict:
    """GITHUB_TOKEN set to `TOKEN` (in os.environ too, as the CLI would see it)."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    return {"GITHUB_TOKEN": TOKEN}
