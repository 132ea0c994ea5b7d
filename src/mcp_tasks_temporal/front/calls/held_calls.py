"""A plain `tools/call` served by a task that the front holds open on the call's own stream.

The client of a plain call never learns the task's ID: the call is the only handle it
has on the task. So the task lives as long as the call does. A call that ends without
its result (the client closed the stream or the connection, which cancels the handler;
`notifications/cancelled` on a connection that carries the request, which the SDK turns
into the same cancellation; or a failure to follow the task) cancels the task: nobody
is left to receive what it would go on to do. A `notifications/cancelled` posted to another front reaches
the task through its ID (`call_cancels`). The task's status lines go out as
`notifications/progress` when the call asked for them (`call_progress`).

A task created as a task (its client holds the `taskId`) is never followed here, so no
disconnect ever cancels it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import anyio
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, CallToolResult

from mcp_tasks_temporal.front.calls.call_progress import CallProgress
from mcp_tasks_temporal.front.gateway import Snapshot, TemporalTaskGateway
from mcp_tasks_temporal.front.push.task_watch import TaskWatchHub
from mcp_tasks_temporal.temporal.contract import TERMINAL_STATUSES, as_object

logger = logging.getLogger(__name__)

CANCEL_BOUND_S: Final = 5.0
"""How long a call that ends without its result waits for Temporal to take the task's cancellation."""

OnTask = Callable[[dict[str, Any]], Awaitable[None]]
"""Told each state of the task while it runs (to ask its questions on the call's stream, say)."""


async def follow_call(
    ctx: ServerRequestContext[Any, Any],
    hub: TaskWatchHub,
    gateway: TemporalTaskGateway,
    task_id: str,
    principal: str | None,
    *,
    on_task: OnTask | None = None,
    started: Snapshot | None = None,
    until: Callable[[dict[str, Any]], bool] | None = None,
) -> dict[str, Any]:
    """Wait for the end of the task serving the call `ctx`; returns its final `DetailedTask`.

    Cancels the task if the wait ends any other way (see the module's docstring).
    `started` is the task as its start left it, when the caller knows it: every status
    line since is then replayed from the history, none lost to a step quicker than the first read.
    `until` ends the wait early, at a state the call answers with (a question it hands back, `plain_calls`).
    """
    progress = CallProgress(ctx)
    send, receive = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
    lost: list[str] = []

    def on_lost(_task_id: str, reason: str) -> None:
        lost.append(reason)
        send.close()

    unsubscribe = hub.subscribe(task_id, principal, send.send_nowait, seen=started, on_lost=on_lost)
    finished = False
    try:
        async with receive:
            async for task in receive:
                await progress.report(task)
                if task["status"] in TERMINAL_STATUSES or (until is not None and until(task)):
                    finished = True
                    return task
                if on_task is not None:
                    await on_task(task)
        logger.warning("plain call of task %s ended without its result: %s", task_id, lost[0] if lost else "?")
        raise MCPError(code=INTERNAL_ERROR, message="Task service unavailable, try again")
    finally:
        unsubscribe()
        send.close()  # the hub holds no more of it; an open stream left to the collector warns
        if not finished:
            await cancel_abandoned(gateway, task_id, principal)


async def cancel_abandoned(gateway: TemporalTaskGateway, task_id: str, principal: str | None) -> None:
    """Cancel the task of a call that ended without its result; bounded, and even while being cancelled."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_BOUND_S) as bound:
        try:
            await gateway.cancel(task_id, principal)
        except Exception:  # the call is over either way: the TTL still ends the task
            logger.warning("could not cancel task %s, whose plain call ended", task_id, exc_info=True)
            return
        logger.info("task %s cancelled: its plain call ended without the result", task_id)
    if bound.cancelled_caught:
        logger.warning("could not cancel task %s in %.0f s, whose plain call ended", task_id, CANCEL_BOUND_S)


def call_result(task: Mapping[str, Any]) -> CallToolResult:
    """What a plain call answers for its task's end: the tool's result, or the task's error."""
    if task["status"] == "completed":
        return CallToolResult.model_validate(as_object(task.get("result")))
    if task["status"] == "failed":
        error = as_object(task.get("error"))
        raise MCPError(
            code=int(error.get("code", INTERNAL_ERROR)),
            message=str(error.get("message", "Task failed")),
            data=error.get("data"),
        )
    raise MCPError(code=INTERNAL_ERROR, message="Task stopped")
