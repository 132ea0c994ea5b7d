"""`ToolTaskWorkflow` on the real dev server with stand-in activities, plus replay (determinism) checks.

Workers here run with `max_cached_workflows=0`, so every workflow task replays
the whole history: a non-deterministic change fails these tests at once.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from temporalio import activity
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.testing import TimeSkipper
from temporalio.worker import Replayer, Worker

from mcp_tasks_temporal.temporal.contract import (
    INPUT_SIGNAL,
    JSONRPC_ERROR,
    RUN_TOOL_ACTIVITY,
    STATE_QUERY,
    TASK_EXPIRED,
    TOOL_TASK_WORKFLOW,
    ActivityPolicy,
    Memo,
    ToolRoundInput,
    ToolTaskInput,
    to_iso,
)
from mcp_tasks_temporal.temporal.sandbox import workflow_runner
from mcp_tasks_temporal.temporal.workflows import ToolTaskWorkflow
from tests.histories.record import memo_status
from tests.polling import pauses

pytestmark = pytest.mark.anyio

HISTORIES = Path(__file__).parent / "histories"
QUESTION = {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {"type": "object"}}}
RUN_TIMEOUT = 30
STATE_BOUND_S = 10
"""Bound on waiting for a run to close: a run stuck on a bug fails its test instead of hanging the suite."""


@activity.defn(name=RUN_TOOL_ACTIVITY)
async def scripted_tool(call: ToolRoundInput) -> dict[str, Any]:
    """Asks one question when the arguments say so, fails or hangs on request, else echoes what it got."""
    behaviour = call.arguments.get("behaviour", "echo")
    if behaviour == "fail":
        error = {"code": -32050, "message": "nope"}
        raise ApplicationError("nope", error, type=JSONRPC_ERROR, non_retryable=True)
    if behaviour == "hang":
        while True:
            activity.heartbeat()
            await asyncio.sleep(0.1)
    if (behaviour == "ask" and call.round == 0) or (behaviour == "ask_twice" and call.round < 2):
        state = f"round-{call.round + 1}"
        return {"resultType": "input_required", "inputRequests": {"name": QUESTION}, "requestState": state}
    text = json.dumps({"responses": call.input_responses, "state": call.request_state, "round": call.round})
    return {"resultType": "complete", "content": [{"type": "text", "text": text}], "isError": False}


def task_input(*, created_at_ms: int | None = None, **arguments: Any) -> ToolTaskInput:
    return ToolTaskInput(
        task_id=str(uuid.uuid4()),
        tool="scripted",
        arguments=arguments,
        meta={},
        created_at_ms=created_at_ms if created_at_ms is not None else int(time.time() * 1000),
        ttl_ms=arguments.pop("ttl_ms", 60_000),
        poll_interval_ms=100,
        activity=ActivityPolicy(heartbeat_timeout_s=2, maximum_attempts=1),
    )


@pytest.fixture
async def worker(temporal_client: Client) -> AsyncIterator[Worker]:
    async with Worker(
        temporal_client,
        task_queue=f"wf-{uuid.uuid4()}",
        workflows=[ToolTaskWorkflow],
        activities=[scripted_tool],
        max_cached_workflows=0,
        workflow_runner=workflow_runner(),
        max_heartbeat_throttle_interval=timedelta(milliseconds=200),
        default_heartbeat_throttle_interval=timedelta(milliseconds=200),
    ) as running:
        yield running


async def start(client: Client, worker: Worker, task: ToolTaskInput) -> WorkflowHandle[Any, Any]:
    return await client.start_workflow(
        TOOL_TASK_WORKFLOW, task, id=f"wf-test/{task.task_id}", task_queue=worker.task_queue
    )


async def outcome(handle: WorkflowHandle[Any, Any]) -> dict[str, Any]:
    """The run's result, waited for with a bound."""
    with anyio.fail_after(RUN_TIMEOUT):
        return await handle.result()


