"""Record one workflow history per task path, for the replay test (`tests/test_histories.py`).

    python -m tests.histories.record            # rewrite every history here
    python -m tests.histories.record cancel     # only some paths

It runs the task workflows of the code checked out here on an embedded dev
server (with the search attributes registered, as `dev` does), with scripted
activities that take each path, and writes `<path>.json`. Re-record only on
purpose: a committed history is the promise that tasks started by that code
still run after an upgrade, so an old file is replaced only when the path it
shows is recorded anew alongside it (keep the old one under another name).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
from temporalio import activity
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowHistory,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.contrib.workflow_streams import PublishEntry, PublishInput, WorkflowStreamClient
from temporalio.converter import PayloadConverter
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Worker

from mcp_tasks_temporal.temporal.activity_bridge import ask
from mcp_tasks_temporal.temporal.contract import (
    ADOPT_TOOL_ACTIVITY,
    FEED_JOINS_ON_LISTEN,
    HANDED_OFF,
    INPUT_SIGNAL,
    JOIN_FEED_SIGNAL,
    JSONRPC_ERROR,
    RUN_TOOL_ACTIVITY,
    RUN_TOOL_FIRST_ACTIVITY,
    SETTLED_UPDATE,
    TERMINAL_STATUSES,
    TOOL_TASK_WORKFLOW,
    ActivityPolicy,
    Adoption,
    FirstAttempt,
    Memo,
    ToolRoundInput,
    ToolTaskInput,
)
from mcp_tasks_temporal.temporal.feed_contract import (
    FEED_SHARDS,
    STREAM_PUBLISH_SIGNAL,
    TASK_FEED_WORKFLOW,
    TICK_TOPIC,
    TRANSITION_TOPIC,
    TaskFeedInput,
    feed_workflow_id,
    transition_item,
)
from mcp_tasks_temporal.temporal.ids import UNKEYED
from mcp_tasks_temporal.temporal.sandbox import workflow_runner
from mcp_tasks_temporal.temporal.search_attributes import start_attributes
from mcp_tasks_temporal.temporal.worker import WORKFLOWS
from mcp_tasks_temporal.temporal.workflows.task_feed import TaskFeedWorkflow
from tests.polling import pauses

HERE = Path(__file__).parent
STEP_BOUND_S = 120
"""Bounds each wait of a recording, generous: on a loaded 2-core machine a workflow task can take seconds."""
WORKFLOW_TASK_TIMEOUT = timedelta(seconds=60)
"""Not Temporal's 10 s: the recorder's one in-process worker runs every path at once, all behind one GIL; on a
starved machine a round of their tasks can pass 10 s, and a completion that comes after the timeout is refused and
replayed again, later and slower, over and over. The recorded histories replay the same."""
ENVELOPE: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "history-recorder", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}
QUESTION: dict[str, Any] = {
    "method": "elicitation/create",
    "params": {"mode": "form", "message": "Go?", "requestedSchema": {"type": "object", "properties": {}}},
}
ACCEPT: dict[str, Any] = {"action": "accept", "content": {}}


def _complete(text: str) -> dict[str, Any]:
    return {"resultType": "complete", "content": [{"type": "text", "text": text}], "isError": False}


@activity.defn(name=RUN_TOOL_ACTIVITY)
async def scripted_tool(call: ToolRoundInput) -> dict[str, Any]:
    """One behaviour per path, chosen by the tool name."""
    info = activity.info()
    if call.tool == "multi_round" and call.round < 2:
        return {"resultType": "input_required", "inputRequests": {"go": QUESTION}, "requestState": f"r{call.round}"}
    if call.tool == "midway":
        asked = asyncio.ensure_future(ask({"left": QUESTION, "right": QUESTION}))
        # Heartbeats while the answers take their time, as the worker's tool activity does: on a loaded machine
        # they can take longer than the heartbeat timeout, and a timed-out attempt would ask all over again.
        while not asked.done():
            activity.heartbeat()
            await asyncio.wait({asked}, timeout=0.5)
        answers: dict[str, Any] = asked.result()
        return _complete(",".join(sorted(answers)))
    if call.tool == "hang":
        while True:
            activity.heartbeat()
            await asyncio.sleep(0.1)
    if call.tool == "fails_as_it_stops":
        try:
            while True:
                activity.heartbeat()
                await asyncio.sleep(0.1)
        except asyncio.CancelledError:
            # Its own failure, after the cancel was requested: the task ends cancelled all the same.
            failure = {"code": -32603, "message": "cleanup failed"}
            raise ApplicationError("cleanup failed", failure, type=JSONRPC_ERROR) from None
    if call.tool == "fail":
        raise ApplicationError("backend refused", {"code": -32042, "message": "backend refused"}, type=JSONRPC_ERROR)
    if call.tool == "flaky" and info.attempt == 1:
        raise ApplicationError("connection reset")  # retryable: the next attempt succeeds
    return _complete(f"{call.tool} round {call.round}")


def published_transitions(sent: PublishInput, converter: PayloadConverter) -> list[dict[str, Any]]:
    """The task transitions in one batch a task signalled to its feed shard, in order."""
    return [
        converter.from_payload(Payload.FromString(base64.b64decode(entry.data)))
        for entry in sent.items
        if entry.topic == TRANSITION_TOPIC
    ]


async def published_items(client: Client, handle: WorkflowHandle[Any, Any]) -> list[dict[str, Any]]:
    """The transitions a task signalled to its feed shard, in order, read from the task's own history."""
    converter = client.data_converter.payload_converter
    items: list[dict[str, Any]] = []
    async for event in handle.fetch_history_events():
        if event.event_type != EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
            continue
        attributes = event.signal_external_workflow_execution_initiated_event_attributes
        if attributes.signal_name != STREAM_PUBLISH_SIGNAL:
            continue
        (sent,) = converter.from_payloads(list(attributes.input.payloads), [PublishInput])
        items.extend(published_transitions(sent, converter))
    return items


