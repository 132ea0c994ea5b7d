"""A task whose run has its outcome but has not closed yet reads as working, never as completed without its result.

A tool task records `completed` in its memo in the workflow task that ends the tool, and a feed task's run then
stays open until its transitions are delivered to its shard: on a loaded machine, for seconds. Only the close
makes the result readable, so a `tasks/get` meanwhile must not answer `completed` with an empty result (which a
client would take as the tool's answer, and stop polling). The run is held in that state here by starting it
with that memo on a queue no worker polls: what `describe` shows is what a front sees in the real window.
"""

from __future__ import annotations

import time
import uuid

import pytest
from temporalio.client import Client

from mcp_tasks_temporal.front.gateway import TemporalTaskGateway
from mcp_tasks_temporal.front.gateway.views import initial_memo
from mcp_tasks_temporal.temporal.contract import TOOL_TASK_WORKFLOW, Memo
from mcp_tasks_temporal.temporal.ids import UNKEYED, new_task_id

pytestmark = pytest.mark.anyio


async def test_an_open_run_whose_memo_says_completed_reads_as_working_without_a_result(
    temporal_client: Client,
) -> None:
    task_queue = f"finishing-{uuid.uuid4()}"
    task_id = new_task_id()
    created_at_ms = int(time.time() * 1000)
    memo = initial_memo(task_id, "pick_variant", UNKEYED.owner_key(None), created_at_ms, 60_000, 500, anonymous=True)
    memo |= {Memo.STATUS: "completed", Memo.STATUS_MESSAGE: "round 2 of 2", Memo.LAST_UPDATED_AT: created_at_ms + 5}
    handle = await temporal_client.start_workflow(
        TOOL_TASK_WORKFLOW, id=UNKEYED.workflow_id(task_id, None), task_queue=task_queue, memo=memo
    )
    try:
        task = await TemporalTaskGateway(temporal_client, task_queue=task_queue).get(task_id, None)
        assert task["status"] == "working"
        assert "result" not in task
        assert task["statusMessage"] == "round 2 of 2"
    finally:
        await handle.terminate()
