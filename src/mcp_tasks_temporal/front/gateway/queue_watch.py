"""Whether a worker polls each task queue a front starts tasks on: checked in the background, kept, and told.

A front whose tasks go to a queue no worker polls (its `--task-queue` is not its workers', or every
worker is down) still creates them: Temporal keeps each one, and it runs once a worker polls. Until
then the operator learns it here (`/readyz` names the queue, the log says it when it starts and
every minute while it lasts) and the client in the task's `statusMessage`.

What Temporal tells: `DescribeTaskQueue` lists a queue's pollers with the time each last began a
poll, and the age of the oldest task waiting in it. An idle worker's poll is a long poll Temporal
ends after about a minute, so a live worker may have begun its last one 55-60 s ago; a worker that
stopped stays listed, its time frozen, for five minutes. Two signals follow, whichever comes first:

- no poll has begun for `LIVE_POLL_S` (a minute and some margin): no worker, 10-70 s after the last
  one stopped, at once for a queue no worker ever polled;
- a workflow task has waited `STALLED_BACKLOG_S` and no poll has begun since it was queued: a worker
  waiting in a poll takes a task the moment it comes, so none is waiting. A task created after the
  last worker stopped says so within `STALLED_BACKLOG_S` plus one check.

Workflow tasks only: a worker whose tool slots are all taken stops polling for activities, so the
activity pollers of a busy queue look like those of one nobody serves; its workflow pollers do not.
One `DescribeTaskQueue` per queue every `CHECK_EVERY_S` while workers poll, whatever the requests: a
create or a read only looks at what the last check found. A queue found unpolled is checked again every
`RECHECK_UNPOLLED_S`, and before a readiness answer, so a worker that starts is seen within a second: a
front and its workers started together must not read as broken for a whole period. A task a worker
moved after the last check (its status line or memo is newer) is never said to wait for one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

import anyio
from temporalio.api.enums.v1 import TaskQueueKind, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError

logger = logging.getLogger(__name__)

CHECK_EVERY_S: Final = 10.0
RECHECK_UNPOLLED_S: Final = 1.0
"""While a queue is unpolled (or its check failed), how often it is checked again."""
LIVE_POLL_S: Final = 70.0
"""A worker waiting for tasks begins a poll at least once a minute (Temporal's long poll), with margin."""
STALLED_BACKLOG_S: Final = 10.0
"""A workflow task waiting this long with no poll begun since: no worker is waiting for one."""
REPEAT_WARNING_S: Final = 60.0
"""While a queue stays unpolled, the log says so again this often."""
_DESCRIBE_TIMEOUT_S: Final = 5.0


@dataclass(frozen=True)
class QueuePollers:
    """One check of one task queue: how recently a worker began polling it, and how long a task has waited."""

    task_queue: str
    last_poll_age_s: float | None
    """Since the most recent poll of any worker began; `None`: Temporal lists no worker (none for 5 minutes)."""
    backlog_age_s: float
    """How long the oldest workflow task waiting in the queue has waited (0: none waits)."""

    @property
    def polled(self) -> bool:
        return is_polled(self.last_poll_age_s, self.backlog_age_s)


def is_polled(last_poll_age_s: float | None, backlog_age_s: float) -> bool:
    """Whether a worker serves a queue, by the two signals of the module's docstring."""
    if last_poll_age_s is None or last_poll_age_s > LIVE_POLL_S:
        return False
    return not (backlog_age_s >= STALLED_BACKLOG_S and last_poll_age_s > backlog_age_s)


async def describe_pollers(client: Client, task_queue: str) -> QueuePollers:
    """One `DescribeTaskQueue` of `task_queue`'s workflow tasks, with its backlog's statistics.

    Raises:
        RPCError: Temporal could not be asked (unreachable, or no right to describe task queues).
    """
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=task_queue, kind=TaskQueueKind.TASK_QUEUE_KIND_NORMAL),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        report_stats=True,
    )
    response = await client.workflow_service.describe_task_queue(
        request, retry=False, timeout=timedelta(seconds=_DESCRIBE_TIMEOUT_S)
    )
    now = time.time()
    polls = [poller.last_access_time.ToMicroseconds() / 1e6 for poller in response.pollers]
    last_poll_age_s = max(0.0, now - max(polls)) if polls else None
    backlog = response.stats.approximate_backlog_age if response.HasField("stats") else None
    backlog_age_s = backlog.ToMicroseconds() / 1e6 if backlog is not None else 0.0
    return QueuePollers(task_queue, last_poll_age_s, backlog_age_s)


@dataclass(frozen=True)
class WatchedQueue:
    """A task queue the front starts tasks on, and why: its own queue, or the one workflow tools name."""

    name: str
    workflow_tools: tuple[str, ...] = ()
    """The workflow tools whose own queue this is; empty for the front's queue (tool tasks, the task feed)."""

    def fix(self) -> str:
        """What an operator does about nobody polling it."""
        if self.workflow_tools:
            return (
                f"start a worker of the app, which polls the queue its workflow tools {', '.join(self.workflow_tools)}"
                " name (`mcp-tasks-temporal worker` does)"
            )
        return (
            f"start a worker with --task-queue {self.name}, or give this front the workers' queue"
            " (serve --task-queue, $MCP_TASKS_TASK_QUEUE, FrontSettings(task_queue=...))"
        )