async def memo_status(
    handle: WorkflowHandle[Any, Any],
    wanted: str,
    bound_s: float = STEP_BOUND_S,
    *,
    until: Callable[[dict[str, Any]], bool] = lambda memo: True,
) -> dict[str, Any]:
    """The task's memo once it shows `wanted` and `until` holds (the memo is Temporal's state: no event tells this
    process).

    Fails at once when the run has closed, or the memo shows another terminal status, without it: neither
    changes again, so waiting out the bound would only report the wrong end later.
    """
    wait = pauses()
    with anyio.fail_after(bound_s):
        while True:
            described = await handle.describe()
            memo = dict(await described.memo())
            status = memo.get(Memo.STATUS)
            if status == wanted and until(memo):
                return memo
            if described.status != WorkflowExecutionStatus.RUNNING or status in TERMINAL_STATUSES:
                raise AssertionError(f"the task ended {status} ({described.status}) before showing {wanted}: {memo}")
            await anyio.sleep(next(wait))


async def _answer_each_round(handle: WorkflowHandle[Any, Any], rounds: int) -> None:
    for _ in range(rounds):
        memo = await memo_status(handle, "input_required")
        for key in memo[Memo.INPUT_REQUESTS]:
            await handle.signal(INPUT_SIGNAL, {key: ACCEPT})
            await _until_gone(handle, key)


async def _join_then_answer_each_round(handle: WorkflowHandle[Any, Any], rounds: int) -> None:
    """A listen names the task while it waits for its first answer: it joins the feed, then goes on."""
    await memo_status(handle, "input_required")
    await handle.signal(JOIN_FEED_SIGNAL)
    with anyio.fail_after(STEP_BOUND_S):
        wait = pauses()
        while (await (described := await handle.describe()).memo()).get(Memo.FEED_SEQ) != 0:
            assert described.status == WorkflowExecutionStatus.RUNNING, "closed without joining the feed"
            await anyio.sleep(next(wait))
    await _answer_each_round(handle, rounds)


