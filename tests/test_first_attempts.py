"""A task-capable call's first attempt runs as a local activity inside its workflow's first task.

In-process front and worker of tests/inline_app.py. A tool that ends within the local phase closes its run in
that one workflow task; one still running is adopted, on the same worker, by an ordinary activity: it runs once,
its status line shows, and a cancel stops it as any running tool's does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

from mcp_tasks_temporal.temporal.contract import ADOPT_TOOL_ACTIVITY, FEED_JOINS_ON_LISTEN, RUN_TOOL_ACTIVITY, Memo
from tests.conftest import OpenApp
from tests.test_inline_results import runs_of, until_file
from tests.test_push_feed import Listener
from tests.wire import TaskCalls

pytestmark = pytest.mark.anyio

WAIT = 30.0


@pytest.fixture(scope="module")
def app_spec() -> str:
    return "tests.inline_app:app"


async def history(client: Client, workflow_id: str) -> list[HistoryEvent]:
    return [event async for event in client.get_workflow_handle(workflow_id).fetch_history_events()]


def scheduled_activities(events: list[HistoryEvent]) -> list[str]:
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


async def memo_statuses(client: Client, workflow_id: str) -> list[str]:
    """Every status the run wrote into its memo, in order."""
    converter = client.data_converter.payload_converter
    return [
        converter.from_payload(event.workflow_properties_modified_event_attributes.upserted_memo.fields[Memo.STATUS])
        for event in await history(client, workflow_id)
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED
        and Memo.STATUS in event.workflow_properties_modified_event_attributes.upserted_memo.fields
    ]


def signals_sent(events: list[HistoryEvent]) -> int:
    """Signals the run sent (a task's only ones are its publishes to its feed shard)."""
    sent = EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED
    return sum(event.event_type == sent for event in events)


def runs(gate: Path) -> int:
    return len((gate / "runs").read_text().splitlines())


async def test_a_quick_tool_closes_its_run_in_one_workflow_task_with_no_activity(
    front_mcp: TaskCalls, app_client: Client, app_queue: str
) -> None:
    answer = (await front_mcp.call_tool("double", {"x": 4})).result
    assert answer["resultType"] == "complete" and answer["structuredContent"] == {"value": 8}

    ran_in_the_call: list[list[EventType.ValueType]] = []
    for workflow_id in await runs_of(app_client, app_queue, "double", "Completed"):
        events = await history(app_client, workflow_id)
        types = [event.event_type for event in events]
        if EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED in types:
            ran_in_the_call.append(types)
    [types] = ran_in_the_call
    assert types.count(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) == 1
    assert EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED not in types
    assert EventType.EVENT_TYPE_MARKER_RECORDED in types  # the local activity's result


async def test_a_tool_with_a_budget_of_0_runs_in_an_activity_as_before(
    front_mcp: TaskCalls, app_client: Client, app_queue: str
) -> None:
    created = await front_mcp.start("double_as_task", {"x": 1})
    assert (await front_mcp.wait_for(created["taskId"]))["status"] == "completed"
    [workflow_id] = await runs_of(app_client, app_queue, "double_as_task", "Completed")
    assert scheduled_activities(await history(app_client, workflow_id)) == [RUN_TOOL_ACTIVITY]


async def test_a_tool_that_outlives_its_local_phase_is_adopted_runs_once_and_shows_its_status(
    front_mcp: TaskCalls, app_client: Client, app_queue: str, gate: Path
) -> None:
    created = await front_mcp.start("counted", {"gate": str(gate)})
    assert created["status"] == "working"
    # Set while the tool ran locally, where nothing heartbeats: the adopting activity sends it.
    shown = await front_mcp.wait_for(created["taskId"], lambda task: bool(task.get("statusMessage")), timeout=WAIT)
    assert shown["status"] == "working" and shown["statusMessage"] == "waiting for the release file"
    (gate / "release").write_text("1")
    done = await front_mcp.wait_for(created["taskId"])
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == f"released {gate.name}"
    assert runs(gate) == 1
    [workflow_id] = await runs_of(app_client, app_queue, "counted", "Completed")
    assert scheduled_activities(await history(app_client, workflow_id)) == [ADOPT_TOOL_ACTIVITY]


async def test_a_cancel_stops_an_adopted_tool_which_ran_once(front_mcp: TaskCalls, gate: Path) -> None:
    created = await front_mcp.start("counted", {"gate": str(gate)})
    await front_mcp.wait_for(created["taskId"], lambda task: bool(task.get("statusMessage")), timeout=WAIT)
    assert (await front_mcp.cancel(created["taskId"])).result is not None
    await until_file(gate / "cancelled")
    assert (await front_mcp.wait_for(created["taskId"]))["status"] == "cancelled"
    assert runs(gate) == 1


async def test_a_first_attempt_that_hangs_is_retried_as_an_activity_within_the_budget(
    front_mcp: TaskCalls, app_client: Client, app_queue: str, gate: Path
) -> None:
    answer = (await front_mcp.call_tool("silent_once", {"gate": str(gate)})).result
    assert answer["resultType"] == "complete" and answer["content"][0]["text"] == "answered on a later attempt"
    assert runs(gate) == 2
    [workflow_id] = await runs_of(app_client, app_queue, "silent_once", "Completed")
    assert scheduled_activities(await history(app_client, workflow_id)) == [RUN_TOOL_ACTIVITY]


@pytest.mark.parametrize("tool", ["quiet_activity", "quiet_adopted"])
async def test_a_silent_tool_outlives_a_heartbeat_timeout_shorter_than_the_keep_alive_on_its_one_attempt(
    front_mcp: TaskCalls, gate: Path, tool: str
) -> None:
    # Two heartbeat timeouts (1 s) of silence; one attempt only, so a lost one fails the task.
    created = await front_mcp.start(tool, {"gate": str(gate), "seconds": 2.0})
    done = await front_mcp.wait_for(created["taskId"], timeout=WAIT)
    assert done["status"] == "completed", done
    assert runs(gate) == 1


async def test_a_tool_whose_attempt_is_lost_as_a_cancel_stops_it_ends_cancelled_and_never_shows_failed(
    front_mcp: TaskCalls, app_client: Client, app_queue: str, gate: Path
) -> None:
    created = await front_mcp.start("stops_late", {"gate": str(gate)})
    await until_file(gate / "started")
    assert (await front_mcp.cancel(created["taskId"])).result is not None
    try:
        assert (await front_mcp.wait_for(created["taskId"], timeout=WAIT))["status"] == "cancelled"
    finally:
        (gate / "cleaned").write_text("1")
    [workflow_id] = await runs_of(app_client, app_queue, "stops_late", "Canceled")
    # A terminal status is never left: `failed` on the way to `cancelled` would be one.
    assert "failed" not in await memo_statuses(app_client, workflow_id)


async def test_on_the_feed_only_a_task_a_listen_names_publishes_and_it_joins_with_its_state_so_far(
    open_app: OpenApp, app_client: Client, tmp_path: Path
) -> None:
    front = await open_app("tests.inline_app:app", push="feed")
    queue = front.gateway.task_queue
    listened, quiet = tmp_path / "listened", tmp_path / "quiet"
    listened.mkdir(), quiet.mkdir()
    async with front.http() as http, anyio.create_task_group() as group:
        mcp = front.calls(http)
        answer = (await mcp.call_tool("double", {"x": 4})).result
        assert answer["resultType"] == "complete" and answer["structuredContent"] == {"value": 8}
        ids = {}
        for gate in (listened, quiet):
            ids[gate] = (await mcp.start("counted", {"gate": str(gate)}))["taskId"]
            await mcp.wait_for(ids[gate], lambda task: bool(task.get("statusMessage")), timeout=WAIT)
        listener = Listener()
        group.start_soon(listener.run, front.url, http, [ids[listened]])
        await listener.until(lambda: bool(listener.seen), timeout=WAIT)
        for gate in (listened, quiet):
            (gate / "release").write_text("1")
            assert (await mcp.wait_for(ids[gate]))["status"] == "completed"
        await listener.until(lambda: listener.statuses(ids[listened])[-1:] == [("completed", 0)], timeout=WAIT)
        group.cancel_scope.cancel()
    assert listener.statuses(ids[listened]) == [("working", 0), ("completed", 0)]

    async def published(tool: str, task_id: str | None = None) -> tuple[int, Any]:
        [run] = [
            wid
            for wid in await runs_of(app_client, queue, tool, "Completed", 2 if task_id else 1)
            if task_id is None or wid.endswith(task_id)
        ]
        memo = await (await app_client.get_workflow_handle(run).describe()).memo()
        return signals_sent(await history(app_client, run)), memo.get(Memo.FEED_SEQ)

    # Answered in the call, or never listened to: nothing on the feed.
    assert await published("double") == (0, FEED_JOINS_ON_LISTEN)
    assert await published("counted", ids[quiet]) == (0, FEED_JOINS_ON_LISTEN)
    # Named by a listen as it ran: its state then as item 0, then its completion.
    sent, seq = await published("counted", ids[listened])
    assert sent >= 2 and seq >= 1
