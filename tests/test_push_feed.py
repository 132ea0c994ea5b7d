"""Push through the task feed (`MCP_TASKS_PUSH=feed`): every transition of every watched task, in order,
from a few long polls per front, across a front restart and the feed's continue-as-new.

The fronts and workers run in the test process (a front restart is one front closed and another
opened); a Temporal that goes away is a dev server of the test's own, killed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.service import RetryConfig

from mcp_tasks_temporal.front.gateway import TemporalTaskGateway
from mcp_tasks_temporal.front.push.feed_watch import FeedWatchHub
from mcp_tasks_temporal.temporal.contract import Memo
from mcp_tasks_temporal.temporal.feed_contract import (
    FEED_SHARDS,
    STREAM_PUBLISH_SIGNAL,
    TASK_FEED_WORKFLOW,
    TaskFeedInput,
    feed_shard,
    feed_workflow_id,
)
from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.app_workers import app_worker, new_task_queue
from tests.conftest import OpenApp, OpenFront
from tests.front_app import FIXTURE_APP, InProcessFront, fresh_app, in_process_front
from tests.processes import Process, start_temporal
from tests.test_push import ELICIT, listen_message
from tests.tool_tasks import tool_task
from tests.wire import TaskCalls, base_headers, envelope, sse_frames

pytestmark = pytest.mark.anyio

TASKS = 50
COLOR = {"action": "accept", "content": {"color": "red"}}
SIZE = {"action": "accept", "content": {"size": "XL"}}
EVERY_TRANSITION = [("input_required", 2), ("input_required", 1), ("working", 0), ("completed", 0)]
"""What a subscriber of a `pick_variant` task answered one question at a time sees, collapsed."""


def test_the_feed_signal_is_the_stream_libraries_publish_signal() -> None:
    from temporalio.contrib.workflow_streams import _stream  # pyright: ignore[reportPrivateUsage]

    assert STREAM_PUBLISH_SIGNAL == _stream._PUBLISH_SIGNAL  # pyright: ignore[reportPrivateUsage]


def test_a_tasks_shard_is_the_same_in_every_process() -> None:
    assert feed_shard("mcp-task/anonymous/00000000-0000-4000-8000-000000000000") == 6
    shards = {feed_shard(f"mcp-task/anonymous/{n}") for n in range(200)}
    assert shards == set(range(FEED_SHARDS))


class Listener:
    """One listen stream read in the background: each task's notifications, in arrival order."""

    def __init__(self) -> None:
        self.seen: dict[str, list[dict[str, Any]]] = {}
        self.acked = anyio.Event()
        self._changed = anyio.Event()

    async def run(self, url: str, http: httpx.AsyncClient, task_ids: list[str]) -> None:
        message = listen_message(task_ids)
        headers = base_headers("subscriptions/listen")
        async with http.stream(
            "POST", url, json=message, headers=headers, timeout=httpx.Timeout(10, read=None)
        ) as response:
            assert response.status_code == 200, await response.aread()
            async for frame in sse_frames(response):
                if frame.get("method") == "notifications/subscriptions/acknowledged":
                    assert sorted(frame["params"]["notifications"]["taskIds"]) == sorted(task_ids)
                    self.acked.set()
                elif frame.get("method") == "notifications/tasks":
                    self.seen.setdefault(frame["params"]["taskId"], []).append(frame["params"])
                else:
                    assert "error" not in frame, frame
                self._changed.set()
                self._changed = anyio.Event()

    def statuses(self, task_id: str) -> list[tuple[str, int]]:
        collapsed: list[tuple[str, int]] = []
        for note in self.seen.get(task_id, []):
            state = (note["status"], len(note.get("inputRequests") or {}))
            if not collapsed or collapsed[-1] != state:
                collapsed.append(state)
        return collapsed

    async def until(self, done: Callable[[], bool], timeout: float = 60) -> None:
        with anyio.fail_after(timeout):
            while not done():
                await self._changed.wait()


