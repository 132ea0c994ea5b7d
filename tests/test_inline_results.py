"""A task-capable `tools/call` whose tool ends within its budget is answered with the tool's result, in the call.

In-process front and worker of tests/inline_app.py (the extension's default budget, and tools with their own).
The run of a call answered in the call is a task like any other in Temporal's history; past the budget, or at the
tool's first question, the call is answered with the task; a call left before its answer cancels its task.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest
from mcp.client.session import ClientRequestContext
from mcp_types import CallToolResult, ElicitRequestParams, ElicitResult, TextContent
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus

from mcp_tasks_temporal.client import TaskHandle, TasksClient, TasksClientExtension
from mcp_tasks_temporal.front.gateway.queue_watch import waiting_for_a_worker
from mcp_tasks_temporal.temporal.workflows.tool_task import SETTLED_RESULT_MAX_CHARS
from tests.app_workers import new_task_queue
from tests.conftest import OpenFront
from tests.front_app import InProcessFront
from tests.polling import pauses
from tests.wire import TaskCalls, base_headers, envelope, request_message

pytestmark = pytest.mark.anyio

WAIT = 30.0
ELICITATION: dict[str, Any] = {"elicitation": {}}


@pytest.fixture(scope="module")
def app_spec() -> str:
    return "tests.inline_app:app"


async def runs_of(client: Client, task_queue: str, tool: str, status: str, count: int = 1) -> list[str]:
    """The workflow IDs of the `count` runs of `tool` on `task_queue` in `status`, once visibility shows them."""
    query = f"TaskQueue = '{task_queue}' AND McpTool = '{tool}' AND ExecutionStatus = '{status}'"
    wait = pauses()
    with anyio.fail_after(WAIT):
        while True:
            found = [execution.id async for execution in client.list_workflows(query)]
            if len(found) >= count:
                assert len(found) == count, found
                return found
            await anyio.sleep(next(wait))


async def until_file(path: Path) -> None:
    wait = pauses()
    with anyio.fail_after(WAIT):
        while not path.exists():
            await anyio.sleep(next(wait))


async def test_a_quick_tool_is_answered_with_its_result_and_its_run_stays_in_the_history(
    front_mcp: TaskCalls, app_client: Client, app_queue: str
) -> None:
    answer = (await front_mcp.call_tool("double", {"x": 21})).result
    plain = (await front_mcp.call_tool("double", {"x": 21}, tasks=False)).result

    assert answer["resultType"] == "complete" and "taskId" not in answer
    assert answer["structuredContent"] == {"value": 42} == plain["structuredContent"]
    assert answer["content"] == plain["content"] and answer["isError"] is False
    # Two runs: the plain call's, which its front held, and the task-capable call's, which answered the call.
    answered_by_update: list[dict[str, Any]] = []
    for workflow_id in await runs_of(app_client, app_queue, "double", "Completed", count=2):
        handle = app_client.get_workflow_handle(workflow_id)
        events = [event.event_type async for event in handle.fetch_history_events()]
        if EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED in events:
            answered_by_update.append(await handle.result())
    assert [result["structuredContent"] for result in answered_by_update] == [{"value": 42}]


async def test_a_tool_with_a_budget_of_0_is_answered_with_its_task(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("double_as_task", {"x": 2})
    done = await front_mcp.wait_for(created["taskId"])
    assert done["status"] == "completed" and done["result"]["structuredContent"] == {"value": 4}


async def test_a_front_capped_at_0_answers_every_call_with_its_task(open_front: OpenFront) -> None:
    capped = await open_front(max_inline_budget_ms=0)
    async with capped.http() as http:
        mcp = capped.calls(http)
        created = await mcp.start("double", {"x": 3})
        assert (await mcp.wait_for(created["taskId"]))["result"]["structuredContent"] == {"value": 6}


async def test_a_tool_error_is_a_result_and_a_protocol_error_an_error_as_in_a_synchronous_call(
    front_mcp: TaskCalls,
) -> None:
    crashed = (await front_mcp.call_tool("crashes")).result
    assert crashed["resultType"] == "complete" and crashed["isError"] is True
    assert crashed["content"] == (await front_mcp.call_tool("crashes", tasks=False)).result["content"]

    refused = (await front_mcp.call_tool("refuses", {"code": -32042})).error
    assert refused["code"] == -32042
    assert refused == (await front_mcp.call_tool("refuses", {"code": -32042}, tasks=False)).error


async def test_a_result_too_large_to_come_twice_is_read_from_the_close_event(front_mcp: TaskCalls) -> None:
    chars = SETTLED_RESULT_MAX_CHARS * 2
    answer = (await front_mcp.call_tool("long_answer", {"chars": chars})).result
    assert answer["resultType"] == "complete"
    assert answer["content"] == [{"type": "text", "text": "x" * chars}]


async def test_a_tool_that_outlasts_its_budget_is_answered_with_its_task(front_mcp: TaskCalls, gate: Path) -> None:
    created = await front_mcp.start("outlasts_budget", {"gate": str(gate)})
    assert created["status"] == "working"
    assert (await front_mcp.get(created["taskId"])).result["status"] == "working"
    (gate / "release").write_text("1")
    done = await front_mcp.wait_for(created["taskId"])
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == f"released {gate.name}"


@pytest.mark.parametrize("tool", ["asks_first", "asks_midway"])
async def test_a_question_within_the_budget_answers_the_call_with_the_task_at_once(
    front_mcp: TaskCalls, tool: str
) -> None:
    # The budget (a minute) is longer than this bound: only the question can have ended the wait.
    with anyio.fail_after(WAIT):
        created = await front_mcp.start(tool, {"filename": "a.txt"}, capabilities=ELICITATION)
    assert created["status"] == "input_required"
    asked = (await front_mcp.get(created["taskId"])).result
    assert asked["status"] == "input_required"
    (key, _), *_ = asked["inputRequests"].items()
    _ = (await front_mcp.update(created["taskId"], {key: {"action": "accept", "content": {"confirm": True}}})).result
    assert (await front_mcp.wait_for(created["taskId"]))["status"] == "completed"


async def test_a_call_left_before_its_answer_cancels_its_task(
    front: InProcessFront, app_client: Client, app_queue: str, gate: Path
) -> None:
    message = request_message(7, "tools/call", {"name": "held", "arguments": {"gate": str(gate)}, "_meta": envelope()})
    async with front.http() as http, anyio.create_task_group() as group:

        async def call() -> None:
            await http.post(front.url, content=json.dumps(message), headers=base_headers("tools/call", "held"))

        group.start_soon(call)
        await until_file(gate / "started")
        group.cancel_scope.cancel()
    await until_file(gate / "cancelled")
    [workflow_id] = await runs_of(app_client, app_queue, "held", "Canceled")
    assert (await app_client.get_workflow_handle(workflow_id).describe()).status == WorkflowExecutionStatus.CANCELED


async def test_with_no_worker_the_call_is_answered_with_its_task_once_the_budget_passes(
    open_front: OpenFront, app_client: Client
) -> None:
    queue = new_task_queue("no-worker")
    idle = await open_front(task_queue=queue)
    async with idle.http() as http:
        mcp = idle.calls(http)
        created = await mcp.start("double", {"x": 5})
        try:
            # It says why it waits, as a task created with a budget of 0 does.
            assert (created["status"], created.get("statusMessage")) == ("working", waiting_for_a_worker(queue))
            task: dict[str, Any] = (await mcp.get(created["taskId"])).result
            assert task["status"] == "working"
        finally:
            _ = (await mcp.cancel(created["taskId"])).result


async def test_the_tasks_client_takes_either_answer(front: InProcessFront, gate: Path) -> None:
    async def confirm(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"confirm": True})

    async with (
        front.http2() as http,
        TasksClient(front.url, journal=None, http_client=http, elicitation_callback=confirm) as client,
    ):
        quick = await client.start_tool("double", {"x": 4})
        assert isinstance(quick, CallToolResult) and quick.structured_content == {"value": 8}
        with anyio.fail_after(WAIT):
            asked = await client.call_tool("asks_first", {"filename": "b.txt"})
            later = await client.start_tool("outlasts_budget", {"gate": str(gate)})
            assert isinstance(later, TaskHandle)
            (gate / "release").write_text("1")
            released = await later.result()
    assert [c.text for c in asked.content if isinstance(c, TextContent)] == ["Deleted b.txt"]
    assert [c.text for c in released.content if isinstance(c, TextContent)] == [f"released {gate.name}"]


async def test_a_call_cancelled_with_notifications_cancelled_before_its_answer_cancels_its_task(
    front: InProcessFront, gate: Path
) -> None:
    # In memory, as over stdio: the client's cancel of its request reaches the server as `notifications/cancelled`.
    async with mcp.Client(front.app, extensions=[TasksClientExtension()]) as client:
        async with anyio.create_task_group() as group:

            async def call() -> None:
                await client.call_tool("held", {"gate": str(gate)})

            group.start_soon(call)
            await until_file(gate / "started")
            group.cancel_scope.cancel()
        await until_file(gate / "cancelled")
