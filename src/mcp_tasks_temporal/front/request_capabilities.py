"""What the request being served declared it can do: the gate `tools/call`, `tasks/*` and listen share."""

from __future__ import annotations

from typing import Any

from mcp.server.context import ServerRequestContext
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from mcp_tasks_temporal.front.legacy.handshake_echo import SESSION_HEADER
from mcp_tasks_temporal.front.legacy.handshake_echo import decode as decode_handshake
from mcp_tasks_temporal.temporal.contract import EXTENSION_ID


def declares_tasks(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Did *this* request declare the extension? Earlier requests never count."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    caps = ctx.session.client_capabilities
    return bool(caps is not None and caps.extensions and EXTENSION_ID in caps.extensions)


def is_modern(ctx: ServerRequestContext[Any, Any]) -> bool:
    """A request of a revision that declares capabilities per request (2026-07-28 on)."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def declared_capabilities(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any] | None:
    """The client capabilities this request stands for, as wire JSON; `None` when this front cannot know them.

    A 2026-07-28 request carries its own; a handshake client's come from its session, or,
    on a stateless front, from the handshake its session ID echoes (`handshake_echo`).
    """
    caps = ctx.session.client_capabilities
    if caps is not None:
        return caps.model_dump(by_alias=True, exclude_none=True)
    headers = getattr(ctx.request, "headers", None)
    echoed = decode_handshake(headers.get(SESSION_HEADER)) if headers is not None else None
    return dict(echoed.capabilities) if echoed is not None else None


def echoed_session_id(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The session ID a handshake-revision request over HTTP echoes, when it carries a handshake (`handshake_echo`)."""
    if ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return None
    headers = getattr(ctx.request, "headers", None)
    session_id = headers.get(SESSION_HEADER) if headers is not None else None
    return session_id if isinstance(session_id, str) and decode_handshake(session_id) is not None else None
