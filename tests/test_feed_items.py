"""What a tool task publishes to the task feed is each state as it was, even when answers arrive together.

Two answers delivered in one workflow task make two transitions in one go: `input_required` with the one
question left, then `working`. The feed sends its items after the workflow task, so an item that shared a
dict with the task's state would be sent as the state became later: `input_required` with no question,
a state the spec forbids. The worker is stopped while both answers arrive, so they land in one workflow task.
"""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import pytest
from temporalio import activity
from temporalio.client import Client
from temporalio.worker import Worker

from mcp_tasks_temporal.temporal.contract import (
    INPUT_SIGNAL,
    RUN_TOOL_ACTIVITY,
    Memo,
    ToolRoundInput,
)
from mcp_tasks_temporal.temporal.sandbox import workflow_runner
from mcp_tasks_temporal.temporal.worker import WORKFLOWS
from mcp_tasks_temporal.temporal.workflows.task_feed import TaskFeedWorkflow
from tests.histories.record import ACCEPT, QUESTION, memo_status, published_items, start_task

pytestmark = pytest.mark.anyio

BOUND_S = 30


@activity.defn(name=RUN_TOOL_ACTIVITY)
async def two_questions(call: ToolRoundInput) -> dict[str, Any]:
    if call.round == 0:
        return {"resultType": "input_required", "inputRequests": {"left": QUESTION, "right": QUESTION}}
    return {"resultType": "complete", "content": [{"type": "text", "text": "done"}], "isError": False}


def worker(client: Client, task_queue: str) -> Worker:
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[*WORKFLOWS, TaskFeedWorkflow],
        activities=[two_questions],
        workflow_runner=workflow_runner(),
        # Nothing cached, so nothing sticky: the stopped worker's sticky queue would hold the next workflow task
        # until Temporal gave up on it, and on a loaded machine that wait ran past the bound.
        max_cached_workflows=0,
    )


async def test_two_answers_in_one_workflow_task_publish_the_question_left_then_working(
    temporal_client: Client,
) -> None:
    task_queue = f"feed-items-{uuid.uuid4()}"
    handle = await start_task(
        temporal_client, task_queue, "two_questions", id_prefix="feed-items", feed=True, joined=True
    )
    async with worker(temporal_client, task_queue):
        asking = await memo_status(handle, "input_required", BOUND_S)  # both questions come in one transition
    keys = sorted(asking[Memo.INPUT_REQUESTS])
    for key in keys:  # no worker polls meanwhile: both land in the next workflow task
        await handle.signal(INPUT_SIGNAL, {key: ACCEPT})
    async with worker(temporal_client, task_queue):
        with anyio.fail_after(BOUND_S):
            await handle.result()

    states = [
        (item["m"][Memo.STATUS], sorted(item["m"].get(Memo.INPUT_REQUESTS) or {}))
        for item in await published_items(temporal_client, handle)
    ]
    assert (
        states
        == [
            ("working", []),  # the start announcement
            ("input_required", keys),
            ("input_required", keys[1:]),
            ("working", []),
            ("completed", []),
        ]
    )
