"""Ours in the peer comparison: the conformance fixture's tools on an app with the extension's defaults.

    mcp-tasks-temporal serve --app benchmarks.ours_app:app      (and `worker` with the same app)

The fixture (`mcp_tasks_temporal.testing.conformance`) advises a 200 ms `pollIntervalMs`; a user's app
advises the default (1,000 ms), which is what a client polling at the advised cadence sees here, and waits
for a tool the default budget (`inline_budget_ms`), answering a call whose tool ended by then with its result.
`slow_compute_as_task` is the same tool as an author who knows it is long declares it (`inline_budget_ms=0`):
every call answered with its task at once, what a create is. `slow_compute_sync` is the same work as a plain
tool, which the front answers in the call with no task and no Temporal: the baseline of a short tool through
a task-capable call.
"""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import MCPServer

from mcp_tasks_temporal import TasksExtension
from mcp_tasks_temporal.testing import conformance

tasks = TasksExtension()
app = MCPServer("bench-ours", version="1.0.0", extensions=[tasks])
app.tool()(conformance.greet)
tasks.tool(policy="optional")(app.tool()(conformance.slow_compute))
tasks.tool(name="slow_compute_as_task", policy="optional", inline_budget_ms=0)(
    app.tool(name="slow_compute_as_task")(conformance.slow_compute)
)
tasks.tool(policy="optional")(app.tool()(conformance.confirm_delete))


@app.tool()
async def slow_compute_sync(seconds: float = 1, label: str = "job") -> str:
    """`slow_compute` as a plain tool: answered in the call, no task."""
    await anyio.sleep(seconds)
    return f"{label} finished after {seconds:g}s"
