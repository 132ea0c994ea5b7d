"""A worker's own task queue, where the first attempts it hands off are adopted.

A task's first attempt runs as a local activity inside the workflow's first task
(`ToolActivities.run_tool_first`). A tool still running when that phase ends goes on in
this worker's process, so the activity that takes it over (`adopt_tool`) must run in this
process too: it is scheduled on a queue only this worker polls, named at random per
process (a restarted worker never takes an attempt its predecessor held).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from temporalio.worker import Worker

from mcp_tasks_temporal.temporal.activities import ToolActivities
from mcp_tasks_temporal.temporal.contract import ADOPT_QUEUE_INFIX

__all__ = ["adoption_queue"]

_SHARED_OPTIONS = (
    "max_heartbeat_throttle_interval",
    "default_heartbeat_throttle_interval",
    "graceful_shutdown_timeout",
    "max_concurrent_activities",
    "identity",
)


@asynccontextmanager
async def adoption_queue(worker: Worker, tools: ToolActivities) -> AsyncGenerator[None]:
    """While the block runs, `tools` hands off first attempts to a worker on a queue of this process's own.

    The adopting worker takes the tool worker's heartbeat throttle, graceful shutdown and activity slots, and
    stops after it, so an adopted tool has the same time to finish as any other when the worker stops.
    """
    config: dict[str, Any] = dict(worker.config(active_config=True))
    queue = f"{config['task_queue']}{ADOPT_QUEUE_INFIX}{uuid.uuid4().hex}"
    options = {name: config[name] for name in _SHARED_OPTIONS if config.get(name) is not None}
    adopter = Worker(config["client"], task_queue=queue, activities=[tools.adopt_tool], **options)
    async with anyio.create_task_group() as group:
        group.start_soon(adopter.run)
        tools.adopt_queue = queue
        try:
            yield
        finally:
            tools.adopt_queue = None
            with anyio.CancelScope(shield=True):
                await adopter.shutdown()
