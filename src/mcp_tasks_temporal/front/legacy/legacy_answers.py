"""Replies to the questions a front server asked on a request's stream, taken by whichever front they reach.

A 2025-11-25 client answers a server-to-client request by POSTing a JSON-RPC
response to the MCP endpoint, with no session to route it by. The questions
this server asks carry IDs that name their task and question
(`legacy_tasks.answer_id`), so this ASGI middleware, in front of the SDK's
stateless transport (which would drop the reply), turns such a reply into the
answer `tasks/update` would have delivered: a signal to the task's workflow,
owned by the principal that POSTs it. The front still holding the client's
request sees the task move on and carries on there.
"""

from __future__ import annotations

import logging
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import principal_components
from mcp.server.request_state import compact_json
from mcp.shared.exceptions import MCPError
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_tasks_temporal.front.gateway import TemporalTaskGateway
from mcp_tasks_temporal.front.http.bounded_body import Read, parse_json, read_bounded, refuse_too_large, replay
from mcp_tasks_temporal.front.legacy.handshake_echo import handshake_era
from mcp_tasks_temporal.front.legacy.legacy_tasks import ANSWER_ID_PREFIX, parse_answer_id
from mcp_tasks_temporal.front.unicode_params import lone_surrogate_at
from mcp_tasks_temporal.temporal.contract import as_object

logger = logging.getLogger(__name__)

_MARKER = ANSWER_ID_PREFIX.encode()


class LegacyAnswers:
    """ASGI middleware: a POSTed reply to one of this server's questions becomes the task's answer."""

    def __init__(self, app: ASGIApp, gateway: TemporalTaskGateway, *, max_body_bytes: int) -> None:
        self.app = app
        self.gateway = gateway
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Only handshake-revision clients answer questions this way; a 2026-07-28 request streams through unread.
        if scope["type"] != "http" or scope.get("method") != "POST" or not handshake_era(scope):
            await self.app(scope, receive, send)
            return
        body, read = await read_bounded(scope.get("headers", []), receive, self.max_body_bytes)
        if read is Read.TOO_LARGE:
            await refuse_too_large(send)
            return
        if read is Read.DISCONNECTED:
            return
        reply = _reply(body) if _MARKER in body else None
        if reply is None:
            await self.app(scope, replay(body, receive), send)
            return
        # What cannot be stored (not valid Unicode, nested past what a payload converter takes) is refused here.
        try:
            unstorable = lone_surrogate_at(reply[2]) is not None
        except RecursionError:
            unstorable = True
        status = 400 if unstorable else await self._deliver(*reply)
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})

    async def _deliver(self, task_id: str, key: str, reply: dict[str, Any]) -> int:
        token = get_access_token()
        principal = None if token is None else compact_json(principal_components(token))
        gateway = self.gateway
        try:
            if "result" in reply:
                await gateway.update(task_id, principal, {key: as_object(reply["result"])})
            else:
                # The client cannot answer (no such capability, or it failed): nothing else will.
                logger.info("task %s: the client refused question %r; the task is cancelled", task_id, key)
                await gateway.cancel(task_id, principal)
        except MCPError as err:
            logger.info("task %s: reply to question %r not taken: %s", task_id, key, err.error.message)
            return 400
        except Exception:
            logger.exception("task %s: could not deliver the reply to question %r", task_id, key)
            return 503
        return 202


def _reply(body: bytes) -> tuple[str, str, dict[str, Any]] | None:
    """`(task_id, key, response)` when the body is a JSON-RPC response to one of our questions."""
    message = parse_json(body)
    if isinstance(message, ValueError):
        return None  # the SDK answers what is not JSON (or nested past what a parser takes)
    response = as_object(message)
    if not response or "method" in response or not ("result" in response or "error" in response):
        return None
    parsed = parse_answer_id(response.get("id"))
    if parsed is None:
        return None
    return parsed[0], parsed[1], dict(response)
