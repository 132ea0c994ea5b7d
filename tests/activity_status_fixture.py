"""A workflow tool whose activity, not its workflow, sets the task's status line."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow

from mcp_tasks_temporal.temporal.task_context import set_status

ACTIVITY_LINE = "copied 3 of 3 files"


@activity.defn
async def copy_files() -> int:
    set_status("copying")
    set_status(ACTIVITY_LINE)
    return 3


@workflow.defn(name="tests.CopyFiles")
class CopyFiles:
    @workflow.run
    async def run(self) -> int:
        return await workflow.execute_activity(
            copy_files, start_to_close_timeout=timedelta(minutes=1), heartbeat_timeout=timedelta(seconds=10)
        )
