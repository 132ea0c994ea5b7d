"""Request bodies read by the front's own middleware, bounded while they stream in.

The SDK bounds the bodies it reads itself; the middleware in front of it that
must see a handshake-revision body first (the handshake echo, question
replies) reads it here, under the same limit: bytes are counted as they
arrive and the request is refused the moment the count crosses the limit, so
a huge body costs the front no more memory than the limit.
"""

from __future__ import annotations

import enum
import json
from typing import Any

from mcp_types import INVALID_REQUEST, PARSE_ERROR
from starlette.types import Message, Receive, Send


class Read(enum.Enum):
    COMPLETE = "complete"
    DISCONNECTED = "disconnected"
    TOO_LARGE = "too large"


async def read_bounded(scope_headers: list[tuple[bytes, bytes]], receive: Receive, limit: int) -> tuple[bytes, Read]:
    """The whole body, or why not: the client left, or it is (or says it is) over `limit` bytes."""
    declared = next((value for key, value in scope_headers if key == b"content-length"), None)
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return b"", Read.TOO_LARGE
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"", Read.DISCONNECTED
        body += message.get("body", b"")
        if len(body) > limit:
            return b"", Read.TOO_LARGE
        if not message.get("more_body", False):
            return bytes(body), Read.COMPLETE


async def refuse_too_large(send: Send) -> None:
    """The SDK's own plain 413, which `http_errors.JsonRpcHttpErrors` turns into its JSON-RPC error."""
    await send({"type": "http.response.start", "status": 413, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"Request body too large"})


def parse_json(body: bytes) -> Any | ValueError:
    """The body's JSON, or the `ValueError` that says why not (nesting too deep for the parser included)."""
    try:
        return json.loads(body)
    except RecursionError:
        return ValueError("nested too deeply")
    except ValueError as err:
        return err


async def refuse_unparsable(send: Send, *, invalid: bool = False) -> None:
    """A JSON-RPC parse error (-32700), or invalid request (-32600), for a body the front cannot take."""
    code, message = (INVALID_REQUEST, "Invalid request") if invalid else (PARSE_ERROR, "Parse error")
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": body})


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
