"""Requests end with the credential they were accepted under: at its expiry, or when it is revoked.

Authentication is checked when a request arrives; a push stream
(`subscriptions/listen`) or a long poll (a 2025-11-25 `tasks/result`, a held
plain call) then runs for as long as the client keeps it open. This server
middleware watches the request's token meanwhile and ends the request with a
JSON-RPC error (-32600, `data.reason`) the moment it expires (JWT `exp`) or
its verifier no longer knows it (a token removed from the token file): the
client gets no push after it could no longer make the request. Short requests
finish long before either; the watch costs them two small tasks.
"""

from __future__ import annotations

import math
import time
from typing import Any, Final, Protocol, runtime_checkable

import anyio
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST

RECHECK_S: Final = 1.0
"""How often a revocable token is looked up again while its request runs."""


@runtime_checkable
class Revocable(Protocol):
    """A verifier that can say, cheaply and locally, whether a token it accepted is still listed."""

    def principal_of(self, token: str) -> str | None: ...


class EndWithCredential:
    """Server middleware: a request outliving its token's expiry or revocation ends with -32600."""

    def __init__(self, verifier: object, *, recheck_s: float = RECHECK_S) -> None:
        self._revocable = verifier if isinstance(verifier, Revocable) else None
        self._recheck_s = recheck_s

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        token = get_access_token()
        if token is None:
            return await call_next(ctx)
        ended: list[str] = []
        outcome: list[HandlerResult] = []
        failure: list[Exception] = []

        async with anyio.create_task_group() as group:

            async def watch() -> None:
                ended.append(await self._until_ended(token))
                group.cancel_scope.cancel()

            async def work() -> None:
                # Caught here and raised below: out of a task group it would come wrapped in an ExceptionGroup.
                try:
                    outcome.append(await call_next(ctx))
                except Exception as err:
                    failure.append(err)
                group.cancel_scope.cancel()

            group.start_soon(watch)
            group.start_soon(work)
        if failure:
            raise failure[0]
        if outcome:
            return outcome[0]
        how = ended[0] if ended else "ended"
        raise MCPError(
            code=INVALID_REQUEST,
            message=f"The request's credential {how}; send a new request with a valid token",
            data={"reason": "credential_expired" if how == "expired" else "credential_revoked"},
        )

    async def _until_ended(self, token: AccessToken) -> str:
        expires_at = token.expires_at if token.expires_at is not None else math.inf
        while True:
            left = expires_at - time.time()
            if left <= 0:
                return "expired"
            if self._revocable is None:
                if math.isinf(left):
                    await anyio.sleep_forever()
                await anyio.sleep(left)
                continue
            await anyio.sleep(min(left, self._recheck_s))
            # Gone from the verifier, or now naming someone else: either way not the credential it was.
            if self._revocable.principal_of(token.token) != token.client_id:
                return "was revoked"