async def test_completed_run_returns_the_tool_result_and_mirrors_state(temporal_client: Client, worker: Worker) -> None:
    # Created well before the run starts, so a transition that forgot to stamp its time shows.
    created_at_ms = int(time.time() * 1000) - 5_000
    handle = await start(temporal_client, worker, task_input(created_at_ms=created_at_ms))
    result = await outcome(handle)
    assert result["resultType"] == "complete"
    memo = await memo_status(handle, "completed", STATE_BOUND_S)
    description = await handle.describe()
    assert description.close_time is not None
    started_ms, closed_ms = (int(t.timestamp() * 1000) for t in (description.start_time, description.close_time))
    assert started_ms <= memo[Memo.LAST_UPDATED_AT] <= closed_ms, "stamped when the run completed, in workflow time"
    state = await handle.query(STATE_QUERY)
    assert state["status"] == "completed" and state["result"] == result
    assert state["lastUpdatedAt"] == to_iso(memo[Memo.LAST_UPDATED_AT])


async def test_question_waits_for_the_signal_then_the_next_round_gets_answer_and_state(
    temporal_client: Client, worker: Worker
) -> None:
    handle = await start(temporal_client, worker, task_input(behaviour="ask"))
    memo = await memo_status(handle, "input_required", STATE_BOUND_S)
    # The client answers under the key the tool asked under.
    assert memo[Memo.INPUT_REQUESTS] == {"name": QUESTION}
    assert (await handle.query(STATE_QUERY))["inputRequests"] == {"name": QUESTION}
    await handle.signal(INPUT_SIGNAL, {"unknown": {"x": 1}})
    await handle.signal(INPUT_SIGNAL, {"name": {"action": "accept", "content": {"name": "Ada"}}})
    await handle.signal(INPUT_SIGNAL, {"name": {"action": "decline"}})
    result = await outcome(handle)
    echoed = json.loads(result["content"][0]["text"])
    assert echoed == {
        "responses": {"name": {"action": "accept", "content": {"name": "Ada"}}},
        "state": "round-1",
        "round": 1,
    }


async def test_an_answer_to_a_question_not_yet_asked_is_ignored(temporal_client: Client, worker: Worker) -> None:
    # Straight to the workflow: the front server drops such keys before they could reach it.
    handle = await start(temporal_client, worker, task_input(behaviour="ask_twice"))
    await memo_status(handle, "input_required", STATE_BOUND_S)
    await handle.signal(INPUT_SIGNAL, {"r1/name": {"action": "accept", "content": {"name": "Too early"}}})
    state = await handle.query(STATE_QUERY)  # taken in or not yet, it must not touch what is outstanding
    assert state["status"] == "input_required" and state["inputRequests"] == {"name": QUESTION}
    await handle.signal(INPUT_SIGNAL, {"name": {"action": "accept", "content": {"name": "First"}}})
    memo = await memo_status(
        handle, "input_required", STATE_BOUND_S, until=lambda m: "r1/name" in (m[Memo.INPUT_REQUESTS] or {})
    )
    # The tool's key again, so the second round's namespace keeps it unique; its early answer is forgotten.
    assert memo[Memo.INPUT_REQUESTS] == {"r1/name": QUESTION}
    await handle.signal(INPUT_SIGNAL, {"r1/name": {"action": "accept", "content": {"name": "Second"}}})
    echoed = json.loads((await outcome(handle))["content"][0]["text"])
    assert echoed == {
        "responses": {"name": {"action": "accept", "content": {"name": "Second"}}},
        "state": "round-2",
        "round": 2,
    }


async def test_json_rpc_error_closes_the_run_failed_with_the_error(temporal_client: Client, worker: Worker) -> None:
    handle = await start(temporal_client, worker, task_input(behaviour="fail"))
    with pytest.raises(WorkflowFailureError) as failure:
        await outcome(handle)
    assert isinstance(failure.value.cause, ApplicationError) and failure.value.cause.type == JSONRPC_ERROR
    memo = await memo_status(handle, "failed", STATE_BOUND_S)
    assert memo[Memo.ERROR] == {"code": -32050, "message": "nope"}


