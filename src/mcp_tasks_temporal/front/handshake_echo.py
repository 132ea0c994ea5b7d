"""What a handshake-revision client declared at `initialize`, carried by the client itself on every request.

Front servers serve the `initialize` revisions statelessly, so the request
that declared the client's capabilities is gone when its `tools/call`
arrives, maybe at another front. The `Mcp-Session-Id` the `initialize`
response gives the client, which it must send back on every request, is
therefore the handshake itself (protocol version, capabilities, client info),
encoded: any front reads it, none stores anything. It is the client's own
declaration, so it needs no protection: a client that misstates it only
misleads the server about itself.
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_tasks_temporal.temporal.contract import as_object

SESSION_HEADER: Final = "mcp-session-id"
_PREFIX: Final = "hs1."
MAX_LENGTH: Final = 2048
"""Longer declarations (huge client info) are not echoed: the client is then served as before."""


@dataclass(frozen=True)
class Handshake:
    protocol_version: str
    capabilities: Mapping[str, Any]
    client_info: Mapping[str, Any]


def encode(initialize_params: Mapping[str, Any]) -> str | None:
    """The session ID for an `initialize` request's params, or `None` when it would not fit a header."""
    declared = {
        "n": secrets.token_hex(8),  # one ID per handshake, as the spec asks of session IDs
        "v": str(initialize_params.get("protocolVersion", "")),
        "c": dict(as_object(initialize_params.get("capabilities"))),
        "i": dict(as_object(initialize_params.get("clientInfo"))),
    }
    raw = json.dumps(declared, separators=(",", ":"), sort_keys=True).encode()
    value = _PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")
    return value if len(value) <= MAX_LENGTH else None


def decode(value: str | None) -> Handshake | None:
    """The handshake a session ID carries; `None` for an absent or foreign one."""
    if not value or not value.startswith(_PREFIX) or len(value) > MAX_LENGTH:
        return None
    encoded = value[len(_PREFIX) :]
    try:
        declared = as_object(json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))))
    except ValueError:
        return None
    return Handshake(
        protocol_version=str(declared.get("v", "")),
        capabilities=as_object(declared.get("c")),
        client_info=as_object(declared.get("i")),
    )


class HandshakeEcho:
    """ASGI middleware: the response to an `initialize` carries the handshake as its session ID."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # A 2026-07-28 request streams through unread: only the handshake revisions have an initialize.
        if scope["type"] != "http" or scope.get("method") != "POST" or not handshake_era(scope):
            await self.app(scope, receive, send)
            return
        body, complete = await read_body(receive)
        if not complete:
            return  # the client went away
        session_id = _session_id_for(body) if b'"initialize"' in body else None
        if session_id is None:
            await self.app(scope, replay(body, receive), send)
            return

        async def send_with_session(message: Message) -> None:
            if message["type"] == "http.response.start" and message.get("status") == 200:
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != SESSION_HEADER.encode()]
                message = {**message, "headers": [*headers, (SESSION_HEADER.encode(), session_id.encode())]}
            await send(message)

        await self.app(scope, replay(body, receive), send_with_session)


def handshake_era(scope: Scope) -> bool:
    """A request of a handshake revision: no version header (an `initialize`), or one of those revisions."""
    versions = [value for key, value in scope.get("headers", []) if key == b"mcp-protocol-version"]
    return not versions or versions[0].decode("latin-1") in HANDSHAKE_PROTOCOL_VERSIONS


def _session_id_for(body: bytes) -> str | None:
    try:
        message = as_object(json.loads(body))
    except ValueError:
        return None
    if message.get("method") != "initialize":
        return None
    return encode(as_object(message.get("params")))


async def read_body(receive: Receive) -> tuple[bytes, bool]:
    """The whole request body, and whether it was read to its end (not cut by a disconnect)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"", False
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), True


def replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the already-read body back once, then defers to the real one."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
