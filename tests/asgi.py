"""An ASGI app served inside the test process: its lifespan, and an httpx transport whose responses stream.

httpx's `ASGITransport` (and httpx2's) collects the whole response body before it returns the
response, so a `subscriptions/listen` stream, or a plain call the front holds open while the task
works, never returns at all. `StreamingASGITransport` runs each request's app call in a task of its
own beside the test: the status and headers return as soon as the app sends them, each body chunk
reaches the client as it is sent, and a client that goes away (a response closed before its end, a
request cancelled before its answer) is `http.disconnect` to the app, as under uvicorn. The request
body is pulled only as the app reads it, so a test sees how much of a body the app took.

`StreamingASGITransport2` is the same for httpx2, the HTTP client of the MCP SDK's `Client` and of
`TasksClient`. An exception the app raises is raised in the test (before the response starts: by the request; after:
by the read of the body), with its traceback, where uvicorn would answer 500 and log it.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, AsyncIterator, Generator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from types import TracebackType
from typing import Any, Self

import anyio
import httpx
import httpx2
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.types import ASGIApp, Message

__all__ = ["StreamingASGITransport", "StreamingASGITransport2", "lifespan"]

CLIENT_ADDRESS = ("127.0.0.1", 50_000)
"""Where requests seem to come from (`scope["client"]`)."""


@asynccontextmanager
async def lifespan(app: ASGIApp) -> AsyncGenerator[dict[str, Any]]:
    """Run `app`'s lifespan around the block, as a server does around its requests; yields the lifespan state.

    Pass the state to the transport (`StreamingASGITransport(app, state=...)`) so requests see it.
    """
    to_app, app_inbox = anyio.create_memory_object_stream[Message](math.inf)
    app_outbox, from_app = anyio.create_memory_object_stream[Message](math.inf)
    state: dict[str, Any] = {}
    scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": state}

    async def run() -> None:
        try:
            await app(scope, app_inbox.receive, app_outbox.send)
        except Exception as err:  # an app without a lifespan raises on the scope; a failing one raises here
            await app_outbox.send({"type": "lifespan.error", "error": err})

    async def expect(phase: str) -> None:
        await to_app.send({"type": f"lifespan.{phase}"})
        message = await from_app.receive()
        if message["type"] == "lifespan.error":
            raise RuntimeError(f"the app's lifespan failed at {phase}") from message["error"]
        if message["type"] != f"lifespan.{phase}.complete":
            raise RuntimeError(f"the app's lifespan {phase} answered {message}")

    async with to_app, app_inbox, app_outbox, from_app, anyio.create_task_group() as group:
        group.start_soon(run)
        await expect("startup")
        try:
            yield state
        finally:
            with anyio.CancelScope(shield=True):
                await expect("shutdown")


class _Serving:
    """What both transports do; each speaks its own HTTP library's types."""

    def __init__(self, app: ASGIApp, *, state: dict[str, Any] | None = None) -> None:
        self.app = app
        self.state = state if state is not None else {}
        self._stack = AsyncExitStack()
        self._group: TaskGroup | None = None

    async def __aenter__(self) -> Self:
        self._group = await self._stack.enter_async_context(anyio.create_task_group())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        tb: TracebackType | None = None,
    ) -> None:
        if self._group is not None:
            self._group.cancel_scope.cancel()
        await self._stack.__aexit__(exc_type, exc, tb)

    async def _serve(self, exchange: _Exchange) -> tuple[int, list[tuple[bytes, bytes]]]:
        if self._group is None:
            raise RuntimeError("enter the transport (or the AsyncClient that holds it) before sending")
        self._group.start_soon(exchange.run)
        try:
            return await exchange.response_start()
        except BaseException:
            exchange.close()  # failed, cancelled or timed out: the client is gone before the answer
            raise


class StreamingASGITransport(_Serving, httpx.AsyncBaseTransport):
    """Serve httpx requests from `app` in this process, streaming each response.

    Enter it (an `httpx.AsyncClient` does, with the client) before the first request: the app calls run
    in its task group, and leaving cancels those still running, as a stopping server does.

    The client's `read` timeout bounds the wait for the response's start and for each body chunk
    (`httpx.ReadTimeout`), as over a socket.
    """

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        exchange = _Exchange(self.app, request, dict(self.state), timeouts.get("read"), httpx.ReadTimeout)
        status, headers = await self._serve(exchange)
        return httpx.Response(status, headers=headers, stream=_Body(exchange), extensions=_HTTP_1_1)


