"""A raw 2025-11-25 client over Streamable HTTP: the handshake revision's requests, and its streamed replies."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import httpx

from tests.wire import Reply, sse_frames

LEGACY_VERSION: Final = "2025-11-25"
RELATED_TASK: Final = "io.modelcontextprotocol/related-task"


def legacy_headers() -> dict[str, str]:
    return {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": LEGACY_VERSION,
    }


class LegacyMcp:
    """One POST per request, as a stateless 2025-11-25 client sends them (after its `initialize`)."""

    def __init__(self, url: str, http: httpx.AsyncClient, *, headers: Mapping[str, str] | None = None) -> None:
        self.url = url
        self.http = http
        self.extra_headers = dict(headers or {})
        self._ids = itertools.count(1)

    def _headers(self) -> dict[str, str]:
        return {**legacy_headers(), **self.extra_headers}

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Reply:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self._ids), "method": method}
        if params is not None:
            message["params"] = params
        response = await self.http.post(self.url, content=json.dumps(message), headers=self._headers())
        return Reply.of(response)

    async def initialize(self, capabilities: Mapping[str, Any] | None = None) -> Reply:
        return await self.request("initialize", _initialize_params(capabilities))

    async def handshake(self, capabilities: Mapping[str, Any] | None = None) -> LegacyMcp:
        """`initialize`, then send the session ID it handed out with every later request, as a host does.

        The ID is what a front knows the session by: the plain calls it holds, the tasks it lists.
        """
        message = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": _initialize_params(capabilities)}
        response = await self.http.post(self.url, content=json.dumps(message), headers=self._headers())
        session = response.headers.get("mcp-session-id")
        assert session is not None, (response.status_code, response.text)
        self.extra_headers["mcp-session-id"] = session
        return self

    @asynccontextmanager
    async def stream(self, method: str, params: dict[str, Any]) -> AsyncGenerator[AsyncIterator[dict[str, Any]]]:
        """Send a request and read the messages of its SSE response as they come."""
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        async with self.http.stream("POST", self.url, content=json.dumps(message), headers=self._headers()) as reply:
            assert reply.status_code == 200, reply.status_code
            yield sse_frames(reply)

    async def answer(self, request_id: Any, result: Mapping[str, Any], *, url: str | None = None) -> int:
        """POST the reply to a server-to-client request (to any front server); returns the HTTP status."""
        message = {"jsonrpc": "2.0", "id": request_id, "result": dict(result)}
        response = await self.http.post(url or self.url, content=json.dumps(message), headers=self._headers())
        return response.status_code

    async def refuse(self, request_id: Any, code: int, message: str) -> int:
        body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
        response = await self.http.post(self.url, content=json.dumps(body), headers=self._headers())
        return response.status_code


def _initialize_params(capabilities: Mapping[str, Any] | None) -> dict[str, Any]:
    return {
        "protocolVersion": LEGACY_VERSION,
        "capabilities": dict(capabilities or {}),
        "clientInfo": {"name": "legacy-tests", "version": "1"},
    }