async def _until_gone(handle: WorkflowHandle[Any, Any], key: str) -> None:
    wait = pauses()
    with anyio.fail_after(STEP_BOUND_S):
        while key in ((await (await handle.describe()).memo()).get(Memo.INPUT_REQUESTS) or {}):
            await anyio.sleep(next(wait))


async def _cancel_while_running(handle: WorkflowHandle[Any, Any]) -> None:
    wait = pauses()
    with anyio.fail_after(STEP_BOUND_S):
        while not (await handle.describe()).raw_description.pending_activities:
            await anyio.sleep(next(wait))
    await handle.cancel()


@activity.defn(name=RUN_TOOL_FIRST_ACTIVITY)
async def scripted_first_attempt(first: FirstAttempt) -> dict[str, Any]:
    """A first attempt in the workflow's first task: ends, fails, or hands off its tool to be adopted."""
    call = first.round
    if call.tool in ("slow", "hang"):
        attempt = f"{call.tool}/{call.task_id}/{call.round}"
        return {HANDED_OFF: {"queue": activity.info().task_queue, "attempt": attempt}}
    if call.tool == "flaky":
        raise ApplicationError("connection reset")  # retryable: the round runs again as an activity
    return await scripted_tool(call)


@activity.defn(name=ADOPT_TOOL_ACTIVITY)
async def scripted_adoption(adoption: Adoption) -> dict[str, Any]:
    """The adopted attempt: a slow tool ends, a hanging one runs until cancelled; `stop` stops it."""
    if adoption.stop:
        return {}
    if adoption.attempt.startswith("hang"):
        while True:
            activity.heartbeat()
            await asyncio.sleep(0.1)
    return _complete("adopted")


async def _nothing(handle: WorkflowHandle[Any, Any]) -> None:
    return None


Drive = Callable[[WorkflowHandle[Any, Any]], Awaitable[None]]

# path -> (tool behaviour, TTL, what the client does while it runs)
PATHS: dict[str, tuple[str, int | None, Drive]] = {
    "completed": ("complete", 60_000, _nothing),
    "multi_round_input": ("multi_round", 60_000, lambda h: _answer_each_round(h, 2)),
    "request_input_midway": ("midway", 60_000, lambda h: _answer_each_round(h, 1)),
    "cancel": ("hang", 60_000, _cancel_while_running),
    "ttl_expiry": ("hang", 1500, _nothing),
    "tool_failure": ("fail", 60_000, _nothing),
    "retried_attempt": ("flaky", None, _nothing),
    "feed_input_rounds": ("multi_round", 60_000, lambda h: _answer_each_round(h, 2)),
    "feed_cancel": ("hang", 60_000, _cancel_while_running),
    "feed_rounds_with_deadline": ("multi_round", 60_000, lambda h: _answer_each_round(h, 2)),
    "feed_announced_rounds": ("multi_round", 60_000, lambda h: _answer_each_round(h, 2)),
    "settled_completed": ("complete", 60_000, _nothing),
    "settled_input_rounds": ("multi_round", 60_000, lambda h: _answer_each_round(h, 2)),
    "first_attempt_completed": ("complete", 60_000, _nothing),
    "first_attempt_input_rounds": ("multi_round", 60_000, lambda h: _answer_each_round(h, 2)),
    "first_attempt_failed": ("fail", 60_000, _nothing),
    "first_attempt_retried": ("flaky", 60_000, _nothing),
    "first_attempt_adopted": ("slow", 60_000, _nothing),
    "first_attempt_adopted_cancel": ("hang", 60_000, _cancel_while_running),
    "cancel_then_attempt_failed": ("fails_as_it_stops", 60_000, _cancel_while_running),
    "feed_rounds_never_listened": ("multi_round", 60_000, lambda h: _answer_each_round(h, 2)),
    "feed_rounds_joined_on_listen": ("multi_round", 60_000, lambda h: _join_then_answer_each_round(h, 2)),
}
FEED_PATHS = frozenset(
    {
        "feed_input_rounds",
        "feed_cancel",
        "feed_rounds_with_deadline",
        "feed_announced_rounds",
        "feed_rounds_never_listened",
        "feed_rounds_joined_on_listen",
    }
)
"""Paths of a task that publishes its transitions to the task feed (a front in feed mode started it)."""
FIRST_ATTEMPT_PATHS = frozenset(name for name in PATHS if name.startswith("first_attempt_"))
"""Paths of a task whose first attempt runs as a local activity in its first workflow task (`first_attempt_ms`),
as a front that answers the call within a budget starts it."""
SETTLED_PATHS = frozenset({"settled_completed", "settled_input_rounds"}) | {
    "first_attempt_completed",
    "first_attempt_input_rounds",
    "first_attempt_adopted",
}
"""Paths of a task started with its `settled` update (update-with-start), as a front that may answer the call
with the tool's result starts it: the update returns at the result, or at the first question."""


