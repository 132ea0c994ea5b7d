"""JSON-RPC bodies for the two HTTP answers the `mcp` SDK does not give in full.

The SDK refuses an oversized body with a plain-text 413 ("Request body too
large"), which a JSON-RPC client cannot parse, and its -32022 names only the
2026-07-28 revisions (see `protocol_versions`). This ASGI wrapper rewrites just
those two answers; everything else streams through untouched.
"""

from __future__ import annotations

from mcp_types import INVALID_REQUEST, ErrorData, JSONRPCError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_tasks_temporal.front.protocol_versions import with_served_versions


class JsonRpcHttpErrors:
    """Wrap the Streamable HTTP app so every error it sends is a JSON-RPC error a client can read."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: Message | None = None
        body = bytearray()

        async def send_or_rewrite(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start" and _rewritable(message):
                held = message  # answered once its whole body is in
                return
            if held is None or message["type"] != "http.response.body":
                await send(message)
                return
            body.extend(message.get("body", b""))
            if message.get("more_body", False):
                return
            rewritten = self._too_large() if held["status"] == 413 else _with_served_versions(bytes(body))
            headers = [
                (k, v) for k, v in held.get("headers", []) if k.lower() not in (b"content-length", b"content-type")
            ]
            headers += [(b"content-type", b"application/json"), (b"content-length", str(len(rewritten)).encode())]
            await send({**held, "headers": headers})
            await send({"type": "http.response.body", "body": rewritten})

        await self.app(scope, receive, send_or_rewrite)

    def _too_large(self) -> bytes:
        limit = {"maxBodyBytes": self.max_body_bytes}
        error = ErrorData(code=INVALID_REQUEST, message="Request body too large", data=limit)
        return JSONRPCError(jsonrpc="2.0", id=None, error=error).model_dump_json(by_alias=True).encode()


def _rewritable(start: Message) -> bool:
    status = start["status"]
    if status == 413:
        return True
    content_type = dict(start.get("headers", [])).get(b"content-type", b"")
    return status == 400 and content_type.startswith(b"application/json")


def _with_served_versions(body: bytes) -> bytes:
    """A -32022 names every served revision; any other 400 goes out as it came."""
    try:
        message = JSONRPCError.model_validate_json(body)
    except ValueError:
        return body
    error = message.error.model_dump(mode="json", by_alias=True, exclude_unset=True)
    rewritten = with_served_versions(error)
    if rewritten is error:
        return body
    updated = message.model_copy(update={"error": ErrorData.model_validate(rewritten)})
    return updated.model_dump_json(by_alias=True, exclude_unset=True).encode()