class QueueWatch:
    """The last check of each queue a front starts tasks on, and the log lines as that changes."""

    def __init__(self, client: Client, task_queue: str) -> None:
        self._client = client
        self._queues: dict[str, WatchedQueue] = {task_queue: WatchedQueue(task_queue)}
        self._unpolled_since: dict[str, float] = {}
        """Queues the last check found unpolled, with when that was first seen (monotonic)."""
        self._warned_at: dict[str, float] = {}
        self._unknown: set[str] = set()
        """Queues whose last check failed: neither reported nor cleared until one succeeds."""
        self._checked_at_ms: dict[str, float] = {}
        """When each queue's last successful check was made (epoch ms)."""
        self._recheck_at: float = 0.0

    def watch_workflow_tools(self, task_queue: str, tools: Iterable[str]) -> None:
        """Watch the queue workflow tools name as their own too."""
        present = self._queues.get(task_queue)
        if present is not None and not present.workflow_tools:
            return  # the front's own queue: its fix covers them
        named = (*(present.workflow_tools if present is not None else ()), *tools)
        self._queues[task_queue] = WatchedQueue(task_queue, tuple(dict.fromkeys(named)))

    @property
    def queues(self) -> list[str]:
        return list(self._queues)

    def unpolled(self, task_queue: str, *, worked_at_ms: float | None = None) -> bool:
        """Whether the last check found no worker polling `task_queue` (one this front watches).

        `worked_at_ms`: when a worker last moved the task asked about; a check older than that is stale for it.
        """
        if task_queue not in self._unpolled_since:
            return False
        return worked_at_ms is None or worked_at_ms <= self._checked_at_ms.get(task_queue, 0.0)

    async def recheck_unpolled(self) -> None:
        """Check again, at most once per `RECHECK_UNPOLLED_S`, the queues last found unpolled or unknown."""
        stale = [self._queues[name] for name in (*self._unpolled_since, *self._unknown) if name in self._queues]
        now = time.monotonic()
        if not stale or now < self._recheck_at:
            return
        self._recheck_at = now + RECHECK_UNPOLLED_S
        async with anyio.create_task_group() as group:
            for queue in dict.fromkeys(stale):
                group.start_soon(self._check_one, queue)

    def unready_reason(self) -> str | None:
        """Every watched queue no worker polls, with its fix, or `None`."""
        if not self._unpolled_since:
            return None
        reasons = [f"no worker polls task queue {name}: {self._queues[name].fix()}" for name in self._unpolled_since]
        return "; ".join(reasons)

    async def check(self) -> None:
        """Describe every watched queue once, and log what changed."""
        async with anyio.create_task_group() as group:
            for queue in list(self._queues.values()):
                group.start_soon(self._check_one, queue)

    async def run(self, *, every_s: float = CHECK_EVERY_S) -> None:
        """Check every `every_s` seconds (every `RECHECK_UNPOLLED_S` those found unpolled), until cancelled."""
        next_full = time.monotonic() + every_s
        while True:
            await anyio.sleep(RECHECK_UNPOLLED_S if self._unpolled_since or self._unknown else every_s)
            if time.monotonic() >= next_full:
                next_full = time.monotonic() + every_s
                await self.check()
            else:
                await self.recheck_unpolled()

    async def _check_one(self, queue: WatchedQueue) -> None:
        try:
            seen = await describe_pollers(self._client, queue.name)
        except RPCError as err:
            if queue.name not in self._unknown:
                logger.warning(
                    "cannot tell whether a worker polls task queue %s: DescribeTaskQueue failed (%s); it is neither"
                    " reported nor cleared until it answers",
                    queue.name,
                    err.status.name if err.status else err.message,
                )
            self._unknown.add(queue.name)
            return
        self._unknown.discard(queue.name)
        self._checked_at_ms[queue.name] = time.time() * 1000
        now = time.monotonic()
        if seen.polled:
            if self._unpolled_since.pop(queue.name, None) is not None:
                self._warned_at.pop(queue.name, None)
                logger.warning("a worker polls task queue %s again: its tasks run", queue.name)
            return
        since = self._unpolled_since.setdefault(queue.name, now)
        warned = self._warned_at.get(queue.name)
        if warned is not None and now - warned < REPEAT_WARNING_S:
            return
        self._warned_at[queue.name] = now
        lasting = f" (for {_duration(now - since)})" if warned is not None else ""
        logger.warning(
            "no worker polls task queue %s (namespace %s)%s: tasks created on it wait, working, until one does; %s",
            queue.name,
            self._client.namespace,
            lasting,
            queue.fix(),
        )


def waiting_for_a_worker(task_queue: str) -> str:
    """A waiting task's `statusMessage` while no worker polls its queue: the client's operator has the fix."""
    return (
        f"Waiting for a worker: none polls task queue {task_queue}; the task runs once one does "
        "(the server's operator starts one on that queue)"
    )


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes >= 1 else f"{round(seconds)} s"