async def park(mcp: TaskCalls, count: int) -> list[str]:
    """`count` pick_variant tasks, each waiting for both its answers."""
    ids: list[str] = []
    limiter = anyio.CapacityLimiter(8)

    async def one() -> None:
        async with limiter:
            created = await mcp.start("pick_variant", capabilities=ELICIT)
            await mcp.wait_for(created["taskId"], lambda t: len(t.get("inputRequests") or {}) == 2, timeout=60)
            ids.append(created["taskId"])

    async with anyio.create_task_group() as group:
        for _ in range(count):
            group.start_soon(one)
    return ids


async def answer_all(mcp: TaskCalls, task_ids: list[str]) -> None:
    """Both questions of each task, one update right after the other: two transitions close together."""
    limiter = anyio.CapacityLimiter(8)

    async def one(task_id: str) -> None:
        async with limiter:
            keys = sorted((await mcp.get(task_id)).result["inputRequests"], key=lambda k: "size" in k)
            await mcp.update(task_id, {keys[0]: COLOR})
            await mcp.update(task_id, {keys[1]: SIZE})

    async with anyio.create_task_group() as group:
        for task_id in task_ids:
            group.start_soon(one, task_id)


async def start_shards(client: Client, queue: str, *, continue_after: int) -> list[str]:
    """The feed's shards of `queue`, started before any front does, to continue as new early; their first runs."""
    first_runs: list[str] = []
    for shard in range(FEED_SHARDS):
        handle = await client.start_workflow(
            TASK_FEED_WORKFLOW,
            TaskFeedInput(shard=shard, continue_after_events=continue_after),
            id=feed_workflow_id(queue, shard),
            task_queue=queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        first_runs.append(handle.result_run_id or "")
    return first_runs


async def feed_front(open_app: OpenApp, client: Client, *, continue_after: int) -> tuple[InProcessFront, list[str]]:
    """The fixture app's workers and a front that follows the feed, on a queue of their own (`start_shards`)."""
    queue = new_task_queue("feed")
    first_runs = await start_shards(client, queue, continue_after=continue_after)
    return await open_app(FIXTURE_APP, task_queue=queue, push="feed"), first_runs


async def test_every_transition_of_every_task_arrives_in_order_from_the_feed(
    open_app: OpenApp, temporal_client: Client
) -> None:
    front, _ = await feed_front(open_app, temporal_client, continue_after=10_000)
    async with front.http() as http:
        await _every_transition_in_order(front, http, temporal_client)


async def _every_transition_in_order(front: InProcessFront, http: httpx.AsyncClient, temporal_client: Client) -> None:
    mcp = front.calls(http)
    ids = await park(mcp, TASKS)
    memo = (await temporal_client.get_workflow_handle(UNKEYED.workflow_id(ids[0], None)).describe()).memo
    assert isinstance((await memo())[Memo.FEED_SEQ], int), "a task a feed-mode front starts publishes to the feed"
    listener = Listener()
    async with anyio.create_task_group() as group:
        group.start_soon(listener.run, front.url, http, ids)
        await listener.until(lambda: len(listener.seen) == TASKS)
        await answer_all(mcp, ids)
        await listener.until(lambda: all(listener.statuses(t)[-1:] == [("completed", 0)] for t in ids))
        group.cancel_scope.cancel()
    assert {t: listener.statuses(t) for t in ids} == dict.fromkeys(ids, EVERY_TRANSITION)
    published = 0
    for shard in range(FEED_SHARDS):
        published += await WorkflowStreamClient.create(
            temporal_client, feed_workflow_id(front.gateway.task_queue, shard)
        ).get_offset()
    assert published >= 4 * TASKS, "each task's transitions went through the feed"


async def test_a_subscriber_loses_nothing_across_a_front_restart_and_the_feeds_continue_as_new(
    app_client: Client, temporal_client: Client
) -> None:
    queue = new_task_queue("feed-restart")
    first_runs = await start_shards(temporal_client, queue, continue_after=40)
    async with app_worker(app_client, fresh_app(FIXTURE_APP), task_queue=queue):
        async with in_process_front(fresh_app(FIXTURE_APP), app_client, task_queue=queue, push="feed") as front:
            async with front.http() as http:
                ids, before, after = await _half_answered_under_a_first_front(front, http)
        # The first front is gone; a new one serves the same tasks.
        async with (
            in_process_front(fresh_app(FIXTURE_APP), app_client, task_queue=queue, push="feed") as front,
            front.http() as http,
        ):
            await _the_rest_under_a_second_front(front, http, ids, before, after)
    continued = 0
    for shard, first_run in enumerate(first_runs):
        current = await temporal_client.get_workflow_handle(feed_workflow_id(queue, shard)).describe()
        continued += current.run_id != first_run
    assert continued >= FEED_SHARDS // 2, "the shards continued as new while the tasks changed"


async def _half_answered_under_a_first_front(
    front: InProcessFront, http: httpx.AsyncClient
) -> tuple[list[str], list[str], list[str]]:
    mcp = front.calls(http)
    ids = await park(mcp, TASKS)
    before, after = ids[: TASKS // 2], ids[TASKS // 2 :]
    first = Listener()
    async with anyio.create_task_group() as group:
        group.start_soon(first.run, front.url, http, ids)
        await first.until(lambda: len(first.seen) == TASKS)
        await answer_all(mcp, before)
        await first.until(lambda: all(first.statuses(t)[-1:] == [("completed", 0)] for t in before))
        group.cancel_scope.cancel()
    assert {t: first.statuses(t) for t in before} == dict.fromkeys(before, EVERY_TRANSITION)
    assert {t: first.statuses(t) for t in after} == dict.fromkeys(after, EVERY_TRANSITION[:1])
    return ids, before, after


async def _the_rest_under_a_second_front(
    front: InProcessFront, http: httpx.AsyncClient, ids: list[str], before: list[str], after: list[str]
) -> None:
    mcp = front.calls(http)
    second = Listener()
    async with anyio.create_task_group() as group:
        group.start_soon(second.run, front.url, http, ids)
        await second.until(lambda: len(second.seen) == TASKS)
        await answer_all(mcp, after)
        await second.until(lambda: all(second.statuses(t)[-1:] == [("completed", 0)] for t in ids))
        group.cancel_scope.cancel()
    # A reconnecting subscriber gets each task as it is now, then every change from there.
    assert {t: second.statuses(t) for t in before} == {t: [("completed", 0)] for t in before}
    assert {t: second.statuses(t) for t in after} == dict.fromkeys(after, EVERY_TRANSITION)


async def test_status_lines_reach_a_feed_subscriber_from_the_worker(open_app: OpenApp, temporal_client: Client) -> None:
    front, _ = await feed_front(open_app, temporal_client, continue_after=10_000)
    async with front.http() as http:
        await _status_lines_from_the_worker(front, http)


async def _status_lines_from_the_worker(front: InProcessFront, http: httpx.AsyncClient) -> None:
    mcp = front.calls(http)
    # Six lines 0.3 s apart: several heartbeats' worth (a second each), under two seconds in all.
    created = await mcp.start("numbered_steps", {"steps": 6, "pause": 0.3}, capabilities=ELICIT)
    task_id = created["taskId"]
    waiting = await mcp.wait_for(task_id, ["input_required"])
    listener = Listener()
    async with anyio.create_task_group() as group:
        group.start_soon(listener.run, front.url, http, [task_id])
        await listener.until(lambda: bool(listener.seen))
        [key] = waiting["inputRequests"]
        await mcp.update(task_id, {key: {"action": "accept", "content": {"approve": True}}})
        await listener.until(lambda: listener.statuses(task_id)[-1:] == [("completed", 0)])
        group.cancel_scope.cancel()
    # The listen began while the task waited, so every step it shows came on the feed, pushed by the worker.
    steps = [
        int(note["statusMessage"].removeprefix("step "))
        for note in listener.seen[task_id]
        if note["status"] == "working" and (note.get("statusMessage") or "").startswith("step ")
    ]
    assert steps, "no status line reached the subscriber"
    assert steps == sorted(steps) and max(steps) >= 1, steps


async def test_a_feed_front_follows_a_task_a_poll_front_created_through_its_history(
    open_app: OpenApp, open_front: OpenFront, temporal_client: Client
) -> None:
    poll_front = await open_app(FIXTURE_APP, push="poll")
    feed_front = await open_front(task_queue=poll_front.gateway.task_queue, push="feed")
    async with poll_front.http() as poll_http, feed_front.http() as http:
        await _followed_through_its_history(poll_front.calls(poll_http), feed_front, http, temporal_client)


async def _followed_through_its_history(
    poll_mcp: TaskCalls, feed_front: InProcessFront, http: httpx.AsyncClient, temporal_client: Client
) -> None:
    [task_id] = await park(poll_mcp, 1)
    memo = await (await temporal_client.get_workflow_handle(UNKEYED.workflow_id(task_id, None)).describe()).memo()
    assert Memo.FEED_SEQ not in memo, "a poll-mode front's tasks do not publish"
    listener = Listener()
    async with anyio.create_task_group() as group:
        group.start_soon(listener.run, feed_front.url, http, [task_id])
        await listener.until(lambda: bool(listener.seen))
        await answer_all(feed_front.calls(http), [task_id])
        await listener.until(lambda: listener.statuses(task_id)[-1:] == [("completed", 0)])
        group.cancel_scope.cancel()
    assert listener.statuses(task_id) == EVERY_TRANSITION


async def connect_when_up(address: str) -> Client:
    """A client with one quick retry inside the SDK, so the hub's own backoff is what the test sees.

    The dev server just started may not take connections yet on a loaded machine: connecting is retried, bounded.
    """
    with anyio.fail_after(30):
        while True:
            try:
                return await Client.connect(
                    address, retry_config=RetryConfig(max_retries=1, max_elapsed_time_millis=1000)
                )
            except RuntimeError:
                await anyio.sleep(0.2)


async def test_a_feed_watcher_whose_temporal_goes_away_ends_its_subscribers_with_a_reason(tmp_path: Path) -> None:
    server, address = start_temporal(tmp_path, db_path=tmp_path / "temporal.db")
    try:
        client = await connect_when_up(address)
        queue = f"feed-outage-{uuid.uuid4()}"
        async with app_worker(client, fresh_app(FIXTURE_APP), task_queue=queue):
            await _subscribers_told_when_temporal_goes(client, queue, server)
    finally:
        server.kill()


async def _subscribers_told_when_temporal_goes(client: Client, queue: str, server: Process) -> None:
    gateway = TemporalTaskGateway(client, task_queue=queue)
    gateway.feed_runs = lambda workflow_id: True
    hub = FeedWatchHub(gateway, give_up_after_s=1)
    seen: list[dict[str, Any]] = []
    lost = anyio.Event()
    reasons: list[str] = []

    def on_lost(_task_id: str, reason: str) -> None:
        reasons.append(reason)
        lost.set()

    async with hub.running():
        task = tool_task("pick_variant", meta=envelope(capabilities=ELICIT))
        await gateway.create(task, None)
        with anyio.fail_after(60):
            while (read := await gateway.observe(task.task_id, None)).memo.get(Memo.FEED_SEQ) is None:
                await anyio.sleep(0.1)
        unsubscribe = hub.subscribe(task.task_id, None, seen.append, seen=read, on_lost=on_lost)
        with anyio.fail_after(30):
            while not seen:
                await anyio.sleep(0.05)
        server.kill()
        with anyio.fail_after(90):
            await lost.wait()
        unsubscribe()
    assert reasons and "kept failing" in reasons[0], reasons


async def test_a_feed_front_starts_before_any_worker_and_its_listens_miss_nothing(
    open_front: OpenFront, app_client: Client
) -> None:
    # The shards' offsets are queries only a worker answers: the front must not wait for one to serve.
    queue = new_task_queue("feed-first")
    front = await open_front(task_queue=queue, push="feed")
    async with front.http() as http, AsyncExitStack() as worker:
        mcp = front.calls(http)
        created = await mcp.start("pick_variant", capabilities=ELICIT)
        listener = Listener()
        async with anyio.create_task_group() as group:
            group.start_soon(listener.run, front.url, http, [created["taskId"]])
            await listener.until(lambda: bool(listener.seen), timeout=30)
            await worker.enter_async_context(app_worker(app_client, fresh_app(FIXTURE_APP), task_queue=queue))
            await listener.until(lambda: listener.statuses(created["taskId"])[-1:] == [("input_required", 2)])
            await answer_all(mcp, [created["taskId"]])
            await listener.until(lambda: listener.statuses(created["taskId"])[-1:] == [("completed", 0)])
            group.cancel_scope.cancel()
    assert listener.statuses(created["taskId"]) == [("working", 0), *EVERY_TRANSITION]
