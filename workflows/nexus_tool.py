"""The task workflow of a Nexus-backed tool (`TasksExtension.nexus_tool`).

The task stays ours: its ID, memo, TTL, owner and `tasks/*` are those of any
workflow tool. The work is one Nexus operation on another team's endpoint,
usually a workflow in their namespace. Cancelling the task cancels the
operation and waits until the handler side has ended, so a cancelled task
never leaves the other team's workflow running. Status the handler workflow
sets comes back as a signal from our reply service (`nexus_reply`), tagged with
a nonce drawn here, so nothing else can write this task's status line.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError, CancelledError, FailureError, NexusOperationError

from mcp_tasks_temporal.temporal.contract import INTERNAL_ERROR_CODE, JSONRPC_ERROR, Memo, as_object
from mcp_tasks_temporal.temporal.nexus_contract import (
    ANSWER_SIGNAL,
    ASK_SIGNAL,
    NEXUS_TOOL_WORKFLOW,
    NONCE_HEADER,
    REPLY_ENDPOINT_HEADER,
    STATUS_SIGNAL,
    TASK_WORKFLOW_HEADER,
    Answers,
    Ask,
    NexusCall,
    StatusReport,
)
from mcp_tasks_temporal.temporal.workflow_api import request_inputs, set_status, task_error

EXPIRY_MARGIN_S = 30.0
NEXUS_OPERATION_FAILED = "NexusOperationFailed"
"""ApplicationError type of a failed operation: the task completes with `isError: true` and its message."""


@workflow.defn(name=NEXUS_TOOL_WORKFLOW)
class NexusToolWorkflow:
    def __init__(self) -> None:
        self._nonce: str | None = None
        self._shown = 0
        self._relayed: set[str] = set()

    @workflow.run
    async def run(self, call: NexusCall) -> Any:
        headers: dict[str, str] = {}
        if call.reply_endpoint:
            self._nonce = str(workflow.uuid4())
            headers = {
                REPLY_ENDPOINT_HEADER: call.reply_endpoint,
                TASK_WORKFLOW_HEADER: workflow.info().workflow_id,
                NONCE_HEADER: self._nonce,
            }
        client = workflow.create_nexus_client(endpoint=call.endpoint, service=call.service)
        timeout = timedelta(seconds=call.schedule_to_close_s) if call.schedule_to_close_s else None
        try:
            handle: workflow.NexusOperationHandle[Any] = await client.start_operation(
                call.operation, call.input, headers=headers, schedule_to_close_timeout=timeout
            )
            expires_in = _time_to_expiry()
            if expires_in is None:
                result: Any = await handle
                return result
            try:
                # A durable timer: at expiry the operation is cancelled, so the handler's workflow never outlives
                # the task (Temporal abandons, not cancels, a timed-out caller's operations).
                return await asyncio.wait_for(_outcome(handle), timeout=expires_in)
            except TimeoutError:
                raise task_error(INTERNAL_ERROR_CODE, "Task expired") from None
        except NexusOperationError as err:
            if isinstance(err.cause, CancelledError):
                # After `tasks/cancel` temporalio ends the run `cancelled` for exactly this error.
                raise
            raise ApplicationError(
                f"{call.service}.{call.operation} failed: {_reason(err)}",
                type=NEXUS_OPERATION_FAILED,
                non_retryable=True,
            ) from err

    @workflow.signal(name=STATUS_SIGNAL)
    def report_status(self, report: StatusReport) -> None:
        if self._nonce is None or report.nonce != self._nonce or report.sequence <= self._shown:
            return
        self._shown = report.sequence
        set_status(report.text)

    @workflow.signal(name=ASK_SIGNAL, unfinished_policy=workflow.HandlerUnfinishedPolicy.ABANDON)
    async def relay_questions(self, ask: Ask) -> None:
        """Ask the client the handler workflow's questions, as this task's own, and send the answers back."""
        if self._nonce is None or ask.nonce != self._nonce or ask.relay_workflow_id in self._relayed:
            return  # not from our operation's handler, or a signal delivered twice
        self._relayed.add(ask.relay_workflow_id)
        try:
            reply = Answers(answers=await request_inputs(ask.questions))
        except ApplicationError as err:
            # A client that cannot answer (-32021) or a malformed question: the handler's request_input raises it.
            error: dict[str, Any] = dict(as_object(err.details[0])) if err.type == JSONRPC_ERROR and err.details else {}
            if not isinstance(error.get("code"), int):
                error = {"code": INTERNAL_ERROR_CODE, "message": err.message}
            reply = Answers(error=error)
        await workflow.get_external_workflow_handle(ask.relay_workflow_id).signal(ANSWER_SIGNAL, reply)


async def _outcome(handle: workflow.NexusOperationHandle[Any]) -> Any:
    try:
        result: Any = await handle
    except NexusOperationError as err:
        task = asyncio.current_task()
        if isinstance(err.cause, CancelledError) and task is not None and task.cancelling():
            # The handler acknowledged the cancel that `wait_for` sent at expiry: let it see a cancellation.
            raise asyncio.CancelledError() from err
        raise
    return result


def _time_to_expiry() -> float | None:
    """Seconds until shortly before the task's TTL ends its run; `None` for an unlimited task."""
    ttl_ms = workflow.memo_value(Memo.TTL_MS, None)
    created_at_ms = workflow.memo_value(Memo.CREATED_AT, None)
    if not isinstance(ttl_ms, int) or not isinstance(created_at_ms, int):
        return None
    # The run's execution timeout is the TTL itself; cancelling must finish before it.
    margin_s = min(EXPIRY_MARGIN_S, ttl_ms / 1000 * 0.2)
    remaining_s = (created_at_ms + ttl_ms) / 1000 - margin_s - workflow.now().timestamp()
    return max(remaining_s, 0.001)


def _reason(err: NexusOperationError) -> str:
    """The innermost failure's message: what the handler raised, not the wrappers around it."""
    reason: BaseException = err
    while isinstance(reason, FailureError) and reason.cause is not None:
        reason = reason.cause
    message = reason.message if isinstance(reason, FailureError) else str(reason)
    return message or type(reason).__name__
