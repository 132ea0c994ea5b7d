"""Feed shards live while something uses them: with no front following them and no task open on them they end,
and once the fronts and workers have stopped nothing of the app is left running in the namespace."""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta

import anyio
import httpx
import pytest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.contrib.workflow_streams import PublishEntry, PublishInput

from mcp_tasks_temporal.temporal.contract import Memo
from mcp_tasks_temporal.temporal.feed_contract import (
    FEED_SHARDS,
    STREAM_PUBLISH_SIGNAL,
    TASK_FEED_WORKFLOW,
    TRANSITION_TOPIC,
    TaskFeedInput,
    feed_workflow_id,
    transition_item,
)
from mcp_tasks_temporal.temporal.ids import UNKEYED
from mcp_tasks_temporal.temporal.shared_settings import settings_queue
from tests.conftest import Stack
from tests.wire import HttpMcp, TaskCalls

pytestmark = pytest.mark.anyio

TICK_S = 1.0
MAX_RUN_S = 4.0
RUN_TIMEOUT = timedelta(seconds=12)
ENDED_WITHIN_S = 90
"""Two ticks once nothing follows a shard; a loaded machine may take far longer to run their workflow tasks."""


@asynccontextmanager
async def short_ticking_shards(client: Client, task_queue: str) -> AsyncGenerator[None]:
    """The shards first, ticking every second, as a front would start them (which then finds them running).

    Each is started with a task of the test's own open on it, which it keeps while the block runs and closes
    at its end: with nothing on them, they would end at their first tick, before the front follows them, and
    the front would start them anew with the default tick.
    """
    keeper = f"tests/keep-open/{uuid.uuid4()}"
    for shard in range(FEED_SHARDS):
        await client.start_workflow(
            TASK_FEED_WORKFLOW,
            TaskFeedInput(shard=shard, tick_s=TICK_S, max_run_s=MAX_RUN_S),
            id=feed_workflow_id(task_queue, shard),
            task_queue=task_queue,
            run_timeout=RUN_TIMEOUT,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            start_signal=STREAM_PUBLISH_SIGNAL,
            start_signal_args=[transition(client, keeper, 0, "working")],
        )
    yield
    for shard in range(FEED_SHARDS):
        handle = client.get_workflow_handle(feed_workflow_id(task_queue, shard))
        await handle.signal(STREAM_PUBLISH_SIGNAL, transition(client, keeper, 1, "completed"))


def transition(client: Client, key: str, seq: int, status: str) -> PublishInput:
    """One transition of a task as the task workflow publishes it to its shard."""
    item = transition_item(key, seq, {Memo.STATUS: status, Memo.FEED_SEQ: seq}, deadline=None)
    payload = client.data_converter.payload_converter.to_payloads([item])[0]
    return PublishInput(
        items=[PublishEntry(topic=TRANSITION_TOPIC, data=base64.b64encode(payload.SerializeToString()).decode())]
    )


async def shard_statuses(client: Client, task_queue: str) -> list[WorkflowExecutionStatus | None]:
    return [
        (await client.get_workflow_handle(feed_workflow_id(task_queue, shard)).describe()).status
        for shard in range(FEED_SHARDS)
    ]


async def shard_runs(client: Client, task_queue: str) -> list[str]:
    return [
        (await client.get_workflow_handle(feed_workflow_id(task_queue, shard)).describe()).run_id
        for shard in range(FEED_SHARDS)
    ]


async def until_shards(
    client: Client, task_queue: str, done: Callable[[WorkflowExecutionStatus | None], bool]
) -> list[WorkflowExecutionStatus | None]:
    with anyio.fail_after(ENDED_WITHIN_S):
        while not all(map(done, statuses := await shard_statuses(client, task_queue))):
            await anyio.sleep(0.5)
    return statuses


async def a_task_through_the_feed(url: str, http: httpx.AsyncClient, client: Client) -> None:
    """A task the front starts in feed mode runs to its end, its transitions published to its shard."""
    mcp = TaskCalls(HttpMcp(url, http))
    task_id = (await mcp.start("double", {"x": 3}))["taskId"]
    assert (await mcp.wait_for(task_id))["status"] == "completed"
    memo = await (await client.get_workflow_handle(UNKEYED.workflow_id(task_id, None)).describe()).memo()
    assert isinstance(memo.get(Memo.FEED_SEQ), int), "the task published every transition to its shard"


async def test_shards_end_once_no_front_follows_them_and_a_front_starts_them_again(
    stack_factory: Callable[[], Stack],
    monkeypatch: pytest.MonkeyPatch,
    temporal_client: Client,
    http: httpx.AsyncClient,
) -> None:
    monkeypatch.setenv("MCP_TASKS_PUSH", "feed")
    stack = stack_factory()
    stack.add_worker()
    async with short_ticking_shards(temporal_client, stack.task_queue):
        url = stack.add_front()
        await a_task_through_the_feed(url, http, temporal_client)
    first_runs = await shard_runs(temporal_client, stack.task_queue)
    # Followed, the shards outlive several ticks and continue as new (a run lasts `MAX_RUN_S` at most).
    with anyio.fail_after(ENDED_WITHIN_S):
        while any(a == b for a, b in zip(first_runs, await shard_runs(temporal_client, stack.task_queue), strict=True)):
            await anyio.sleep(0.5)
    assert await shard_statuses(temporal_client, stack.task_queue) == [WorkflowExecutionStatus.RUNNING] * FEED_SHARDS

    # A front killed while its polls wait on every shard: the shards end by themselves, the worker still running.
    stack.fronts[0][0].kill()
    statuses = await until_shards(temporal_client, stack.task_queue, lambda s: s != WorkflowExecutionStatus.RUNNING)
    assert statuses == [WorkflowExecutionStatus.COMPLETED] * FEED_SHARDS

    # The next front starts them again, and its tasks publish to them as before.
    url = stack.add_front()
    await until_shards(temporal_client, stack.task_queue, lambda s: s == WorkflowExecutionStatus.RUNNING)
    await a_task_through_the_feed(url, http, temporal_client)


async def test_nothing_is_left_running_once_the_fronts_and_workers_stop(
    stack_factory: Callable[[], Stack],
    monkeypatch: pytest.MonkeyPatch,
    temporal_client: Client,
    http: httpx.AsyncClient,
) -> None:
    monkeypatch.setenv("MCP_TASKS_PUSH", "feed")
    stack = stack_factory()
    stack.add_worker()
    async with short_ticking_shards(temporal_client, stack.task_queue):
        url = stack.add_front()
        await a_task_through_the_feed(url, http, temporal_client)

    stack.stop()  # fronts and workers at once: no worker is left to end the shards
    running = f"TaskQueue = '{stack.task_queue}' AND ExecutionStatus = 'Running'"
    left: list[str] = []
    with anyio.move_on_after(ENDED_WITHIN_S):
        while left := [f"{w.id} {w.run_id} {w.workflow_type}" async for w in temporal_client.list_workflows(running)]:
            await anyio.sleep(1)
    assert not left, left
    # Their run timeout closed them; and no workflow ever ran where the processes held out their settings.
    assert set(await shard_statuses(temporal_client, stack.task_queue)) <= {
        WorkflowExecutionStatus.COMPLETED,
        WorkflowExecutionStatus.TIMED_OUT,
    }
    assert not [w async for w in temporal_client.list_workflows(f"TaskQueue = '{settings_queue(stack.task_queue)}'")]
