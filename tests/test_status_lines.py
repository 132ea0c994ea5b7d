"""`set_status` from inside a task's activity reaches the task's status line, on both kinds of task.

A workflow tool's activity signals its workflow (through the worker's
interceptor); a tool task's activity heartbeats its line (the in-process front and
its workers). Either line lost fails within seconds, not at a long bound.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import anyio
import pytest
from temporalio.client import Client
from temporalio.worker import Worker

from mcp_tasks_temporal.temporal.contract import WORKFLOW_KIND, Memo
from mcp_tasks_temporal.temporal.sandbox import workflow_runner
from mcp_tasks_temporal.temporal.task_interceptor import TaskInterceptor
from tests.activity_status_fixture import ACTIVITY_LINE, CopyFiles, copy_files
from tests.wire import TaskCalls

pytestmark = pytest.mark.anyio

WAIT_S = 10


async def test_a_workflow_tools_activity_sets_the_tasks_status_line(temporal_client: Client) -> None:
    queue = f"status-lines-{uuid.uuid4()}"
    worker = Worker(
        temporal_client,
        task_queue=queue,
        workflows=[CopyFiles],
        activities=[copy_files],
        interceptors=[TaskInterceptor(["tests.CopyFiles"], ["copy_files"])],
        workflow_runner=workflow_runner(),
    )
    async with worker:
        handle = await temporal_client.start_workflow(
            CopyFiles.run,
            id=f"status-lines/{uuid.uuid4()}",
            task_queue=queue,
            memo={Memo.KIND: WORKFLOW_KIND, Memo.STATUS: "working"},
        )
        with anyio.fail_after(WAIT_S):
            assert await handle.result() == 3
    # The activity's result is reported only after its lines reached the workflow.
    memo = await (await handle.describe()).memo()
    assert memo.get(Memo.STATUS_MESSAGE) == ACTIVITY_LINE, memo


async def test_a_tool_tasks_status_line_shows_while_it_runs(front_mcp: TaskCalls, gate: Path) -> None:
    created = await front_mcp.start("gated", {"gate": str(gate)})
    try:
        with anyio.fail_after(WAIT_S):
            while not (gate / "started").exists():
                await anyio.sleep(0.05)
        # The tool set its line right after it started: the next heartbeat (at most a second later) carries it.
        seen = await front_mcp.wait_for(
            created["taskId"], lambda task: task.get("statusMessage") == "waiting for the release file", timeout=5
        )
        assert seen["status"] == "working"
    finally:
        (gate / "release").write_text("1")
    done = await front_mcp.wait_for(created["taskId"], timeout=WAIT_S)
    assert done["status"] == "completed", done
