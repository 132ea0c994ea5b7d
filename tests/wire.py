"""Raw MCP clients for the tests and the benchmarks: JSON-RPC over Streamable HTTP and over stdio.

The tests speak the wire directly, so they check the bytes a real client gets
(status codes, headers, `resultType`), not what a client library makes of them.
The benchmarks drive the front server through the same code.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import anyio
import httpx
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.text import TextReceiveStream

PROTOCOL_VERSION: Final = "2026-07-28"
EVERY_SERVED_VERSION: Final = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
"""What a front names in `server/discover` and in every -32022: newest first, handshake revisions included."""
TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
TERMINAL = {"completed", "failed", "cancelled"}
REPLY_TIMEOUT = 30
"""Every stdio reply is bounded, so a silent child fails the test instead of hanging it."""
_NAME_PARAM = {"tools/call": "name", "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}


def envelope(*, tasks: bool = True, capabilities: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A 2026-07-28 request's `_meta`: protocol version, client info and capabilities."""
    caps: dict[str, Any] = dict(capabilities or {})
    if tasks:
        caps["extensions"] = {TASKS_EXTENSION: {}}
    return {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    }


def base_headers(method: str, name: str | None = None) -> dict[str, str]:
    """The Streamable HTTP headers of a 2026-07-28 request, `Mcp-Name` included when there is a name."""
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": PROTOCOL_VERSION,
        "mcp-method": method,
    }
    if name is not None:
        headers["mcp-name"] = name
    return headers


@dataclass
class Reply:
    status: int | None
    """HTTP status; `None` on stdio."""
    body: dict[str, Any]

    @classmethod
    def of(cls, response: httpx.Response) -> Reply:
        """The reply in an HTTP response, plain JSON or SSE."""
        return cls(response.status_code, _parse_body(response))

    @property
    def result(self) -> dict[str, Any]:
        if "result" not in self.body:
            raise AssertionError(f"expected a result, got HTTP {self.status} {self.body}")
        result: dict[str, Any] = self.body["result"]
        return result

    @property
    def error(self) -> dict[str, Any]:
        if "error" not in self.body:
            raise AssertionError(f"expected an error, got HTTP {self.status} {self.body}")
        error: dict[str, Any] = self.body["error"]
        return error


class McpClient(Protocol):
    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        tasks: bool = True,
        capabilities: Mapping[str, Any] | None = None,
        headers: Mapping[str, str | None] | None = None,
    ) -> Reply: ...


class TaskCalls:
    """The task operations on top of any transport's `request`."""

    client: McpClient

    def __init__(self, client: McpClient) -> None:
        self.client = client

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, *, tasks: bool = True, **kw: Any
    ) -> Reply:
        return await self.client.request("tools/call", {"name": name, "arguments": arguments or {}}, tasks=tasks, **kw)

    async def start(self, name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        """Call a tool that must answer with a task; return the CreateTaskResult."""
        reply = await self.call_tool(name, arguments, **kw)
        assert reply.result["resultType"] == "task", reply.body
        return reply.result

    async def get(self, task_id: str, **kw: Any) -> Reply:
        return await self.client.request("tasks/get", {"taskId": task_id}, **kw)

    async def update(self, task_id: str, responses: dict[str, Any], **kw: Any) -> Reply:
        return await self.client.request("tasks/update", {"taskId": task_id, "inputResponses": responses}, **kw)

    async def cancel(self, task_id: str, **kw: Any) -> Reply:
        return await self.client.request("tasks/cancel", {"taskId": task_id}, **kw)

    async def wait_for(
        self, task_id: str, until: Callable[[dict[str, Any]], bool] | Iterable[str] = TERMINAL, *, timeout: float = 30
    ) -> dict[str, Any]:
        """Poll `tasks/get` (honouring `pollIntervalMs`) until `until` holds; bounded by `timeout`.

        A task that reaches a terminal status `until` does not accept fails the wait at once: it will
        never change again, so waiting out the bound would only hide the wrong end for longer.
        """
        wanted = set[str]() if callable(until) else set(until)

        def check(task: dict[str, Any]) -> bool:
            return until(task) if callable(until) else task["status"] in wanted

        with anyio.fail_after(timeout):
            while True:
                task = (await self.get(task_id)).result
                if check(task):
                    return task
                if task["status"] in TERMINAL:
                    raise AssertionError(f"the task ended {task['status']} before the awaited state: {task}")
                await anyio.sleep(task.get("pollIntervalMs", 250) / 1000)


def request_message(
    request_id: int,
    method: str,
    params: Mapping[str, Any] | None,
    *,
    tasks: bool = True,
    capabilities: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A JSON-RPC request whose params carry this request's `_meta` envelope (unless the caller gave one)."""
    body_params = dict(params or {})
    body_params.setdefault("_meta", envelope(tasks=tasks, capabilities=capabilities))
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body_params}


class HttpMcp:
    """Streamable HTTP at 2026-07-28: one POST per request, routing headers mirrored from the body."""

    def __init__(self, url: str, http: httpx.AsyncClient) -> None:
        self.url = url
        self.http = http
        self._ids = itertools.count(1)

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        tasks: bool = True,
        capabilities: Mapping[str, Any] | None = None,
        headers: Mapping[str, str | None] | None = None,
    ) -> Reply:
        message = request_message(next(self._ids), method, params, tasks=tasks, capabilities=capabilities)
        name_key = _NAME_PARAM.get(method)
        name = message["params"].get(name_key) if name_key else None
        sent_headers = base_headers(method, name if isinstance(name, str) else None)
        for key, value in (headers or {}).items():
            if value is None:
                sent_headers.pop(key, None)
            else:
                sent_headers[key] = value
        return await self.post(message, sent_headers)

    async def post(self, message: Any, headers: dict[str, str]) -> Reply:
        response = await self.http.post(self.url, content=json.dumps(message), headers=headers)
        return Reply.of(response)


