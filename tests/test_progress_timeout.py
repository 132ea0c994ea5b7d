"""`progress_timeout`: a silent tool loses its attempt and Temporal retries it; a talking or waiting one runs on.

The front and its worker run in the test process. A progress timeout is a heartbeat timeout of a running
activity, which Temporal measures on its own clock and does not skip: the fixture tools' are a second or two.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.failure.v1 import Failure
from temporalio.client import Client

from mcp_tasks_temporal.temporal.contract import TOOL_HUNG
from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.wire import TaskCalls

pytestmark = pytest.mark.anyio

ELICIT: dict[str, Any] = {"elicitation": {}}
HANGS_ONCE_PROGRESS_TIMEOUT_S = 1.5
"""`hangs_once`'s progress timeout; the bound on noticing its silence adds what a loaded machine takes to retry."""


async def activity_started_events(temporal_client: Client, task_id: str) -> list[Any]:
    handle = temporal_client.get_workflow_handle(UNKEYED.workflow_id(task_id, None))
    return [
        event.activity_task_started_event_attributes
        async for event in handle.fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]


async def until_file(path: Path, *, timeout: float = 30) -> None:
    with anyio.fail_after(timeout):
        while not path.exists():
            await anyio.sleep(0.05)


async def first_attempt_failure(temporal_client: Client, task_id: str, *, within: float) -> Failure:
    """How the tool's first attempt ended, read from Temporal as soon as it has ended.

    A retried attempt leaves no event until the activity closes, so the failure is read from
    the pending activity while the retry runs, or from the closing attempt's started event.
    """
    handle = temporal_client.get_workflow_handle(UNKEYED.workflow_id(task_id, None))
    with anyio.move_on_after(within):
        while True:
            for pending in (await handle.describe()).raw_description.pending_activities:
                if pending.attempt > 1 or pending.HasField("last_failure"):
                    return pending.last_failure
            for started in await activity_started_events(temporal_client, task_id):
                if started.attempt > 1:
                    return started.last_failure
            await anyio.sleep(0.1)
    pytest.fail(f"the silent attempt was still running {within:g} s after it went silent: no watchdog stopped it")


async def test_a_silent_tool_loses_its_attempt_and_the_next_attempt_finishes(
    front_mcp: TaskCalls, temporal_client: Client, gate: Path
) -> None:
    created = await front_mcp.start("hangs_once", {"gate": str(gate)})
    await until_file(gate / "attempts")  # attempt 1 has started, reported once, and gone silent
    failure = await first_attempt_failure(temporal_client, created["taskId"], within=HANGS_ONCE_PROGRESS_TIMEOUT_S + 10)
    assert failure.application_failure_info.type == TOOL_HUNG
    done = await front_mcp.wait_for(created["taskId"])
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "finished on attempt 2"
    assert (gate / "attempts").read_text() == "2"
    [started] = await activity_started_events(temporal_client, created["taskId"])
    assert started.attempt == 2
    assert started.last_failure.application_failure_info.type == TOOL_HUNG


async def test_a_tool_that_keeps_reporting_runs_past_its_progress_timeout(front_mcp: TaskCalls, gate: Path) -> None:
    created = await front_mcp.start("slow_but_talking", {"gate": str(gate), "seconds": 2.5})
    done = await front_mcp.wait_for(created["taskId"], timeout=30)
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "finished on attempt 1"


async def test_waiting_for_an_answer_is_not_hanging(front_mcp: TaskCalls, gate: Path) -> None:
    created = await front_mcp.start("asks_and_waits", {"gate": str(gate)}, capabilities=ELICIT)
    task_id = created["taskId"]
    waiting = await front_mcp.wait_for(task_id, ["input_required"])
    # Twice the tool's 1 s progress timeout: the time under test, not a wait for state.
    await anyio.sleep(2.0)
    still = (await front_mcp.get(task_id)).result
    assert still["status"] == "input_required", still
    [key] = waiting["inputRequests"]
    await front_mcp.update(task_id, {key: {"action": "accept", "content": {"approve": True}}})
    done = await front_mcp.wait_for(task_id)
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "accept"
    assert (gate / "attempts").read_text() == "1"
