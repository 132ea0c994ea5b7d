"""A workflow tool's activity reaching its task: status lines and questions go through the workflow.

A workflow tool's status line and questions live in its workflow's memo, which
only workflow code can write. So `set_status` in one of its activities signals
the workflow (`STATUS_SIGNAL`), and `request_input` asks it with the Update a
tool task's activity uses (`REQUEST_INPUT_UPDATE`); the worker's interceptor
registers both handlers on every workflow task it runs (`register_handlers`).
The Update ID is the question's keys, so a retried attempt that asks again
gets the recorded answer.

Signals from one activity are sent in order, one after the other, and the
worker waits for them before it reports the activity's result: the workflow's
own next status line is never overtaken by an older one from its activity.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Final

from temporalio import activity, workflow
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from mcp_tasks_temporal.temporal.contract import JSONRPC_ERROR, REQUEST_INPUT_UPDATE, InputAsk, as_object
from mcp_tasks_temporal.temporal.workflow_api import INVALID_INPUT_REQUEST, request_inputs, set_status

logger = logging.getLogger(__name__)

STATUS_SIGNAL: Final = "mcp_tasks.activity_status"
"""Signal an activity of a workflow tool sends with its `set_status` text."""

_FLUSH_TIMEOUT_S: Final = 10.0
_NOT_READY_RETRY_S: Final = 0.5

_sending: dict[bytes, asyncio.Task[None]] = {}
"""The last status signal of each running activity (by task token); each waits for the one before."""
_last_sent: dict[bytes, str] = {}


def send_status(message: str) -> None:
    """Signal `message` to the running activity's workflow, after the activity's earlier ones."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            "set_status in a synchronous (def) activity of a workflow tool is not supported; make it `async def`"
        ) from None
    info = activity.info()
    token = info.task_token
    if _last_sent.get(token) == message:
        return
    _last_sent[token] = message
    handle = activity.client().get_workflow_handle(info.workflow_id or "", run_id=info.workflow_run_id)
    previous = _sending.get(token)

    async def send() -> None:
        if previous is not None:
            await asyncio.wait([previous])
        try:
            await handle.signal(STATUS_SIGNAL, message)
        except Exception as err:  # a status line is not worth failing the activity for
            logger.warning("status of activity %s not delivered to its workflow: %s", info.activity_type, err)

    task = loop.create_task(send())
    _sending[token] = task

    def forget(done: asyncio.Task[None]) -> None:
        if _sending.get(token) is done:
            del _sending[token]

    task.add_done_callback(forget)


async def flush_status(token: bytes) -> None:
    """Wait (bounded) until the activity's status signals are delivered; forget the activity."""
    pending = _sending.get(token)
    _last_sent.pop(token, None)
    if pending is not None:
        await asyncio.wait([pending], timeout=_FLUSH_TIMEOUT_S)


async def ask(requests: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Ask the activity's workflow task the client `requests` (wire form); the answers by key.

    Raises:
        ApplicationError: what the workflow refused the questions with (-32021 when the
            client cannot answer them), or a non-retryable error when the workflow is no MCP task.
    """
    info = activity.info()
    handle = activity.client().get_workflow_handle(info.workflow_id or "", run_id=info.workflow_run_id)
    try:
        while True:
            try:
                answers: dict[str, dict[str, Any]] = await handle.execute_update(  # pyright: ignore[reportUnknownMemberType]
                    REQUEST_INPUT_UPDATE,
                    InputAsk(requests=dict(requests)),
                    id="ask/" + "\x1f".join(sorted(requests)),
                    result_type=dict[str, Any],
                )
                break
            except RPCError as err:
                # The workflow's last workflow task failed or timed out (a busy worker): Temporal takes no
                # update until its retry completes. Asking again (same update ID) is safe; the activity's
                # heartbeats go on meanwhile, and a cancel ends the wait.
                if not _workflow_not_ready(err):
                    raise
                await asyncio.sleep(_NOT_READY_RETRY_S)
    except WorkflowUpdateFailedError as failure:
        cause = failure.cause
        if isinstance(cause, ApplicationError) and cause.type in (JSONRPC_ERROR, INVALID_INPUT_REQUEST):
            # The workflow refused the question: fail the activity the same way, so an uncaught
            # refusal ends the task as it would have in workflow code.
            raise ApplicationError(
                cause.message, *cause.details, type=cause.type, non_retryable=cause.non_retryable
            ) from None
        raise ApplicationError(
            f"request_input in activity {info.activity_type}: workflow {info.workflow_type} does not run as an "
            "MCP task on a worker that relays questions (mcp-tasks-temporal dev or worker)",
            type=INVALID_INPUT_REQUEST,
            non_retryable=True,
        ) from None
    return answers


def _workflow_not_ready(err: RPCError) -> bool:
    return err.status == RPCStatusCode.FAILED_PRECONDITION and any(
        detail.type_url.endswith("WorkflowNotReadyFailure") for detail in err.grpc_status.details
    )


def register_handlers() -> None:
    """In a workflow task: take its activities' status lines and questions (see the module doc)."""

    async def answer(question: Any) -> dict[str, dict[str, Any]]:
        requests = question.requests if isinstance(question, InputAsk) else as_object(question).get("requests")
        return await request_inputs(dict(as_object(requests)))

    workflow.set_signal_handler(STATUS_SIGNAL, set_status)  # pyright: ignore[reportUnknownMemberType]
    workflow.set_update_handler(REQUEST_INPUT_UPDATE, answer)  # pyright: ignore[reportUnknownMemberType]