async def start_task(
    client: Client,
    task_queue: str,
    tool: str,
    *,
    id_prefix: str,
    ttl_ms: int | None = 60_000,
    arguments: dict[str, Any] | None = None,
    feed: bool = False,
    joined: bool = False,
    settled: bool = False,
    first_attempt_ms: int = 0,
) -> WorkflowHandle[Any, Any]:
    """Start a tool task as a front would, with the memo and search attributes it starts with (and its feed's
    shards first, for a task that may publish to them); `joined`: a feed task a listen names from its start (its
    join signal sent with the start); `settled`: with its `settled` update, waited for."""
    task = ToolTaskInput(
        task_id=str(uuid.uuid4()),
        tool=tool,
        arguments=arguments or {},
        meta=ENVELOPE,
        created_at_ms=int(time.time() * 1000),
        ttl_ms=ttl_ms,
        poll_interval_ms=500,
        owner=UNKEYED.owner_key("history-recorder"),
        activity=ActivityPolicy(heartbeat_timeout_s=5, maximum_attempts=3, initial_retry_interval_s=0.1),
        feed=feed,
        first_attempt_ms=first_attempt_ms,
    )
    if feed:
        await start_feed(client, task_queue)
    options: dict[str, Any] = {
        "id": f"{id_prefix}/{task.task_id}",
        "task_queue": task_queue,
        "task_timeout": WORKFLOW_TASK_TIMEOUT,
        "memo": {Memo.TASK_ID: task.task_id, Memo.TOOL: tool, Memo.OWNER: task.owner, Memo.STATUS: "working"},
        "search_attributes": start_attributes(tool=tool, owner=task.owner or ""),
    }
    if feed:
        options["memo"][Memo.FEED_SEQ] = FEED_JOINS_ON_LISTEN
    if joined:
        assert feed and not settled, "a task joins the feed only in feed mode; an update cannot go with a signal"
        options["start_signal"] = JOIN_FEED_SIGNAL
    if not settled:
        return await client.start_workflow(TOOL_TASK_WORKFLOW, task, **options)
    operation: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        TOOL_TASK_WORKFLOW, task, id_conflict_policy=WorkflowIDConflictPolicy.FAIL, **options
    )
    with anyio.fail_after(STEP_BOUND_S):
        answer: dict[str, Any] = await client.execute_update_with_start_workflow(  # pyright: ignore[reportUnknownMemberType]
            SETTLED_UPDATE, start_workflow_operation=operation, result_type=dict[str, Any]
        )
    assert answer["status"] in ("completed", "input_required"), answer
    return await operation.workflow_handle()


async def record(client: Client, name: str, task_queue: str) -> WorkflowHistory:
    """Run the task of path `name` to its end and return its history."""
    tool, ttl_ms, drive = PATHS[name]
    handle = await start_task(
        client,
        task_queue,
        tool,
        id_prefix=f"history/{name}",
        ttl_ms=ttl_ms,
        arguments={"path": name},
        feed=name in FEED_PATHS,
        settled=name in SETTLED_PATHS,
        first_attempt_ms=1000 if name in FIRST_ATTEMPT_PATHS else 0,
    )
    await drive(handle)
    # The result's long poll returns when the run closes, whichever way it does.
    with anyio.fail_after(STEP_BOUND_S), contextlib.suppress(WorkflowFailureError):
        await handle.result()
    return await handle.fetch_history()


