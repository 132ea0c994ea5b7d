"""A plain `tools/call` of a workflow tool or task tool: a task nobody is told about, held open until it ends or asks.

A client that did not declare the tasks extension still gets a durable task (a workflow
tool's in any revision, an optional task tool's at 2026-07-28): it runs under a task ID
of its own, and the front holds the call open until the task ends (the tool's result
or error) or asks a question. A 2026-07-28 client that declared what the question
needs gets it inside the call, as an `InputRequiredResult` whose `requestState` names the task; the SDK's
`RequestStateBoundary` seals that state (with the `--request-state-key` keys, bound
to the method, the tool, its arguments and the principal), so the client's retry
with `inputResponses` may reach any front. That front delivers the answers as
`tasks/update` would and holds the retry open in turn, until the result or the next
question. While held, a call is followed as every plain call is (`held_calls`: its
progress, and a cancel when the client leaves it). Between a question and its answer
nothing waits anywhere but in the workflow: a question nobody answers expires with
the task's TTL.

A question the client cannot answer inside the call (a handshake-revision request,
whose questions go out on the stream of a call `legacy_tasks` holds; or a capability
it did not declare) cancels the task, with the reason as its status, and the call
gets -32021 naming what this client's revision would need.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from mcp.server.context import ServerRequestContext
from mcp.server.request_state import authenticated_principal
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolRequestParams, CallToolResult, InputRequiredResult

from mcp_tasks_temporal.front.calls.held_calls import call_result, follow_call
from mcp_tasks_temporal.front.gateway import Snapshot, TemporalTaskGateway, temporal_errors
from mcp_tasks_temporal.front.push.task_watch import TaskWatchHub
from mcp_tasks_temporal.front.request_capabilities import declared_capabilities, is_modern
from mcp_tasks_temporal.temporal.capabilities import Refusal, missing_capability, refusal_for_revision
from mcp_tasks_temporal.temporal.contract import PLAIN_CALL_META_KEY, TERMINAL_STATUSES, as_object
from mcp_tasks_temporal.temporal.ids import is_task_id

logger = logging.getLogger(__name__)

STATE_PREFIX: Final = "mcp-tasks-temporal/plain-call/"
"""Plaintext `requestState` of a held plain call's question (sealed on the wire): the prefix, then the task ID."""


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
    """Serves plain calls held as tasks from a front: hold the call, relay or refuse its questions, resume."""

    def __init__(self, gateway: TemporalTaskGateway, hub: TaskWatchHub) -> None:
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
            await self._gateway.update(task_id, principal, answers)
        return await self.hold(ctx, task_id, principal, answered=set(answers))

    async def hold(
        self,
        ctx: ServerRequestContext[Any, Any],
        task_id: str,
        principal: str | None,
        *,
        answered: set[str] | None = None,
        started: Snapshot | None = None,
    ) -> CallToolResult | InputRequiredResult:
        """The call's answer: the tool's result, its error, or the task's next question (`input_required`).

        Follows the task (`held_calls`: progress, and a cancel when the client leaves)
        until it ends or asks something not in `answered` (keys are unique over its life).
        """
        done = answered or set()
        task = await follow_call(
            ctx, self._hub, self._gateway, task_id, principal, started=started, until=lambda t: bool(_asked(t, done))
        )
        if task["status"] in TERMINAL_STATUSES:
            return call_result(task)
        asked = _asked(task, done)
        refusal = unanswerable(ctx, asked)
        if refusal is None:
            return InputRequiredResult.model_validate(
                {"inputRequests": asked, "requestState": request_state(task_id)}, by_name=False
            )
        logger.info("task %s: the plain call's client cannot answer its question; the task is cancelled", task_id)
        with temporal_errors():
            await self._gateway.cancel(task_id, principal, reason=f"Cancelled: {refusal.message}")
        raise MCPError(code=refusal.code, message=refusal.message, data=refusal.data)


def _asked(task: Mapping[str, Any], answered: set[str]) -> dict[str, dict[str, Any]]:
    """The questions a running task waits on that the call has not answered yet."""
    if task["status"] != "input_required":
        return {}
    questions = as_object(task.get("inputRequests"))
    return {key: dict(as_object(question)) for key, question in questions.items() if key not in answered}


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
