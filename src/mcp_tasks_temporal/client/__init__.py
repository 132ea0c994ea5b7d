"""The client side of the MCP Tasks extension (SEP-2663), on the `mcp` SDK's `Client`.

    from mcp_tasks_temporal.client import TaskHandle, TasksClient

    async with TasksClient("http://127.0.0.1:8000/mcp") as client:
        # The final CallToolResult, whether the server answered at once or ran a task.
        result = await client.call_tool("build", {"ref": "main"})

        # Or take the task and do other work meanwhile.
        call = await client.start_tool("build", {"ref": "dev"})
        if isinstance(call, TaskHandle):
            async for task in call:               # each change, by push or polling
                print(task.status, task.status_message)
            result = await call.result()

        # After a crash: the tasks this client was waiting for, from its journal.
        for handle in client.pending():
            print(handle.task_id, await handle.result())

Over stdio, pass `mcp.client.stdio.StdioServerParameters` instead of a URL.
A plain `mcp.Client` gets transparent task results from `TasksClientExtension`.
The same features are on the command line: `mcp-tasks-temporal call|get|cancel|answer|watch|tasks`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "TasksClient": "mcp_tasks_temporal.client._client",
    "ToolCall": "mcp_tasks_temporal.client._client",
    "AuthenticationError": "mcp_tasks_temporal.client._errors",
    "InputDeferred": "mcp_tasks_temporal.client._errors",
    "ServerUnreachableError": "mcp_tasks_temporal.client._errors",
    "TaskCancelledError": "mcp_tasks_temporal.client._errors",
    "TaskFailedError": "mcp_tasks_temporal.client._errors",
    "TasksClientExtension": "mcp_tasks_temporal.client._extension",
    "OnChange": "mcp_tasks_temporal.client._handle",
    "TaskHandle": "mcp_tasks_temporal.client._handle",
    "WaitOptions": "mcp_tasks_temporal.client._handle",
    "WaitStats": "mcp_tasks_temporal.client._handle",
    "Journal": "mcp_tasks_temporal.client._journal",
    "JournalEntry": "mcp_tasks_temporal.client._journal",
    "default_journal_path": "mcp_tasks_temporal.client._journal",
    "EXTENSION_ID": "mcp_tasks_temporal.client._models",
    "TERMINAL_STATUSES": "mcp_tasks_temporal.client._models",
    "DetailedTask": "mcp_tasks_temporal.client._models",
    "TaskCreated": "mcp_tasks_temporal.client._models",
    "TaskStatus": "mcp_tasks_temporal.client._models",
}

__all__ = [
    "EXTENSION_ID",
    "TERMINAL_STATUSES",
    "AuthenticationError",
    "DetailedTask",
    "InputDeferred",
    "Journal",
    "JournalEntry",
    "OnChange",
    "ServerUnreachableError",
    "TaskCancelledError",
    "TaskCreated",
    "TaskFailedError",
    "TaskHandle",
    "TaskStatus",
    "TasksClient",
    "TasksClientExtension",
    "ToolCall",
    "WaitOptions",
    "WaitStats",
    "default_journal_path",
]

if TYPE_CHECKING:
    from mcp_tasks_temporal.client._client import TasksClient, ToolCall
    from mcp_tasks_temporal.client._errors import (
        AuthenticationError,
        InputDeferred,
        ServerUnreachableError,
        TaskCancelledError,
        TaskFailedError,
    )
    from mcp_tasks_temporal.client._extension import TasksClientExtension
    from mcp_tasks_temporal.client._handle import OnChange, TaskHandle, WaitOptions, WaitStats
    from mcp_tasks_temporal.client._journal import Journal, JournalEntry, default_journal_path
    from mcp_tasks_temporal.client._models import EXTENSION_ID, TERMINAL_STATUSES, DetailedTask, TaskCreated, TaskStatus


def __getattr__(name: str) -> Any:
    # Lazily, like the package root: the command line imports this package for `--help`, which needs none of it.
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_tasks_temporal.client' has no attribute {name!r}")
    return getattr(import_module(module), name)
