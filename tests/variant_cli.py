"""The CLI with a changed task workflow installed: what `audit --verify` sees after an incompatible deploy.

`ChangedToolTask` is registered under the real workflow name but runs a
different command sequence (a timer before the tool), as a careless edit of
`ToolTaskWorkflow` without `workflow.patched` would.
"""

from __future__ import annotations

import sys
from datetime import timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from mcp_tasks_temporal.temporal.contract import (
        RUN_TOOL_ACTIVITY,
        TOOL_TASK_WORKFLOW,
        ToolRoundInput,
        ToolTaskInput,
    )
    from mcp_tasks_temporal.temporal.workflows.tool_task import ToolTaskWorkflow


@workflow.defn(name=TOOL_TASK_WORKFLOW)
class ChangedToolTask:
    @workflow.run
    async def run(self, task: ToolTaskInput) -> dict[str, Any]:
        await workflow.sleep(timedelta(seconds=1))
        return await workflow.execute_activity(
            RUN_TOOL_ACTIVITY,
            ToolRoundInput(task_id=task.task_id, tool=task.tool, arguments=task.arguments, meta=task.meta),
            result_type=dict[str, Any],
            start_to_close_timeout=timedelta(seconds=30),
        )


@workflow.defn(name=TOOL_TASK_WORKFLOW)
class RenamedActivityToolTask:
    """Runs the tool under another activity name at once, where the history set its TTL timer first."""

    @workflow.run
    async def run(self, task: ToolTaskInput) -> dict[str, Any]:
        return await workflow.execute_activity(
            "mcp_tasks.run_tool_v2",
            ToolRoundInput(task_id=task.task_id, tool=task.tool, arguments=task.arguments, meta=task.meta),
            result_type=dict[str, Any],
            start_to_close_timeout=timedelta(seconds=30),
        )


@workflow.defn(name=TOOL_TASK_WORKFLOW)
class FailingToolTask:
    """A bug: the code raises before its first command."""

    @workflow.run
    async def run(self, task: ToolTaskInput) -> dict[str, Any]:
        raise RuntimeError(f"no such tool {task.tool!r} in this build")


@workflow.defn(name=TOOL_TASK_WORKFLOW, sandboxed=False)
class UnannouncedToolTask(ToolTaskWorkflow):
    """Joins the task feed when a listen asks, but no longer announces itself there: an edit that dropped the
    announcement where the history sent it."""

    @workflow.run
    async def run(self, task: ToolTaskInput) -> dict[str, Any]:
        return await super().run(task)

    def _start_feed(self, *, deadline: bool, announce: bool | None) -> None:
        super()._start_feed(deadline=deadline, announce=False)


if __name__ == "__main__":
    from mcp_tasks_temporal.ops import cli
    from mcp_tasks_temporal.temporal import worker

    worker.WORKFLOWS = (ChangedToolTask,)
    cli.main(sys.argv[1:])
