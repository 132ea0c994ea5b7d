"""The other team's side of the Nexus demo: their service, and a worker for it in their namespace.

    python -m mcp_tasks_temporal.demo.nexus_team --namespace reports-team --task-queue reports

The worker needs a client of its own namespace only: no MCP front, no worker of
the MCP server, no credentials in the MCP server's namespace. The MCP side
reaches it through a Nexus endpoint that targets this namespace and queue
(`dev --nexus-endpoint team-reports=reports-team/reports`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys

import nexusrpc.handler
from temporalio import nexus
from temporalio.client import Client
from temporalio.worker import Worker

from mcp_tasks_temporal.demo.report_workflow import BuildReportWorkflow, ReportRequest
from mcp_tasks_temporal.ops.settings import variable
from mcp_tasks_temporal.temporal.nexus_handler import start_task_workflow

REPORTS_SERVICE = "reports"


@nexusrpc.handler.service_handler(name=REPORTS_SERVICE)
class ReportsService:
    @nexus.workflow_run_operation(name="build_report")
    async def build_report(
        self, ctx: nexus.WorkflowRunOperationContext, request: ReportRequest
    ) -> nexus.WorkflowHandle[str]:
        # The request ID is the same on every retry of this start, so a retry finds the run it started.
        return await start_task_workflow(ctx, BuildReportWorkflow.run, request, id=f"report-{ctx.request_id}")


async def run_worker(address: str, namespace: str, task_queue: str) -> None:
    try:
        client = await Client.connect(address, namespace=namespace)
    except Exception as err:  # the SDK's word for an unreachable or refusing server
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise SystemExit(f"reports team worker: cannot connect to Temporal at {address}: {reason}") from None
    worker = Worker(
        client, task_queue=task_queue, workflows=[BuildReportWorkflow], nexus_service_handlers=[ReportsService()]
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with worker:
        print(f"reports team worker: namespace {namespace}, task queue {task_queue}", flush=True)
        await stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--temporal",
        default=variable("TEMPORAL_ADDRESS") or "127.0.0.1:7233",
        help="Temporal frontend address (default: $TEMPORAL_ADDRESS, else 127.0.0.1:7233)",
    )
    parser.add_argument("--namespace", default="reports-team")
    parser.add_argument("--task-queue", default="reports")
    args = parser.parse_args()
    try:
        asyncio.run(run_worker(args.temporal, args.namespace, args.task_queue))
    except SystemExit as refused:
        # After a failed connect the SDK's Rust threads can take the GIL in interpreter teardown and abort
        # (temporalio/sdk-python#300, as in `mcp-tasks`' one-shot commands): say why and skip the teardown.
        print(refused, file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(2)


if __name__ == "__main__":
    main()
