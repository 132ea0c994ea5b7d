"""The front server's ASGI app in the test process: what `serve` builds, on a client and task queue the test gives.

This is the one place the tests build a front. It mirrors `ops/server_commands.py` (`open_front`, then
`front_http_app`) from the library pieces, without argparse; when the public factory of the MCP
endpoint lands, `in_process_front` calls it instead and nothing else changes.

A front attaches its app's `TasksExtension` to its gateway for good and configures it (the Mcp-Name
rule, request-state keys, middleware), as a process does once with the app it loaded. So each front,
and each worker, takes an app instance of its own (`fresh_app`), as each process has its own.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import httpx
import httpx2
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp
from temporalio.client import Client

from mcp_tasks_temporal.front.app_loading import tasks_extension, use_request_state_keys
from mcp_tasks_temporal.front.closed_tasks import DEFAULT_MAX_ENTRIES, ClosedTaskCache
from mcp_tasks_temporal.front.credential_life import EndWithCredential
from mcp_tasks_temporal.front.extension import TasksExtension
from mcp_tasks_temporal.front.gateway import TemporalTaskGateway, now_ms, unready_reason
from mcp_tasks_temporal.front.handshake_echo import HandshakeEcho
from mcp_tasks_temporal.front.health import health_routes
from mcp_tasks_temporal.front.http_app import BearerAuth, front_app
from mcp_tasks_temporal.front.http_errors import JsonRpcHttpErrors
from mcp_tasks_temporal.front.legacy_answers import LegacyAnswers
from mcp_tasks_temporal.front.protocol_versions import AdvertiseServedVersions
from mcp_tasks_temporal.front.session_binding import SessionKeys
from mcp_tasks_temporal.temporal.contract import ActivityPolicy
from mcp_tasks_temporal.temporal.fairness import FairnessPolicy
from mcp_tasks_temporal.temporal.metrics import FrontMetrics, RequestMetrics
from mcp_tasks_temporal.temporal.payload_limits import PayloadLimits, namespace_blob_limit
from tests.asgi import StreamingASGITransport, StreamingASGITransport2, lifespan
from tests.wire import HttpMcp, TaskCalls

FIXTURE_APP = "tests.fixture_app:app"
FRONT_URL = "http://127.0.0.1:8000/mcp"
"""Where `serve` listens by default, so the MCP SDK's DNS-rebinding check sees the host it expects; nothing is sent
there: the transport hands each request to the app in this process."""
MAX_BODY_BYTES = 1024 * 1024
"""`serve`'s default `--max-body-bytes`."""


