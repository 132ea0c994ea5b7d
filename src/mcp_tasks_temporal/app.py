"""Finding the user's `MCPServer` and its `TasksExtension`."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

from mcp_tasks_temporal.contract import TASK_QUEUE_PREFIX
from mcp_tasks_temporal.extension import TasksExtension

DEMO_APP = "mcp_tasks_temporal.demo:app"


def load_app(spec: str) -> MCPServer[Any]:
    """Import `MODULE:ATTR` and return the `MCPServer` it names."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--app takes MODULE:ATTR (for example {DEMO_APP}), not {spec!r}")
    app = getattr(import_module(module_name), attr, None)
    if not isinstance(app, MCPServer):
        raise ValueError(f"{spec} is not an mcp MCPServer (got {type(app).__name__})")
    return app  # pyright: ignore[reportUnknownVariableType]


def default_task_queue(app: MCPServer[Any]) -> str:
    """The app's own task queue, `mcp-tasks/<app name>`, unless `--task-queue` names another.

    Front servers and workers of one app load the same `MCPServer`, so they agree
    on it without configuration, and two apps on one namespace never take each
    other's tasks (a worker would otherwise pick up tools it does not have).
    """
    return f"{TASK_QUEUE_PREFIX}/{app.name}"


def tasks_extension(app: MCPServer[Any]) -> TasksExtension:
    """The `TasksExtension` the app was built with.

    `MCPServer` fixes its extensions at construction and exposes no accessor,
    so the list is read from the one place it lives.
    """
    for extension in app._extensions:  # pyright: ignore[reportPrivateUsage]
        if isinstance(extension, TasksExtension):
            return extension
    raise ValueError(
        f"MCPServer {app.name!r} has no TasksExtension: build it with MCPServer(extensions=[TasksExtension()])"
    )


def use_request_state_keys(app: MCPServer[Any], keys: list[str]) -> None:
    """Seal MRTR `requestState` with shared keys, so any front server accepts any other's.

    An `MCPServer` defaults to a per-process key: fine for one process, but behind
    a load balancer the retry of a `tools/call` may reach another front server.
    `keys[0]` seals and every key unseals, which allows rotation.
    """
    security = RequestStateSecurity(keys=keys, audience=app.name)
    boundary = RequestStateBoundary(security, default_audience=app.name)
    middleware = app.middleware
    for index, layer in enumerate(middleware):
        if isinstance(layer, RequestStateBoundary):
            middleware[index] = boundary
            return
    middleware.insert(0, boundary)
