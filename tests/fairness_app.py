"""Tools for the fairness test: each waits for a gate, then records the order the worker ran it in.

The worker runs one tool at a time, so while the first call holds the only slot
every later one queues in Temporal; opening the gate lets the queue drain in
the order Temporal dispatches it, which `order` records, one line per call:
its label, then the fairness key and priority its activity was dispatched with.
"""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer
from temporalio import activity

from mcp_tasks_temporal import TasksExtension
from tests.fairness_workflows import PrioritisedWorkflow

tasks = TasksExtension(default_poll_interval_ms=250, default_inline_budget_ms=0)
app = MCPServer("fairness-app", version="0.0.1", extensions=[tasks])


async def _queue(gate: str, label: str) -> str:
    folder = Path(gate)
    while not (folder / "open").exists():
        await anyio.sleep(0.02)
    priority = activity.info().priority
    with (folder / "order").open("a") as order:
        order.write(f"{label} {priority.fairness_key or '-'} {priority.priority_key or '-'}\n")
    return label


@tasks.tool(policy="required")
@app.tool()
async def queued(gate: str, label: str) -> str:
    """Wait for the gate, then note `label` in the run order."""
    return await _queue(gate, label)


@tasks.tool(policy="required", priority=1)
@app.tool()
async def urgent(gate: str, label: str) -> str:
    """`queued` at the highest priority."""
    return await _queue(gate, label)


tasks.workflow_tool(PrioritisedWorkflow, name="prioritised", policy="required", priority=2)
