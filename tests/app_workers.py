"""An app's Temporal workers in the test process, as `mcp-tasks-temporal worker` runs them.

`build_worker` on the app's task queue, plus one worker per queue a workflow tool names as its own
(`workflow_tool_workers`), all polling until the block ends. A failure in a tool or a workflow then
shows in the test's own output, with its traceback, not in another process's log.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Worker

from mcp_tasks_temporal.front.app_lookup import tasks_extension
from mcp_tasks_temporal.front.gateway.queue_watch import describe_pollers
from mcp_tasks_temporal.temporal.deployment import Deployment
from mcp_tasks_temporal.temporal.payload_limits import PayloadLimits, namespace_blob_limit
from mcp_tasks_temporal.temporal.payload_storage import StorageSettings
from mcp_tasks_temporal.temporal.worker import build_worker, workflow_tool_workers


def new_task_queue(prefix: str = "tests") -> str:
    """A task queue no other test uses."""
    return f"{prefix}-{uuid.uuid4()}"


@asynccontextmanager
async def app_worker(
    client: Client,
    app: MCPServer[Any],
    *,
    task_queue: str,
    max_cached_workflows: int = 1000,
    max_concurrent_activities: int = 100,
    payload_storage: StorageSettings | None = None,
    deployment: Deployment | None = None,
) -> AsyncGenerator[Worker]:
    """`app`'s workers on `task_queue`, polling until the block ends; yields the one on `task_queue` itself.

    They stop without a graceful drain (a tool the test left waiting is cancelled at once), as the
    process tests' teardown stops their workers; `max_cached_workflows=0` replays every workflow task.
    `max_concurrent_activities` is `--max-concurrent-tools`; `payload_storage` is the storage `client`
    stores large payloads in (its data converter's), which sets how large a result may be.
    `deployment` is the version they register as under worker versioning (`--deployment-name`, `--build-id`);
    a second version of one task queue in this process needs a client of its own.
    """
    limits = PayloadLimits(blob_limit=await namespace_blob_limit(client), storage=payload_storage)
    tasks = tasks_extension(app)
    main = build_worker(
        client,
        tasks,
        app,
        task_queue=task_queue,
        max_concurrent_activities=max_concurrent_activities,
        max_cached_workflows=max_cached_workflows,
        graceful_shutdown_s=0,
        payload_limits=limits,
        deployment=deployment,
    )
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(main)
        own_queues = workflow_tool_workers(
            client,
            tasks,
            app,
            task_queue=task_queue,
            max_concurrent_activities=max_concurrent_activities,
            graceful_shutdown_s=0,
            deployment=deployment,
        )
        for own_queue in own_queues:
            await stack.enter_async_context(own_queue)
        await until_polled(client, task_queue)
        yield main


async def until_polled(client: Client, task_queue: str, *, timeout: float = 30) -> None:
    """Until Temporal lists a poller of `task_queue`'s workflow tasks: a worker that has begun its first poll.

    A front started before then finds the queue unpolled and says so (readiness, `statusMessage`) until its
    next check, as a deployment's front would in the second its workers take to start.
    """
    with anyio.fail_after(timeout):
        while True:
            try:
                if (await describe_pollers(client, task_queue)).polled:
                    return
            except RPCError as err:  # a loaded dev server may take longer than one describe's deadline
                if err.status != RPCStatusCode.CANCELLED and err.status != RPCStatusCode.DEADLINE_EXCEEDED:
                    raise
            await anyio.sleep(0.05)