SHARD_PATH = "feed_shard_continued"
"""A feed shard's first run: task transitions published to it, a front's long polls, and its continue-as-new."""
SHARD_INDEX_PATH = "feed_shard_indexed"
"""The same on code that keeps the shard's task index: the continue-as-new carries it (a patch marker before)."""
SHARD_UNUSED_PATH = "feed_shard_ended_unused"
"""A shard's ticks: one with a front's poll waiting (a tick item releases it), then one with nothing: it ends."""
SHARD_AGED_PATH = "feed_shard_continued_by_age"
"""A shard followed by a front, nothing published: tick items, and its continue-as-new after `max_run_s`."""
SHARD_PATHS = (SHARD_PATH, SHARD_INDEX_PATH, SHARD_UNUSED_PATH, SHARD_AGED_PATH)


async def record_shard(client: Client, task_queue: str) -> WorkflowHistory:
    """Publish to one shard and follow it until it continues as new; return the history of the run that did."""
    shard = await client.start_workflow(
        TASK_FEED_WORKFLOW,
        TaskFeedInput(shard=0, continue_after_events=40, retained_items=3),
        id=f"history/{SHARD_PATH}/{uuid.uuid4()}",
        task_queue=task_queue,
        task_timeout=WORKFLOW_TASK_TIMEOUT,
    )
    first_run = shard.first_execution_run_id or shard.result_run_id
    stream = WorkflowStreamClient.create(client, shard.id)
    converter = client.data_converter.payload_converter

    def entry(item: dict[str, Any]) -> PublishEntry:
        return PublishEntry(
            topic=TRANSITION_TOPIC, data=base64.b64encode(converter.to_payloads([item])[0].SerializeToString()).decode()
        )

    async def publish(seq: int) -> None:
        item = transition_item("history/task", seq, {Memo.STATUS: "working", Memo.FEED_SEQ: seq}, deadline=None)
        await shard.signal(STREAM_PUBLISH_SIGNAL, PublishInput(items=[entry(item)]))

    # Another task, opened and closed: the index takes it in and lets it go.
    opened = transition_item("history/done", 1, {Memo.STATUS: "input_required", Memo.FEED_SEQ: 1}, deadline=None)
    closed = transition_item("history/done", 2, {Memo.STATUS: "completed", Memo.FEED_SEQ: 2}, deadline=None)
    await shard.signal(STREAM_PUBLISH_SIGNAL, PublishInput(items=[entry(opened), entry(closed)]))
    await publish(1)
    seen = 0
    continued = False
    with anyio.fail_after(STEP_BOUND_S):
        while not continued:
            try:
                async for item in stream.subscribe(from_offset=seen, poll_cooldown=timedelta(0)):
                    seen = item.offset + 1
                    if (await shard.describe()).run_id != first_run:
                        continued = True
                        break
                    await publish(seen + 1)
                    if seen == 1:
                        await publish(seen + 2)  # two items in one poll's answer from here on
                else:
                    raise AssertionError("the shard's stream ended")
            except RPCError as error:
                # A workflow task that timed out on a starved machine refuses polls until Temporal's retry of
                # it completes: poll again from where the stream was.
                if error.status != RPCStatusCode.FAILED_PRECONDITION:
                    raise
                await anyio.sleep(0.2)
    await publish(seen + 3)  # lands on the next run, after the items carried over
    return await client.get_workflow_handle(shard.id, run_id=first_run).fetch_history()


