"""The worker: runs task workflows and, through the user's app, their tools."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from mcp.server.mcpserver import MCPServer
from temporalio.client import Client
from temporalio.worker import Worker

from mcp_tasks_temporal.activities import ToolActivities
from mcp_tasks_temporal.workflows import ToolTaskWorkflow

WORKFLOWS: Sequence[type] = (ToolTaskWorkflow,)


def build_worker(
    client: Client,
    app: MCPServer[Any],
    lifespan_state: Any,
    *,
    task_queue: str,
    max_concurrent_activities: int = 100,
    max_cached_workflows: int = 1000,
    keepalive_s: float = 2.0,
    status_freshness_s: float = 1.0,
    graceful_shutdown_s: float = 30.0,
) -> Worker:
    """A Temporal worker for `app`'s task tools.

    Args:
        client: Connected Temporal client.
        app: The user's `MCPServer`; its tools run inside the activities.
        lifespan_state: What the app's lifespan yielded (enter it with `ToolActivities.lifespan`).
        task_queue: Queue of the task workflows and, by default, their activities.
        max_concurrent_activities: Tool executions this worker runs at once.
        keepalive_s: Heartbeat period of a running tool; a cancel reaches the tool within about this long.
        status_freshness_s: How stale a `set_status` may be when `tasks/get` reads it (heartbeat throttle).
        graceful_shutdown_s: How long running tools may finish when the worker stops.
        max_cached_workflows: Task workflows kept in memory (about 150 KB each); the rest replay on demand.
    """
    activities = ToolActivities(app, lifespan_state, keepalive_s=keepalive_s)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=list(WORKFLOWS),
        activities=[activities.run_tool],
        max_concurrent_activities=max_concurrent_activities,
        max_cached_workflows=max_cached_workflows,
        # A workflow cached on a worker that died waits this long before any other worker may take it.
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=3),
        max_heartbeat_throttle_interval=timedelta(seconds=status_freshness_s),
        default_heartbeat_throttle_interval=timedelta(seconds=status_freshness_s),
        graceful_shutdown_timeout=timedelta(seconds=graceful_shutdown_s),
    )
