"""The MCP app a team serves from its own Starlette service, beside its own routes (tests/test_mounted_endpoint.py).

Its workers run it as any app's do; the team's service mounts its MCP endpoint (`mcp_endpoint`).
"""

from __future__ import annotations

from typing import Annotated

import anyio
from mcp.server.mcpserver import Elicit, MCPServer, Resolve
from pydantic import BaseModel

from mcp_tasks_temporal import TasksExtension, set_status
from tests.team_worker_app import Tally, tally_step

tasks = TasksExtension(default_poll_interval_ms=100, default_inline_budget_ms=0)
app = MCPServer("team-service-app", version="0.0.1", extensions=[tasks])
tasks.workflow_tool(Tally, name="tally", activities=[tally_step])


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@tasks.tool(policy="optional")
@app.tool()
async def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """A task tool that asks one question first."""
    return f"Hello, {who.name}!"


@tasks.tool(policy="optional")
@app.tool()
async def wait_for_cancel() -> str:
    """Runs until it is cancelled."""
    set_status("waiting to be cancelled")
    await anyio.sleep_forever()
    return "never"
