"""`TasksExtension`: the MCP Tasks extension (SEP-2663) for an `MCPServer`, backed by Temporal.

    tasks = TasksExtension()
    mcp = MCPServer("builds", extensions=[tasks])

    @tasks.tool(policy="optional")   # the one line that makes a tool task-capable
    @mcp.tool()
    async def build(ref: str) -> str: ...

The app's one object, made of parts that each run on one side. What the app
declares is a `TaskToolRegistry` (`temporal/tool_registry.py`), which fronts and
workers both read. On a front server, once attached (`front/attachment.py`, which
`mcp_endpoint` does), the extension hands `tools/call` for such a tool to
`front/calls/tool_calls.py` and `tasks/get`, `tasks/update` and `tasks/cancel` to
`front/task_methods.py`; it keeps no task state of its own. On a worker the same app
runs the tool inside an activity, where the extension steps aside
(`temporal/tool_execution.py`). The parts never import the extension back: they are
handed what they serve with. They are imported when first used, so a worker that
loads the app loads none of them.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp_types import CallToolRequestParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_tasks_temporal.front.task_params import TaskIdParams, UpdateTaskParams
from mcp_tasks_temporal.temporal.contract import EXTENSION_ID
from mcp_tasks_temporal.temporal.task_context import tool_call
from mcp_tasks_temporal.temporal.tool_execution import in_task_run, run_in_task
from mcp_tasks_temporal.temporal.tool_registry import (
    DAY_MS,
    INHERIT,
    Asks,
    TaskPolicy,
    TaskToolRegistry,
    ToolTaskOptions,
)

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from mcp_tasks_temporal.front.attachment import Front
    from mcp_tasks_temporal.front.calls.tool_calls import ToolCalls
    from mcp_tasks_temporal.front.gateway import TemporalTaskGateway
    from mcp_tasks_temporal.front.settings import FrontSettings

__all__ = [
    "DAY_MS",
    "INHERIT",
    "Asks",
    "TaskIdParams",
    "TaskPolicy",
    "TasksExtension",
    "ToolTaskOptions",
    "UpdateTaskParams",
]


@dataclass
class TasksExtension(TaskToolRegistry, Extension):
    """Serves SEP-2663 tasks for the tools it is told about, with Temporal as the store."""

    identifier = EXTENSION_ID

    nexus_reply_endpoint: str | None = None
    """Nexus endpoint targeting this app's namespace and task queue, through which handler workflows of
    `nexus_tool`s report status (`--nexus-reply-endpoint`); `None`: their status does not cross."""
    _front: Front | None = field(default=None, init=False)
    _unattached: ToolCalls | None = field(default=None, init=False)

    def nexus_reply_to(self) -> str | None:
        return self.nexus_reply_endpoint

    # -- wiring ------------------------------------------------------------------

    def attach(self, gateway: TemporalTaskGateway, server: MCPServer[Any], settings: FrontSettings) -> Front:
        """Connect the extension to Temporal and to its app, before requests are accepted (`mcp_endpoint` does).

        The SDK never hands an extension its server, and answering `Resolve(...)`
        questions before the task exists needs the app's tool registry. Attaching
        also installs the front's server middleware (`subscriptions/listen`, the
        2025-11-25 tasks methods, plain-call cancels); the push watchers run while
        the server is inside `running()`.
        """
        from mcp_tasks_temporal.front.attachment import attach_front

        if self._front is not None:
            raise RuntimeError("TasksExtension is already attached")
        self.seal()
        self._front = attach_front(self, gateway, server, settings)
        return self._front

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[None]:
        """Run the push watchers of an attached front server, and its watch for workers; leaving stops them.

        Whoever serves the app enters it around the transport (`mcp_endpoint`'s lifespan
        does, and `serve` around stdio), so a stopping server stops its watchers. While it
        runs, the front checks that a worker polls each queue it starts tasks on and holds its
        settings out to the processes of its queue (`TemporalTaskGateway.serving`).
        """
        front = self._attached()
        async with front.gateway.serving(), front.hub.running():
            yield

    @property
    def gateway(self) -> TemporalTaskGateway:
        return self._attached().gateway

    def _attached(self) -> Front:
        if self._front is None:
            raise RuntimeError(
                "TasksExtension is not attached to Temporal; serve the app with `mcp_endpoint(app, client)`, "
                "`mcp-tasks-temporal serve` or `dev`"
            )
        return self._front

    def methods(self) -> Sequence[MethodBinding]:
        versions = frozenset(MODERN_PROTOCOL_VERSIONS)
        return [
            MethodBinding("tasks/get", TaskIdParams, self._tasks_get, versions),
            MethodBinding("tasks/update", UpdateTaskParams, self._tasks_update, versions),
            MethodBinding("tasks/cancel", TaskIdParams, self._tasks_cancel, versions),
        ]

    # -- tools/call ---------------------------------------------------------------

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if in_task_run():
            return await run_in_task(ctx, call_next)  # on a worker, in the task's activity: the tool itself
        with tool_call():  # where `set_status` outside a task is a no-op rather than a mistake
            return await self._tool_calls().route(params, ctx, call_next)

    def _tool_calls(self) -> ToolCalls:
        if self._front is not None:
            return self._front.calls
        if self._unattached is None:
            # Not attached: plain calls are served, a task cannot start (`_attached` says why).
            from mcp_tasks_temporal.front.calls.tool_calls import ToolCalls

            self._unattached = ToolCalls(self, None)
        return self._unattached

    # -- tasks/* ------------------------------------------------------------------

    async def _tasks_get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> dict[str, Any]:
        return await self._attached().methods.get(ctx, params)

    async def _tasks_update(self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams) -> dict[str, Any]:
        return await self._attached().methods.update(ctx, params)

    async def _tasks_cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> dict[str, Any]:
        return await self._attached().methods.cancel(ctx, params)
