"""The edges of the HTTP protocol: oversized bodies, unsupported revisions, and clients of older revisions."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from mcp_tasks_temporal.front.legacy import handshake_echo
from tests.conftest import OpenFront
from tests.front_app import InProcessFront
from tests.wire import EVERY_SERVED_VERSION, HttpMcp, Reply, base_headers, envelope, request_message

pytestmark = pytest.mark.anyio


def oversized() -> dict[str, Any]:
    arguments = {"x": "9" * (2 * 1024 * 1024)}
    return request_message(1, "tools/call", {"name": "double", "arguments": arguments})


def assert_json_rpc_too_large(response: httpx.Response) -> None:
    assert response.status_code == 413
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    assert body["error"]["code"] == -32600
    assert body["error"]["data"] == {"maxBodyBytes": 1024 * 1024}


async def test_an_oversized_body_is_a_json_rpc_error(front: InProcessFront, front_http: httpx.AsyncClient) -> None:
    content = json.dumps(oversized()).encode()
    response = await front_http.post(front.url, content=content, headers=base_headers("tools/call", "double"))
    assert_json_rpc_too_large(response)


async def test_an_oversized_streamed_body_without_a_length_is_a_json_rpc_error(
    front: InProcessFront, front_http: httpx.AsyncClient
) -> None:
    content = json.dumps(oversized()).encode()

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(content), 64 * 1024):
            yield content[start : start + 64 * 1024]

    response = await front_http.post(front.url, content=chunks(), headers=base_headers("tools/call", "double"))
    assert "content-length" not in response.request.headers
    assert_json_rpc_too_large(response)


@pytest.mark.parametrize("version", ["2099-01-01", "garbage"])
async def test_an_unsupported_revision_is_told_every_revision_served_as_discover_advertises_them(
    front: InProcessFront, front_http: httpx.AsyncClient, version: str
) -> None:
    meta = {**envelope(), "io.modelcontextprotocol/protocolVersion": version}
    message = request_message(1, "tools/list", {"_meta": meta})
    headers = {**base_headers("tools/list"), "mcp-protocol-version": version}
    reply = await HttpMcp(front.url, front_http).post(message, headers)
    assert reply.status == 400
    assert reply.error["code"] == -32022
    discover = (await HttpMcp(front.url, front_http).request("server/discover")).result
    assert reply.error["data"]["supported"] == discover["supportedVersions"] == EVERY_SERVED_VERSION
    assert reply.error["data"]["requested"] == version


class OlderClient:
    """A client of a handshake revision: `initialize` once, then plain requests with the version header."""

    def __init__(self, http: httpx.AsyncClient, version: str) -> None:
        self.http = http
        self.version = version
        self.ids = iter(range(1, 1000))

    def headers(self) -> dict[str, str]:
        return {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": self.version,
        }

    async def initialize(self, url: str) -> Reply:
        params = {"protocolVersion": self.version, "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}
        message = {"jsonrpc": "2.0", "id": next(self.ids), "method": "initialize", "params": params}
        headers = {k: v for k, v in self.headers().items() if k != "mcp-protocol-version"}
        response = await self.http.post(url, content=json.dumps(message), headers=headers)
        # A stateless front keeps no session: the ID it hands out is the handshake itself, echoed by the client.
        echoed = handshake_echo.decode(response.headers.get("mcp-session-id"))
        assert echoed is not None
        assert (echoed.protocol_version, echoed.client_info) == (self.version, params["clientInfo"])
        return Reply.of(response)

    async def notify_initialized(self, url: str) -> int:
        message = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        response = await self.http.post(url, content=json.dumps(message), headers=self.headers())
        return response.status_code

    async def request(self, url: str, method: str, params: dict[str, Any]) -> Reply:
        message = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}
        return await HttpMcp(url, self.http).post(message, self.headers())


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_an_older_client_is_served_by_any_front_without_a_session(
    front: InProcessFront, front_http: httpx.AsyncClient, open_front: OpenFront, version: str
) -> None:
    other = await open_front()
    async with other.http() as other_http:
        # One client, its requests sent to either front (each http client reaches its own).
        to_first, to_other = OlderClient(front_http, version), OlderClient(other_http, version)
        to_other.ids = to_first.ids
        initialized = await to_first.initialize(front.url)
        assert initialized.result["protocolVersion"] == version
        assert await to_other.notify_initialized(other.url) == 202
        listed = await to_other.request(other.url, "tools/list", {})
        assert "double" in {tool["name"] for tool in listed.result["tools"]}
        # An optional task tool answers synchronously, on either front.
        for client, x in ((to_other, 4), (to_first, 5)):
            called = await client.request(front.url, "tools/call", {"name": "double", "arguments": {"x": x}})
            assert called.result["structuredContent"] == {"value": 2 * x}
            assert "taskId" not in called.result
        # A required task tool cannot run for a client that cannot declare the extension.
        refused = await to_other.request(other.url, "tools/call", {"name": "needs_task", "arguments": {"x": 1}})
        assert refused.error["code"] == -32021
