"""A feed front acknowledges a listen from visibility, a few calls for thousands of tasks, and loses nothing.

The acknowledgement names the tasks the caller may see, exactly as one `describe` per task did
(another principal's, unknown and malformed IDs left out), and what visibility shows may be behind
the task: the change it has not caught up yet still reaches the subscriber, whether the front read
it from the feed before the listen or it was published before the front started.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import pytest
from temporalio.client import Client

from mcp_tasks_temporal.front.gateway import Snapshot, TemporalTaskGateway
from mcp_tasks_temporal.front.push.feed_watch import FeedWatchHub
from mcp_tasks_temporal.front.push.task_watch import TaskWatchHub
from mcp_tasks_temporal.temporal.contract import FEED_JOINS_ON_LISTEN, Memo
from mcp_tasks_temporal.temporal.ids import new_task_id
from tests.app_workers import app_worker, new_task_queue
from tests.conftest import OpenApp, OpenFront
from tests.front_app import FIXTURE_APP, InProcessFront, fresh_app
from tests.polling import pauses
from tests.test_push import ELICIT, http_listen, listen_message
from tests.test_push_feed import COLOR, SIZE, Listener, park
from tests.tool_tasks import tool_task
from tests.wire import envelope

pytestmark = pytest.mark.anyio

ALICE = "alice@example.com"
BOB = "bob@example.com"


@dataclass
class Feed:
    gateway: TemporalTaskGateway
    queue: str


@asynccontextmanager
async def feed_worker(client: Client) -> AsyncGenerator[Feed]:
    """The fixture app's workers in this process on a queue of their own, and a gateway whose tasks publish to the
    feed, its shards started."""
    queue = new_task_queue("listen-batched")
    async with app_worker(client, fresh_app(FIXTURE_APP), task_queue=queue):
        gateway = TemporalTaskGateway(client, task_queue=queue)
        gateway.feed_runs = lambda workflow_id: True  # its shards are started here, before any task
        await gateway.start_feed_shards()
        yield Feed(gateway, queue)


async def joined(gateway: TemporalTaskGateway, task_ids: list[str], principal: str | None) -> None:
    """Ask each task onto the feed, as a feed front does when a listen first names it, and wait until its memo
    says it publishes (its state then is its item 0)."""
    for task_id in task_ids:
        await gateway.join_feed(gateway.owner_keying.workflow_id(task_id, principal))
    wait = pauses()
    with anyio.fail_after(30):
        for task_id in task_ids:
            while (seen := await gateway.observe(task_id, principal)).memo.get(Memo.FEED_SEQ) == FEED_JOINS_ON_LISTEN:
                assert seen.running, f"task {task_id} closed without joining the feed"
                await anyio.sleep(next(wait))


async def parked(gateway: TemporalTaskGateway, principal: str | None) -> str:
    """A `pick_variant` task of `principal` on the feed, once it waits for both its answers (its item 0)."""
    task = tool_task("pick_variant", meta=envelope(capabilities=ELICIT))
    await gateway.create(task, principal)
    with anyio.fail_after(30):
        while len((await gateway.observe(task.task_id, principal)).memo.get(Memo.INPUT_REQUESTS) or {}) < 2:
            await anyio.sleep(0.05)
    await joined(gateway, [task.task_id], principal)
    return task.task_id


async def listed_as(gateway: TemporalTaskGateway, task_id: str, principal: str | None, seq: int) -> Snapshot:
    """The task as visibility shows it once it has caught up to transition `seq`."""
    with anyio.fail_after(30):
        while True:
            seen = (await gateway.observe_listed([task_id], principal)).get(task_id)
            if seen is not None and seen.memo.get(Memo.FEED_SEQ) == seq:
                return seen.snapshot()
            await anyio.sleep(0.05)


async def answer_one(gateway: TemporalTaskGateway, task_id: str, principal: str | None) -> int:
    """Answer one of its two questions; returns the number of the transition that shows it."""
    before = (await gateway.observe(task_id, principal)).memo
    key = next(k for k in before[Memo.INPUT_REQUESTS] if "size" not in k)
    await gateway.update(task_id, principal, {key: COLOR})
    with anyio.fail_after(30):
        while True:
            memo = (await gateway.observe(task_id, principal)).memo
            if len(memo.get(Memo.INPUT_REQUESTS) or {}) == 1:
                return int(memo[Memo.FEED_SEQ])
            await anyio.sleep(0.05)


def without_envelope(task: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in task.items() if k not in ("_meta", "resultType")}


def questions(views: list[dict[str, Any]]) -> list[int]:
    return [len(view.get("inputRequests") or {}) for view in views]


async def test_visibility_reads_hold_to_owner_and_shape_as_a_describe_does(temporal_client: Client) -> None:
    async with feed_worker(temporal_client) as feed:
        alices = [await parked(feed.gateway, ALICE) for _ in range(2)]
        bobs = await parked(feed.gateway, BOB)
        for task_id in alices:
            await listed_as(feed.gateway, task_id, ALICE, 0)
        asked = [*alices, bobs, new_task_id(), "not-a-task-id", 'x" OR WorkflowId STARTS_WITH "mcp-task']
        as_alice = await feed.gateway.observe_listed(asked, ALICE)
        assert set(as_alice) == set(alices)
        for task_id in alices:
            described = await feed.gateway.observe(task_id, ALICE)
            assert as_alice[task_id].memo == described.memo
            assert as_alice[task_id].listed and not described.listed
        assert set(await feed.gateway.observe_listed(asked, BOB)) == {bobs}
        assert await feed.gateway.observe_listed(asked, None) == {}


async def test_a_change_visibility_has_not_shown_yet_reaches_the_subscriber(temporal_client: Client) -> None:
    """Read from the feed while the front runs, and published before the front started."""
    async with feed_worker(temporal_client) as feed:
        before_start, while_running = await parked(feed.gateway, ALICE), await parked(feed.gateway, ALICE)
        stale_before = await listed_as(feed.gateway, before_start, ALICE, 0)
        stale_while = await listed_as(feed.gateway, while_running, ALICE, 0)
        seq = await answer_one(feed.gateway, before_start, ALICE)
        hub = FeedWatchHub(feed.gateway)
        async with hub.running():
            await answer_one(feed.gateway, while_running, ALICE)
            seen: dict[str, list[dict[str, Any]]] = {before_start: [], while_running: []}
            # Subscribed with what visibility showed before each change: two questions still open.
            for task_id, stale in ((before_start, stale_before), (while_running, stale_while)):
                assert stale.memo[Memo.FEED_SEQ] < seq and len(stale.memo[Memo.INPUT_REQUESTS]) == 2
                hub.subscribe(task_id, ALICE, seen[task_id].append, seen=stale)
            with anyio.fail_after(20):
                while any(questions(views)[-1:] != [1] for views in seen.values()):
                    await anyio.sleep(0.05)
        for views in seen.values():
            assert questions(views) in ([2, 1], [1]), views


async def test_a_listed_task_a_front_follows_by_its_history_is_followed_from_where_it_is_not_from_its_start(
    temporal_client: Client,
) -> None:
    """A feed front follows a feed task by its history until it follows the task's shard (just started, or
    Temporal was away): the visibility read it was acknowledged from has no history length, and no transition
    the subscriber already has may come again after it."""
    async with feed_worker(temporal_client) as feed:
        task_id = await parked(feed.gateway, ALICE)
        listed = await listed_as(feed.gateway, task_id, ALICE, await answer_one(feed.gateway, task_id, ALICE))
        assert listed.listed and len(listed.memo[Memo.INPUT_REQUESTS]) == 1
        hub = TaskWatchHub(feed.gateway)  # what a feed front falls back to for a shard it does not follow yet
        views: list[dict[str, Any]] = []
        async with hub.running():
            hub.subscribe(task_id, ALICE, views.append, seen=listed)
            with anyio.fail_after(20):
                while not views:
                    await anyio.sleep(0.05)
            memo = (await feed.gateway.observe(task_id, ALICE)).memo
            await feed.gateway.update(task_id, ALICE, {next(iter(memo[Memo.INPUT_REQUESTS])): SIZE})
            with anyio.fail_after(30):
                while not views or views[-1]["status"] != "completed":
                    await anyio.sleep(0.05)
        states = [(view["status"], len(view.get("inputRequests") or {})) for view in views]
        # Each state once, in order, from the one it was acknowledged in: nothing from before it again.
        later = [("input_required", 1), ("working", 0), ("completed", 0)]
        assert states[0] == later[0] and states[-1] == later[-1], states
        assert [state for state in later if state in states] == states, states


async def test_a_listen_on_a_feed_front_acks_its_own_tasks_and_follows_each_from_its_read(
    open_app: OpenApp, open_front: OpenFront
) -> None:
    front = await open_app(FIXTURE_APP, push="feed")
    async with front.http() as http:
        ids = await _each_followed_from_its_read(front, http)
    another_front = await open_front(task_queue=front.gateway.task_queue, push="feed")
    # The front that answers the listen read none of these tasks before: its ack comes from visibility alone.
    async with (
        another_front.http() as http,
        http_listen(another_front.url, http, listen_message([new_task_id(), *ids, "not-a-task-id"])) as frames,
    ):
        ack = await anext(frames)
        assert ack["params"]["notifications"]["taskIds"] == ids


async def _each_followed_from_its_read(front: InProcessFront, http: httpx.AsyncClient) -> list[str]:
    mcp = front.calls(http)
    ids = await park(mcp, 6)
    listener = Listener()
    async with anyio.create_task_group() as group:
        group.start_soon(listener.run, front.url, http, ids)
        await listener.until(lambda: len(listener.seen) == len(ids))
        gets = {task_id: (await mcp.get(task_id)).result for task_id in ids}
        for task_id in ids:
            first = listener.seen[task_id][0]
            assert without_envelope(first) == without_envelope(gets[task_id])
        group.cancel_scope.cancel()
    return ids
