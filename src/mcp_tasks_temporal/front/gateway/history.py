"""The gateway's reads of task histories: a run's changes as a watcher follows them, a workflow task's failure.

`changes` long-polls a run's history and hands each event over as a `HistoryChange`,
the project's own value: what the event changes about the task (memo fields, a tool
round starting or ending, a workflow task failing, the run continuing as new or
closing), decoded here. `last_workflow_task_failure` reads the newest
`WorkflowTaskFailed` event backwards from the end, for `failing_workflows`.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Final

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.api.failure.v1 import Failure
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError, TerminatedError

from mcp_tasks_temporal.temporal.failing_policy import error_of_termination

CLOSE_STATUS: Final = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: WorkflowExecutionStatus.COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED: WorkflowExecutionStatus.FAILED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED: WorkflowExecutionStatus.CANCELED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED: WorkflowExecutionStatus.TERMINATED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT: WorkflowExecutionStatus.TIMED_OUT,
}
ACTIVITY_CLOSED: Final = frozenset(
    {
        EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT,
        EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED,
    }
)
_FAILURE_PAGE: Final = 16


__all__ = ["Change", "HistoryChange", "RunClosed", "WorkflowTaskFailedCause"]


class Change(enum.Enum):
    """What a history event changes about the task it belongs to."""

    MEMO = "memo"
    """Memo fields were set (`HistoryChange.memo`): a transition."""
    ROUND_STARTED = "round started"
    ROUND_ENDED = "round ended"
    WORKFLOW_TASK_FAILED = "workflow task failed"
    CONTINUED = "continued as new"
    """The run continued as new (`HistoryChange.next_run_id`): the task goes on in that run."""
    CLOSED = "closed"
    """The run closed (`HistoryChange.closed`)."""
    NOTHING = "nothing"
    """Nothing a task's view shows, or an event before the caller's `after`."""


@dataclass(frozen=True)
class RunClosed:
    """How a task's run closed; the gateway makes the task's last view of it (`closed_view`)."""

    status: WorkflowExecutionStatus
    event: HistoryEvent = field(repr=False)


@dataclass(frozen=True)
class HistoryChange:
    event_id: int
    change: Change
    memo: dict[str, Any] = field(default_factory=dict[str, Any])
    next_run_id: str = ""
    closed: RunClosed | None = None


async def changes(client: Client, workflow_id: str, run_id: str, *, after: int) -> AsyncIterator[HistoryChange]:
    """The run's changes, then each new one as it is written: a long poll that adds no event.

    Events up to `after` (what the caller has already seen) come as `Change.NOTHING`, undecoded: each
    still says the long poll works. A close is never old news: a failing run's retries show as events
    Temporal drops when the run closes, so its close event may reuse a number the caller has seen.
    """
    run = client.get_workflow_handle(workflow_id, run_id=run_id)
    async for event in run.fetch_history_events(wait_new_event=True):
        if event.event_id > after or event.event_type in CLOSE_STATUS:
            yield await _change(client, event)
        else:
            yield HistoryChange(event.event_id, Change.NOTHING)


async def _change(client: Client, event: HistoryEvent) -> HistoryChange:
    kind = event.event_type
    if kind == EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
        return HistoryChange(event.event_id, Change.MEMO, memo=await upserted_memo(client, event))
    if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
        next_run = event.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
        return HistoryChange(event.event_id, Change.CONTINUED, next_run_id=next_run)
    closed = CLOSE_STATUS.get(kind)
    if closed is not None:
        return HistoryChange(event.event_id, Change.CLOSED, closed=RunClosed(closed, event))
    if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        return HistoryChange(event.event_id, Change.ROUND_STARTED)
    if kind in ACTIVITY_CLOSED:
        return HistoryChange(event.event_id, Change.ROUND_ENDED)
    if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
        return HistoryChange(event.event_id, Change.WORKFLOW_TASK_FAILED)
    return HistoryChange(event.event_id, Change.NOTHING)


def closing(event: HistoryEvent) -> RunClosed | None:
    """How the run closed, from its close event; `None` for any other event."""
    closed = CLOSE_STATUS.get(event.event_type)
    return RunClosed(closed, event) if closed is not None else None


async def upserted_memo(client: Client, event: HistoryEvent) -> dict[str, Any]:
    """The memo fields a `WorkflowPropertiesModified` event sets, decoded."""
    fields = event.workflow_properties_modified_event_attributes.upserted_memo.fields
    upserted: dict[str, Any] = {}
    for name, payload in fields.items():
        [upserted[name]] = await client.data_converter.decode([payload])
    return upserted


async def last_workflow_task_failure(client: Client, workflow_id: str, run_id: str) -> tuple[int, str, str] | None:
    """(cause, exception type, message) of the run's newest workflow-task failure, when no workflow task
    completed after it; the caller decides what of it a client may see."""
    request = GetWorkflowExecutionHistoryReverseRequest(
        namespace=client.namespace,
        execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
        maximum_page_size=_FAILURE_PAGE,
    )
    while True:
        response = await client.workflow_service.get_workflow_execution_history_reverse(request)
        for event in response.history.events:
            kind = event.WhichOneof("attributes")
            if kind == "workflow_task_failed_event_attributes":
                attrs = event.workflow_task_failed_event_attributes
                return (attrs.cause, *(await _readable(client, attrs.failure)))
            if kind in ("workflow_task_completed_event_attributes", "workflow_task_timed_out_event_attributes"):
                # Retried after a worker went away, not after a failure: nothing to report.
                return None
        if not response.next_page_token:
            return None
        request.next_page_token = response.next_page_token


async def _readable(client: Client, failure: Failure) -> tuple[str, str]:
    """The failure's exception type and message (a codec may have sealed them)."""
    if not failure.HasField("encoded_attributes"):
        error_type = failure.application_failure_info.type if failure.HasField("application_failure_info") else ""
        return error_type, failure.message
    copy = Failure()
    copy.CopyFrom(failure)
    err = await client.data_converter.decode_failure(copy)
    return (err.type or "") if isinstance(err, ApplicationError) else "", getattr(err, "message", str(err))


async def termination_error(client: Client, event: HistoryEvent) -> dict[str, Any] | None:
    """The JSON-RPC error a terminate close event carries (the failing-workflow policy's), if any."""
    attrs = event.workflow_execution_terminated_event_attributes
    return error_of_termination(await client.data_converter.decode(attrs.details.payloads))


async def terminated_run_error(handle: WorkflowHandle[Any, Any]) -> dict[str, Any] | None:
    """The same, read from a terminated run's outcome."""
    try:
        await handle.result(follow_runs=False)
    except WorkflowFailureError as failure:
        if isinstance(failure.cause, TerminatedError):
            return error_of_termination(failure.cause.details)
    return None
