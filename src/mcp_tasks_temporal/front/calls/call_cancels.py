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

import hashlib
import logging
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.request_state import authenticated_principal
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from mcp_tasks_temporal.front.calls.held_calls import CANCEL_BOUND_S
from mcp_tasks_temporal.front.gateway import temporal_errors
from mcp_tasks_temporal.front.legacy.handshake_echo import SESSION_HEADER
from mcp_tasks_temporal.front.legacy.handshake_echo import decode as decode_handshake
from mcp_tasks_temporal.temporal.ids import new_task_id

if TYPE_CHECKING:
    from mcp_tasks_temporal.front.extension import TasksExtension

logger = logging.getLogger(__name__)


def call_task_id(session_id: str, request_id: str | int) -> str:
    """The task ID of the plain call `request_id` of the session `session_id`: a UUID4 in shape."""
    digest = hashlib.sha256(f"mcp-tasks-temporal/plain-call\n{session_id}\n{request_id}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def task_id_for(ctx: ServerRequestContext[Any, Any]) -> str:
    """The ID of the task a `tools/call` creates: named by its session and request for a plain call, else random."""
    params = ctx.params or {}
    plain = ctx.method == "tools/call" and not isinstance(params.get("task"), Mapping)
    session_id = _session_id(ctx) if plain else None
    if session_id is None or ctx.request_id is None:
        return new_task_id()
    return call_task_id(session_id, ctx.request_id)


def _session_id(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The echoed handshake of a handshake-revision request over HTTP, if it carries one."""
    if ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return None
    headers = getattr(ctx.request, "headers", None)
    session_id = headers.get(SESSION_HEADER) if headers is not None else None
    return session_id if isinstance(session_id, str) and decode_handshake(session_id) is not None else None


class PlainCallCancels:
    """Server middleware: a `notifications/cancelled` cancels the task of the plain call it names."""

    def __init__(self, extension: TasksExtension) -> None:
        self._extension = extension

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "notifications/cancelled" or ctx.request_id is not None:
            return await call_next(ctx)
        session_id = _session_id(ctx)
        request_id = (ctx.params or {}).get("requestId")
        if session_id is None or isinstance(request_id, bool) or not isinstance(request_id, str | int):
            return await call_next(ctx)
        task_id = call_task_id(session_id, request_id)
        # Shielded and bounded: the POST is answered (202) before this runs, and its connection ends then.
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_BOUND_S):
            try:
                with temporal_errors():  # Temporal's refusal is logged there
                    await self._extension.gateway.cancel(task_id, authenticated_principal(ctx))
            except MCPError:
                # No such task for this principal (a call this server ran without a task, one that has
                # ended, or another principal's), or Temporal refused. A notification has no answer.
                logger.debug("notifications/cancelled for request %r cancelled no running task", request_id)
                return None
            logger.info("task %s cancelled: the client cancelled its plain call", task_id)
        return None
