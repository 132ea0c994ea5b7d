"""The handshake revisions' POSTs, each body read once: a reply to one of our questions, or an `initialize`.

Clients of the `initialize` revisions send two things the SDK's stateless transport
cannot take as they are: replies to the questions a front asked on a request's stream
(`legacy_answers`: the reply becomes the task's answer, on whichever front it lands) and
the `initialize` whose handshake every later request must carry (`handshake_echo`: the
response's session ID is the handshake). Both need the body before the SDK sees it, so
this one middleware reads it, once and bounded (`bounded_body`), parses it at most once,
and hands the same bytes on. A 2026-07-28 request streams through unread.
"""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_tasks_temporal.front.gateway import TemporalTaskGateway
from mcp_tasks_temporal.front.http.bounded_body import (
    Read,
    parse_json,
    read_bounded,
    refuse_too_large,
    refuse_unparsable,
    replay,
)
from mcp_tasks_temporal.front.legacy.handshake_echo import handshake_era, session_id_for, with_session
from mcp_tasks_temporal.front.legacy.legacy_answers import deliver_reply, may_be_a_reply, reply_of
from mcp_tasks_temporal.front.session_binding import SessionKeys

_INITIALIZE = b'"initialize"'


class HandshakeEraRequests:
    """ASGI middleware in front of the SDK's transport, for the POSTs of the handshake revisions."""

    def __init__(
        self, app: ASGIApp, *, gateway: TemporalTaskGateway, sessions: SessionKeys | None, max_body_bytes: int
    ) -> None:
        self.app = app
        self.gateway = gateway
        self.sessions = sessions
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or not handshake_era(scope):
            await self.app(scope, receive, send)
            return
        body, read = await read_bounded(scope.get("headers", []), receive, self.max_body_bytes)
        if read is Read.TOO_LARGE:
            await refuse_too_large(send)
            return
        if read is Read.DISCONNECTED:
            return
        message: Any = None
        if may_be_a_reply(body):
            message = parse_json(body)
            reply = None if isinstance(message, ValueError) else reply_of(message)
            if reply is not None:
                status = await deliver_reply(self.gateway, *reply)
                await send({"type": "http.response.start", "status": status, "headers": [(b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
                return
        session_id: str | None = None
        if _INITIALIZE in body:
            message = parse_json(body) if message is None else message
            if isinstance(message, ValueError):
                await refuse_unparsable(send)
                return
            session_id = session_id_for(message, self.sessions)
        # The SDK reads the same bytes, handed on as they were read.
        await self.app(scope, replay(body, receive), with_session(send, session_id) if session_id else send)
