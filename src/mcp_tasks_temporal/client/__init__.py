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

from mcp_tasks_temporal.client._client import TasksClient, ToolCall
from mcp_tasks_temporal.client._errors import (
    AuthenticationError,
    ServerUnreachableError,
    TaskCancelledError,
    TaskFailedError,
)
from mcp_tasks_temporal.client._extension import TasksClientExtension
from mcp_tasks_temporal.client._handle import OnChange, TaskHandle, WaitOptions, WaitStats
from mcp_tasks_temporal.client._journal import JOURNAL_ENV, Journal, JournalEntry, default_journal_path
from mcp_tasks_temporal.client._models import EXTENSION_ID, TERMINAL_STATUSES, DetailedTask, TaskCreated, TaskStatus

__all__ = [
    "EXTENSION_ID",
    "JOURNAL_ENV",
    "TERMINAL_STATUSES",
    "AuthenticationError",
    "DetailedTask",
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
