"""Upgrade canaries: one per private SDK part `sdk_compat` reads.

Each fails with the name of the part when an `mcp` or `temporalio` release moves it,
before any user meets the breakage as a stalled task or a missing push.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any

import anyio
import pytest
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.extension import Extension
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from mcp.shared.subscriptions import ServerEvent
from mcp_types import InputRequiredResult
from pydantic import BaseModel
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.plugin import SimplePlugin
from temporalio.worker import Worker

from mcp_tasks_temporal import sdk_compat
from mcp_tasks_temporal.temporal.activities import ToolActivities

pytestmark = pytest.mark.anyio


class _Marker(Extension):
    identifier = "com.example/canary"


def _server(**kwargs: Any) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("canary", **kwargs)

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    return server


def test_server_extensions_are_the_ones_given() -> None:
    marker = _Marker()
    assert list(sdk_compat.server_extensions(_server(extensions=[marker]))) == [marker]


def test_get_tool_finds_registered_tools_only() -> None:
    server = _server()
    tool = sdk_compat.get_tool(server, "add")
    assert tool is not None and tool.name == "add"
    assert sdk_compat.get_tool(server, "missing") is None


def test_validate_arguments_is_the_tools_own_validation() -> None:
    tool = sdk_compat.get_tool(_server(), "add")
    assert tool is not None
    assert sdk_compat.validate_arguments(tool, {"a": "1", "b": 2}) == {"a": 1, "b": 2}
    with pytest.raises(Exception, match="a"):
        sdk_compat.validate_arguments(tool, {"b": 2})


async def test_set_output_schema_is_what_tools_list_publishes() -> None:
    server = _server()
    tool = sdk_compat.get_tool(server, "add")
    assert tool is not None
    schema = {"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]}
    sdk_compat.set_output_schema(tool, schema)
    (listed,) = await server.list_tools()
    assert listed.output_schema == schema


class Confirmation(BaseModel):
    ok: bool


async def ask_confirmation() -> Elicit[Confirmation]:
    return Elicit("Go ahead?", Confirmation)


async def guarded(n: int, confirmation: Annotated[Confirmation, Resolve(ask_confirmation)]) -> int:
    return n


async def test_resolve_arguments_asks_a_resolvers_question() -> None:
    server: MCPServer[Any] = MCPServer("canary")
    server.add_tool(guarded)
    tool = sdk_compat.get_tool(server, "guarded")
    assert tool is not None and sdk_compat.has_resolvers(tool)
    assert not sdk_compat.has_resolvers(sdk_compat.get_tool(_server(), "add"))  # type: ignore[arg-type]
    validated = sdk_compat.validate_arguments(tool, {"n": 1})
    connection = Connection.from_envelope("2026-07-28", None, {"elicitation": {}})
    request: ServerRequestContext[Any, Any] = ServerRequestContext(
        session=sdk_compat.task_session(_Dispatch(), connection, request_meta=None),
        lifespan_context={},
        protocol_version="2026-07-28",
        method="tools/call",
        params={"name": "guarded", "arguments": {"n": 1}},
    )
    resolved = await sdk_compat.resolve_arguments(tool, validated, Context(request_context=request, mcp_server=server))
    assert isinstance(resolved, InputRequiredResult)


def test_subscription_bus_carries_the_apps_events() -> None:
    bus = sdk_compat.subscription_bus(_server())
    seen: list[ServerEvent] = []
    unsubscribe = bus.subscribe(seen.append)
    assert callable(unsubscribe)
    unsubscribe()


def test_lowlevel_server_has_what_the_front_and_worker_use() -> None:
    lowlevel = sdk_compat.lowlevel_server(_server())
    assert isinstance(lowlevel, Server)
    assert lowlevel.get_request_handler("tools/call") is not None
    assert callable(lowlevel.create_initialization_options)
    assert sdk_compat.server_info_stamp(_server()) is not None


@dataclass
class _Dispatch:
    can_send_request: bool = False


def test_task_session_accepts_a_stand_in_dispatch_context() -> None:
    connection = Connection.from_envelope("2026-07-28", None, {"sampling": {}})
    session = sdk_compat.task_session(_Dispatch(), connection, request_meta=None)
    assert session.client_capabilities is not None and session.client_capabilities.sampling is not None


async def test_app_lifespan_is_entered_from_the_public_setting() -> None:
    entered: list[str] = []

    @asynccontextmanager
    async def lifespan(server: MCPServer[Any]) -> AsyncGenerator[dict[str, str]]:
        entered.append(server.name)
        yield {"db": "open"}

    async with ToolActivities.lifespan(_server(lifespan=lifespan)) as state:
        assert state == {"db": "open"}
    assert entered == ["canary"]
    async with ToolActivities.lifespan(_server()) as state:
        assert state == {}


@workflow.defn(name="CanaryWorkflow")
class _CanaryWorkflow:
    @workflow.run
    async def run(self, n: int) -> int:
        return n


def test_workflow_definition_names_the_type_and_run_method() -> None:
    definition = sdk_compat.workflow_definition(_CanaryWorkflow)
    assert definition.name == "CanaryWorkflow"
    assert definition.run_fn is _CanaryWorkflow.run
    with pytest.raises(ValueError):
        sdk_compat.workflow_definition(int)


@activity.defn(name="canary_activity")
async def _canary_activity() -> None:
    return None


def test_activity_name_is_the_registered_name() -> None:
    assert sdk_compat.activity_name(_canary_activity) == "canary_activity"
    assert sdk_compat.activity_name(len) is None


def test_request_outbound_is_the_dispatch_context_a_session_serves() -> None:
    dispatch = _Dispatch()
    session = sdk_compat.task_session(dispatch, Connection.from_envelope("2025-11-25", None, None), request_meta=None)
    assert sdk_compat.request_outbound(session) is dispatch


async def test_write_on_request_stream_reaches_the_dispatchers_raw_write() -> None:
    from mcp.shared import jsonrpc_dispatcher
    from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
    from mcp.shared.message import ServerMessageMetadata
    from mcp_types import JSONRPCRequest

    assert callable(getattr(JSONRPCDispatcher, "_write", None)), "JSONRPCDispatcher._write is gone"
    context = getattr(jsonrpc_dispatcher, "_JSONRPCDispatchContext")  # noqa: B009
    assert "_dispatcher" in context.__annotations__, "a request's dispatch context no longer holds its dispatcher"
    written: list[tuple[object, object]] = []

    class Dispatcher:
        async def _write(self, message: object, metadata: object) -> None:
            written.append((message, metadata))

    @dataclass
    class Outbound:
        _dispatcher: Dispatcher
        request_id: int = 1

    message = JSONRPCRequest(jsonrpc="2.0", id="q1", method="elicitation/create", params={})
    metadata = ServerMessageMetadata(related_request_id=1)
    await sdk_compat.write_on_request_stream(Outbound(Dispatcher()), message, metadata)
    assert written == [(message, metadata)]


async def test_forget_captured_signals_keeps_a_stopped_uvicorn_server_from_re_raising() -> None:
    import signal

    import uvicorn
    from sse_starlette.sse import AppStatus

    server = uvicorn.Server(uvicorn.Config(app=lambda *_: None))
    try:
        with server.capture_signals():
            server.handle_exit(signal.SIGINT, None)
            sdk_compat.forget_captured_signals(server)
        # Without the clear, leaving capture_signals() re-raises SIGINT as a KeyboardInterrupt.
    finally:
        # sse-starlette wraps `handle_exit` and takes it as the whole process stopping: left set, its flag
        # ends every SSE stream the process serves later, those of the tests that follow in this worker.
        AppStatus.should_exit = False


class _Refuse(SimplePlugin):
    """A plugin that refuses every worker before it runs, as `McpTasksPlugin` refuses one whose settings disagree."""

    def __init__(self) -> None:
        super().__init__("canary.refuse")  # pyright: ignore[reportUnknownMemberType]

    async def run_worker(self, worker: Worker, next: Callable[[Worker], Awaitable[None]]) -> None:
        await sdk_compat.end_unstarted_worker(worker)
        raise RuntimeError("refused")


async def test_end_unstarted_worker_ends_async_with_and_frees_the_queue(temporal_client: Client) -> None:
    queue = f"canary-{uuid.uuid4()}"
    for _ in range(2):  # the second worker of the queue may register only if the first let go of it
        worker = Worker(temporal_client, task_queue=queue, activities=[_canary_activity], plugins=[_Refuse()])
        with pytest.raises(RuntimeError, match="refused"), anyio.fail_after(20):
            async with worker:
                await anyio.Event().wait()
        assert worker.is_shutdown
