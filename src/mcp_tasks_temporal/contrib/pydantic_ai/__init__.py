"""Sub-agents in tasks: a durable pydantic-ai agent loop as a workflow tool (the `agent` extra).

from mcp_tasks_temporal.contrib.pydantic_ai import sub_agent_tool
"""

try:
    import pydantic_ai  # noqa: F401  # pyright: ignore[reportUnusedImport]
except ImportError as missing:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        'mcp_tasks_temporal.contrib.pydantic_ai needs the agent extra: pip install "mcp-tasks-temporal[agent]"'
    ) from missing

from mcp_tasks_temporal.contrib.pydantic_ai.sub_agent import (
    TaskProgress,
    ask_user,
    configure_model,
    sub_agent_tool,
    worker_plugins,
)

__all__ = ["TaskProgress", "ask_user", "configure_model", "sub_agent_tool", "worker_plugins"]
