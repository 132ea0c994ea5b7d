"""On a worker: whether any front starts tasks on its queue, told in its log while none does.

A worker on a queue no front uses waits for tasks that never come, while the fronts' tasks
wait for a worker on theirs: a `--task-queue` given to one side only. The fronts say so from
their side (`front/gateway/queue_watch.py`); this is the workers' side. Every front holds its
settings out on `mcp-tasks-settings/<queue>` while it serves, marked as a front
(`shared_settings`), so one `DescribeTaskQueue` of that queue says whether a front runs now.

Checked every `CHECK_EVERY_S`, from one check after the worker starts (fronts and workers are
usually started together); a warning when no front is seen, again every `REPEAT_WARNING_S` while
it lasts (a worker may wait long for its fronts: its log should not fill up), and a line when one
is seen again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Final

import anyio
from temporalio.client import Client
from temporalio.service import RPCError

from mcp_tasks_temporal.temporal.shared_settings import SharedSettings, running_settings

logger = logging.getLogger(__name__)

CHECK_EVERY_S: Final = 10.0
REPEAT_WARNING_S: Final = 600.0


def is_front(settings: SharedSettings) -> bool:
    """Whether a running process is a front (those of earlier versions held out no deployment, and no mark)."""
    return settings.front or settings.deployment is None


async def running_fronts(client: Client, task_queue: str) -> list[SharedSettings]:
    """The fronts of `task_queue` running now: one `DescribeTaskQueue` of its settings queue.

    Raises:
        RPCError: Temporal could not be asked.
    """
    return [settings for settings in await running_settings(client, task_queue) if is_front(settings)]


@asynccontextmanager
async def fronts_watched(client: Client, task_queue: str, *, every_s: float = CHECK_EVERY_S) -> AsyncGenerator[None]:
    """While the block runs, the log says when no front uses `task_queue` (`watch_for_fronts`)."""
    async with anyio.create_task_group() as group:
        group.start_soon(watch_for_fronts, client, task_queue, every_s)
        try:
            yield
        finally:
            group.cancel_scope.cancel()


async def watch_for_fronts(client: Client, task_queue: str, every_s: float = CHECK_EVERY_S) -> None:
    """Log while no front uses `task_queue`, until cancelled."""
    alone_since: float | None = None
    warned_at: float | None = None
    while True:
        await anyio.sleep(every_s)
        try:
            fronts = await running_fronts(client, task_queue)
        except RPCError as err:
            logger.debug("could not look for the fronts of task queue %s: %s", task_queue, err.message)
            continue
        now = time.monotonic()
        if fronts:
            if warned_at is not None:
                logger.warning("a front uses task queue %s again (%s)", task_queue, fronts[0].writer)
            alone_since = warned_at = None
            continue
        alone_since = alone_since if alone_since is not None else now
        if warned_at is not None and now - warned_at < REPEAT_WARNING_S:
            continue
        lasting = f" (for {round((now - alone_since) / 60)} min)" if warned_at is not None else ""
        warned_at = now
        logger.warning(
            "no front uses task queue %s (namespace %s)%s: this worker runs only the tasks fronts start there;"
            " give the fronts this queue (serve --task-queue %s, $MCP_TASKS_TASK_QUEUE), or this worker theirs"
            " (worker --task-queue)",
            task_queue,
            client.namespace,
            lasting,
            task_queue,
        )
