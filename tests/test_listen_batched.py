"""A feed front acknowledges a listen from visibility, a few calls for thousands of tasks, and loses nothing.

The acknowledgement names the tasks the caller may see, exactly as one `describe` per task did
(another principal's, unknown and malformed IDs left out), and what visibility shows may be behind
the task: the change it has not caught up yet still reaches the subscriber, whether the front read
it from the feed before the listen or it was published before the front started.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from temporalio.client import Client

from mcp_tasks_temporal.front.gateway import Snapshot, TemporalTaskGateway
from mcp_tasks_temporal.front.push.feed_watch import FeedWatchHub
from mcp_tasks_temporal.temporal.contract import Memo, ToolTaskInput
from mcp_tasks_temporal.temporal.ids import new_task_id
from tests.conftest import Stack
from tests.processes import Process, start_worker
from tests.test_push import ELICIT, http_listen, listen_message
from tests.test_push_feed import COLOR, Listener, park
from tests.wire import HttpMcp, TaskCalls, envelope

pytestmark = pytest.mark.anyio

ALICE = "alice@example.com"
BOB = "bob@example.com"


@dataclass
class Feed:
    gateway: TemporalTaskGateway
    queue: str


# Each test asks for the session's `stack` first: it waits until the dev server takes clients.


@asynccontextmanager
async def feed_worker(workdir: Path, temporal: str, client: Client) -> AsyncGenerator[Feed]:
    queue = f"listen-batched-{uuid.uuid4()}"
    worker: Process = start_worker(workdir, temporal, queue)
    try:
        gateway = TemporalTaskGateway(client, task_queue=queue)
        gateway.feed_tasks = True
        await gateway.start_feed_shards()
        yield Feed(gateway, queue)
    finally:
        worker.kill()


async def parked(gateway: TemporalTaskGateway, principal: str | None) -> str:
    """A `pick_variant` task of `principal`, once it waits for both its answers."""
    task = ToolTaskInput(
        task_id=new_task_id(),
        tool="pick_variant",
        arguments={},
        meta=envelope(capabilities=ELICIT),
        created_at_ms=int(time.time() * 1000),
        ttl_ms=600_000,
        poll_interval_ms=250,
    )
    await gateway.create(task, principal)
    with anyio.fail_after(30):
        while len((await gateway.observe(task.task_id, principal)).memo.get(Memo.INPUT_REQUESTS) or {}) < 2:
            await anyio.sleep(0.05)
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


async def test_visibility_reads_hold_to_owner_and_shape_as_a_describe_does(
    stack: Stack, workdir: Path, temporal: str, temporal_client: Client
) -> None:
    async with feed_worker(workdir, temporal, temporal_client) as feed:
        alices = [await parked(feed.gateway, ALICE) for _ in range(2)]
        bobs = await parked(feed.gateway, BOB)
        for task_id in alices:
            await listed_as(feed.gateway, task_id, ALICE, 1)
        asked = [*alices, bobs, new_task_id(), "not-a-task-id", 'x" OR WorkflowId STARTS_WITH "mcp-task']
        as_alice = await feed.gateway.observe_listed(asked, ALICE)
        assert set(as_alice) == set(alices)
        for task_id in alices:
            described = await feed.gateway.observe(task_id, ALICE)
            assert as_alice[task_id].memo == described.memo
            assert as_alice[task_id].listed and not described.listed
        assert set(await feed.gateway.observe_listed(asked, BOB)) == {bobs}
        assert await feed.gateway.observe_listed(asked, None) == {}


async def test_a_change_visibility_has_not_shown_yet_reaches_the_subscriber(
    stack: Stack, workdir: Path, temporal: str, temporal_client: Client
) -> None:
    """Read from the feed while the front runs, and published before the front started."""
    async with feed_worker(workdir, temporal, temporal_client) as feed:
        before_start, while_running = await parked(feed.gateway, ALICE), await parked(feed.gateway, ALICE)
        stale_before = await listed_as(feed.gateway, before_start, ALICE, 1)
        stale_while = await listed_as(feed.gateway, while_running, ALICE, 1)
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


async def test_a_listen_on_a_feed_front_acks_its_own_tasks_and_follows_each_from_its_read(
    stack_factory: Callable[[], Stack], monkeypatch: pytest.MonkeyPatch, http: httpx.AsyncClient
) -> None:
    monkeypatch.setenv("MCP_TASKS_PUSH", "feed")
    stack = stack_factory()
    stack.add_worker()
    url = stack.add_front()
    mcp = TaskCalls(HttpMcp(url, http))
    ids = await park(mcp, 6)
    unknown = new_task_id()
    listener = Listener()
    async with anyio.create_task_group() as group:
        group.start_soon(listener.run, url, http, ids)
        await listener.until(lambda: len(listener.seen) == len(ids))
        gets = {task_id: (await mcp.get(task_id)).result for task_id in ids}
        for task_id in ids:
            first = listener.seen[task_id][0]
            assert without_envelope(first) == without_envelope(gets[task_id])
        group.cancel_scope.cancel()
    another_front = stack.add_front()
    # The front that answers the listen read none of these tasks before: its ack comes from visibility alone.
    async with http_listen(another_front, http, listen_message([unknown, *ids, "not-a-task-id"])) as frames:
        ack = await anext(frames)
        assert ack["params"]["notifications"]["taskIds"] == ids