def _parse_body(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC response in a reply, whether plain JSON or the response frame of an SSE stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for frame in _sse_data(response.text.splitlines()):
            if "result" in frame or "error" in frame:
                return frame
        raise AssertionError(f"no response frame in SSE body: {response.text!r}")
    if not response.content:
        return {}
    body: dict[str, Any] = response.json()
    return body


def _sse_data(lines: Iterable[str]) -> Iterable[dict[str, Any]]:
    for line in lines:
        if line.startswith("data:"):
            frame: dict[str, Any] = json.loads(line[5:])
            yield frame


async def sse_frames(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The JSON-RPC messages of a streamed SSE response (a `subscriptions/listen`), as they arrive."""
    async for line in response.aiter_lines():
        for frame in _sse_data((line,)):
            yield frame


class StdioPipes(Protocol):
    """The client's ends of a stdio server's pipes: a child process (`anyio.abc.Process`), or `tests.stdio_front`'s."""

    @property
    def stdin(self) -> ByteSendStream | None: ...
    @property
    def stdout(self) -> ByteReceiveStream | None: ...


class StdioMcp:
    """Newline-delimited JSON-RPC to a stdio server: a `serve --transport stdio` child, or one in this process."""

    def __init__(self, process: StdioPipes) -> None:
        self.process = process
        self._ids = itertools.count(1)
        assert process.stdout is not None
        self._lines = TextReceiveStream(process.stdout)
        self._buffer = ""

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        tasks: bool = True,
        capabilities: Mapping[str, Any] | None = None,
        headers: Mapping[str, str | None] | None = None,
    ) -> Reply:
        assert headers is None, "stdio has no headers"
        message = request_message(next(self._ids), method, params, tasks=tasks, capabilities=capabilities)
        return await self.post(message)

    async def post(self, message: Mapping[str, Any]) -> Reply:
        """Send a JSON-RPC request as it is (a handshake revision's has no `_meta`); its reply, bounded."""
        with anyio.fail_after(REPLY_TIMEOUT):
            await self.send(message)
            while True:
                frame = json.loads(await self.read_line())
                if frame.get("id") == message["id"] and ("result" in frame or "error" in frame):
                    return Reply(None, frame)

    async def send(self, message: Mapping[str, Any]) -> None:
        """Write one message (a notification, a request whose reply a test reads itself) to the server."""
        assert self.process.stdin is not None
        await self.process.stdin.send((json.dumps(message) + "\n").encode())

    def next_id(self) -> int:
        """A request ID this client has not used."""
        return next(self._ids)

    async def read_line(self) -> str:
        """The next raw line from the server, for tests that read frames no request waits for."""
        while "\n" not in self._buffer:
            self._buffer += await self._lines.receive()
        line, self._buffer = self._buffer.split("\n", 1)
        return line
