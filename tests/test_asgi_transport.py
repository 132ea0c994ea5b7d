"""The in-process transport the protocol tests stand on (tests/asgi.py): a response streams as the app sends it,
a client that goes away is `http.disconnect` to the app, a body is read only as the app asks, and an error
in the app is raised in the test; a `subscriptions/listen` of the in-process front streams through it, and
`TasksClient` (on httpx2) follows a task through it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp_types import TextContent
from starlette.types import Message, Receive, Scope, Send

from mcp_tasks_temporal.client import TaskHandle, TasksClient
from tests.asgi import StreamingASGITransport
from tests.front_app import FRONT_URL, InProcessFront
from tests.wire import TaskCalls, base_headers, envelope, sse_frames

pytestmark = pytest.mark.anyio

URL = "http://127.0.0.1:8000/"


class StreamingApp:
    """Sends `first`, then `second` once `go` is set; records what its `receive` returned after the body."""

    def __init__(self) -> None:
        self.go = anyio.Event()
        self.after_body: list[Message] = []
        self.ended = anyio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            while (await receive()).get("more_body"):
                pass
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"first", "more_body": True})
            async with anyio.create_task_group() as group:

                async def watch() -> None:
                    self.after_body.append(await receive())
                    group.cancel_scope.cancel()

                group.start_soon(watch)
                await self.go.wait()
                await send({"type": "http.response.body", "body": b"second", "more_body": False})
        finally:
            self.ended.set()


async def test_a_chunk_reaches_the_client_while_the_app_still_runs() -> None:
    app = StreamingApp()
    async with httpx.AsyncClient(transport=StreamingASGITransport(app)) as http:
        with anyio.fail_after(5):
            async with http.stream("GET", URL) as response:
                chunks = response.aiter_bytes()
                assert await anext(chunks) == b"first"
                assert not app.ended.is_set()
                app.go.set()
                assert [chunk async for chunk in chunks] == [b"second"]
            await app.ended.wait()


async def test_closing_a_response_before_its_end_is_a_disconnect_to_the_app() -> None:
    app = StreamingApp()
    async with httpx.AsyncClient(transport=StreamingASGITransport(app)) as http:
        with anyio.fail_after(5):
            async with http.stream("GET", URL) as response:
                assert await anext(response.aiter_bytes()) == b"first"
            await app.ended.wait()
    assert app.after_body == [{"type": "http.disconnect"}]


async def test_a_request_cancelled_before_its_answer_is_a_disconnect_to_the_app() -> None:
    received: list[Message] = []
    gone = anyio.Event()

    async def silent(scope: Scope, receive: Receive, send: Send) -> None:
        while (message := await receive())["type"] == "http.request":
            pass
        received.append(message)
        gone.set()

    async with httpx.AsyncClient(transport=StreamingASGITransport(silent)) as http:
        with anyio.move_on_after(0.2):
            await http.post(URL, content=b"{}")
        with anyio.fail_after(5):
            await gone.wait()
    assert received == [{"type": "http.disconnect"}]


async def test_a_body_is_read_only_as_far_as_the_app_reads_it() -> None:
    offered = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal offered
        for _ in range(100):
            offered += 1
            yield b"x" * 1000

    async def reads_two(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await receive()
        await send({"type": "http.response.start", "status": 413, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async with httpx.AsyncClient(transport=StreamingASGITransport(reads_two)) as http:
        response = await http.post(URL, content=body())
    assert response.status_code == 413
    assert offered == 2


async def test_an_error_in_the_app_is_raised_in_the_test() -> None:
    class Broken(Exception):
        pass

    async def broken(scope: Scope, receive: Receive, send: Send) -> None:
        raise Broken

    async with httpx.AsyncClient(transport=StreamingASGITransport(broken)) as http:
        with pytest.raises(Broken):
            await http.get(URL)


async def test_a_read_longer_than_the_clients_read_timeout_times_out() -> None:
    async def never(scope: Scope, receive: Receive, send: Send) -> None:
        await anyio.sleep_forever()

    async with httpx.AsyncClient(transport=StreamingASGITransport(never), timeout=0.1) as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.get(URL)


async def test_a_listen_on_the_in_process_front_streams_each_change_as_it_happens(
    front_mcp: TaskCalls, front_http: httpx.AsyncClient, gate: Path
) -> None:
    created = await front_mcp.start("gated", {"gate": str(gate)})
    message: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "subscriptions/listen",
        "params": {"notifications": {"taskIds": [created["taskId"]]}, "_meta": envelope()},
    }
    headers = base_headers("subscriptions/listen")
    statuses: list[str] = []
    with anyio.fail_after(30):
        async with front_http.stream("POST", FRONT_URL, content=json.dumps(message), headers=headers) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            async for frame in sse_frames(response):
                if frame.get("method") != "notifications/tasks":
                    continue
                statuses.append(frame["params"]["status"])
                if frame["params"].get("statusMessage") == "waiting for the release file":
                    (gate / "release").write_text("1")  # only now: the stream is live, not read at its end
                if frame["params"]["status"] == "completed":
                    break
    assert statuses[0] == "working" and statuses[-1] == "completed", statuses


async def test_the_tasks_client_through_the_in_process_front_follows_a_task_to_its_result(
    front: InProcessFront, gate: Path
) -> None:
    async with front.http2() as http, TasksClient(front.url, journal=None, http_client=http) as client:
        call = await client.start_tool("gated", {"gate": str(gate)})
        assert isinstance(call, TaskHandle)
        (gate / "release").write_text("1")
        with anyio.fail_after(30):
            result = await call.result()
    [content] = result.content
    assert isinstance(content, TextContent) and content.text == f"released {gate.name}"
