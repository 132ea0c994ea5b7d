"""A task's feed outbox sends every transition, those queued while a signal was in flight included.

One signal to the shard is in flight at a time, so transitions posted meanwhile wait in the outbox and go in
the next signal, as one batch. A stand-in workflow (`tests.feed_poster`) drives the real outbox on the
session's dev server, with its shard running beside it; what it sent is read from its own history.
"""

from __future__ import annotations

import uuid

import anyio
import pytest
from temporalio.client import Client
from temporalio.worker import Worker

from mcp_tasks_temporal.temporal.sandbox import workflow_runner
from mcp_tasks_temporal.temporal.workflows.task_feed import TaskFeedWorkflow
from tests.app_workers import new_task_queue
from tests.feed_poster import FeedPoster
from tests.histories.record import published_items, start_feed

pytestmark = pytest.mark.anyio

WAIT_S = 10


async def test_transitions_posted_while_a_signal_is_in_flight_are_sent_in_order(temporal_client: Client) -> None:
    queue = new_task_queue("feed-poster")
    await start_feed(temporal_client, queue)
    statuses = ["working", "input_required", "working", "completed"]
    async with Worker(
        temporal_client, task_queue=queue, workflows=[FeedPoster, TaskFeedWorkflow], workflow_runner=workflow_runner()
    ):
        with anyio.fail_after(WAIT_S):
            handle = await temporal_client.start_workflow(
                FeedPoster.run, statuses, id=f"feed-poster/{uuid.uuid4()}", task_queue=queue
            )
            assert await handle.result() == len(statuses)
    sent = await published_items(temporal_client, handle)
    assert [(item["s"], item["m"]["status"]) for item in sent] == list(enumerate(statuses, start=1))
