"""Finding the user's `MCPServer` and its `TasksExtension`."""

from __future__ import annotations

import os
import sys
from importlib import import_module
from typing import Any, Final

from mcp.server.mcpserver import MCPServer
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

from mcp_tasks_temporal.front.extension import TasksExtension
from mcp_tasks_temporal.sdk_compat import server_extensions
from mcp_tasks_temporal.temporal.contract import TASK_QUEUE_PREFIX

DEMO_APP = "mcp_tasks_temporal.demo:app"


def load_app(spec: str) -> MCPServer[Any]:
    """Import `MODULE:ATTR` and return the `MCPServer` it names.

    The current directory is searched first, as uvicorn does, so `--app
    mypkg.server:app` works next to `mypkg/` without installing it.

    Raises:
        ValueError: One line naming what is wrong and how to fix it (the CLI prints it as is).
    """
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--app takes MODULE:ATTR (for example {DEMO_APP}), not {spec!r}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name is not None and module_name.startswith(err.name) and module_name[len(err.name) :][:1] in ("", "."):
            top = module_name.split(".")[0]
            raise ValueError(
                f"--app {spec}: no module named {err.name!r} (searched {cwd} and the installed packages); "
                f"run from the directory that contains {top}/ or {top}.py, or install it (pip install -e .)"
            ) from None
        raise ValueError(
            f"--app {spec}: importing {module_name} failed: {err} (install the package it needs; "
            f"`python -c 'import {module_name}'` shows where)"
        ) from None
    except Exception as err:
        raise ValueError(
            f"--app {spec}: importing {module_name} raised {type(err).__name__}: {err} "
            f"(`python -c 'import {module_name}'` shows the traceback)"
        ) from None
    if not hasattr(module, attr):
        raise ValueError(
            f"--app {spec}: module {module_name} has no attribute {attr!r}; give MODULE:ATTR of its MCPServer"
        )
    app = getattr(module, attr)
    if not isinstance(app, MCPServer):
        raise ValueError(f"--app {spec}: {module_name}.{attr} is a {type(app).__name__}, not an mcp MCPServer")
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

    `MCPServer` fixes its extensions at construction and exposes no accessor
    (see `sdk_compat.server_extensions`).
    """
    for extension in server_extensions(app):
        if isinstance(extension, TasksExtension):
            return extension
    raise ValueError(
        f"MCPServer {app.name!r} has no TasksExtension: build it with MCPServer(extensions=[TasksExtension()])"
    )


REQUEST_STATE_TTL_S: Final = 24 * 60 * 60
"""How long a sealed `requestState` is taken back: a question inside a plain call waits for a person,
for as long as a task lives by default (a day), not the SDK's ten minutes."""


def request_state_security(app: MCPServer[Any], keys: list[str]) -> RequestStateSecurity:
    """The shared `keys` (`keys[0]` seals), or a key of this process's own; either way for a day."""
    if keys:
        return RequestStateSecurity(keys=keys, audience=app.name, ttl=REQUEST_STATE_TTL_S)
    return RequestStateSecurity.ephemeral(ttl=REQUEST_STATE_TTL_S, audience=app.name)


def use_request_state_keys(app: MCPServer[Any], keys: list[str]) -> None:
    """Seal MRTR `requestState` with shared keys, so any front server accepts any other's.

    An `MCPServer` defaults to a per-process key: fine for one process, but behind
    a load balancer the retry of a `tools/call` may reach another front server.
    `keys[0]` seals and every key unseals, which allows rotation. Without keys, a
    per-process key as before, with the same lifetime.
    """
    boundary = RequestStateBoundary(request_state_security(app, keys), default_audience=app.name)
    middleware = app.middleware
    for index, layer in enumerate(middleware):
        if isinstance(layer, RequestStateBoundary):
            middleware[index] = boundary
            return
    middleware.insert(0, boundary)
