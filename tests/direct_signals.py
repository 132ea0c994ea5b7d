"""Signals sent to a task's workflow through Temporal itself, past the front server's checks.

An operator's `temporal workflow signal`, another service or a replayed script
reaches the workflow without the front's filter, so the workflow's own handler
must hold up on its own; these helpers let a test play that sender.
"""

from __future__ import annotations

from typing import Any

import anyio
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle

from mcp_tasks_temporal.temporal.contract import INPUT_SIGNAL


async def signal_answers(handle: WorkflowHandle[Any, Any], answers: dict[str, Any], *, timeout: float = 30) -> None:
    """Send `tasks/update`'s signal straight to the workflow; return once a workflow task has handled it.

    Raises:
        AssertionError: The workflow task that handled the signal failed (a handler that raised).
    """
    await signal_handled(handle, INPUT_SIGNAL, answers, timeout=timeout)


async def signal_handled(handle: WorkflowHandle[Any, Any], name: str, arg: Any, *, timeout: float = 30) -> None:
    """Send signal `name` straight to the workflow; return once the workflow task that handled it completed.

    Raises:
        AssertionError: The workflow task that handled the signal failed (a handler that raised).
    """
    await handle.signal(name, arg)
    with anyio.fail_after(timeout):
        while True:
            events = [event async for event in handle.fetch_history_events()]
            signalled = [
                at
                for at, event in enumerate(events)
                if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
            ]
            # The last signal is this one: the signals a test sends go one after the other.
            for event in events[signalled[-1] + 1 :] if signalled else []:
                if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                    failure = event.workflow_task_failed_event_attributes.failure
                    raise AssertionError(f"the workflow task that handled the signal failed: {failure.message}")
                if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                    return
            await anyio.sleep(0.1)
