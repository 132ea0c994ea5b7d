"""The task behind a plain call, found and watched from Temporal: its client is never told its ID.

A front holds a plain `tools/call` open as a task of its own; a test that checks what became of that task (was it
cancelled when the client said so?) finds it the way an operator would, by its tool on the test's task queue,
and reads its history.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from mcp_tasks_temporal.temporal.contract import Memo
from tests.polling import pauses

FIND_BOUND_S = 10.0
"""Visibility lists a task within milliseconds of its start on the dev server."""


async def the_running_task(client: Client, task_queue: str, tool: str) -> WorkflowHandle[Any, Any]:
    """The one running task of `tool` on `task_queue` (a queue of the test module's own)."""
    query = f"TaskQueue = '{task_queue}' AND ExecutionStatus = 'Running'"
    wait = pauses()
    with anyio.fail_after(FIND_BOUND_S):
        while True:
            running = [
                execution
                async for execution in client.list_workflows(query)
                if (await execution.memo()).get(Memo.TOOL) == tool
            ]
            if running:
                [execution] = running
                return client.get_workflow_handle(execution.id, run_id=execution.run_id)
            await anyio.sleep(next(wait))


async def cancel_requested(handle: WorkflowHandle[Any, Any]) -> bool:
    """Whether anyone asked Temporal to cancel the task's run (the request is in its history once taken)."""
    events = [event.event_type async for event in handle.fetch_history_events()]
    return EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED in events


async def until_cancel_requested(
    handle: WorkflowHandle[Any, Any], bound_s: float, *, settled: Callable[[], bool] = lambda: False
) -> None:
    """Until the task's run is asked to cancel; `TimeoutError` when that does not happen within `bound_s`.

    `settled()` says whoever was to ask has done all it will (the front stopped following the call): a run not
    asked by then never will be, and that fails at once, not at the bound.
    """
    wait = pauses()
    with anyio.fail_after(bound_s):
        while True:
            done = settled()
            if await cancel_requested(handle):
                return
            if done:
                raise AssertionError("the task's run was not asked to cancel, and nothing is left to ask")
            await anyio.sleep(next(wait))
