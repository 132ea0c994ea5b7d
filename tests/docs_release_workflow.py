"""The pipeline of docs/workflows.md, in a module of its own: the layout that page teaches."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

from mcp_tasks_temporal.temporal.workflow_api import set_status

with workflow.unsafe.imports_passed_through():
    from tests.docs_release_activities import BuildRequest, build, deploy


@workflow.defn
class ReleaseWorkflow:
    """Build and deploy a release."""

    @workflow.run
    async def run(self, request: BuildRequest) -> str:
        set_status("building")
        artifact = await workflow.execute_activity(
            build,
            request,
            start_to_close_timeout=timedelta(seconds=request.start_to_close_s),
            heartbeat_timeout=timedelta(seconds=request.heartbeat_s) if request.heartbeat_s else None,
        )
        set_status("deploying")
        await workflow.execute_activity(
            deploy, artifact, start_to_close_timeout=timedelta(hours=1), heartbeat_timeout=timedelta(seconds=10)
        )
        return f"{artifact} deployed"
