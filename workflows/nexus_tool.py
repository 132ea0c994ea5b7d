"""The task workflow of a Nexus-backed tool (`TasksExtension.nexus_tool`).

The task stays ours: its ID, memo, TTL, owner and `tasks/*` are those of any
workflow tool. The work is one Nexus operation on another team's endpoint,
usually a workflow in their namespace. Cancelling the task cancels the
operation and waits until the handler side has ended, so a cancelled task
never leaves the other team's workflow running. Status the handler workflow
sets comes back as a signal from our reply service (`nexus_reply`), tagged with
a nonce drawn here and stamped with its caller by the reply service: only the
workflow the operation's start named, holding the nonce, writes this task's
status line or asks its client.
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
    ASKED_BY_META,
    MAX_SEQUENCE_STEP,
    NEXUS_TOOL_WORKFLOW,
    NONCE_HEADER,
    REPLY_ENDPOINT_HEADER,
    STATUS_SIGNAL,
    TASK_WORKFLOW_HEADER,
    WITHDRAW_SIGNAL,
    Answers,
    Ask,
    Caller,
    HandlerWorkflow,
    NexusCall,
    StatusReport,
    handler_of_token,
)
from mcp_tasks_temporal.temporal.workflow_api import request_inputs, set_status, task_error, withdraw_inputs

EXPIRY_MARGIN_S = 30.0
NEXUS_OPERATION_FAILED = "NexusOperationFailed"
"""ApplicationError type of a failed operation: the task completes with `isError: true` and its message."""
CALLER_CHECK_PATCH = "nexus-reply-caller"
"""Reports and questions are taken only from the handler workflow the operation's start named."""
WITHDRAW_PATCH = "nexus-question-withdraw"
"""A question its handler cancelled (its relay says so) stops being shown."""


@workflow.defn(name=NEXUS_TOOL_WORKFLOW)
class NexusToolWorkflow:
    def __init__(self) -> None:
        self._nonce: str | None = None
        self._shown = 0
        self._relayed: set[str] = set()
        self._checks_caller = False
        self._call: NexusCall | None = None
        self._handler: HandlerWorkflow | None = None
        self._started = False
        """Whether the operation's start returned: before that, reports wait to be checked."""
        self._early: list[StatusReport] = []
        self._asking: dict[str, tuple[asyncio.Task[dict[str, dict[str, Any]]], set[str]]] = {}
        """By relay workflow ID: the wait for a question's answers, and its keys, while the handler may withdraw it."""

    @workflow.run
    async def run(self, call: NexusCall) -> Any:
        self._call = call
        headers: dict[str, str] = {}
        if call.reply_endpoint:
            self._checks_caller = workflow.patched(CALLER_CHECK_PATCH)
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
            self._handler_started(handle.operation_token)
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

    def _handler_started(self, token: str | None) -> None:
        if not self._checks_caller:
            return
        self._handler = handler_of_token(token)
        self._started = True
        early, self._early = self._early, []
        for report in early:
            self.report_status(report)

    def _from_handler(self, nonce: str, caller: Caller | None) -> bool:
        """Whether a report or question comes from our operation's handler workflow, holding our nonce."""
        if self._nonce is None or nonce != self._nonce:
            return False
        if not self._checks_caller:
            return True  # a task started before callers were checked keeps the nonce alone
        handler = self._handler
        return (
            handler is not None
            and caller is not None
            and (caller.namespace, caller.workflow_id) == (handler.namespace, handler.workflow_id)
        )

    @workflow.signal(name=STATUS_SIGNAL)
    def report_status(self, report: StatusReport) -> None:
        if self._checks_caller and not self._started:
            # The handler can report before its operation's start is recorded here; checked once it is.
            self._early = [*self._early[-MAX_SEQUENCE_STEP:], report]
            return
        if not self._from_handler(report.nonce, report.caller) or report.sequence <= self._shown:
            return
        if self._checks_caller and report.sequence > self._shown + MAX_SEQUENCE_STEP:
            return  # a sequence no handler reaches from here would pin its line for the rest of the task
        self._shown = report.sequence
        set_status(report.text)

    @workflow.signal(name=ASK_SIGNAL, unfinished_policy=workflow.HandlerUnfinishedPolicy.ABANDON)
    async def relay_questions(self, ask: Ask) -> None:
        """Ask the client the handler workflow's questions, as this task's own, and send the answers back."""
        if self._checks_caller:
            await workflow.wait_condition(lambda: self._started)
        if not self._from_handler(ask.nonce, ask.caller) or ask.relay_workflow_id in self._relayed:
            return  # not from our operation's handler, or a signal delivered twice
        self._relayed.add(ask.relay_workflow_id)
        questions = self._attributed(ask.questions) if self._checks_caller else ask.questions
        try:
            if self._checks_caller and workflow.patched(WITHDRAW_PATCH):
                asking = asyncio.create_task(request_inputs(questions))
                self._asking[ask.relay_workflow_id] = (asking, set(questions))
                try:
                    answers = await asking
                except asyncio.CancelledError:
                    return  # withdrawn by the handler that asked: nobody waits for the answers
                finally:
                    self._asking.pop(ask.relay_workflow_id, None)
            else:
                answers = await request_inputs(questions)
            reply = Answers(answers=answers)
        except ApplicationError as err:
            # A client that cannot answer (-32021) or a malformed question: the handler's request_input raises it.
            error: dict[str, Any] = dict(as_object(err.details[0])) if err.type == JSONRPC_ERROR and err.details else {}
            if not isinstance(error.get("code"), int):
                error = {"code": INTERNAL_ERROR_CODE, "message": err.message}
            reply = Answers(error=error)
        relay = workflow.get_external_workflow_handle(ask.relay_workflow_id)
        if not self._checks_caller:
            await relay.signal(ANSWER_SIGNAL, reply)
            return
        try:
            await relay.signal(ANSWER_SIGNAL, reply)
        except FailureError as err:
            # The handler cancelled its question (its relay is gone): the answer has no taker, the task goes on.
            workflow.logger.info("the answers to a withdrawn Nexus question were dropped: %s", err.message)

    @workflow.signal(name=WITHDRAW_SIGNAL)
    def withdraw_question(self, relay_workflow_id: str) -> None:
        """The handler cancelled a question not answered yet: the client no longer sees it."""
        asking = self._asking.get(relay_workflow_id)
        if asking is None:
            return  # answered already, or never relayed
        wait, keys = asking
        withdraw_inputs(keys)
        wait.cancel()

    def _attributed(self, questions: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """The questions as the client sees them: asked by the other team's operation, not by this server."""
        assert self._call is not None
        asker = f"{self._call.service}.{self._call.operation}"
        shown: dict[str, dict[str, Any]] = {}
        for key, question in questions.items():
            params = dict(as_object(question.get("params")))
            params["_meta"] = {
                **as_object(params.get("_meta")),
                ASKED_BY_META: {
                    "endpoint": self._call.endpoint,
                    "service": self._call.service,
                    "operation": self._call.operation,
                },
            }
            if isinstance(params.get("message"), str):
                params["message"] = f"[{asker}] {params['message']}"
            shown[key] = {**question, "params": params}
        return shown


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
