"""The front server's ASGI app in the test process: what `serve` builds, on a client and task queue the test gives.

This is the one place the tests build a front: the public `mcp_endpoint`, as `serve` and a team's own
service build it, without argparse.

A front attaches its app's `TasksExtension` to its gateway for good and configures the app (its
middleware, its request-state keys), as a process does once with the app it loaded. So each front,
and each worker, takes an app instance of its own (`fresh_app`), as each process has its own.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import httpx
import httpx2
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send
from temporalio.client import Client

from mcp_tasks_temporal import BearerAuth, FrontSettings, mcp_endpoint
from mcp_tasks_temporal.front.app_lookup import tasks_extension
from mcp_tasks_temporal.front.extension import TasksExtension
from mcp_tasks_temporal.front.gateway import TemporalTaskGateway
from mcp_tasks_temporal.temporal.app_plugins import app_client_plugins
from mcp_tasks_temporal.temporal.connection import connect_temporal
from mcp_tasks_temporal.temporal.contract import ActivityPolicy
from tests.asgi import StreamingASGITransport, StreamingASGITransport2, lifespan
from tests.loopback import serving
from tests.wire import HttpMcp, TaskCalls

FIXTURE_APP = "tests.fixture_app:app"
DEMO_SERVER = "mcp_tasks_temporal.demo.server:app"
"""The built-in demo (`DEMO_APP`) at the module that builds it: `fresh_app` runs that module again."""
FRONT_URL = "http://127.0.0.1:8000/mcp"
"""Where `serve` listens by default, so the MCP SDK's DNS-rebinding check sees the host it expects; nothing is sent
there: the transport hands each request to the app in this process."""


def fresh_app(spec: str = FIXTURE_APP) -> MCPServer[Any]:
    """A new instance of the `MCPServer` that `spec` (`MODULE:ATTR`) names, with its own `TasksExtension`: its
    module run again, as another process would load it.

    The copy keeps the module's name, because names derive from it that the front and the worker must agree
    on (a `Resolve` question's key is `module:function`); the module imported under that name stays the one
    in `sys.modules`, where pydantic looks up the copy's annotations (the same names, so the same types).
    """
    module_name, _, attr = spec.partition(":")
    original = importlib.import_module(module_name)
    defining = _defining_module(original, attr)
    if defining is not original:
        # A package that re-exports its app from a submodule: running the package again would import the
        # same instance; the submodule that builds it is the one to run again.
        return fresh_app(f"{defining.__name__}:{attr}")
    if original.__spec__ is None or original.__spec__.origin is None:
        raise ValueError(f"{module_name} has no source file to load again")
    copy = importlib.util.spec_from_file_location(module_name, original.__spec__.origin)
    assert copy is not None and copy.loader is not None
    module = importlib.util.module_from_spec(copy)
    copy.loader.exec_module(module)
    app = getattr(module, attr)
    assert isinstance(app, MCPServer), f"{spec} is a {type(app).__name__}"
    return app  # pyright: ignore[reportUnknownVariableType]


def _defining_module(package: ModuleType, attr: str) -> ModuleType:
    """The module among `package` and its loaded submodules whose own code builds `package.attr`."""
    target = getattr(package, attr)
    prefix = f"{package.__name__}."
    # A copy: a worker thread of the same process may import meanwhile (the sandbox, a converter's lazy import).
    for name, module in sorted(sys.modules.copy().items()):
        if name.startswith(prefix) and getattr(module, attr, None) is target and _builds(module, attr):
            return module
    return package


def _builds(module: ModuleType, attr: str) -> bool:
    """Whether `module` assigns `attr` itself (not `from ... import attr`)."""
    source = inspect.getsource(module)
    return any(
        isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attr for t in node.targets)
        for node in ast.parse(source).body
    )


@dataclass(frozen=True)
class InProcessFront:
    """A running front: its ASGI app (lifespan entered), and what a test may look at or steer."""

    app: MCPServer[Any]
    """The attached app: `mcp.client.Client(front.app)` talks to it in memory, without HTTP."""
    asgi: ASGIApp
    state: dict[str, Any]
    """The lifespan's state, which each request's scope carries."""
    extension: TasksExtension
    url: str = FRONT_URL

    @property
    def gateway(self) -> TemporalTaskGateway:
        return self.extension.gateway

    def http(self, *, timeout: float = 30, **options: Any) -> httpx.AsyncClient:
        """An httpx client whose requests this front serves, streaming; enter it (`async with`)."""
        transport = StreamingASGITransport(self.asgi, state=self.state)
        return httpx.AsyncClient(transport=transport, timeout=timeout, **options)

    def http2(self, *, timeout: float = 30, **options: Any) -> httpx2.AsyncClient:
        """The same for httpx2, the HTTP client of the MCP SDK's `Client` and of `TasksClient` (`http_client=`)."""
        transport = StreamingASGITransport2(self.asgi, state=self.state)
        return httpx2.AsyncClient(transport=transport, timeout=timeout, **options)

    def calls(self, http: httpx.AsyncClient) -> TaskCalls:
        """The task operations at 2026-07-28 on `http` (one of `self.http()`)."""
        return TaskCalls(HttpMcp(self.url, http))

    @asynccontextmanager
    async def listening(self) -> AsyncGenerator[str]:
        """This front under uvicorn on a free loopback port of this process, until the block ends; yields its URL.

        For the clients that take a URL rather than an HTTP client (FastMCP, pydantic-ai, openai-agents, a
        `TasksClient` or the SDK's `Client` as their users open them): real HTTP over a socket, served here,
        beside the in-process transport on the same app. Each request gets the lifespan's state, as under `serve`.
        """
        asgi, state = self.asgi, self.state

        async def with_state(scope: Scope, receive: Receive, send: Send) -> None:
            await asgi({**scope, "state": dict(state)} if scope["type"] == "http" else scope, receive, send)

        async with serving(with_state, lifespan="off") as port:
            yield f"http://127.0.0.1:{port}/mcp"


@asynccontextmanager
async def in_process_front(
    app: MCPServer[Any],
    client: Client,
    *,
    task_queue: str | None,
    auth: BearerAuth | None = None,
    activity: ActivityPolicy | None = None,
    nexus_reply_endpoint: str | None = None,
    clock: Callable[[], int] | None = None,
    allow_unkeyed_owner_keys: bool = True,
    **settings: Any,
) -> AsyncGenerator[InProcessFront]:
    """`app` served as `serve` serves it, through the public `mcp_endpoint`, on `client`, until the block ends.

    Args:
        app: A configured app no front has attached yet (`fresh_app()`).
        client: The front's Temporal client (the session's `temporal_client`).
        task_queue: Where its tasks go; a worker on it runs them (`tests.app_workers.app_worker`). `None`: the
            app's own queue (`default_task_queue(app)`), as `serve` without `--task-queue`.
        auth: Bearer authentication, as `--tokens` or `--jwt-jwks` set it up.
        activity: The tools' default activity policy (`--heartbeat-timeout`, `--max-attempts`, `--tool-timeout`).
        nexus_reply_endpoint: `--nexus-reply-endpoint`.
        clock: The front's time in epoch ms: tasks' `createdAt` and their TTL checks (`tests.clock.ManualClock`).
        allow_unkeyed_owner_keys: `auth` without `owner_keying` keeps unkeyed owner keys, as the tests' fronts
            always did (`serve` refuses that combination, and `mcp_endpoint` does unless told otherwise).
        settings: `FrontSettings` fields (`require_mcp_name`, `request_state_keys`, `max_body_bytes`, ...); the
            session's namespace has the project's search attributes, so `search_attributes` defaults to on.
    """
    extension = tasks_extension(app)
    # What `serve`'s flags change on the app itself, before anything is attached.
    if nexus_reply_endpoint is not None:
        extension.nexus_reply_endpoint = nexus_reply_endpoint
    if activity is not None:
        extension.default_activity = activity
    settings.setdefault("search_attributes", True)
    # As `serve` reads it: `MCP_TASKS_PUSH=poll pytest ...` runs a test's fronts, in-process or not, in poll mode.
    if "MCP_TASKS_PUSH" in os.environ:
        settings.setdefault("push", os.environ["MCP_TASKS_PUSH"])
    front_settings = FrontSettings(task_queue=task_queue, **settings)
    asgi = mcp_endpoint(
        app,
        client,
        settings=front_settings,
        auth=auth,
        host="127.0.0.1",
        allow_unkeyed_owner_keys=allow_unkeyed_owner_keys,
    )
    if clock is not None:
        extension.gateway.now_ms = clock
    async with lifespan(asgi) as state:
        yield InProcessFront(app, asgi, state, extension)


@asynccontextmanager
async def in_process_app(
    client: Client, spec: str, *, task_queue: str | None = None, **settings: Any
) -> AsyncGenerator[InProcessFront]:
    """The app `spec` names, served in this process: its workers and a front, on a task queue of their own.

    For a module's second app (its first is `app_spec`'s); `settings` are `in_process_front`'s keyword arguments.
    """
    from tests.app_workers import app_worker, new_task_queue

    queue = task_queue or new_task_queue(spec.partition(":")[0].rpartition(".")[2])
    worker_app = fresh_app(spec)
    client = await client_for_app(client, worker_app)
    async with (
        app_worker(client, worker_app, task_queue=queue),
        in_process_front(fresh_app(spec), client, task_queue=queue, **settings) as served,
    ):
        yield served


async def client_for_app(client: Client, app: MCPServer[Any]) -> Client:
    """`client`, or, for an app with plugins of its own (a sub-agent's), a client of the same namespace that carries
    their client side (pydantic-ai's converter), as `serve` and `worker` connect for such an app."""
    plugins = app_client_plugins(tasks_extension(app))
    if not plugins:
        return client
    address = client.service_client.config.target_host
    return await connect_temporal(address, namespace=client.namespace, plugins=plugins)
