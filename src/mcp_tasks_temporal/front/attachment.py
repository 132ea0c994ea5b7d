"""Attaching a front to Temporal and to its app: what a front adds once, before serving.

The SDK never hands an extension its server: `mcp_endpoint` (through
`TasksExtension.attach`) gives the app an ordinary tool per workflow tool, seals its
`requestState` with the fronts' shared keys and installs the front's server middleware
(request metrics, every served revision in `server/discover`, `subscriptions/listen`, the
2025-11-25 tasks methods, plain-call cancels). Each part is
handed what it serves with, the app's tool registry and this front's gateway among them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, InputRequiredResult

from mcp_tasks_temporal.front.calls.call_cancels import PlainCallCancels
from mcp_tasks_temporal.front.calls.plain_calls import PlainCalls
from mcp_tasks_temporal.front.calls.tool_calls import Serving, ToolCalls
from mcp_tasks_temporal.front.gateway import TemporalTaskGateway
from mcp_tasks_temporal.front.legacy.legacy_tasks import LegacyTasks
from mcp_tasks_temporal.front.protocol_versions import AdvertiseServedVersions
from mcp_tasks_temporal.front.push.listen import TaskListen
from mcp_tasks_temporal.front.push.push_mode import push_hub
from mcp_tasks_temporal.front.push.task_watch import TaskWatchHub
from mcp_tasks_temporal.front.request_state import use_request_state_keys
from mcp_tasks_temporal.front.session_binding import SessionKeys
from mcp_tasks_temporal.front.settings import FrontSettings
from mcp_tasks_temporal.front.task_methods import TaskMethods
from mcp_tasks_temporal.front.unicode_params import RejectLoneSurrogates
from mcp_tasks_temporal.sdk_compat import get_tool, set_output_schema
from mcp_tasks_temporal.temporal.workflow_tools import WorkflowToolOptions, tool_function

if TYPE_CHECKING:
    from mcp_tasks_temporal.temporal.tool_registry import TaskToolRegistry

RunWorkflow = Callable[[WorkflowToolOptions, dict[str, Any], Any], Awaitable[CallToolResult | InputRequiredResult]]


@dataclass(frozen=True)
class Front:
    """What an attached extension serves with: its gateway, its push watchers, its tool calls and task methods."""

    gateway: TemporalTaskGateway
    settings: FrontSettings
    hub: TaskWatchHub
    calls: ToolCalls
    methods: TaskMethods
    session_keys: SessionKeys
    """What tags handshake session IDs and binds anonymous tasks to them (`session_binding`)."""


def attach_front(
    registry: TaskToolRegistry, gateway: TemporalTaskGateway, server: MCPServer[Any], settings: FrontSettings
) -> Front:
    """Wire the tools `registry` declares into `server`, served through `gateway`; returns the attached front."""
    # The same shared secrets seal `requestState` and tag session IDs, so any front takes what another handed out.
    keys = settings.request_state_keys
    session_keys = SessionKeys(keys) if keys else SessionKeys.process_local()
    use_request_state_keys(server, list(keys))
    # First, so it also counts what later middleware answers by itself (subscriptions/listen).
    server.middleware.insert(0, gateway.request_metrics())
    server.middleware.append(AdvertiseServedVersions())
    hub = push_hub(gateway, settings.push, give_up_after_s=settings.push_give_up_s)
    serving = Serving(
        server=server,
        gateway=gateway,
        plain=PlainCalls(gateway, hub),
        max_inline_budget_ms=settings.max_inline_budget_ms,
    )
    calls = ToolCalls(registry, serving)
    for options in registry.workflow_tools.values():
        _add_workflow_tool(server, options, calls.run_workflow_synchronously)
        if options.task_queue is not None:
            gateway.queue_watch.watch_workflow_tools(options.task_queue, [options.name])
    server.middleware.append(RejectLoneSurrogates())
    server.middleware.append(TaskListen(server, gateway, hub))
    server.middleware.append(LegacyTasks(registry, calls, gateway, hub, session_keys))
    server.middleware.append(PlainCallCancels(gateway))
    return Front(
        gateway=gateway,
        settings=settings,
        hub=hub,
        calls=calls,
        methods=TaskMethods(gateway, require_mcp_name=settings.require_mcp_name),
        session_keys=session_keys,
    )


def _add_workflow_tool(server: MCPServer[Any], options: WorkflowToolOptions, run: RunWorkflow) -> None:
    """Give the app an ordinary tool with the workflow's arguments: `tools/list` and validation come from it."""
    if get_tool(server, options.name) is not None:
        raise ValueError(f"the app already has a tool named {options.name!r}")
    server.add_tool(
        tool_function(options, Context, run),
        name=options.name,
        description=options.description,
        structured_output=False,
    )
    tool = get_tool(server, options.name)
    assert tool is not None
    # Published as is: the result is mapped from the decoded return value, not validated against a model.
    set_output_schema(tool, options.output_schema())
