"""Every use of a private part of the `mcp` and `temporalio` SDKs, in one place.

Each function below stands where the SDK has no public hook yet, says why it is
needed, and has a canary in `tests/test_sdk_canaries.py` that fails loudly when
a new SDK release moves what it reads. Nothing else in the package may touch an
SDK's underscore names: when a public hook appears, the function changes here
and its callers do not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.extension import Extension
    from mcp.server.lowlevel.server import Server
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.tools import Tool
    from mcp.server.session import ServerSession
    from mcp.server.subscriptions import SubscriptionBus
    from mcp.shared.message import ServerMessageMetadata
    from mcp_types import JSONRPCMessage

# -- mcp: MCPServer -----------------------------------------------------------------


def server_extensions(server: MCPServer[Any]) -> Sequence[Extension]:
    """The extensions an `MCPServer` was built with.

    `MCPServer(extensions=[...])` keeps them and exposes no accessor ("the server never hands
    itself to an extension", mcp/server/extension.py, and nothing hands them back). Only the
    commands that load an app by name (`--app module:app`) need it, to find its `TasksExtension`;
    the library's own API takes the extension from its caller (`McpTasksPlugin(tasks, app)`).
    """
    return tuple(server._extensions)  # pyright: ignore[reportPrivateUsage]


def get_tool(server: MCPServer[Any], name: str) -> Tool | None:
    """The registered tool `name` (its argument model and resolvers), or `None`.

    `MCPServer` lists tools only as wire `Tool`s; validating arguments before a task
    exists, and asking a tool's `Resolve(...)` questions on the `tools/call` itself,
    need the registered tool behind it.
    """
    return server._tool_manager.get_tool(name)  # pyright: ignore[reportPrivateUsage]


def set_output_schema(tool: Tool, schema: dict[str, Any] | None) -> None:
    """Publish `schema` as the tool's `outputSchema` without validating results against a model.

    A workflow tool's result is the workflow's decoded return value; `add_tool` can only
    derive a schema from a Python return annotation, which a generic runner does not have.
    """
    tool.fn_metadata.output_schema = schema


def validate_arguments(tool: Tool, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The tool's own argument validation (pydantic), as a synchronous `tools/call` runs it."""
    return tool.fn_metadata.validate_arguments(dict(arguments))


async def resolve_arguments(tool: Tool, validated: dict[str, Any], context: Context[Any, Any]) -> Any:
    """Run the tool's `Resolve(...)` parameters (MRTR questions) the way the SDK's tool call does.

    Returns the resolved arguments, or the `InputRequiredResult` that asks what is missing.
    """
    from mcp.server.mcpserver.resolve import resolve_arguments as sdk_resolve_arguments

    return await sdk_resolve_arguments(tool.resolved_params, tool.resolver_plans, validated, context)


def has_resolvers(tool: Tool) -> bool:
    return bool(tool.resolved_params)


def subscription_bus(server: MCPServer[Any]) -> SubscriptionBus:
    """The bus the app's `ctx.notify_*` publishes core events on.

    `subscriptions/listen` is answered by the extension's middleware (it adds task IDs
    to the core filter), so it must subscribe to the same bus the SDK's own handler reads.
    """
    return server._subscriptions  # pyright: ignore[reportPrivateUsage]


def lowlevel_server(server: MCPServer[Any]) -> Server[Any]:
    """The low-level `Server` under an `MCPServer`.

    Needed for three things with no `MCPServer` API: running stdio with a wrapped write
    stream (every -32022 names the served revisions), the `serverInfo` stamp a
    self-answering middleware must put in its result's `_meta`, and the raw `tools/call`
    handler a worker runs a tool through.
    """
    return server._lowlevel_server  # pyright: ignore[reportPrivateUsage]


def server_info_stamp(server: MCPServer[Any]) -> Any:
    return lowlevel_server(server).server_info_stamp


def task_session(dispatch: Any, connection: Any, *, request_meta: Any) -> ServerSession:
    """A `ServerSession` over a dispatch context that is not a transport.

    A tool running in an activity has no client connection; its session's back-channel is
    the task (progress becomes the status, requests are refused as on the 2026-07-28 wire).
    `ServerSession` types its first argument as the SDK's dispatch context, which only its
    transports build, so the activity's stand-in is passed by the methods it implements.
    """
    from mcp.server.session import ServerSession

    return ServerSession(dispatch, connection, request_meta=request_meta)


def request_outbound(session: ServerSession) -> Any:
    """The dispatch context of the request a session serves: its stream back to the client.

    A 2025-11-25 task's questions go out on the `tasks/result` request's own stream; the
    session keeps that context but exposes only `send_request`, which waits for a reply
    a stateless front never receives (the client POSTs it to any front).
    """
    return session._request_outbound  # pyright: ignore[reportPrivateUsage]


async def write_on_request_stream(outbound: Any, message: JSONRPCMessage, metadata: ServerMessageMetadata) -> None:
    """Write `message` on the response stream of the request `outbound` serves, awaiting no reply.

    The JSON-RPC dispatcher's `notify` writes only notifications and its `send_raw_request`
    waits for the reply; a request whose reply another front takes needs the raw write.
    """
    await outbound._dispatcher._write(message, metadata)  # pyright: ignore[reportPrivateUsage]


# -- temporalio ---------------------------------------------------------------------


def workflow_definition(workflow_class: type) -> Any:
    """temporalio's definition of a `@workflow.defn` class: its type name and run method.

    A workflow tool derives its MCP name and argument schema from the `@workflow.run`
    parameter; temporalio exposes the definition only through this private class.
    """
    from temporalio.workflow import _Definition  # pyright: ignore[reportPrivateUsage]

    return _Definition.must_from_class(workflow_class)


def activity_name(fn: Callable[..., Any]) -> str | None:
    """The name `@activity.defn` registered `fn` under (`None` for a plain function).

    A worker's interceptor heartbeats for a workflow tool's activities by type name; temporalio
    keeps the name on the function under a private attribute and has no public reader.
    """
    from temporalio.activity import _Definition  # pyright: ignore[reportPrivateUsage]

    definition = _Definition.from_callable(fn)  # pyright: ignore[reportUnknownMemberType]
    return definition.name if definition is not None else None


async def end_unstarted_worker(worker: Any) -> None:
    """End a worker that a plugin's `run_worker` refused before it polled, as if it had run and stopped.

    A plugin has no public way to refuse a worker before it polls: temporalio marks a worker shut
    down only once its own run has begun, or when that run's first step (`validate()`, the namespace
    check) fails (`Worker._run`, temporalio 1.35), not when a plugin's `run_worker` raises before
    calling `next`. Then `async with worker` waits forever in `shutdown()`, and the core worker keeps
    the task queue's slot on its client. No upstream issue or PR yet. The core worker is shut down the
    way temporalio's own run does it: each kind of poll taken until it reports the shutdown, then finalized.
    """
    import asyncio

    bridge = worker._bridge_worker  # pyright: ignore[reportPrivateUsage]
    pollers = [
        worker._activity_worker,  # pyright: ignore[reportPrivateUsage]
        worker._workflow_worker,  # pyright: ignore[reportPrivateUsage]
        worker._nexus_worker,  # pyright: ignore[reportPrivateUsage]
    ]
    try:
        bridge.initiate_shutdown()
        await asyncio.gather(*(poller.drain_poll_queue() for poller in pollers if poller is not None))
        await bridge.finalize_shutdown()
    finally:
        worker._shutdown_complete_event.set()  # pyright: ignore[reportPrivateUsage]


# -- uvicorn ------------------------------------------------------------------------


def forget_captured_signals(server: Any) -> None:
    """Keep a stopped `uvicorn.Server` from re-raising the Ctrl-C or SIGTERM that stopped it.

    uvicorn re-raises a captured signal once `capture_signals()` exits, as a KeyboardInterrupt that
    would cut short what follows its stop: the worker's graceful shutdown, then the embedded Temporal
    server's. It keeps the captured signals in a private list and has no setting to keep them.
    """
    server._captured_signals.clear()  # pyright: ignore[reportPrivateUsage]
