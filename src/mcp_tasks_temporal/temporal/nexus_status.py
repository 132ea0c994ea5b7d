"""`set_status` and `request_input` in a workflow another team runs behind a Nexus operation.

Nexus carries an operation's start, result, failure and cancellation, nothing
in between: a query or signal cannot reach the caller's workflow across
namespaces. So the caller's task workflow sends, with the operation's start,
a reply endpoint (targeting its own namespace), its workflow ID and a nonce;
`start_task_workflow` hands them to the handler workflow in a signal
(the memo only marks that it reports); each `set_status` there starts one small
Nexus operation back through that endpoint, and each `request_input` one
operation whose result is the answers.
Workflow code: deterministic, no I/O, nothing kept in this module.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Final, cast

from temporalio import workflow
from temporalio.exceptions import ApplicationError, CancelledError, FailureError, NexusOperationError

from mcp_tasks_temporal.temporal.contract import JSONRPC_ERROR
from mcp_tasks_temporal.temporal.nexus_contract import (
    REPLY_ASK_OPERATION,
    REPLY_MEMO,
    REPLY_SERVICE,
    REPLY_STATUS_OPERATION,
    ROUTE_SIGNAL,
    AskRequest,
    ReplyRoute,
    StatusReport,
)

_SENDER_ATTRIBUTE: Final = "_mcp_tasks_nexus_status"
REPORT_TIMEOUT: Final = timedelta(minutes=5)
"""How long one report may take to reach the task; a later report supersedes it anyway."""


class _Sender:
    """Per-run state, held by the workflow instance: the route, the sequence and the reports still in flight."""

    def __init__(self, route: ReplyRoute | None) -> None:
        self.route = route
        """`None` until the route signal is delivered (its handler is registered on first use)."""
        self.sequence = 0
        self.in_flight: set[asyncio.Task[None]] = set()

    def take_route(self, route: ReplyRoute) -> None:
        if self.route is None:
            self.route = route

    async def arrived(self) -> ReplyRoute:
        await workflow.wait_condition(lambda: self.route is not None)
        assert self.route is not None
        return self.route

    async def send(self, sequence: int, text: str) -> None:
        route = await self.arrived()
        report = StatusReport(task_workflow_id=route.task, nonce=route.nonce, sequence=sequence, text=text)
        client = workflow.create_nexus_client(endpoint=route.endpoint, service=REPLY_SERVICE)
        try:
            await client.execute_operation(REPLY_STATUS_OPERATION, report, schedule_to_close_timeout=REPORT_TIMEOUT)
        except Exception as err:  # a status line is best effort; it must never fail the other team's workflow
            workflow.logger.warning("status report did not reach the MCP task: %s", err)


def forward_status(text: str) -> None:
    """Report `text` to the MCP task that started this workflow over Nexus; nothing when none did."""
    sender = _sender()
    if sender is None:
        return
    sender.sequence += 1
    task = asyncio.get_running_loop().create_task(sender.send(sender.sequence, text))
    sender.in_flight.add(task)
    task.add_done_callback(sender.in_flight.discard)


def called_over_nexus() -> bool:
    """Whether an MCP task started this workflow through Nexus and can take its status and questions."""
    return _sender() is not None


async def ask_across(questions: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The client's answers to `questions` (wire form, by key), asked by the MCP task that called this workflow.

    Raises:
        ApplicationError: the JSON-RPC error that refused the questions (-32021 for a client
            without the capability), as `task_error` makes it; it fails the MCP task with
            that error if this workflow lets it through.
    """
    sender = _sender()
    assert sender is not None, "ask_across outside a workflow started by an MCP task over Nexus"
    route = await sender.arrived()
    client = workflow.create_nexus_client(endpoint=route.endpoint, service=REPLY_SERVICE)
    request = AskRequest(task_workflow_id=route.task, nonce=route.nonce, questions=questions)
    try:
        answers: dict[str, dict[str, Any]] = await client.execute_operation(
            REPLY_ASK_OPERATION, request, output_type=dict[str, dict[str, Any]]
        )
    except NexusOperationError as err:
        if isinstance(err.cause, CancelledError):
            raise
        raise _json_rpc_error(err) or err from None
    return answers


def _json_rpc_error(err: BaseException) -> ApplicationError | None:
    node: BaseException | None = err
    while node is not None:
        if isinstance(node, ApplicationError) and node.type == JSONRPC_ERROR:
            return ApplicationError(node.message, *node.details, type=JSONRPC_ERROR, non_retryable=True)
        node = node.cause if isinstance(node, FailureError) else None
    return None


def _sender() -> _Sender | None:
    instance = workflow.instance()
    sender = getattr(instance, _SENDER_ATTRIBUTE, None)
    if isinstance(sender, _Sender):
        return sender
    reply = workflow.memo_value(REPLY_MEMO, None)
    if not isinstance(reply, Mapping) or "endpoint" not in reply:
        return None
    memo = cast(Mapping[str, Any], reply)
    if "task" in memo and "nonce" in memo:  # started by an earlier start_task_workflow, which used the memo
        sender = _Sender(ReplyRoute(endpoint=str(memo["endpoint"]), task=str(memo["task"]), nonce=str(memo["nonce"])))
    else:
        sender = _Sender(None)
        # Registered now, not by the workflow class (it is the other team's): the route signal waited in a buffer.
        workflow.set_signal_handler(ROUTE_SIGNAL, sender.take_route)  # pyright: ignore[reportUnknownMemberType]
    setattr(instance, _SENDER_ATTRIBUTE, sender)
    return sender
