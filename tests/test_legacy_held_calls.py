"""A plain `tools/call` held open for its questions (a 2025-11-25 host without tasks) whose client goes away.

The client never learnt a task ID, so nothing else would ever end the task: the
front that held the call cancels it. The task is found through the question's
ID, which names it. Through the in-process front and its workers.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from mcp_tasks_temporal.front.legacy.legacy_tasks import parse_answer_id
from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.front_app import InProcessFront
from tests.legacy_wire import LegacyMcp

pytestmark = pytest.mark.anyio

WAIT_S = 10
CANCEL_S = 3


async def test_a_held_call_whose_client_goes_away_cancels_its_task(
    front: InProcessFront, front_http: httpx.AsyncClient, temporal_client: Client
) -> None:
    # A host that declared `elicitation` but no tasks at its handshake, echoing its session ID.
    host = await LegacyMcp(front.url, front_http).handshake({"elicitation": {}})
    task_id: str | None = None
    async with host.stream("tools/call", {"name": "numbered_steps", "arguments": {"steps": 1, "pause": 0}}) as frames:
        with anyio.fail_after(WAIT_S):
            async for frame in frames:
                if frame.get("method") == "elicitation/create":
                    parsed = parse_answer_id(frame["id"])
                    assert parsed is not None, frame
                    task_id = parsed[0]
                    break  # leaves without answering: the stream closes
                assert "result" not in frame and "error" not in frame, frame
    assert task_id is not None
    # The front notices the closed stream at once and asks Temporal to cancel the task.
    history = temporal_client.get_workflow_handle(UNKEYED.workflow_id(task_id, None))
    with anyio.fail_after(CANCEL_S):
        while not await cancel_requested(history):
            await anyio.sleep(0.05)
    # The tool waits inside its activity; the cancel reaches it with the next keepalive heartbeat.
    seen: dict[str, Any] = {}
    with anyio.fail_after(WAIT_S):
        while seen.get("status") != "cancelled":
            seen = (await host.request("tasks/get", {"taskId": task_id})).result
            assert seen["status"] in ("working", "input_required", "cancelled"), seen
            await anyio.sleep(0.1)


async def cancel_requested(handle: WorkflowHandle[Any, Any]) -> bool:
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
            return True
    return False
