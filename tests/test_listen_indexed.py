"""A feed front acknowledges a listen from its shards' indexes of open tasks, and loses nothing after the ack.

Each shard indexes the open tasks that publish to it (workflow ID -> last feed number, status, deadline),
from their transitions; a listen's ack takes the caller's tasks the indexes hold at once, and reads the
rest as before (visibility, then `describe`). The first views of the indexed tasks are read after the ack.
A feed task announces itself to its shard when it joins the feed, as a listen first names it (an item
numbered 0: its state then), so one that has not changed since is indexed too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from mcp_types import INTERNAL_ERROR
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from mcp_tasks_temporal.front.gateway import TemporalTaskGateway
from mcp_tasks_temporal.front.push.feed_watch import FeedWatcher, FeedWatchHub
from mcp_tasks_temporal.front.push.listen import TaskListen
from mcp_tasks_temporal.temporal.contract import Memo
from mcp_tasks_temporal.temporal.feed_contract import FEED_SHARDS, TRANSITION_TOPIC, feed_workflow_id, transition_item
from mcp_tasks_temporal.temporal.ids import UNKEYED, new_task_id
from tests.app_workers import app_worker, new_task_queue
from tests.conftest import OpenApp
from tests.front_app import FIXTURE_APP, fresh_app
from tests.polling import pauses
from tests.test_listen_batched import ALICE, BOB, answer_one, feed_worker, joined, parked, without_envelope
from tests.test_push import ELICIT, http_listen, listen_message
from tests.test_push_feed import EVERY_TRANSITION, Listener, answer_all, feed_front, park

pytestmark = pytest.mark.anyio


async def until_indexed(gateway: TemporalTaskGateway, task_ids: list[str], principal: str | None) -> None:
    """Until every one of `task_ids` is in its shard's index: joined to the feed first, as a listen does."""
    await joined(gateway, task_ids, principal)
    wait = pauses()
    with anyio.fail_after(30):
        while set(await gateway.observe_indexed(task_ids, principal)) != set(task_ids):
            await anyio.sleep(next(wait))


async def until_out_of_index(gateway: TemporalTaskGateway, task_ids: list[str], principal: str | None) -> None:
    """Until a terminal transition took every one of `task_ids` out of its shard's index."""
    wait = pauses()
    with anyio.fail_after(30):
        while await gateway.observe_indexed(task_ids, principal):
            await anyio.sleep(next(wait))


async def test_the_index_holds_each_callers_open_tasks_and_an_ack_takes_them_from_it(temporal_client: Client) -> None:
    async with feed_worker(temporal_client) as feed:
        gateway = feed.gateway
        alices = [await parked(gateway, ALICE) for _ in range(3)]
        bobs = await parked(gateway, BOB)
        await until_indexed(gateway, alices, ALICE)
        await until_indexed(gateway, [bobs], BOB)
        asked = [new_task_id(), *alices, bobs, "not-a-task-id", 'x" OR WorkflowId STARTS_WITH "mcp-task']
        # The workflow ID names the principal: another's task is as unknown to the index as a made-up one.
        assert sorted(await gateway.observe_indexed(asked, ALICE)) == sorted(alices)
        assert await gateway.observe_indexed(asked, BOB) == [bobs]
        assert await gateway.observe_indexed(asked, None) == []
        for task_id in alices:
            memo = (await gateway.observe(task_id, ALICE)).memo
            entry = (await gateway.indexed([UNKEYED.workflow_id(task_id, ALICE)]))[UNKEYED.workflow_id(task_id, ALICE)]
            assert entry == (memo[Memo.FEED_SEQ], "input_required", memo[Memo.CREATED_AT] + memo[Memo.TTL_MS])

        closed = alices[0]
        await answer_one(gateway, closed, ALICE)
        memo = (await gateway.observe(closed, ALICE)).memo
        key = next(iter(memo[Memo.INPUT_REQUESTS]))
        await gateway.update(closed, ALICE, {key: {"action": "accept", "content": {"size": "XL"}}})
        await until_out_of_index(gateway, [closed], ALICE)
        # The shard takes the last transition a moment before the run closes, and visibility follows the close.
        wait = pauses()
        with anyio.fail_after(30):
            while any(seen.running for seen in (await gateway.observe_listed([closed], ALICE)).values()):
                await anyio.sleep(next(wait))

        hub = FeedWatchHub(gateway)
        listen = TaskListen(cast("Any", None), gateway, hub)
        async with hub.running():
            honored = await listen._honored(asked, ALICE)  # pyright: ignore[reportPrivateUsage]
            assert list(honored) == alices, "the caller's own tasks, in request order, nothing else"
            # Open and indexed: honored at once, read after the ack; closed: read now, as before the index.
            assert [honored[t] is None for t in alices] == [False, True, True]
            first = honored[closed]
            assert first is not None and not first.running
            assert await listen._honored(asked, BOB) == {bobs: None}  # pyright: ignore[reportPrivateUsage]
            assert await listen._honored(asked, None) == {}  # pyright: ignore[reportPrivateUsage]


