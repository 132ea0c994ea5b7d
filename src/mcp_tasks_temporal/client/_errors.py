"""What the client raises when a task does not end with a result, or a server cannot be used."""

from __future__ import annotations

from mcp.shared.exceptions import MCPError

from mcp_tasks_temporal.client._models import DetailedTask


class TaskFailedError(MCPError):
    """The task ended `failed`: its JSON-RPC error, exactly as a synchronous call would have raised it.

    `code`, `message` and `data` are the task's `error`; `task` is the final `DetailedTask`.
    """

    def __init__(self, task: DetailedTask) -> None:
        error = task.error
        if error is None:  # a server that broke the `failed` shape; keep the failure visible anyway
            super().__init__(code=-32603, message=task.status_message or "Task failed")
        else:
            super().__init__(code=error.code, message=error.message, data=error.data)
        self.task = task


class TaskCancelledError(RuntimeError):
    """The task ended `cancelled`, so there is no result."""

    def __init__(self, task: DetailedTask) -> None:
        super().__init__(f"task {task.task_id} was cancelled")
        self.task = task


class InputDeferred(Exception):
    """Raised by an elicitation callback that cannot answer here (no terminal): the question stays open.

    The handle then leaves that input request to be answered elsewhere (`tasks/update` from another
    client, `mcp-tasks-temporal answer`) and keeps following the task.
    """


class AuthenticationError(RuntimeError):
    """The server refused the credentials (HTTP 401)."""

    def __init__(self, server: str, status: int = 401) -> None:
        super().__init__(f"authentication failed (HTTP {status}) at {server}")
        self.server = server
        self.status = status


class ServerUnreachableError(RuntimeError):
    """The server could not be reached (connection refused, DNS, a stdio command that would not start)."""

    def __init__(self, server: str, reason: BaseException) -> None:
        super().__init__(f"cannot reach {server}: {reason}")
        self.server = server
        self.reason = reason
