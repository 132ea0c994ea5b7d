"""A tool task's input as the front builds it, for tests that create tasks through the gateway itself."""

from __future__ import annotations

import time
from typing import Any

from mcp_tasks_temporal.temporal.contract import ToolTaskInput
from mcp_tasks_temporal.temporal.ids import new_task_id


def tool_task(
    tool: str, arguments: dict[str, Any] | None = None, *, meta: dict[str, Any] | None = None, ttl_ms: int = 600_000
) -> ToolTaskInput:
    """A new task of `tool` created now, with a fresh task ID, a long TTL and the front's usual poll interval."""
    return ToolTaskInput(
        task_id=new_task_id(),
        tool=tool,
        arguments=arguments or {},
        meta=meta or {},
        created_at_ms=int(time.time() * 1000),
        ttl_ms=ttl_ms,
        poll_interval_ms=250,
    )
