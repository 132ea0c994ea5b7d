"""Finding an app's `TasksExtension`, and the task queue its front and workers agree on by default."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer

from mcp_tasks_temporal.front.extension import TasksExtension
from mcp_tasks_temporal.sdk_compat import server_extensions
from mcp_tasks_temporal.temporal.contract import TASK_QUEUE_PREFIX


def default_task_queue(app: MCPServer[Any]) -> str:
    """The app's own task queue, `mcp-tasks/<app name>`, unless `--task-queue` names another.

    Front servers and workers of one app load the same `MCPServer`, so they agree
    on it without configuration, and two apps on one namespace never take each
    other's tasks (a worker would otherwise pick up tools it does not have).
    """
    return f"{TASK_QUEUE_PREFIX}/{app.name}"


def tasks_extension(app: MCPServer[Any]) -> TasksExtension:
    """The `TasksExtension` the app was built with.

    `MCPServer` fixes its extensions at construction and exposes no accessor
    (see `sdk_compat.server_extensions`).
    """
    for extension in server_extensions(app):
        if isinstance(extension, TasksExtension):
            return extension
    raise ValueError(
        f"MCPServer {app.name!r} has no TasksExtension: build it with MCPServer(extensions=[TasksExtension()])"
    )