async def test_ttl_timer_stops_the_work_and_closes_the_run(temporal_client: Client, worker: Worker) -> None:
    handle = await start(temporal_client, worker, task_input(behaviour="hang", ttl_ms=1500))
    with pytest.raises(WorkflowFailureError) as failure:
        await outcome(handle)
    assert isinstance(failure.value.cause, ApplicationError) and failure.value.cause.type == TASK_EXPIRED
    assert (await handle.describe()).status == WorkflowExecutionStatus.FAILED


async def test_cancel_of_a_running_tool_closes_the_run_cancelled(temporal_client: Client, worker: Worker) -> None:
    handle = await start(temporal_client, worker, task_input(behaviour="hang"))
    wait = pauses()
    with anyio.fail_after(10):
        while not (await handle.describe()).raw_description.pending_activities:
            await anyio.sleep(next(wait))
    await handle.cancel()
    wait = pauses()
    with anyio.fail_after(20):
        while (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
            await anyio.sleep(next(wait))
    assert (await handle.describe()).status == WorkflowExecutionStatus.CANCELED
    assert (await memo_status(handle, "cancelled", STATE_BOUND_S))[Memo.STATUS] == "cancelled"


async def test_fresh_history_replays_deterministically(temporal_client: Client, worker: Worker) -> None:
    handle = await start(temporal_client, worker, task_input(behaviour="ask"))
    await memo_status(handle, "input_required", STATE_BOUND_S)
    await handle.signal(INPUT_SIGNAL, {"name": {"action": "accept", "content": {"name": "Lu"}}})
    await outcome(handle)
    history = await handle.fetch_history()
    await Replayer(workflows=[ToolTaskWorkflow], workflow_runner=workflow_runner()).replay_workflow(history)
    if os.environ.get("MCP_TASKS_WRITE_HISTORIES"):
        # input_round.json stays as recorded before the tool-keys patch: both must keep replaying.
        HISTORIES.mkdir(exist_ok=True)
        (HISTORIES / "input_round_tool_keys.json").write_text(history.to_json())


async def test_an_unanswered_question_expires_at_a_ttl_of_a_day_under_time_skipping(
    time_skipper: TimeSkipper,
) -> None:
    day = timedelta(days=1)
    async with Worker(
        time_skipper.client,
        task_queue=f"wf-skip-{uuid.uuid4()}",
        workflows=[ToolTaskWorkflow],
        activities=[scripted_tool],
        max_cached_workflows=0,
        workflow_runner=workflow_runner(),
    ) as worker:
        handle = await start(
            time_skipper.client, worker, task_input(behaviour="ask", ttl_ms=int(day / timedelta(milliseconds=1)))
        )
        with pytest.raises(WorkflowFailureError) as failure:
            await outcome(handle)  # the clock jumps while the question waits: a day of workflow time
    assert isinstance(failure.value.cause, ApplicationError) and failure.value.cause.type == TASK_EXPIRED
    described = await handle.describe()
    assert described.close_time is not None
    waited = described.close_time - described.start_time
    assert day - timedelta(minutes=1) <= waited < day + timedelta(hours=1), waited
    asked = [
        event
        for event in (await handle.fetch_history()).events
        if event.HasField("activity_task_completed_event_attributes")
    ]
    assert len(asked) == 1, "the tool asked once, then nothing ran until the TTL"
    statuses = await _memo_statuses(time_skipper.client, handle)
    assert statuses[-2:] == ["input_required", "failed"], statuses


async def _memo_statuses(client: Client, handle: WorkflowHandle[Any, Any]) -> list[str]:
    """Each status the run wrote into its memo, in history order."""
    statuses: list[str] = []
    for event in (await handle.fetch_history()).events:
        if event.HasField("workflow_properties_modified_event_attributes"):
            fields = event.workflow_properties_modified_event_attributes.upserted_memo.fields
            if Memo.STATUS in fields:
                statuses.append(client.data_converter.payload_converter.from_payload(fields[Memo.STATUS], str))
    return statuses
