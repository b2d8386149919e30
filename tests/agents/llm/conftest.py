"""Fixtures of the LLM tests: the scripted OpenAI-compatible server, a gateway pointed at it,
a recording sleep, and the API key in the environment."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # `tests.fakes` must import however pytest was started
    sys.path.insert(0, str(ROOT))

from tests.fakes.openai_server import Reply, ScriptedOpenAI  # noqa: E402

KEY_ENV = "SWEMINT_TEST_LLM_KEY"
KEY = "sk-test-9f8e7d6c5b4a-DO-NOT-LOG"



@pytest.fixture
def key(monkeypatch) -> str:
    """The API key, set in the environment variable the gateway config names."""
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


@pytest.fixture
def server() -> Iterator[ScriptedOpenAI]:
    """A scripted server with an empty script (tests `push` their replies)."""
    with ScriptedOpenAI() as srv:
        yield srv


@pytest.fixture
def make_gateway(server, sleeps, key) -> Callable:
    """`make_gateway(*replies, **config)`: the replies pushed to the server, and an `LLMGateway`
    on it (model `openai/scripted-model`, key from `KEY_ENV`, short timeout, recording sleep)."""
    from agents.llm import LLMConfig, LLMGateway

    def make(*replies: Reply, **overrides):
        server.push(*replies)
        cfg = {"model": "openai/scripted-model", "api_base": server.base_url, "api_key_env": KEY_ENV,
               "timeout": 5.0, "max_retries": 3, **overrides}
        return LLMGateway(LLMConfig(**cfg), sleep=sleeps)

    return make
