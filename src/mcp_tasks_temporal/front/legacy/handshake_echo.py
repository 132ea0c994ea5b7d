"""What a handshake-revision client declared at `initialize`, carried by the client itself on every request.

Front servers serve the `initialize` revisions statelessly, so the request
that declared the client's capabilities is gone when its `tools/call`
arrives, maybe at another front. The `Mcp-Session-Id` the `initialize`
response gives the client, which it must send back on every request, is
therefore the handshake itself (protocol version, capabilities, client info),
encoded: any front reads it, none stores anything. It is the client's own
declaration, so it needs no protection: a client that misstates it only
misleads the server about itself. It also carries a tag (`session_binding`)
that only the fronts can make, which is what binds anonymous tasks to it.
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import Message, Scope, Send

from mcp_tasks_temporal.front.session_binding import SessionKeys
from mcp_tasks_temporal.front.unicode_params import lone_surrogate_at
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


def encode(initialize_params: Mapping[str, Any], keys: SessionKeys | None = None) -> str | None:
    """The session ID for an `initialize` request's params (tagged under `keys`), or `None` when it would not
    fit a header or is not valid Unicode (the SDK refuses such an `initialize` itself)."""
    if lone_surrogate_at(initialize_params) is not None:
        return None
    declared = {
        "n": secrets.token_hex(8),  # one ID per handshake, as the spec asks of session IDs
        "v": str(initialize_params.get("protocolVersion", "")),
        "c": dict(as_object(initialize_params.get("capabilities"))),
        "i": dict(as_object(initialize_params.get("clientInfo"))),
    }
    raw = json.dumps(declared, separators=(",", ":"), sort_keys=True).encode()
    value = _PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")
    if keys is not None:
        value = keys.tag(value)
    return value if len(value) <= MAX_LENGTH else None


def decode(value: str | None) -> Handshake | None:
    """The handshake a session ID carries; `None` for an absent or foreign one."""
    if not value or not value.startswith(_PREFIX) or len(value) > MAX_LENGTH:
        return None
    encoded = value[len(_PREFIX) :].partition(".")[0]  # the tag, if any, is for `session_binding`
    try:
        declared = as_object(json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))))
        if lone_surrogate_at(declared) is not None:
            return None  # no valid Unicode to carry into a task's envelope: served as a client that echoes none
    except (ValueError, RecursionError):
        return None
    return Handshake(
        protocol_version=str(declared.get("v", "")),
        capabilities=as_object(declared.get("c")),
        client_info=as_object(declared.get("i")),
    )


def session_id_for(message: Any, sessions: SessionKeys | None) -> str | None:
    """The session ID the response to `message` carries, when it is an `initialize` whose handshake fits one."""
    request = as_object(message)
    if request.get("method") != "initialize":
        return None
    try:
        return encode(as_object(request.get("params")), sessions)
    except RecursionError:  # capabilities nested too deeply to echo: the SDK answers the request itself
        return None


def with_session(send: Send, session_id: str) -> Send:
    """`send`, with `session_id` as the `Mcp-Session-Id` of a successful response."""

    async def send_with_session(message: Message) -> None:
        if message["type"] == "http.response.start" and message.get("status") == 200:
            headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != SESSION_HEADER.encode()]
            message = {**message, "headers": [*headers, (SESSION_HEADER.encode(), session_id.encode())]}
        await send(message)

    return send_with_session


def handshake_era(scope: Scope) -> bool:
    """A request of a handshake revision: no version header (an `initialize`), or one of those revisions."""
    versions = [value for key, value in scope.get("headers", []) if key == b"mcp-protocol-version"]
    return not versions or versions[0].decode("latin-1") in HANDSHAKE_PROTOCOL_VERSIONS
