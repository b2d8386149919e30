"""Smoke check of an LLM endpoint through the gateway: one structured request, then the usage.

    python -m agents.llm --model openai/gpt-4o-mini --api-key-env OPENAI_API_KEY
    python -m agents.llm --model openai/qwen2.5-coder --api-base http://127.0.0.1:8000/v1 \\
        --api-key-env '' --input-per-1k 0 --output-per-1k 0

Prints the reply, the parsed object, tokens and cost (USD), and the usage ledger as JSON; exits 1
with the (key-free) error message when the call fails. Needs the `llm` extra (litellm).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pydantic import BaseModel

from agents.llm.llm_config import CostOverride, LLMConfig
from agents.llm.llm_errors import LLMError
from agents.llm.gateway import LLMGateway


class Pong(BaseModel):
    """What the smoke request asks for."""

    answer: str
    model_family: str


def main(argv: list[str] | None = None) -> int:
    """Run the smoke check; returns the exit code (0 ok, 1 the call failed)."""
    p = argparse.ArgumentParser(prog="python -m agents.llm", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="openai/gpt-4o-mini", help="litellm model name, provider/name")
    p.add_argument("--api-base", default=None, help="endpoint base URL, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="env var holding the key ('' for none)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    p.add_argument("--max-retries", type=int, default=2, help="retries of transient errors")
    p.add_argument("--cache-dir", type=Path, default=None, help="response cache directory")
    p.add_argument("--input-per-1k", type=float, default=None, help="USD per 1K prompt tokens")
    p.add_argument("--output-per-1k", type=float, default=None, help="USD per 1K completion tokens")
    a = p.parse_args(argv)
    cost = None
    if a.input_per_1k is not None or a.output_per_1k is not None:
        cost = CostOverride(input_per_1k=a.input_per_1k or 0.0, output_per_1k=a.output_per_1k or 0.0)
    config = LLMConfig(model=a.model, api_base=a.api_base, api_key_env=a.api_key_env or None, timeout=a.timeout,
                       max_retries=a.max_retries, cache_dir=a.cache_dir, cost=cost, max_tokens=200)
    gateway = LLMGateway(config)
    messages = [{"role": "system", "content": "You are a connectivity check. Be brief."},
                {"role": "user", "content": 'Set "answer" to "pong" and "model_family" to your model family.'}]
    try:
        result = gateway.complete(messages, response_model=Pong, agent="smoke")
    except LLMError as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(json.dumps({"text": result.text, "parsed": result.parsed.model_dump() if result.parsed else None,
                      "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
                      "cost_usd": result.cost_usd, "cached": result.cached, "requests": result.requests,
                      "usage": gateway.usage.to_dict()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
