"""Typed configuration of the LLM gateway (one pydantic model, `extra="forbid"`, as SWE-ReX's
deployment configs): a typo in YAML is an error, not a silently ignored key.

The API key itself is never part of the config: `api_key_env` names the environment variable
that holds it. The CLI checks at load that the variable is set when `mint.policy` is `hybrid` or
`llm` (`pipeline.cli.config_from_options`); the gateway reads its value when it sends a request.
Nothing here is sent to a model or into a container.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class CostOverride(BaseModel):
    """Prices in USD per 1,000 tokens, for models litellm's cost map does not know (a local vLLM
    server, a fine-tune). Registered with `litellm.register_model` so `completion_cost` works."""

    model_config = ConfigDict(extra="forbid")

    input_per_1k: float = Field(default=0.0, ge=0)
    """USD per 1,000 prompt tokens."""
    output_per_1k: float = Field(default=0.0, ge=0)
    """USD per 1,000 completion tokens."""


class LLMConfig(BaseModel):
    """How to reach the model and how hard to try.

    Example (YAML): `llm: {model: openai/gpt-4o-mini, api_key_env: OPENAI_API_KEY,
    cache_dir: /work/cache/llm}`; a local OpenAI-compatible server: `model: openai/qwen2.5-coder,
    api_base: http://127.0.0.1:8000/v1, api_key_env: null, cost: {input_per_1k: 0, output_per_1k: 0}`.
    """

    model_config = ConfigDict(extra="forbid")

    model: str = "openai/gpt-4o-mini"
    """litellm model name, `provider/name` (e.g. `openai/gpt-4o-mini`, `anthropic/claude-...`)."""
    api_base: str | None = None
    """Base URL of the endpoint (e.g. `http://127.0.0.1:8000/v1`); None: the provider's default."""
    api_key_env: str | None = "OPENAI_API_KEY"
    """Name of the environment variable holding the key. None: send no key (local servers)."""
    temperature: float = Field(default=0.0, ge=0, le=2)
    """Sampling temperature; 0 keeps runs as repeatable as the provider allows."""
    max_tokens: int | None = Field(default=4096, gt=0)
    """Upper bound of completion tokens per request; None: the provider's default."""
    timeout: float = Field(default=120.0, gt=0)
    """Seconds one HTTP request may take before it counts as a (retryable) timeout."""
    max_retries: int = Field(default=5, ge=0)
    """Retries after the first attempt, for transient errors only (429, timeout, connection, 5xx)."""
    retry_wait_min: float = Field(default=1.0, ge=0)
    """Seconds of the first back-off when the server gives no Retry-After (exponential, jittered)."""
    retry_wait_max: float = Field(default=60.0, ge=0)
    """Seconds: cap of the exponential back-off."""
    max_retry_after: float = Field(default=120.0, ge=0)
    """Seconds: cap on an honoured `Retry-After` (a server asking for an hour gets this instead)."""
    cache_dir: Path | None = None
    """Directory of the on-disk response cache; None: no cache."""
    cost: CostOverride | None = None
    """Prices for a model litellm does not know, or to override its price; None: litellm's map."""
    schema_in_prompt: bool = True
    """With a `response_model`, append a message asking for JSON matching its JSON schema."""
