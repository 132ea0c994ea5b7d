"""A front server that does not push: the client must notice and poll.

Its extension drops the `subscriptions/listen` middleware that `attach` installs,
so a listen with `taskIds` is answered by the SDK's stock handler, whose
acknowledgement leaves `taskIds` out: what a server without push looks like.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer

from mcp_tasks_temporal import FrontSettings, TasksExtension, set_status
from mcp_tasks_temporal.front.attachment import Front
from mcp_tasks_temporal.front.gateway import TemporalTaskGateway


class NoPushTasks(TasksExtension):
    def attach(self, gateway: TemporalTaskGateway, server: MCPServer[Any], settings: FrontSettings) -> Front:
        before = list(server.middleware)
        front = super().attach(gateway, server, settings)
        server.middleware[:] = before
        return front


tasks = NoPushTasks(default_poll_interval_ms=200, default_inline_budget_ms=0)
app = MCPServer("client-fixture-app", version="0.0.1", extensions=[tasks])


@tasks.tool(policy="optional")
@app.tool()
async def held(gate: str) -> str:
    """Say so in the status line, then wait until `gate/release` exists."""
    folder = Path(gate)
    set_status("held at the gate")
    (folder / "started").write_text("1")
    while not (folder / "release").exists():
        await anyio.sleep(0.05)
    return f"let through {folder.name}"
