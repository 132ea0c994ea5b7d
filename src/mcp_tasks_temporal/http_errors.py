"""A JSON-RPC body for the HTTP answer the `mcp` SDK sends as plain text.

The SDK refuses an oversized body with a plain-text 413 ("Request body too
large"), which a JSON-RPC client cannot parse. This ASGI wrapper rewrites just
that answer; everything else streams through untouched. A -32022 is left as the
SDK sends it: its `supported` list must be the `supportedVersions` that
`server/discover` advertises (the 2026-07-28 revisions), which is what a client
of the per-request envelope can retry with; the `initialize` handshake
revisions are served too, and negotiated by `initialize` itself.
"""

from __future__ import annotations

import json

from mcp_types import INVALID_REQUEST
from starlette.types import ASGIApp, Message, Receive, Scope, Send


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
            rewritten = self._too_large()
            headers = [
                (k, v) for k, v in held.get("headers", []) if k.lower() not in (b"content-length", b"content-type")
            ]
            headers += [(b"content-type", b"application/json"), (b"content-length", str(len(rewritten)).encode())]
            await send({**held, "headers": headers})
            await send({"type": "http.response.body", "body": rewritten})

        await self.app(scope, receive, send_or_rewrite)

    def _too_large(self) -> bytes:
        error = {
            "code": INVALID_REQUEST,
            "message": "Request body too large",
            "data": {"maxBodyBytes": self.max_body_bytes},
        }
        return json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()


def _rewritable(start: Message) -> bool:
    return start["status"] == 413
