"""Why a task's workflow task fails, in one line anyone may see, and where its failing series began.

Temporal keeps a run whose workflow task fails open and retries the task (a sandbox
violation, a non-deterministic change, an exception in workflow code). The history
records the first failure of a series as a `WorkflowTaskFailed` event, with the identity
of the worker that reported it; the SDK reports only a task's first attempt, so later
attempts fail without an event until one succeeds (`WorkflowTaskCompleted`) or the run
closes. A worker running on a sticky queue may add one more recorded failure when the
task moves to the normal queue. The series' first event is the anchor both sides use:
its time says since when the task fails, its identity which worker saw it first.

Only what names the cause goes out: the kind of failure, the exception's type, and the
replayer's or sandbox's own sentence; never a traceback or an exception's own message,
which may carry data the workflow held.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import WorkflowTaskFailedCause
from temporalio.api.failure.v1 import Failure
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest
from temporalio.client import Client
from temporalio.exceptions import ApplicationError

SANDBOX_ERRORS: Final = frozenset({"RestrictedWorkflowAccessError", "RestrictedWorkflowAccessErrorGroup"})
"""Exception types whose message names only what the workflow touched, never its data."""

_NONDETERMINISM: Final = "Nondeterminism error: "
_MAX_CAUSE: Final = 240
_PAGE: Final = 16


def describe_failure(cause: int, error_type: str, message: str) -> tuple[str, str]:
    """(kind, one-line cause) of a `WorkflowTaskFailed` event; kind is `nondeterminism`, `sandbox` or `exception`."""
    if (
        cause == WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR
        or _NONDETERMINISM in message
    ):
        reason = message.split(_NONDETERMINISM, 1)[1] if _NONDETERMINISM in message else "history mismatch"
        return "nondeterminism", _line(f"code changed under a running task ({reason})")
    if error_type in SANDBOX_ERRORS:
        first = message.split(". ", 1)[0].rstrip(".")
        return "sandbox", _line(f"{error_type}: {first}")
    return "exception", f"{error_type or 'an exception'} raised in workflow code (the worker's log has the traceback)"


def _line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_CAUSE else text[: _MAX_CAUSE - 1] + "…"


@dataclass(frozen=True)
class FailingSeries:
    """The first recorded failure of the workflow task that keeps failing now."""

    event_id: int
    at_ms: int
    """When Temporal recorded it: the task has been failing since."""
    identity: str
    """The worker that reported it."""
    kind: str
    cause: str


async def failing_series(client: Client, workflow_id: str, run_id: str) -> FailingSeries | None:
    """The first recorded failure after the run's last completed workflow task, or None when there is none.

    Reads the history backwards from its end, a page at a time, and stops at the
    last `WorkflowTaskCompleted` (or a timed-out task, after which a worker went away
    rather than failed): a healthy run costs one short page.
    """
    request = GetWorkflowExecutionHistoryReverseRequest(
        namespace=client.namespace,
        execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
        maximum_page_size=_PAGE,
    )
    earliest: HistoryEvent | None = None
    while True:
        response = await client.workflow_service.get_workflow_execution_history_reverse(request)
        for event in response.history.events:
            kind = event.WhichOneof("attributes")
            if kind == "workflow_task_failed_event_attributes":
                earliest = event
            elif kind in ("workflow_task_completed_event_attributes", "workflow_task_timed_out_event_attributes"):
                return await _series(client, earliest) if earliest is not None else None
        if not response.next_page_token:
            return await _series(client, earliest) if earliest is not None else None
        request.next_page_token = response.next_page_token


async def _series(client: Client, event: HistoryEvent) -> FailingSeries:
    attrs = event.workflow_task_failed_event_attributes
    error_type, message = await readable_failure(client, attrs.failure)
    kind, cause = describe_failure(attrs.cause, error_type, message)
    return FailingSeries(
        event_id=event.event_id,
        at_ms=event.event_time.ToMilliseconds(),
        identity=attrs.identity,
        kind=kind,
        cause=cause,
    )


async def readable_failure(client: Client, failure: Failure) -> tuple[str, str]:
    """The failure's exception type and message (a codec may have sealed them)."""
    if not failure.HasField("encoded_attributes"):
        error_type = failure.application_failure_info.type if failure.HasField("application_failure_info") else ""
        return error_type, failure.message
    copy = Failure()
    copy.CopyFrom(failure)
    err = await client.data_converter.decode_failure(copy)
    return (err.type or "") if isinstance(err, ApplicationError) else "", getattr(err, "message", str(err))