async def test_a_listen_acks_new_open_and_closed_tasks_and_every_later_transition_arrives_in_order(
    open_app: OpenApp,
    temporal_client: Client,
) -> None:
    front, _ = await feed_front(open_app, temporal_client, continue_after=10_000)
    gateway = TemporalTaskGateway(temporal_client, task_queue=front.gateway.task_queue)
    async with front.http() as http:
        mcp = front.calls(http)
        ids = await park(mcp, 8)
        closed = ids.pop()
        await answer_all(mcp, [closed])
        await mcp.wait_for(closed, ["completed"])
        await until_indexed(gateway, ids, None)
        fresh = (await mcp.start("pick_variant", capabilities={"elicitation": {}}))["taskId"]  # maybe not indexed yet
        watched = [*ids, closed, fresh]
        listener = Listener()  # asserts the ack names every one of them
        async with anyio.create_task_group() as group:
            group.start_soon(listener.run, front.url, http, watched)
            await listener.until(lambda: len(listener.seen) == len(watched))
            for task_id in [*ids, closed]:
                # Nothing changed since the listen: the first view is what `tasks/get` says.
                assert without_envelope(listener.seen[task_id][0]) == without_envelope((await mcp.get(task_id)).result)
            await listener.until(lambda: listener.statuses(fresh)[-1:] == [("input_required", 2)])
            await answer_all(mcp, [*ids, fresh])
            await listener.until(lambda: all(listener.statuses(t)[-1:] == [("completed", 0)] for t in [*ids, fresh]))
            group.cancel_scope.cancel()
        assert {t: listener.statuses(t) for t in ids} == dict.fromkeys(ids, EVERY_TRANSITION)
        assert listener.statuses(fresh) in (EVERY_TRANSITION, [("working", 0), *EVERY_TRANSITION])
        assert listener.statuses(closed) == [("completed", 0)]
        completed = listener.seen[closed][0]
        assert completed["status"] == "completed" and completed.get("result"), completed

        # Unknown and malformed IDs are left out, as without the index.
        async with http_listen(front.url, http, listen_message([new_task_id(), *ids[:2], "not-a-task-id"])) as frames:
            ack = await anext(frames)
            assert ack["params"]["notifications"]["taskIds"] == ids[:2]


async def test_the_index_survives_the_shards_continue_as_new(
    open_app: OpenApp,
    temporal_client: Client,
) -> None:
    front, _ = await feed_front(open_app, temporal_client, continue_after=12)
    gateway = TemporalTaskGateway(temporal_client, task_queue=front.gateway.task_queue)
    async with front.http() as http:
        mcp = front.calls(http)
        early = await park(mcp, 16)
        await joined(gateway, early, None)
        # Indexed from their join's announcement: wait until the index shows them parked, as they stay.
        keys = [UNKEYED.workflow_id(t, None) for t in early]
        wait = pauses()
        with anyio.fail_after(30):
            while True:
                entries = await gateway.indexed(keys)
                if len(entries) == len(keys) and all(entry[1] == "input_required" for entry in entries.values()):
                    break
                await anyio.sleep(next(wait))

        async def runs() -> list[str]:
            handles = [
                temporal_client.get_workflow_handle(feed_workflow_id(front.gateway.task_queue, s))
                for s in range(FEED_SHARDS)
            ]
            return [(await handle.describe()).run_id for handle in handles]

        before = await runs()
        late = await park(mcp, 16)  # more transitions: most shards continue as new again
        await until_indexed(gateway, late, None)
        after = await runs()
        assert sum(a != b for a, b in zip(before, after, strict=True)) >= FEED_SHARDS // 2, (
            "the shards continued as new"
        )
        assert await gateway.indexed([UNKEYED.workflow_id(t, None) for t in early]) == entries, (
            "carried to the new runs"
        )

        listener = Listener()
        async with anyio.create_task_group() as group:
            group.start_soon(listener.run, front.url, http, [*early, *late])
            await listener.until(lambda: len(listener.seen) == len(early) + len(late))
            await answer_all(mcp, early)
            await listener.until(lambda: all(listener.statuses(t)[-1:] == [("completed", 0)] for t in early))
            group.cancel_scope.cancel()
        assert {t: listener.statuses(t) for t in early} == dict.fromkeys(early, EVERY_TRANSITION)
        await until_out_of_index(gateway, early, None)


