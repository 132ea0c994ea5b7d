"""`notifications/cancelled` for a plain call in flight, taken by whichever front it reaches.

A client of the `initialize` revisions cancels a request by posting
`notifications/cancelled {requestId}`. Front servers are stateless, so the POST
usually reaches a front that is not holding the call, and none keeps a table of
calls. The call's task therefore carries its name: the task ID of a plain call is
derived from the client's session ID (the handshake it echoes, unique per
`initialize`, see `handshake_echo`) and the request's ID, so the front that gets the
notification knows the task's ID, and so its workflow ID, without asking anyone.
The workflow ID also names the principal, so a notification from another principal
names a workflow that does not exist; without authentication, the session ID
(random per handshake, known only to its client) is what keeps one client from
cancelling another's call.

Request IDs are unique within a session (the spec requires it), and so are the
derived task IDs; a request that reuses one while its task lives is refused.

The 2026-07-28 revision defines no cancellation notification over HTTP (a client
cancels by closing the call's stream, `held_calls`); on stdio the SDK applies a
`notifications/cancelled` to the request in flight on that connection itself.
Tasks created as tasks get random IDs: the spec forbids cancelling a task with
`notifications/cancelled`.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.request_state import authenticated_principal
from mcp.shared.exceptions import MCPError

from mcp_tasks_temporal.front.calls.held_calls import CANCEL_BOUND_S
from mcp_tasks_temporal.front.gateway import TemporalTaskGateway, temporal_errors
from mcp_tasks_temporal.front.request_capabilities import echoed_session_id
from mcp_tasks_temporal.temporal.ids import plain_call_task_id

logger = logging.getLogger(__name__)


class PlainCallCancels:
    """Server middleware: a `notifications/cancelled` cancels the task of the plain call it names."""

    def __init__(self, gateway: TemporalTaskGateway) -> None:
        self._gateway = gateway

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "notifications/cancelled" or ctx.request_id is not None:
            return await call_next(ctx)
        session_id = echoed_session_id(ctx)
        request_id = (ctx.params or {}).get("requestId")
        if session_id is None or isinstance(request_id, bool) or not isinstance(request_id, str | int):
            return await call_next(ctx)
        task_id = plain_call_task_id(session_id, request_id)
        # Shielded and bounded: the POST is answered (202) before this runs, and its connection ends then.
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_BOUND_S):
            try:
                with temporal_errors():  # Temporal's refusal is logged there
                    await self._gateway.cancel(task_id, authenticated_principal(ctx))
            except MCPError:
                # No such task for this principal (a call this server ran without a task, one that has
                # ended, or another principal's), or Temporal refused. A notification has no answer.
                logger.debug("notifications/cancelled for request %r cancelled no running task", request_id)
                return None
            logger.info("task %s cancelled: the client cancelled its plain call", task_id)
        return None