def fresh_app(spec: str = FIXTURE_APP) -> MCPServer[Any]:
    """A new instance of the `MCPServer` that `spec` (`MODULE:ATTR`) names, with its own `TasksExtension`: its
    module run again, as another process would load it.

    The copy keeps the module's name, because names derive from it that the front and the worker must agree
    on (a `Resolve` question's key is `module:function`); the module imported under that name stays the one
    in `sys.modules`, where pydantic looks up the copy's annotations (the same names, so the same types).
    """
    module_name, _, attr = spec.partition(":")
    original = importlib.import_module(module_name)
    if original.__spec__ is None or original.__spec__.origin is None:
        raise ValueError(f"{module_name} has no source file to load again")
    copy = importlib.util.spec_from_file_location(module_name, original.__spec__.origin)
    assert copy is not None and copy.loader is not None
    module = importlib.util.module_from_spec(copy)
    copy.loader.exec_module(module)
    app = getattr(module, attr)
    assert isinstance(app, MCPServer), f"{spec} is a {type(app).__name__}"
    return app  # pyright: ignore[reportUnknownVariableType]


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
async def in_process_front(
    app: MCPServer[Any],
    client: Client,
    *,
    task_queue: str,
    auth: BearerAuth | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    require_mcp_name: bool = False,
    request_state_keys: Sequence[str] = (),
    closed_task_cache: int = DEFAULT_MAX_ENTRIES,
    search_attributes: bool = True,
    fairness: FairnessPolicy | None = None,
    activity: ActivityPolicy | None = None,
    payload_limits: PayloadLimits | None = None,
    nexus_reply_endpoint: str | None = None,
    web_ui: str | None = None,
    push_give_up_s: float | None = None,
    clock: Callable[[], int] = now_ms,
) -> AsyncGenerator[InProcessFront]:
    """`app` served as `serve` serves it (`serve --task-queue ...` and the flags named like the arguments),
    on `client`, until the block ends.

    Args:
        app: A configured app no front has attached yet (`fresh_app()`).
        client: The front's Temporal client (the session's `temporal_client`).
        task_queue: Where its tasks go; a worker on it runs them (`tests.app_workers.app_worker`).
        auth: Bearer authentication, as `--tokens` or `--jwt-jwks` set it up.
        max_body_bytes: `--max-body-bytes`.
        require_mcp_name: `--require-mcp-name`.
        request_state_keys: `--request-state-key`, in order: fronts given the same keys take each other's
            `requestState` and session IDs.
        closed_task_cache: `--closed-task-cache`.
        search_attributes: Whether the namespace has the project's search attributes (the session's has).
        fairness: `--fairness-weight` and `--fairness-keys`.
        activity: The tools' default activity policy (`--heartbeat-timeout`, `--max-attempts`, `--tool-timeout`).
        payload_limits: How large arguments and results may be (`--payload-storage` and its options); the
            namespace's blob limit and no payload storage by default.
        nexus_reply_endpoint: `--nexus-reply-endpoint`.
        web_ui: `--temporal-ui`: `tasks/get` links each task's page.
        push_give_up_s: `MCP_TASKS_PUSH_GIVE_UP_S`.
        clock: The front's time in epoch ms: tasks' `createdAt` and their TTL checks (`tests.clock.ManualClock`).
    """
    extension = tasks_extension(app)
    # `configure`: what the flags change on the app before anything is attached.
    use_request_state_keys(app, list(request_state_keys))
    if request_state_keys:
        extension.session_keys = SessionKeys(list(request_state_keys))
    if require_mcp_name:
        extension.require_mcp_name = True
    if nexus_reply_endpoint is not None:
        extension.nexus_reply_endpoint = nexus_reply_endpoint
    if activity is not None:
        extension.default_activity = activity
    if push_give_up_s is not None:
        extension.push_give_up_s = push_give_up_s
    # `_attach_front`.
    metrics = FrontMetrics.from_runtime()
    app.middleware.insert(0, RequestMetrics(metrics))
    app.middleware.append(AdvertiseServedVersions())
    gateway = TemporalTaskGateway(
        client,
        task_queue=task_queue,
        metrics=metrics,
        closed_tasks=ClosedTaskCache(max_entries=closed_task_cache),
        search_attributes=search_attributes,
        web_ui=web_ui,
        payload_limits=payload_limits or PayloadLimits(blob_limit=await namespace_blob_limit(client)),
        fairness=fairness or FairnessPolicy.weighted([]),
    )
    gateway.now_ms = clock
    extension.attach(gateway, app)
    # `front_http_app`.
    mcp_app = app.streamable_http_app(host="127.0.0.1", max_request_body_size=max_body_bytes, stateless_http=True)
    mcp_app.add_middleware(LegacyAnswers, extension=extension, max_body_bytes=max_body_bytes)
    mcp_app.add_middleware(HandshakeEcho, max_body_bytes=max_body_bytes, sessions=extension.session_keys)
    if auth is not None:
        app.middleware.insert(0, EndWithCredential(auth.verifier))
    http_app = front_app(
        mcp_app,
        auth=auth,
        extra_routes=health_routes(partial(unready_reason, client), client.namespace),
        running=extension.running,
    )
    asgi = JsonRpcHttpErrors(http_app, max_body_bytes=max_body_bytes)
    async with lifespan(asgi) as state:
        yield InProcessFront(app, asgi, state, extension)