async def test_an_indexed_task_gone_before_its_first_view_ends_the_listen_with_an_error(
    open_app: OpenApp,
    temporal_client: Client,
) -> None:
    front, _ = await feed_front(open_app, temporal_client, continue_after=10_000)
    gateway = TemporalTaskGateway(temporal_client, task_queue=front.gateway.task_queue)
    async with front.http() as http:
        mcp = front.calls(http)
        kept, gone = await park(mcp, 2)
        await until_indexed(gateway, [kept, gone], None)
        # Deleted by an operator: no terminal transition, so the index still holds it.
        await temporal_client.workflow_service.delete_workflow_execution(
            DeleteWorkflowExecutionRequest(
                namespace=temporal_client.namespace,
                workflow_execution=WorkflowExecution(workflow_id=UNKEYED.workflow_id(gone, None)),
            )
        )
        with anyio.fail_after(30):
            while True:
                try:
                    await temporal_client.get_workflow_handle(UNKEYED.workflow_id(gone, None)).describe()
                except RPCError as err:
                    if err.status == RPCStatusCode.NOT_FOUND:
                        break
                    raise
                await anyio.sleep(0.1)
        assert await gateway.observe_indexed([gone], None) == [gone]
        async with http_listen(front.url, http, listen_message([kept, gone])) as frames:
            ack = await anext(frames)
            assert ack["params"]["notifications"]["taskIds"] == [kept, gone]
            with anyio.fail_after(30):
                async for frame in frames:
                    if "error" in frame:
                        assert frame["error"]["code"] == INTERNAL_ERROR
                        assert frame["error"]["data"]["taskIds"] == [gone]
                        break
                else:
                    raise AssertionError("the listen ended without saying which task it lost")


async def test_a_watcher_applies_nothing_of_a_tasks_announcement_and_sees_no_gap_in_it() -> None:
    hub = FeedWatchHub(cast("Any", None))  # `_apply` reads no task for an item it applies
    key = UNKEYED.workflow_id(new_task_id(), None)
    memo = {Memo.STATUS: "working", Memo.CREATED_AT: 1_000, Memo.LAST_UPDATED_AT: 1_000, Memo.FEED_SEQ: 0}
    watcher = FeedWatcher(key, memo, 0)
    watcher.ready = True
    views: list[dict[str, Any]] = []
    watcher.subscribers[views.append] = None
    # Even one whose fields differ from the memo read (it never does): number 0 is the state so far.
    announced = transition_item(key, 0, {Memo.STATUS: "working", Memo.LAST_UPDATED_AT: 2_000}, deadline=None)
    hub._apply(watcher, TRANSITION_TOPIC, announced)  # pyright: ignore[reportPrivateUsage]
    assert (views, watcher.seq, watcher.ready) == ([], 0, True), "not applied, and no gap to re-read over"
    asked: dict[str, Any] = {
        Memo.STATUS: "input_required",
        Memo.LAST_UPDATED_AT: 3_000,
        Memo.INPUT_REQUESTS: {"ship": {}},
    }
    hub._apply(watcher, TRANSITION_TOPIC, transition_item(key, 1, asked, deadline=None))  # pyright: ignore[reportPrivateUsage]
    hub._apply(watcher, TRANSITION_TOPIC, announced)  # pyright: ignore[reportPrivateUsage]
    assert [(v["status"], v["lastUpdatedAt"]) for v in views] == [("input_required", "1970-01-01T00:00:03.000Z")]
    assert watcher.seq == 1


