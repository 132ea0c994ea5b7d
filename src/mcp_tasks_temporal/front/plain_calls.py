"""A plain `tools/call` of a workflow tool: a task nobody is told about, held open until it ends or asks.

A client that did not declare the tasks extension still gets a durable task: the
workflow runs under a task ID of its own, and the front holds the call open until
the task ends (the tool's result or error) or asks a question. A 2026-07-28 client
that declared what the question needs gets it inside the call, as an
`InputRequiredResult` whose `requestState` names the task; the SDK's
`RequestStateBoundary` seals that state (with the `--request-state-key` keys, bound
to the method, the tool, its arguments and the principal), so the client's retry
with `inputResponses` may reach any front. That front delivers the answers as
`tasks/update` would and holds the retry open in turn, until the result or the next
question. Nothing waits anywhere but in the workflow: a question nobody answers
expires with the task's TTL.

A question the client cannot answer (a 2025-11-25 client, whose questions only a
held call with `elicitation` can carry, see `legacy_tasks`; or a capability it did
not declare) cancels the task, with the reason as its status, and the call gets
-32021 naming what this client's revision would need.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from typing import Any, Final

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.request_state import authenticated_principal
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolRequestParams, CallToolResult, InputRequiredResult

from mcp_tasks_temporal.front.gateway import TemporalTaskGateway, temporal_errors
from mcp_tasks_temporal.front.request_capabilities import declared_capabilities, is_modern
from mcp_tasks_temporal.front.task_watch import TaskWatchHub
from mcp_tasks_temporal.temporal.capabilities import Refusal, missing_capability, refusal_for_revision
from mcp_tasks_temporal.temporal.contract import PLAIN_CALL_META_KEY, TERMINAL_STATUSES, as_object
from mcp_tasks_temporal.temporal.ids import is_task_id

logger = logging.getLogger(__name__)

STATE_PREFIX: Final = "mcp-tasks-temporal/plain-call/"
"""Plaintext `requestState` of a held plain call's question (sealed on the wire): the prefix, then the task ID."""

ABANDON_CANCEL_S: Final = 5.0


def plain_call_envelope(ctx: ServerRequestContext[Any, Any], envelope: Mapping[str, Any]) -> dict[str, Any]:
    """The task's envelope: the client's own, marked so the workflow publishes every question to the front.

    It names what the client can answer inside the call, so workflow code may go on
    without asking what nobody can answer (`workflow_api.can_ask`).
    """
    answerable = dict(declared_capabilities(ctx) or {}) if is_modern(ctx) else {}
    answerable.pop("extensions", None)
    return {**envelope, PLAIN_CALL_META_KEY: {"answerable": answerable}}


def request_state(task_id: str) -> str:
    return STATE_PREFIX + task_id


def task_of(state: str | None) -> str | None:
    """The task a held call's `requestState` names; `None` for any other state."""
    if state is None or not state.startswith(STATE_PREFIX):
        return None
    task_id = state[len(STATE_PREFIX) :]
    return task_id if is_task_id(task_id) else None


class PlainCalls:
    """Serves plain calls of workflow tools from a front: hold the call, relay or refuse its questions, resume."""

    def __init__(self, gateway: Callable[[], TemporalTaskGateway], hub: Callable[[], TaskWatchHub]) -> None:
        self._gateway = gateway
        self._hub = hub

    async def resume(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any]
    ) -> CallToolResult | InputRequiredResult:
        """The retry of a held call's question: deliver its answers as `tasks/update` does, and hold it in turn."""
        task_id = task_of(params.request_state)
        if task_id is None:
            raise MCPError(
                code=INVALID_PARAMS, message="Invalid or expired requestState", data={"reason": "invalid_request_state"}
            )
        principal = authenticated_principal(ctx)
        # Raw, as `tasks/update` takes them: the gateway checks each against its question.
        answers = dict(as_object((ctx.params or {}).get("inputResponses")))
        with temporal_errors():
            await self._gateway().update(task_id, principal, answers)
        return await self.hold(ctx, task_id, principal, answered=set(answers))

    async def hold(
        self,
        ctx: ServerRequestContext[Any, Any],
        task_id: str,
        principal: str | None,
        *,
        answered: set[str] | None = None,
    ) -> CallToolResult | InputRequiredResult:
        """The call's answer: the tool's result, its error, or the task's next question (`input_required`).

        Follows the task until it ends or asks something not in `answered` (keys are
        unique over its life). A call the client abandons while the task works cancels
        it: nobody else knows its ID.
        """
        answered = answered or set()
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](math.inf)

        def listen(task: dict[str, Any]) -> None:
            try:
                send.send_nowait(task)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # the call has its answer; a late change is nobody's

        unsubscribe = self._hub().subscribe(task_id, principal, listen, on_lost=lambda _reason: send.close())
        settled = False
        try:
            async with receive:
                async for task in receive:
                    try:
                        answer = await self._answer(ctx, task_id, principal, task, answered)
                    except MCPError:
                        settled = True
                        raise
                    if answer is not None:
                        settled = True
                        return answer
        finally:
            unsubscribe()
            if not settled:
                with anyio.CancelScope(shield=True), anyio.move_on_after(ABANDON_CANCEL_S):
                    await self._gateway().cancel(task_id, principal, reason="The client left the call")
        raise MCPError(code=INTERNAL_ERROR, message="Task service unavailable, try again")

    async def _answer(
        self,
        ctx: ServerRequestContext[Any, Any],
        task_id: str,
        principal: str | None,
        task: Mapping[str, Any],
        answered: set[str],
    ) -> CallToolResult | InputRequiredResult | None:
        status = str(task["status"])
        if status in TERMINAL_STATUSES:
            return outcome(task)
        asked = {
            key: dict(as_object(question))
            for key, question in as_object(task.get("inputRequests")).items()
            if key not in answered
        }
        if status != "input_required" or not asked:
            return None
        refusal = unanswerable(ctx, asked)
        if refusal is None:
            return InputRequiredResult.model_validate(
                {"inputRequests": asked, "requestState": request_state(task_id)}, by_name=False
            )
        logger.info("task %s: the plain call's client cannot answer its question; the task is cancelled", task_id)
        with temporal_errors():
            await self._gateway().cancel(task_id, principal, reason=f"Cancelled: {refusal.message}")
        raise MCPError(code=refusal.code, message=refusal.message, data=refusal.data)


def unanswerable(ctx: ServerRequestContext[Any, Any], questions: Mapping[str, Mapping[str, Any]]) -> Refusal | None:
    """Why this request's client cannot answer `questions` inside the call; `None` when it can.

    Only a 2026-07-28 request can be answered inside the call (`input_required`), and only
    with the capabilities it declared; a handshake client's questions go out on the
    stream of a held call (`legacy_tasks`), which takes the calls of clients with `elicitation`.
    """
    modern = is_modern(ctx)
    capabilities = (declared_capabilities(ctx) or {}) if modern else {}
    for question in questions.values():
        refusal = missing_capability(question, capabilities)
        if refusal is not None:
            return refusal_for_revision(refusal, modern=modern)
    return None


def outcome(task: Mapping[str, Any]) -> CallToolResult:
    """What the call answers for its ended task: the tool's `CallToolResult`, or the JSON-RPC error."""
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
