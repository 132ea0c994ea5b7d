"""Bearer tokens in the tests: a front's static tokens, and requests that carry one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from mcp_tasks_temporal import BearerAuth
from mcp_tasks_temporal.front.http.auth import StaticTokenVerifier
from tests.wire import HttpMcp, Reply


def token_auth(principals: Mapping[str, str]) -> BearerAuth:
    """A front's authentication by static tokens (`token: principal`), as `--tokens` sets it up from a file."""
    return BearerAuth(StaticTokenVerifier(dict(principals)))


def bearer(token: str) -> dict[str, str]:
    """The header that presents `token`."""
    return {"authorization": f"Bearer {token}"}


class BearerMcp(HttpMcp):
    """`HttpMcp` presenting one principal's token on every request."""

    def __init__(self, url: str, http: httpx.AsyncClient, token: str) -> None:
        super().__init__(url, http)
        self.token = token

    async def post(self, message: Any, headers: dict[str, str]) -> Reply:
        return await super().post(message, {**headers, **bearer(self.token)})
