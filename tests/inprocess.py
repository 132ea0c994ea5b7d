"""Fronts and workers in the test's own process, on the session's Temporal: protocol tests without children.

A front here is what `serve` runs (`open_front`, then `front_http_app`, its lifespan entered as
uvicorn's `lifespan="on"` does) and a worker what `worker` runs (`open_worker`: `McpTasksPlugin` on the
app's queues); each is given its own copy of the app's module, as two processes would have. Requests
reach a front through httpx's ASGI transport at an address of its own, so tests/wire.py's clients take
the stack's URL and `http` client exactly as they take a front process's.

What needs a process boundary (a crash, a signal, the CLI, stdio, `dev`) stays with tests/processes.py.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
import uuid
from collections.abc import AsyncGenerator, Generator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Message

from mcp_tasks_temporal.ops.cli import build_parser
from mcp_tasks_temporal.ops.server_commands import bearer_auth, configure, front_http_app, open_front, open_worker
from tests.processes import FIXTURE_APP

FRONT_HOST = "127.0.0.1"
"""What each front binds, as `serve`'s default."""
FRONT_ADDRESS = "localhost"
"""Where a test reaches an in-process front: a host no front process is given, so no address is both."""
REQUEST_TIMEOUT_S = 30
"""As the subprocess tests' `http` client: a request the front never answers fails the test, not the run."""
WORKER_GRACEFUL_SHUTDOWN_S = "0"
"""Teardown does not wait for tools a test left running, as the subprocess stack's SIGTERM-then-kill does not."""

_ports = itertools.count(41000)
"""Addresses only: nothing listens on them, the transport routes each to its front."""


def fresh_app(spec: str) -> MCPServer[Any]:
    """A new instance of the `MCPServer` that `MODULE:ATTR` names: its module executed once more.

    A front attaches itself to its app (middleware, gateway); two fronts, or a front and a worker, in one
    process each need theirs, as they would in processes of their own. The copy keeps the module's name,
    as a process's import would: what is keyed by a function's module (an input resolver's key) must
    agree between a front and a worker.
    """
    module_name, _, attr = spec.partition(":")
    original = importlib.import_module(module_name)
    found = importlib.util.find_spec(module_name)
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    # In sys.modules while it runs: pydantic resolves the module's annotations through it.
    sys.modules[module_name] = module
    try:
        found.loader.exec_module(module)
    finally:
        sys.modules[module_name] = original
    app = getattr(module, attr)
    assert isinstance(app, MCPServer), f"{spec} is not an MCPServer"
    return app  # pyright: ignore[reportUnknownVariableType]


@contextmanager
def environment(env: Mapping[str, str] | None) -> Generator[None]:
    """`env` over the process's environment while a command line is read (its variables become defaults)."""
    saved = {name: os.environ.get(name) for name in env or {}}
    os.environ.update(env or {})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@asynccontextmanager
async def lifespan(app: ASGIApp) -> AsyncGenerator[None]:
    """Run an ASGI app's lifespan around the block, as a server does (httpx's ASGI transport does not)."""
    to_app, app_inbox = anyio.create_memory_object_stream[Message](1)
    app_outbox, from_app = anyio.create_memory_object_stream[Message](1)

    async def receive() -> Message:
        return await app_inbox.receive()

    async def send(message: Message) -> None:
        await app_outbox.send(message)

    async def run() -> None:
        await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)

    async with to_app, app_inbox, app_outbox, from_app, anyio.create_task_group() as group:
        group.start_soon(run)
        await to_app.send({"type": "lifespan.startup"})
        started = await from_app.receive()
        if started["type"] != "lifespan.startup.complete":
            raise RuntimeError(f"the front did not start: {started}")
        try:
            yield
        finally:
            stopped: Message = {}
            with anyio.CancelScope(shield=True), anyio.fail_after(REQUEST_TIMEOUT_S):
                await to_app.send({"type": "lifespan.shutdown"})
                stopped = await from_app.receive()
            if stopped.get("type") != "lifespan.shutdown.complete":
                raise RuntimeError(f"the front did not stop cleanly: {stopped}")


FRONTS: dict[str, httpx.ASGITransport] = {}
"""Every in-process front of this process by address, so any stack's `http` client reaches all of them."""


class FrontRoutes(httpx.AsyncBaseTransport):
    """Each in-process front at its own address; any other address over the network (a front process)."""

    def __init__(self) -> None:
        self.network = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        front = FRONTS.get(request.url.netloc.decode())
        if front is None:
            return await self.network.handle_async_request(request)
        try:
            with anyio.fail_after(REQUEST_TIMEOUT_S):
                return await front.handle_async_request(request)
        except TimeoutError:
            raise httpx.ReadTimeout(f"{request.url} did not answer in {REQUEST_TIMEOUT_S} s", request=request) from None

    async def aclose(self) -> None:
        await self.network.aclose()


@dataclass
class InProcessStack:
    """A task queue with fronts and workers in this process; the same surface as conftest's `Stack`."""

    workdir: Path
    temporal: str
    task_queue: str
    exits: AsyncExitStack
    http: httpx.AsyncClient
    fronts: list[str] = field(default_factory=list[str])

    @classmethod
    @asynccontextmanager
    async def open(cls, workdir: Path, temporal: str, *, name: str = "inprocess") -> AsyncGenerator[InProcessStack]:
        async with (
            AsyncExitStack() as exits,
            httpx.AsyncClient(transport=FrontRoutes(), timeout=REQUEST_TIMEOUT_S) as http,
        ):
            yield cls(workdir, temporal, f"{name}-{uuid.uuid4()}", exits, http)

    @property
    def url(self) -> str:
        return self.fronts[0]

    async def add_front(
        self, *, app: str = FIXTURE_APP, extra: Sequence[str] = (), env: Mapping[str, str] | None = None
    ) -> str:
        """A front as `serve --app APP EXTRA...` with `env` would be; its MCP endpoint's URL."""
        port = next(_ports)
        command = ["serve", "--temporal", self.temporal, "--task-queue", self.task_queue, "--app", app]
        with environment(env):
            args = build_parser().parse_args([*command, "--host", FRONT_HOST, "--port", str(port), *extra])
        mcp_app = fresh_app(args.app)
        configure(mcp_app, args)
        auth = bearer_auth(args)
        client = await open_front(self.exits, mcp_app, args)
        asgi = front_http_app(mcp_app, args, client, auth)
        await self.exits.enter_async_context(lifespan(asgi))
        netloc = f"{FRONT_ADDRESS}:{port}"
        FRONTS[netloc] = httpx.ASGITransport(asgi, client=(FRONT_HOST, 50000 + len(self.fronts)))
        self.exits.callback(FRONTS.pop, netloc, None)  # unreachable before its lifespan ends
        url = f"http://{netloc}/mcp"
        self.fronts.append(url)
        return url

    async def add_worker(
        self, *, app: str = FIXTURE_APP, extra: Sequence[str] = (), env: Mapping[str, str] | None = None
    ) -> None:
        """Workers as `worker --app APP EXTRA...` with `env` would run, polling until the stack closes."""
        command = ["worker", "--temporal", self.temporal, "--task-queue", self.task_queue, "--app", app]
        with environment(env):
            args = build_parser().parse_args([*command, "--graceful-shutdown", WORKER_GRACEFUL_SHUTDOWN_S, *extra])
        worker_app = fresh_app(args.app)
        configure(worker_app, args)
        await open_worker(self.exits, worker_app, args)
