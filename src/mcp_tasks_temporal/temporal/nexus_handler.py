"""For the team whose workflow an MCP task tool calls through Nexus: start it so its status comes back.

    import nexusrpc.handler
    from temporalio import nexus
from temporalio.service import RPCError, RPCStatusCode
    from mcp_tasks_temporal.temporal.nexus_handler import start_task_workflow

    @nexusrpc.handler.service_handler(name="reports")
    class Reports:
        @nexus.workflow_run_operation
        async def build_report(self, ctx: nexus.WorkflowRunOperationContext, request: ReportRequest
        ) -> nexus.WorkflowHandle[str]:
            return await start_task_workflow(ctx, ReportWorkflow.run, request, id=f"report-{ctx.request_id}")

and their worker, in their namespace, on the endpoint's task queue:
`Worker(client, task_queue=..., workflows=[ReportWorkflow], nexus_service_handlers=[Reports()])`.
Inside `ReportWorkflow`, `mcp_tasks_temporal.set_status(...)` then shows on the
MCP task. Nothing here needs the MCP front, this server's worker or credentials
in the caller's namespace: only `temporalio` and the sandbox-safe helpers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from temporalio import nexus
from temporalio.service import RPCError, RPCStatusCode

from mcp_tasks_temporal.temporal.nexus_contract import ROUTE_SIGNAL, reply_memo, reply_route

__all__ = ["start_task_workflow"]

_Result = TypeVar("_Result")


async def start_task_workflow(
    ctx: nexus.WorkflowRunOperationContext,
    run: Callable[[Any, Any], Awaitable[_Result]],
    arg: Any,
    *,
    id: str,
    memo: Mapping[str, Any] | None = None,
    **options: Any,
) -> nexus.WorkflowHandle[_Result]:
    """`ctx.start_workflow(run, arg, id=id, ...)`, plus where the workflow's `set_status` reports.

    The calling task sends its reply endpoint, workflow ID and a nonce as headers
    of the operation's start. They reach the workflow as the input of a signal sent
    right after its start (history only, under this worker's codec); the memo says
    no more than that it reports, and through which endpoint. A caller that sent
    none (any other Nexus client) starts the workflow exactly as `ctx.start_workflow`
    would. `options` are `start_workflow`'s (`task_queue`, timeouts, ...).
    """
    route = reply_route(dict(ctx.headers))
    if route is None:
        return await ctx.start_workflow(run, arg, id=id, memo=memo, **options)
    merged = {**(memo or {}), **reply_memo(route)}
    handle = await ctx.start_workflow(run, arg, id=id, memo=merged, **options)
    # Not signal-with-start: that cannot carry the callback that completes the operation. A retry of this
    # start finds the same run and signals it again; the workflow keeps the first route.
    try:
        await nexus.client().get_workflow_handle(handle.workflow_id).signal(ROUTE_SIGNAL, route)
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        # Already finished: it has nothing more to report.
    return handle
