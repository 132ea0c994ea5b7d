"""A one-file app whose module does at import what the workflow sandbox refuses: it reads the clock."""

from __future__ import annotations

from datetime import datetime

from mcp.server.mcpserver import MCPServer
from temporalio import workflow

from mcp_tasks_temporal import TasksExtension


@workflow.defn
class Naps:
    @workflow.run
    async def run(self, seconds: float) -> str:
        await workflow.sleep(seconds)
        return "rested"


STARTED_AT = datetime.now()


tasks = TasksExtension()
app = MCPServer("one-file-broken-app", version="0.0.1", extensions=[tasks])
tasks.workflow_tool(Naps, name="nap")
