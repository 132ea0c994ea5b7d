"""The remote codec endpoint the Temporal Web UI and the `temporal` CLI call to show decrypted payloads.

`POST /decode` and `POST /encode` take and return `{"payloads": [...]}` in the
protobuf JSON form of `temporal.api.common.v1.Payloads`, the contract the UI's
"Codec Server" setting and `temporal --codec-endpoint` speak. The browser calls it
cross-origin, so the UI's origin must be allowed (CORS); with a token verifier
every call needs `Authorization: Bearer ...` (the UI sends the user's access token
when "pass access token" is on, the CLI sends `--codec-auth`).
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable, Sequence

from google.protobuf import json_format
from mcp.server.auth.provider import TokenVerifier
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from temporalio.api.common.v1 import Payloads
from temporalio.converter import PayloadCodec

from mcp_tasks_temporal.ops.settings.fields import DEFAULT_UI_ORIGINS
from mcp_tasks_temporal.temporal.codec import CodecError

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 16 * 1024 * 1024  # a batch of payloads, each at most Temporal's 2 MB


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def codec_app(
    codec: PayloadCodec, *, ui_origins: Sequence[str] = DEFAULT_UI_ORIGINS, verifier: TokenVerifier | None = None
) -> Starlette:
    """An ASGI app serving `/encode` and `/decode` with `codec`."""

    async def authorized(request: Request) -> str | None:
        """The caller's principal, or None when no verifier is configured."""
        if verifier is None:
            return None
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if not hmac.compare_digest(scheme.lower().encode(), b"bearer") or not token:
            raise _BadRequest(401, "a bearer token is required")
        access = await verifier.verify_token(token.strip())
        if access is None:
            raise _BadRequest(401, "the bearer token was not accepted")
        return access.client_id

    async def read_payloads(request: Request) -> Payloads:
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                raise _BadRequest(413, "request body too large")
        try:
            return json_format.Parse(bytes(body), Payloads())
        except json_format.ParseError as err:
            raise _BadRequest(400, f"the body is not a Payloads JSON object: {err}") from None

    def endpoint(decode: bool) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            try:
                principal = await authorized(request)
                payloads = await read_payloads(request)
                transform = codec.decode if decode else codec.encode
                converted = await transform(list(payloads.payloads))
            except _BadRequest as err:
                return JSONResponse({"message": str(err)}, status_code=err.status)
            except CodecError as err:
                return JSONResponse({"message": str(err)}, status_code=400)
            if decode:
                # Who looked at plaintext is what a security review asks; the payloads stay out of the log.
                logger.info(
                    "decoded %d payloads for %s (namespace %s)",
                    len(converted),
                    principal or "an unauthenticated caller",
                    request.path_params.get("namespace") or request.headers.get("x-namespace", "?"),
                )
            body = json_format.MessageToJson(Payloads(payloads=converted), indent=None)
            return Response(body, media_type="application/json")

        return handle

    decode_payloads, encode_payloads = endpoint(decode=True), endpoint(decode=False)
    return Starlette(
        routes=[
            # `/{namespace}/...` serves endpoints templated with the namespace (`--codec-endpoint .../{namespace}`).
            *(Route(f"{prefix}/decode", decode_payloads, methods=["POST"]) for prefix in ("", "/{namespace}")),
            *(Route(f"{prefix}/encode", encode_payloads, methods=["POST"]) for prefix in ("", "/{namespace}")),
        ],
        middleware=[
            Middleware(
                CORSMiddleware,
                allow_origins=list(ui_origins),
                allow_methods=["POST"],
                allow_headers=["authorization", "content-type", "x-namespace"],
                allow_credentials=True,
            )
        ],
    )