BUILD_STEPS = [("working", 0), ("input_required", 1), ("working", 0), ("completed", 0)]
"""A `build_then_approve` task followed from its start: the build, the question, the answer, the end."""


async def test_a_listen_on_tasks_that_have_not_changed_since_they_started_is_acked_from_the_index(
    open_app: OpenApp,
    temporal_client: Client,
    gate: Path,
) -> None:
    front, _ = await feed_front(open_app, temporal_client, continue_after=10_000)
    gateway = TemporalTaskGateway(temporal_client, task_queue=front.gateway.task_queue)
    async with front.http() as http:
        mcp = front.calls(http)
        building = [
            (await mcp.start("build_then_approve", {"gate": str(gate)}, capabilities=ELICIT))["taskId"]
            for _ in range(6)
        ]
        # Announced as they join: indexed while still working, before any transition.
        await until_indexed(gateway, building, None)
        for task_id in building:
            memo = (await gateway.observe(task_id, None)).memo
            assert (memo[Memo.STATUS], memo[Memo.FEED_SEQ]) == ("working", 0), "no transition yet"
            entry = (await gateway.indexed([UNKEYED.workflow_id(task_id, None)]))[UNKEYED.workflow_id(task_id, None)]
            assert entry == (0, "working", memo[Memo.CREATED_AT] + memo[Memo.TTL_MS])

        hub = FeedWatchHub(gateway)
        listen = TaskListen(cast("Any", None), gateway, hub)
        async with hub.running():
            # Honored from the indexes (no read before the ack), as a task that has changed is.
            assert await listen._honored(building, None) == dict.fromkeys(building)  # pyright: ignore[reportPrivateUsage]

        listener = Listener()  # asserts the ack names every one of them
        async with anyio.create_task_group() as group:
            group.start_soon(listener.run, front.url, http, building)
            await listener.until(lambda: len(listener.seen) == len(building))
            for task_id in building:
                assert without_envelope(listener.seen[task_id][0]) == without_envelope((await mcp.get(task_id)).result)
            (gate / "built").write_text("1")
            await listener.until(lambda: all(listener.statuses(t)[-1:] == [("input_required", 1)] for t in building))
            for task_id in building:
                await mcp.update(task_id, {"ship": {"action": "accept", "content": {"approve": True}}})
            await listener.until(lambda: all(listener.statuses(t)[-1:] == [("completed", 0)] for t in building))
            group.cancel_scope.cancel()
        for task_id in building:
            notes = listener.seen[task_id]
            assert listener.statuses(task_id) == BUILD_STEPS
            # One `working` before the question: the announcement made no notification of its own.
            assert [n["status"] for n in notes] == [s for s, _ in BUILD_STEPS], notes
            assert notes[-1].get("result"), notes[-1]
        await until_out_of_index(gateway, building, None)


async def test_a_task_whose_shard_does_not_exist_stops_publishing_at_its_announcement_and_runs_on(
    temporal_client: Client,
) -> None:
    queue = new_task_queue("no-shards")
    async with app_worker(temporal_client, fresh_app(FIXTURE_APP), task_queue=queue):
        gateway = TemporalTaskGateway(temporal_client, task_queue=queue)
        gateway.feed_runs = lambda workflow_id: True  # its tasks may join the feed, but no shard was started
        task_id = await parked(gateway, None)
        keys = sorted((await gateway.observe(task_id, None)).memo[Memo.INPUT_REQUESTS], key=lambda k: "size" in k)
        await gateway.update(task_id, None, {keys[0]: {"action": "accept", "content": {"color": "red"}}})
        await gateway.update(task_id, None, {keys[1]: {"action": "accept", "content": {"size": "XL"}}})
        handle = temporal_client.get_workflow_handle(UNKEYED.workflow_id(task_id, None))
        with anyio.fail_after(60):
            outcome = await handle.result()
        assert outcome.get("content") and not outcome.get("isError"), outcome
        memo = (await gateway.observe(task_id, None)).memo
        assert memo[Memo.STATUS] == "completed" and memo.get(Memo.FEED_SEQ) is None, "followed by its history"
        signals = [
            event.event_type
            async for event in handle.fetch_history_events()
            if event.event_type
            in (
                EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
                EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED,
            )
        ]
        # The announcement was refused, and nothing was sent after it.
        assert signals == [
            EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
            EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED,
        ]
