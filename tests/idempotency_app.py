"""A tool and a workflow tool's activity that record their idempotency key on every attempt.

Each step appends `idempotency_key()` to `<folder>/<step>.keys` when an attempt starts, then
waits for `<folder>/<step>.release`: a test kills the worker while a step waits and reads,
from the file, the key each attempt saw. One file (activities, workflow and server), as
tests/one_file_app.py: `worker` passes this module's imports through the sandbox.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer
from temporalio import activity, workflow
from temporalio.common import RetryPolicy

from mcp_tasks_temporal import ActivityPolicy, TasksExtension, idempotency_key

tasks = TasksExtension(default_poll_interval_ms=250, default_inline_budget_ms=0)
app = MCPServer("idempotency-app", extensions=[tasks])

# A crashed worker's attempt is retried once its heartbeats are missed: seconds, not the default 30.
QUICK_RETRY = ActivityPolicy(heartbeat_timeout_s=3, initial_retry_interval_s=0.5)


async def keyed_step(folder: str, step: str) -> str:
    base = Path(folder)
    with (base / f"{step}.keys").open("a") as keys:
        keys.write(idempotency_key() + "\n")
    while not (base / f"{step}.release").exists():
        await anyio.sleep(0.05)
    return idempotency_key()


@tasks.tool(activity=QUICK_RETRY)
@app.tool()
async def keyed_tool(folder: str) -> str:
    """A task tool: its key, recorded by every attempt of its round."""
    return await keyed_step(folder, "tool")


@activity.defn(name="tests.keyed_activity")
async def keyed_activity(folder: str, step: str) -> str:
    return await keyed_step(folder, step)


@workflow.defn(name="tests.KeyedSteps")
class KeyedSteps:
    """Two steps, each an activity: their keys, each recorded by every attempt."""

    @workflow.run
    async def run(self, folder: str) -> list[str]:
        return [await self.step(folder, step) for step in ("first", "second")]

    async def step(self, folder: str, step: str) -> str:
        return await workflow.execute_activity(
            keyed_activity,
            args=[folder, step],
            start_to_close_timeout=timedelta(minutes=5),
            heartbeat_timeout=timedelta(seconds=3),
            retry_policy=RetryPolicy(initial_interval=timedelta(seconds=0.5)),
        )


tasks.workflow_tool(KeyedSteps, name="keyed_steps", activities=[keyed_activity])
