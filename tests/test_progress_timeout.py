"""`progress_timeout`: a silent tool loses its attempt and Temporal retries it; a talking or waiting one runs on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from mcp_tasks_temporal.contract import TOOL_HUNG
from mcp_tasks_temporal.ids import workflow_id
from tests.wire import TaskCalls

pytestmark = pytest.mark.anyio

ELICIT: dict[str, Any] = {"elicitation": {}}


async def activity_started_events(temporal_client: Client, task_id: str) -> list[Any]:
    handle = temporal_client.get_workflow_handle(workflow_id(task_id, None))
    return [
        event.activity_task_started_event_attributes
        async for event in handle.fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]


async def test_a_silent_tool_loses_its_attempt_and_the_next_attempt_finishes(
    mcp: TaskCalls, temporal_client: Client, gate: Path
) -> None:
    created = await mcp.start("hangs_once", {"gate": str(gate)})
    done = await mcp.wait_for(created["taskId"], timeout=90)
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "finished on attempt 2"
    assert (gate / "attempts").read_text() == "2"
    [started] = await activity_started_events(temporal_client, created["taskId"])
    assert started.attempt == 2
    assert started.last_failure.application_failure_info.type == TOOL_HUNG


async def test_a_tool_that_keeps_reporting_runs_past_its_progress_timeout(mcp: TaskCalls, gate: Path) -> None:
    created = await mcp.start("slow_but_talking", {"gate": str(gate), "seconds": 4.0})
    done = await mcp.wait_for(created["taskId"], timeout=90)
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "finished on attempt 1"


async def test_waiting_for_an_answer_is_not_hanging(mcp: TaskCalls, gate: Path) -> None:
    created = await mcp.start("asks_and_waits", {"gate": str(gate)}, capabilities=ELICIT)
    task_id = created["taskId"]
    waiting = await mcp.wait_for(task_id, ["input_required"])
    # Longer than the tool's 1 s progress timeout: the time under test, not a wait for state.
    await anyio.sleep(2.5)
    still = (await mcp.get(task_id)).result
    assert still["status"] == "input_required", still
    [key] = waiting["inputRequests"]
    await mcp.update(task_id, {key: {"action": "accept", "content": {"approve": True}}})
    done = await mcp.wait_for(task_id)
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "accept"
    assert (gate / "attempts").read_text() == "1"
