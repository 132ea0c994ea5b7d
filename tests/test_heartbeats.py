"""The worker's own heartbeats for workflow tools' activities, on a real Temporal server."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import Client
from temporalio.worker import Worker

from mcp_tasks_temporal.temporal.heartbeats import MAX_INTERVAL_S, heartbeat_interval
from mcp_tasks_temporal.temporal.sandbox import workflow_runner
from mcp_tasks_temporal.temporal.task_interceptor import TaskInterceptor
from tests.heartbeat_fixture import Checkpointed, checkpointed

pytestmark = pytest.mark.anyio


async def test_the_workers_heartbeats_keep_a_silent_activity_alive_and_its_checkpoint(temporal_client: Client) -> None:
    queue = f"heartbeats-{uuid.uuid4()}"
    worker = Worker(
        temporal_client,
        task_queue=queue,
        workflows=[Checkpointed],
        activities=[checkpointed],
        interceptors=[TaskInterceptor(["Checkpointed"], ["checkpointed"])],
        workflow_runner=workflow_runner(),
    )
    async with worker:
        result = await temporal_client.execute_workflow(Checkpointed.run, id=str(uuid.uuid4()), task_queue=queue)
    # Silent for 2.5 s with a 1 s heartbeat timeout, the first attempt lives because the worker beats for it,
    # and its beats repeat the checkpoint instead of replacing it with nothing.
    assert result == ["attempt 1 finished", "attempt 2 resumed from ['step-3']"]


def test_heartbeat_interval_fits_several_beats_in_the_timeout() -> None:
    from datetime import timedelta

    assert heartbeat_interval(None) == MAX_INTERVAL_S
    assert heartbeat_interval(timedelta(seconds=1)) == 0.25
    assert heartbeat_interval(timedelta(minutes=5)) == MAX_INTERVAL_S
