"""Sub-agents in tasks: a durable pydantic-ai agent loop as a workflow tool (the `agent` extra).

from mcp_tasks_temporal.contrib.pydantic_ai import sub_agent_tool
"""

from mcp_tasks_temporal.contrib import MissingExtra

try:
    # What the agent extra brings: pydantic-ai, its Temporal integration and its OpenAI-compatible models.
    import pydantic_ai.durable_exec.temporal  # pyright: ignore[reportUnusedImport]
    import pydantic_ai.models.openai  # noqa: F401  # pyright: ignore[reportUnusedImport]
except ImportError as missing:  # pragma: no cover - depends on the installed extras
    raise MissingExtra(__name__, "agent", missing) from missing

from mcp_tasks_temporal.contrib.pydantic_ai.sub_agent import (
    ASK_USER_METADATA,
    DEFAULT_MODEL,
    AgentModel,
    TaskProgress,
    agent_model,
    ask_user,
    configure_model,
    configured_model,
    sub_agent_tool,
    worker_plugins,
)

__all__ = [
    "ASK_USER_METADATA",
    "DEFAULT_MODEL",
    "AgentModel",
    "TaskProgress",
    "agent_model",
    "ask_user",
    "configure_model",
    "configured_model",
    "sub_agent_tool",
    "worker_plugins",
]
