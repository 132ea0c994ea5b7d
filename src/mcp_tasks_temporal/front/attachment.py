"""Attaching the extension to Temporal and to its app: what a front adds once, before serving.

The SDK never hands an extension its server: `serve`/`dev` attach it, which gives
the app an ordinary tool per workflow tool and installs the front's middleware
(`subscriptions/listen`, the 2025-11-25 tasks methods, plain-call cancels).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, InputRequiredResult

from mcp_tasks_temporal.front.calls.call_cancels import PlainCallCancels
from mcp_tasks_temporal.front.calls.plain_calls import PlainCalls
from mcp_tasks_temporal.front.calls.tool_calls import ToolCalls
from mcp_tasks_temporal.front.gateway import TemporalTaskGateway
from mcp_tasks_temporal.front.legacy.legacy_tasks import LegacyTasks
from mcp_tasks_temporal.front.push.listen import TaskListen
from mcp_tasks_temporal.front.push.push_mode import push_hub
from mcp_tasks_temporal.front.push.task_watch import TaskWatchHub
from mcp_tasks_temporal.front.unicode_params import RejectLoneSurrogates
from mcp_tasks_temporal.sdk_compat import get_tool, set_output_schema
from mcp_tasks_temporal.temporal.workflow_tools import WorkflowToolOptions, tool_function

if TYPE_CHECKING:
    from mcp_tasks_temporal.front.extension import TasksExtension

RunWorkflow = Callable[[WorkflowToolOptions, dict[str, Any], Any], Awaitable[CallToolResult | InputRequiredResult]]


@dataclass(frozen=True)
class AttachedFront:
    """What an attached extension serves with: its gateway, its app, its push watchers, its held plain calls."""

    gateway: TemporalTaskGateway
    server: MCPServer[Any]
    hub: TaskWatchHub
    plain: PlainCalls


def attach_front(
    extension: TasksExtension, gateway: TemporalTaskGateway, server: MCPServer[Any], *, push_give_up_s: float
) -> tuple[AttachedFront, ToolCalls]:
    """Wire `extension` into `server`; returns the attached front and the `tools/call` side that serves with it.

    `push_give_up_s`: how long a front retries a task's history before ending its
    listeners' streams (`MCP_TASKS_PUSH_GIVE_UP_S`, docs/operations.md).
    """
    hub = push_hub(gateway, give_up_after_s=push_give_up_s)
    front = AttachedFront(gateway=gateway, server=server, hub=hub, plain=PlainCalls(gateway, hub))
    calls = ToolCalls(extension, front)
    for options in extension.workflow_tools.values():
        _add_workflow_tool(server, options, calls.run_workflow_synchronously)
    server.middleware.append(RejectLoneSurrogates())
    server.middleware.append(TaskListen(server, gateway, hub))
    server.middleware.append(LegacyTasks(extension, hub))
    server.middleware.append(PlainCallCancels(extension))
    return front, calls


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
