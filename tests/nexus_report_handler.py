"""The other team's side of a Nexus tool, reduced to what a test steers: a workflow that sets the statuses it
is given and then waits for `finish` (or a cancel), behind an operation that starts it for the MCP task."""

from __future__ import annotations

from typing import Any

import nexusrpc.handler
from temporalio import nexus, workflow

from mcp_tasks_temporal.temporal.nexus_handler import start_task_workflow
from mcp_tasks_temporal.temporal.workflow_api import set_status

SERVICE = "test-reports"
OPERATION = "report"
FINISH_SIGNAL = "finish"


@workflow.defn(name="tests.ReportingHandler")
class ReportingHandler:
    def __init__(self) -> None:
        self._finished = False

    @workflow.run
    async def run(self, request: dict[str, Any]) -> str:
        for text in request.get("statuses", []):
            set_status(str(text))
        await workflow.wait_condition(lambda: self._finished)
        return "finished"

    @workflow.signal(name=FINISH_SIGNAL)
    def finish(self) -> None:
        self._finished = True


@nexusrpc.handler.service_handler(name=SERVICE)
class ReportingService:
    @nexus.workflow_run_operation(name=OPERATION)
    async def report(
        self, ctx: nexus.WorkflowRunOperationContext, request: dict[str, Any]
    ) -> nexus.WorkflowHandle[str]:
        return await start_task_workflow(ctx, ReportingHandler.run, request, id=str(request["handler_id"]))