class StreamingASGITransport2(_Serving, httpx2.AsyncBaseTransport):
    """`StreamingASGITransport` for httpx2, the HTTP client of the MCP SDK's `Client` and of `TasksClient`."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        exchange = _Exchange(self.app, request, dict(self.state), timeouts.get("read"), httpx2.ReadTimeout)
        status, headers = await self._serve(exchange)
        return httpx2.Response(status, headers=headers, stream=_Body2(exchange), extensions=_HTTP_1_1)


_HTTP_1_1 = {"http_version": b"HTTP/1.1"}


class _Exchange:
    """One request: the app's side (`receive`, `send`) and the client's (`response_start`, `chunks`)."""

    def __init__(
        self,
        app: ASGIApp,
        request: httpx.Request | httpx2.Request,
        state: dict[str, Any],
        read_timeout: float | None,
        timed_out: type[Exception],
    ) -> None:
        self.app = app
        self.request = request
        self.read_timeout = read_timeout
        self.timed_out = timed_out
        url = request.url
        self.scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.4"},
            "http_version": "1.1",
            "method": request.method,
            "headers": [(key.lower(), value) for key, value in request.headers.raw],
            "scheme": url.scheme,
            "path": url.path,
            "raw_path": url.raw_path.split(b"?")[0],
            "query_string": url.query,
            "server": (url.host, url.port or (443 if url.scheme == "https" else 80)),
            "client": CLIENT_ADDRESS,
            "root_path": "",
            "state": state,
        }
        self._body: AsyncIterator[bytes] | None = None
        self._body_done = False
        self._started = anyio.Event()
        self._start: tuple[int, list[tuple[bytes, bytes]]] | BaseException | None = None
        self._chunks_in: MemoryObjectSendStream[bytes | BaseException]
        self._chunks_out: MemoryObjectReceiveStream[bytes | BaseException]
        self._chunks_in, self._chunks_out = anyio.create_memory_object_stream[bytes | BaseException](math.inf)
        self._over = anyio.Event()
        """Set when the response is complete or the client is gone: a `receive` after the body returns then."""
        self.disconnected = False

    # -- the app's side --------------------------------------------------------------------------------

    async def run(self) -> None:
        try:
            await self.app(self.scope, self._receive, self._send)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as err:
            self._fail(err)
        else:
            if self._start is None:
                self._fail(RuntimeError("the app returned without sending a response"))
        finally:
            self._chunks_in.close()
            self._over.set()

    async def _receive(self) -> Message:
        if not self._body_done and not self.disconnected:
            if self._body is None:
                stream = self.request.stream
                assert isinstance(stream, httpx.AsyncByteStream | httpx2.AsyncByteStream), "an AsyncClient request"
                self._body = stream.__aiter__()
            try:
                chunk = await self._body.__anext__()
            except StopAsyncIteration:
                self._body_done = True
                return {"type": "http.request", "body": b"", "more_body": False}
            return {"type": "http.request", "body": chunk, "more_body": True}
        await self._over.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            if self._start is not None:
                raise RuntimeError("the app started its response twice")
            self._start = (message["status"], list(message.get("headers", [])))
            self._started.set()
        elif message["type"] == "http.response.body":
            if self._start is None:
                raise RuntimeError("the app sent a body before starting its response")
            if self.disconnected:
                return  # nobody reads it; the app learns of the disconnect from `receive`
            body: bytes = message.get("body", b"")
            if body and self.request.method != "HEAD":
                self._chunks_in.send_nowait(body)
            if not message.get("more_body", False):
                self._chunks_in.close()
                self._over.set()

    def _fail(self, err: BaseException) -> None:
        if self._start is None:
            self._start = err
            self._started.set()
        elif not self._over.is_set():
            self._chunks_in.send_nowait(err)

    # -- the client's side ------------------------------------------------------------------------------

    async def response_start(self) -> tuple[int, list[tuple[bytes, bytes]]]:
        with _read_bound(self.read_timeout, self.timed_out):
            await self._started.wait()
        start = self._start
        if isinstance(start, BaseException):
            raise start
        assert start is not None
        return start

    async def chunks(self) -> AsyncIterator[bytes]:
        while True:
            try:
                with _read_bound(self.read_timeout, self.timed_out):
                    chunk = await self._chunks_out.receive()
            except anyio.EndOfStream:
                return
            if isinstance(chunk, BaseException):
                raise chunk
            yield chunk

    def close(self) -> None:
        """The client is done with the response: read to its end, or gone before (`http.disconnect`)."""
        self.disconnected = True
        self._over.set()
        self._chunks_out.close()


@contextmanager
def _read_bound(seconds: float | None, timed_out: type[Exception]) -> Generator[None]:
    """The client library's `ReadTimeout` when a read waits longer than its read timeout, as over a socket."""
    try:
        with anyio.fail_after(seconds):
            yield
    except TimeoutError:
        raise timed_out("no answer from the in-process app within the read timeout") from None


class _Body(httpx.AsyncByteStream):
    def __init__(self, exchange: _Exchange) -> None:
        self._exchange = exchange

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._exchange.chunks():
            yield chunk

    async def aclose(self) -> None:
        self._exchange.close()


class _Body2(httpx2.AsyncByteStream):
    def __init__(self, exchange: _Exchange) -> None:
        self._exchange = exchange

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._exchange.chunks():
            yield chunk

    async def aclose(self) -> None:
        self._exchange.close()
