"""The LLM side of the agents: one gateway (the only litellm user), a scripted fake, and a
tool-using loop. Importing this package does not import litellm (it loads on the first request).

Modules: `types` (the `LLMClient` protocol, `LLMResult`, `ToolCall`), `llm_config` (`LLMConfig`),
`llm_errors`, `usage` (per-instance / per-agent ledger), `cache`, `structured` (JSON extraction and
the repair message), `retry` (Retry-After), `core` (shared `complete()`), `gateway` (litellm),
`fake_llm` (`FakeLLM`), `toolloop` (`run_tool_loop`).
"""

from agents.llm.llm_config import CostOverride, LLMConfig
from agents.llm.llm_errors import (
    LLMConfigError, LLMContextOverflowError, LLMError, LLMOutputError, LLMRequestError, LLMUnavailableError,
)
from agents.llm.fake_llm import FakeLLM, tool_reply
from agents.llm.gateway import LLMGateway
from agents.llm.toolloop import RUN_SHELL, ToolLoopConfig, ToolLoopResult, ToolStep, run_tool_loop, truncate
from agents.llm.types import LLMClient, LLMResult, Message, Reply, Tool, ToolCall
from agents.llm.usage import Usage, UsageLedger

__all__ = [
    "RUN_SHELL", "CostOverride", "FakeLLM", "LLMClient", "LLMConfig", "LLMConfigError",
    "LLMContextOverflowError", "LLMError", "LLMGateway", "LLMOutputError", "LLMRequestError", "LLMResult",
    "LLMUnavailableError", "Message", "Reply", "Tool", "ToolCall", "ToolLoopConfig", "ToolLoopResult",
    "ToolStep", "Usage", "UsageLedger", "run_tool_loop", "tool_reply", "truncate",
]
