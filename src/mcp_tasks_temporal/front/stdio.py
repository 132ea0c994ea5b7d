"""A front on stdio: the app attached to Temporal, served to the one client on the process's pipes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.mcpserver import MCPServer

from mcp_tasks_temporal.front.app_lookup import default_task_queue, tasks_extension
from mcp_tasks_temporal.front.gateway import TemporalTaskGateway
from mcp_tasks_temporal.front.protocol_versions import run_stdio
from mcp_tasks_temporal.front.settings import FrontSettings

if TYPE_CHECKING:
    from temporalio.client import Client


async def serve_stdio(
    app: MCPServer[Any],
    client: Client,
    settings: FrontSettings | None = None,
    *,
    stdin: anyio.AsyncFile[str] | None = None,
    stdout: anyio.AsyncFile[str] | None = None,
) -> None:
    """Attach `app` to Temporal through `client` and serve it on stdin/stdout until the client leaves.

    The HTTP-only parts of `mcp_endpoint` (body limits, handshake echo, bearer
    authentication) have nothing to do on a pipe: the connection is the session.
    `stdin` and `stdout` are the process's own unless other text streams are given (a pipe's ends).
    """
    settings = settings or FrontSettings()
    gateway = TemporalTaskGateway.for_front(client, settings, task_queue=settings.task_queue or default_task_queue(app))
    await gateway.read_namespace_limits()
    extension = tasks_extension(app)
    extension.attach(gateway, app, settings)
    async with extension.running():
        await run_stdio(app, stdin, stdout)
