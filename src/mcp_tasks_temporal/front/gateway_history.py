"""The gateway's reads of task histories: the long poll a watcher follows, and a failing workflow task's cause.

With `gateway.py` this is the front's one door to Temporal (the import contract in
pyproject.toml names both). `gateway.py` starts, describes, signals and cancels tasks;
this module reads what their histories say: events as they are written, the memo
fields an event upserts, the newest workflow-task failure. It stands beside
`gateway.py` (already past 700 lines) because the watchers and the failing-workflow
reads need these and nothing else of it.

The watchers match the events and the errors they get against Temporal's own types,
handed over here (`EventType`, `HistoryEvent`, `RPCError`, ...) rather than imported.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Final

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType as EventType
from temporalio.api.enums.v1 import WorkflowTaskFailedCause as WorkflowTaskFailedCause
from temporalio.api.failure.v1 import Failure
from temporalio.api.history.v1 import HistoryEvent as HistoryEvent
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.client import WorkflowExecutionStatus as WorkflowExecutionStatus
from temporalio.exceptions import ApplicationError, TerminatedError
from temporalio.service import RPCError as RPCError
from temporalio.service import RPCStatusCode as RPCStatusCode

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


def workflow_handle(client: Client, workflow_id: str) -> WorkflowHandle[Any, Any]:
    """The handle of a task's workflow, whichever run is the latest."""
    return client.get_workflow_handle(workflow_id)


async def history_events(client: Client, workflow_id: str, run_id: str) -> AsyncIterator[HistoryEvent]:
    """Every event of the run, then each new one as it is written: a long poll that adds no event."""
    run = client.get_workflow_handle(workflow_id, run_id=run_id)
    async for event in run.fetch_history_events(wait_new_event=True):
        yield event


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
