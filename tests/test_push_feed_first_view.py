"""A feed watcher's first view of a task that is finishing: read after its terminal transition, before its close.

A task on the feed publishes its terminal transition, waits until its shard has it, and only then closes; the
result is in the close event. A front that reads the task in between (a listen on a task that was just answered,
a front that has just started and reads the shard's history from its start) sees a running task whose memo is
terminal, and the transition already behind it: its watcher must go on to the close, not show the task as still
working and wait for an item that has come already.

A front that has just started has not seen its shards run yet: a task it starts meanwhile must not count on
publishing (its first publish would fail, while its memo said it published), so it is followed by its history.

The fixture app's workers and a feed front run in the test process; the watchers are a hub of the test's own, on
a gateway whose reads are the real ones, pinned to the moment before the close where a test says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from mcp_tasks_temporal.front.gateway import Snapshot, TemporalTaskGateway
from mcp_tasks_temporal.front.push.feed_watch import FeedWatchHub
from mcp_tasks_temporal.front.push.push_mode import push_hub
from mcp_tasks_temporal.temporal.contract import Memo, ToolTaskInput
from tests.app_workers import app_worker, new_task_queue
from tests.front_app import FIXTURE_APP, InProcessFront, fresh_app
from tests.polling import pauses
from tests.test_listen_batched import joined
from tests.tool_tasks import tool_task

pytestmark = pytest.mark.anyio

WAIT = 30


@pytest.fixture(scope="module")
def front_settings() -> dict[str, Any]:
    return {"push": "feed"}


async def finished_task(front: InProcessFront, gate: Path) -> tuple[str, Snapshot]:
    """A task on the feed (a listen named it as it ran) run to its close; the task ID and its read once closed."""
    task = tool_task("gated", {"gate": str(gate)})
    key = front.gateway.owner_keying.workflow_id(task.task_id, None)
    feed_runs = front.gateway.feed_runs
    assert feed_runs is not None, "a front in feed mode"
    await until(lambda: feed_runs(key))  # else it would not publish: a front that just started
    await front.gateway.create(task, None)
    await joined(front.gateway, [task.task_id], None)
    (gate / "release").write_text("1")
    with anyio.fail_after(WAIT):
        await front.gateway.client.get_workflow_handle(key).result()
    closed = await front.gateway.read(key)
    assert closed.memo[Memo.STATUS] == "completed" and isinstance(closed.memo[Memo.FEED_SEQ], int)
    return task.task_id, closed


def before_the_close(closed: Snapshot) -> Snapshot:
    """The task as a read between its terminal transition and its close returns it."""
    return replace(closed, status=WorkflowExecutionStatus.RUNNING, close_time_ms=None)


async def until(check: Callable[[], bool]) -> None:
    wait = pauses()
    with anyio.fail_after(WAIT):
        while not check():
            await anyio.sleep(next(wait))


async def first_view(hub: FeedWatchHub, task_id: str, seen: Snapshot) -> dict[str, Any]:
    """What a new subscriber of the task is told first, once the hub follows the task's shard."""
    await until(lambda: hub.follows_shard_of(seen.workflow_id))
    views: list[dict[str, Any]] = []
    told = anyio.Event()

    def listener(view: dict[str, Any]) -> None:
        views.append(view)
        told.set()

    unsubscribe: Callable[[], None] = hub.subscribe(task_id, None, listener, seen=seen)
    try:
        with anyio.fail_after(WAIT):
            await told.wait()
    finally:
        unsubscribe()
    return views[0]


async def test_a_task_read_after_its_terminal_transition_is_first_shown_with_its_result(
    front: InProcessFront, gate: Path
) -> None:
    task_id, closed = await finished_task(front, gate)
    gateway = TemporalTaskGateway(front.gateway.client, task_queue=front.gateway.task_queue)
    hub = FeedWatchHub(gateway)
    async with hub.running():
        view = await first_view(hub, task_id, before_the_close(closed))
    assert view == await gateway.view(task_id, closed), "the task as `tasks/get` shows it once closed"


async def test_a_listed_task_re_read_after_its_terminal_transition_is_first_shown_with_its_result(
    front: InProcessFront, gate: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task_id, closed = await finished_task(front, gate)
    gateway = TemporalTaskGateway(front.gateway.client, task_queue=front.gateway.task_queue)
    read = gateway.read

    async def read_before_the_close(workflow_id: str) -> Snapshot:
        seen = await read(workflow_id)
        return before_the_close(seen) if workflow_id == closed.workflow_id else seen

    monkeypatch.setattr(gateway, "read", read_before_the_close)
    # Visibility lists the task as it started: working, nothing published yet; the hub reads it again.
    listed = replace(
        before_the_close(closed),
        listed=True,
        pending_activities=(),
        memo={**closed.memo, Memo.STATUS: "working", Memo.FEED_SEQ: 0},
    )
    hub = FeedWatchHub(gateway)
    async with hub.running():
        view = await first_view(hub, task_id, listed)
    assert view == await gateway.view(task_id, closed), "the task as `tasks/get` shows it once closed"


async def started_on_the_feed(gateway: TemporalTaskGateway, task: ToolTaskInput) -> bool:
    """Start `task` through `gateway`; whether its run was told to publish to the feed (its start input)."""
    await gateway.create(task, None)
    handle = gateway.client.get_workflow_handle(gateway.owner_keying.workflow_id(task.task_id, None))
    started = (await handle.fetch_history()).events[0].workflow_execution_started_event_attributes
    [given] = await gateway.client.data_converter.decode(started.input.payloads, [ToolTaskInput])
    assert isinstance(given, ToolTaskInput)
    return given.feed


async def test_a_task_a_feed_front_starts_before_it_follows_the_tasks_shard_is_followed_by_its_history(
    app_client: Client,
) -> None:
    queue = new_task_queue("feed-first")  # no shard of it runs yet
    async with app_worker(app_client, fresh_app(FIXTURE_APP), task_queue=queue):
        gateway = TemporalTaskGateway(app_client, task_queue=queue)
        hub = push_hub(gateway, "feed", give_up_after_s=30)
        assert isinstance(hub, FeedWatchHub)
        early = tool_task("double", {"x": 1})
        assert not await started_on_the_feed(gateway, early), "its shard does not run: it would not publish"
        async with hub.running():
            later = tool_task("double", {"x": 2})
            key = gateway.owner_keying.workflow_id(later.task_id, None)
            await until(lambda: hub.follows_shard_of(key))  # the hub starts the shard and reads its run
            assert await started_on_the_feed(gateway, later)
