"""For the team whose workflow an MCP task tool calls through Nexus: start it so its status comes back.

    import nexusrpc.handler
    from temporalio import nexus
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

from mcp_tasks_temporal.temporal.nexus_contract import reply_memo

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
    of the operation's start; they go to the workflow's memo. A caller that sent
    none (any other Nexus client) starts the workflow exactly as `ctx.start_workflow`
    would. `options` are `start_workflow`'s (`task_queue`, timeouts, ...).
    """
    reply = reply_memo(dict(ctx.headers))
    merged = {**(memo or {}), **reply} or None
    return await ctx.start_workflow(run, arg, id=id, memo=merged, **options)
