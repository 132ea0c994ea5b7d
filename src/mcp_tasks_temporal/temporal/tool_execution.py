"""A task tool's call on a worker, where the task's activity runs the tool.

The activity (`activities/tool_call.py`) runs the app's own `tools/call` handler,
so the app's `TasksExtension` intercepts the call there as on a front. Everything
a call decides (its policy, the client's capabilities, the app's call checks) was
decided by the front that created the task; on the worker the interception only
lets the tool run, inside a tool call, and reaches no front code.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from mcp_tasks_temporal.temporal.progress import current_run
from mcp_tasks_temporal.temporal.task_context import tool_call


def in_task_run() -> bool:
    """Whether this code runs for a task's activity (the activity binds its run before calling the tool)."""
    return current_run() is not None


async def run_in_task(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Run the tool of a task's round: the rest of the `tools/call` chain, and the tool itself."""
    with tool_call():  # where `set_status` outside a task would be a no-op rather than a mistake
        return await call_next(ctx)
