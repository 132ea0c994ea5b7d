"""A team's own Temporal code and an MCP app whose tasks their worker also serves, through `McpTasksPlugin`.

`TeamReport` is theirs and knows nothing of MCP; `tally` is a workflow tool whose activity reports
a status line, and `lifespan_greeting` a task tool that reads what the app's lifespan yielded.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from temporalio import activity, workflow

from mcp_tasks_temporal import TasksExtension, set_status


@activity.defn
async def count_words(text: str) -> int:
    return len(text.split())


@workflow.defn
class TeamReport:
    """The team's own workflow, on the same worker as the MCP tasks."""

    @workflow.run
    async def run(self, text: str) -> str:
        words = await workflow.execute_activity(count_words, text, start_to_close_timeout=timedelta(seconds=30))
        return f"report: {words} words"


@activity.defn
async def tally_step(step: int) -> int:
    set_status(f"tallying step {step}")
    return step * step


@workflow.defn
class Tally:
    """A workflow tool: status lines from the workflow and from its activities."""

    @workflow.run
    async def run(self, steps: int) -> int:
        total = 0
        for step in range(1, steps + 1):
            set_status(f"step {step} of {steps}")
            total += await workflow.execute_activity(
                tally_step, step, start_to_close_timeout=timedelta(seconds=30), heartbeat_timeout=timedelta(seconds=10)
            )
        return total


@asynccontextmanager
async def lifespan(_: MCPServer[Any]) -> AsyncGenerator[dict[str, str]]:
    yield {"greeting": "hello from the lifespan"}


tasks = TasksExtension(default_poll_interval_ms=100, default_inline_budget_ms=0)
app = MCPServer("team-worker-app", version="0.0.1", extensions=[tasks], lifespan=lifespan)
tasks.workflow_tool(Tally, name="tally", activities=[tally_step])


@tasks.tool(policy="optional")
@app.tool()
async def lifespan_greeting(ctx: Context) -> str:
    """What the app's lifespan yielded, read inside the worker's tool activity."""
    return ctx.request_context.lifespan_context["greeting"]
