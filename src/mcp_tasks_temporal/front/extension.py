"""`TasksExtension`: the MCP Tasks extension (SEP-2663) for an `MCPServer`, backed by Temporal.

    tasks = TasksExtension()
    mcp = MCPServer("builds", extensions=[tasks])

    @tasks.tool(policy="optional")   # the one line that makes a tool task-capable
    @mcp.tool()
    async def build(ref: str) -> str: ...

The app's one object, made of parts that each run on one side. What the app
declares is a `TaskToolRegistry` (`temporal/tool_registry.py`), which fronts and
workers both read. On a front server, once attached (`front/attachment.py`), the
extension answers `tools/call` for such a tool with a `CreateTaskResult` when the
request declared the extension (`front/tool_calls.py`) and serves `tasks/get`,
`tasks/update` and `tasks/cancel` (`front/task_methods.py`); it keeps no task
state of its own. On a worker the same app runs the tool inside an activity,
where the extension steps aside (`temporal/tool_execution.py`). The front's parts
are imported when first used, so a worker that loads the app loads none of them.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp_types import CallToolRequestParams, CallToolResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_tasks_temporal.front.session_binding import SessionKeys
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

    from mcp_tasks_temporal.front.attachment import AttachedFront
    from mcp_tasks_temporal.front.calls.tool_calls import ToolCalls
    from mcp_tasks_temporal.front.gateway import TemporalTaskGateway

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

DEFAULT_PUSH_GIVE_UP_S = 300.0


@dataclass
class TasksExtension(TaskToolRegistry, Extension):
    """Serves SEP-2663 tasks for the tools it is told about, with Temporal as the store."""

    identifier = EXTENSION_ID

    require_mcp_name: bool = False
    """Reject `tasks/*` over HTTP without an `Mcp-Name` header (-32020). Off by default because
    FastMCP's and pydantic-ai's task clients send none; a header that names another task is always refused."""
    nexus_reply_endpoint: str | None = None
    """Nexus endpoint targeting this app's namespace and task queue, through which handler workflows of
    `nexus_tool`s report status (`--nexus-reply-endpoint`); `None`: their status does not cross."""
    session_keys: SessionKeys = field(default_factory=SessionKeys.process_local)
    """What tags handshake session IDs and binds anonymous tasks to them (`session_binding`); fronts
    sharing `--request-state-key` share these too."""
    push_give_up_s: float = DEFAULT_PUSH_GIVE_UP_S
    """How long a front retries a task's history before ending its listeners' streams
    (`MCP_TASKS_PUSH_GIVE_UP_S` for `serve` and `dev`, docs/operations.md)."""
    _front: AttachedFront | None = field(default=None, init=False)
    _calls: ToolCalls | None = field(default=None, init=False)

    def nexus_reply_to(self) -> str | None:
        return self.nexus_reply_endpoint

    # -- wiring ------------------------------------------------------------------

    def attach(self, gateway: TemporalTaskGateway, server: MCPServer[Any]) -> None:
        """Connect the extension to Temporal and to its app; done by `serve`/`dev` before requests are accepted.

        The SDK never hands an extension its server, and answering `Resolve(...)`
        questions before the task exists needs the app's tool registry. Attaching
        also installs the `subscriptions/listen` middleware that pushes task changes;
        its watchers run while the server is inside `running()`.
        """
        from mcp_tasks_temporal.front.attachment import attach_front

        if self._front is not None:
            raise RuntimeError("TasksExtension is already attached")
        self.seal()
        self._front, self._calls = attach_front(self, gateway, server, push_give_up_s=self.push_give_up_s)

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[None]:
        """Run the push watchers of an attached front server; leaving stops them.

        Whoever serves the app enters it around the transport (`serve` and `dev` do, in the
        Starlette lifespan and around stdio), so a stopping server stops its watchers.
        """
        if self._front is None:
            raise RuntimeError("attach the extension before running it")
        async with self._front.hub.running():
            yield

    @property
    def gateway(self) -> TemporalTaskGateway:
        if self._front is None:
            raise RuntimeError(
                "TasksExtension is not attached to Temporal; run the app with `mcp-tasks-temporal serve` "
                "or `dev`, or call extension.attach(TemporalTaskGateway(client, task_queue=...), app)"
            )
        return self._front.gateway

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

    async def create_task(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], envelope: dict[str, Any]
    ) -> dict[str, Any] | CallToolResult | None:
        """Start the task of a task tool's call, whatever the request's revision declared.

        Returns the created task's fields, the tool error a call with bad arguments
        gets, or `None` when `params` names no tool that may run as a task.
        `envelope` is the `_meta` the tool will see (its client and capabilities).
        """
        return await self._tool_calls().create_task(params, ctx, envelope)

    def _tool_calls(self) -> ToolCalls:
        if self._calls is None:
            # Not attached: plain calls are served, a task cannot start (`gateway` says why).
            from mcp_tasks_temporal.front.calls.tool_calls import ToolCalls

            self._calls = ToolCalls(self, None)
        return self._calls

    # -- tasks/* ------------------------------------------------------------------

    async def _tasks_get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> dict[str, Any]:
        from mcp_tasks_temporal.front.task_methods import get_task

        return await get_task(self, ctx, params)

    async def _tasks_update(self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams) -> dict[str, Any]:
        from mcp_tasks_temporal.front.task_methods import update_task

        return await update_task(self, ctx, params)

    async def _tasks_cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> dict[str, Any]:
        from mcp_tasks_temporal.front.task_methods import cancel_task

        return await cancel_task(self, ctx, params)