async def record_shard_ticks(client: Client, task_queue: str, name: str) -> WorkflowHistory:
    """A shard on code that ends it once unused: followed, then not (`SHARD_UNUSED_PATH`), or until its run's
    age continues it as new (`SHARD_AGED_PATH`); the history of its first run."""
    aged = name == SHARD_AGED_PATH
    converter = client.data_converter.payload_converter
    opened = transition_item("history/done", 1, {Memo.STATUS: "input_required", Memo.FEED_SEQ: 1}, deadline=None)
    closed = transition_item("history/done", 2, {Memo.STATUS: "completed", Memo.FEED_SEQ: 2}, deadline=None)
    entries = [
        PublishEntry(
            topic=TRANSITION_TOPIC, data=base64.b64encode(converter.to_payloads([item])[0].SerializeToString()).decode()
        )
        for item in (opened, closed)
    ]
    shard = await client.start_workflow(
        TASK_FEED_WORKFLOW,
        TaskFeedInput(shard=0, tick_s=1.0, max_run_s=3.0 if aged else 600.0),
        id=f"history/{name}/{uuid.uuid4()}",
        task_queue=task_queue,
        task_timeout=WORKFLOW_TASK_TIMEOUT,
        run_timeout=timedelta(minutes=10),
        start_signal=STREAM_PUBLISH_SIGNAL,
        start_signal_args=[PublishInput(items=entries)],  # a task opened and closed: the index holds nothing
    )
    first_run = shard.first_execution_run_id or shard.result_run_id
    stream = WorkflowStreamClient.create(client, shard.id)
    ticks = 0
    with anyio.fail_after(STEP_BOUND_S):
        async for item in stream.subscribe(poll_cooldown=timedelta(0)):
            ticks += item.topic == TICK_TOPIC
            if ticks == 2 and not aged:
                break  # a front gone while its poll waits: the next tick releases that poll
            if aged and (await shard.describe()).run_id != first_run:
                break
        first = client.get_workflow_handle(shard.id, run_id=first_run)
        while (await first.describe()).status == WorkflowExecutionStatus.RUNNING:
            await anyio.sleep(0.2)
    if aged:
        await client.get_workflow_handle(shard.id).terminate("recorded")
    return await first.fetch_history()


async def start_feed(client: Client, task_queue: str) -> None:
    for shard in range(FEED_SHARDS):
        await client.start_workflow(
            TASK_FEED_WORKFLOW,
            TaskFeedInput(shard=shard),
            id=feed_workflow_id(task_queue, shard),
            task_queue=task_queue,
            task_timeout=WORKFLOW_TASK_TIMEOUT,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )


def worker(client: Client, task_queue: str) -> Worker:
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[*WORKFLOWS, TaskFeedWorkflow],
        activities=[scripted_tool, scripted_first_attempt, scripted_adoption],
        # Cached runs: with none cached, a run whose first attempt (a local activity) is in flight is evicted for
        # the next run's task, its attempt cancelled and replayed, and twenty runs at once take turns evicting each
        # other for minutes. Replay from the first event is what the replay test does with every history.
        workflow_runner=workflow_runner(),  # the project's sandbox, as `worker` runs them
        max_heartbeat_throttle_interval=timedelta(milliseconds=200),
        default_heartbeat_throttle_interval=timedelta(milliseconds=200),
    )


async def main(names: list[str]) -> None:
    from mcp_tasks_temporal.ops.dev.embedded_temporal import embedded_temporal
    from tests.processes import free_port

    async with embedded_temporal(state_dir=None, port=free_port(), ui_port=None) as temporal:
        client = await Client.connect(temporal.address)
        task_queue = f"histories-{uuid.uuid4()}"
        async with worker(client, task_queue):
            for name in names or [*PATHS, *SHARD_PATHS]:
                if name in (SHARD_UNUSED_PATH, SHARD_AGED_PATH):
                    history = await record_shard_ticks(client, task_queue, name)
                elif name in SHARD_PATHS:
                    history = await record_shard(client, task_queue)
                else:
                    history = await record(client, name, task_queue)
                (HERE / f"{name}.json").write_text(history.to_json())
                print(f"recorded {name}: {len(history.events)} events")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
