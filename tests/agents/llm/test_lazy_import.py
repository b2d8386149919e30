"""Importing the gateway must not import litellm; the first request imports it offline."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.llm
ROOT = Path(__file__).resolve().parents[3]

SCRIPT = textwrap.dedent("""
    import os, sys
    os.environ.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)
    import agents.llm, agents.llm.gateway
    from agents.llm import LLMConfig, LLMConfigError, LLMGateway
    gw = LLMGateway(LLMConfig(model="openai/x", api_base="http://127.0.0.1:9/v1", api_key_env=None))
    assert "litellm" not in sys.modules and "openai" not in sys.modules, "imported too early"

    seen = {}
    class Block:  # stands for an install without the `llm` extra; records the env at import time
        def find_spec(self, name, path=None, target=None):
            if name == "litellm":
                seen["cost_map_env"] = os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP")
                raise ImportError("blocked")
    sys.meta_path.insert(0, Block())
    try:
        gw.complete([{"role": "user", "content": "hi"}], agent="t")
    except LLMConfigError as e:
        assert "pip install 'swemint[llm]'" in str(e), e
    else:
        raise AssertionError("no LLMConfigError")
    assert seen == {"cost_map_env": "True"}, seen
    print("ok")
""")


def test_import_does_not_load_litellm_and_first_use_sets_local_cost_map():
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
