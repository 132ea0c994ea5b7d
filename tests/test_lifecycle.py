"""The task lifecycle over Streamable HTTP: the front and its worker in the test process, on the session's Temporal."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client as McpClient
from temporalio.client import Client

from mcp_tasks_temporal.client import TasksClientExtension
from mcp_tasks_temporal.temporal.contract import to_iso
from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.clock import ManualClock
from tests.conftest import OpenFront
from tests.front_app import InProcessFront
from tests.wire import TaskCalls

pytestmark = pytest.mark.anyio

ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")


async def test_declaring_client_gets_a_flat_create_task_result_that_resolves_at_once(front_mcp: TaskCalls) -> None:
    reply = await front_mcp.call_tool("double", {"x": 21})
    created = reply.result
    assert reply.status == 200
    assert created["resultType"] == "task"
    assert created["status"] == "working"
    assert ISO.match(created["createdAt"]) and ISO.match(created["lastUpdatedAt"])
    assert created["ttlMs"] == 86_400_000 and created["pollIntervalMs"] == 250
    assert not {"task", "result", "error", "inputRequests", "requestState", "ttl", "pollInterval"} & created.keys()
    got = await front_mcp.get(created["taskId"])
    assert got.status == 200 and got.result["taskId"] == created["taskId"]
    assert got.result["resultType"] == "complete"


async def test_completed_task_result_is_exactly_the_synchronous_call_tool_result(front_mcp: TaskCalls) -> None:
    synchronous = (await front_mcp.call_tool("double", {"x": 4}, tasks=False)).result
    created = await front_mcp.start("double", {"x": 4})
    task = await front_mcp.wait_for(created["taskId"])
    assert task["status"] == "completed"
    assert task["result"] == synchronous
    assert task["result"]["structuredContent"] == {"value": 8}
    assert "io.modelcontextprotocol/related-task" not in task["result"].get("_meta", {})
    assert not {"error", "inputRequests"} & task.keys()


async def test_the_sdks_own_client_in_memory_gets_a_task_tools_result_as_its_own(front: InProcessFront) -> None:
    # The app itself, without HTTP: what the MCP SDK's `Client` and the tasks extension make of a task.
    async with McpClient(front.app, extensions=[TasksClientExtension()]) as client:
        result = await client.call_tool("double", {"x": 4})
    assert result.structured_content == {"value": 8}
    assert result.is_error is False


async def test_tool_exception_completes_with_is_error(front_mcp: TaskCalls) -> None:
    synchronous = (await front_mcp.call_tool("tool_error", {"reason": "no such branch"}, tasks=False)).result
    created = await front_mcp.start("tool_error", {"reason": "no such branch"})
    task = await front_mcp.wait_for(created["taskId"])
    assert task["status"] == "completed"
    assert task["result"]["isError"] is True
    assert task["result"] == synchronous


async def test_json_rpc_error_fails_the_task_with_that_error(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("protocol_error", {"code": -32042, "message": "backend refused"})
    task = await front_mcp.wait_for(created["taskId"])
    assert task["status"] == "failed"
    assert task["error"] == {"code": -32042, "message": "backend refused", "data": {"retryable": False}}
    assert task["statusMessage"]
    assert "result" not in task


async def test_progress_shows_as_status_message_while_the_tool_runs(front_mcp: TaskCalls, gate: Path) -> None:
    created = await front_mcp.start("gated", {"gate": str(gate)})
    task = await front_mcp.wait_for(
        created["taskId"], lambda t: t.get("statusMessage") == "waiting for the release file"
    )
    assert task["status"] == "working"
    assert task["lastUpdatedAt"] >= created["createdAt"]
    (gate / "release").write_text("1")
    task = await front_mcp.wait_for(created["taskId"])
    assert task["status"] == "completed"
    assert task["result"]["content"][0]["text"] == f"released {gate.name}"


async def test_a_completed_task_was_last_updated_when_it_completed_and_shows_no_step(
    front_mcp: TaskCalls, gate: Path, temporal_client: Client
) -> None:
    created = await front_mcp.start("gated", {"gate": str(gate)})
    task_id = created["taskId"]
    working = await front_mcp.wait_for(task_id, lambda t: t.get("statusMessage") == "waiting for the release file")
    (gate / "release").write_text("1")
    done = await front_mcp.wait_for(task_id)
    assert done["status"] == "completed"
    assert "statusMessage" not in done, "the last step's status line no longer describes the task"
    description = await temporal_client.get_workflow_handle(UNKEYED.workflow_id(task_id, None)).describe()
    closed = description.raw_description.workflow_execution_info.close_time
    assert done["lastUpdatedAt"] == to_iso(closed.ToMilliseconds())
    assert done["lastUpdatedAt"] > working["lastUpdatedAt"]


async def test_cancel_reaches_the_running_tool_and_settles_cancelled(front_mcp: TaskCalls, gate: Path) -> None:
    created = await front_mcp.start("gated", {"gate": str(gate)})
    await front_mcp.wait_for(created["taskId"], lambda t: t.get("statusMessage") is not None)
    ack = await front_mcp.cancel(created["taskId"])
    assert ack.status == 200
    assert set(ack.result) <= {"resultType", "_meta"} and ack.result["resultType"] == "complete"
    task = await front_mcp.wait_for(created["taskId"], timeout=20)
    assert task["status"] == "cancelled"
    assert not {"result", "error", "inputRequests"} & task.keys()
    assert (gate / "cancelled").exists(), "the tool itself must have been cancelled"
    assert not (gate / "runs").exists()


async def test_cancel_of_a_terminal_task_is_an_empty_ack_and_changes_nothing(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("double", {"x": 1})
    done = await front_mcp.wait_for(created["taskId"])
    ack = await front_mcp.cancel(created["taskId"])
    assert ack.status == 200 and ack.result["resultType"] == "complete"
    assert set(ack.result) <= {"resultType", "_meta"}
    assert (await front_mcp.get(created["taskId"])).result == {
        **done,
        "_meta": (await front_mcp.get(created["taskId"])).result["_meta"],
    }


async def test_cancel_after_the_work_finished_keeps_the_result(front_mcp: TaskCalls, gate: Path) -> None:
    created = await front_mcp.start("gated", {"gate": str(gate)})
    (gate / "release").write_text("1")
    await front_mcp.wait_for(created["taskId"])
    await front_mcp.cancel(created["taskId"])
    task = (await front_mcp.get(created["taskId"])).result
    assert task["status"] == "completed"


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
@pytest.mark.parametrize("task_id", ["00000000-0000-4000-8000-000000000000", "not-a-task", "../../etc"])
async def test_unknown_task_ids_are_invalid_params(front_mcp: TaskCalls, method: str, task_id: str) -> None:
    params: dict[str, Any] = {"taskId": task_id}
    if method == "tasks/update":
        params["inputResponses"] = {}
    reply = await front_mcp.client.request(method, params)
    assert reply.error["code"] == -32602


async def test_task_ids_are_distinct_uuid4s(front_mcp: TaskCalls) -> None:
    import uuid

    ids = {(await front_mcp.start("double", {"x": n}))["taskId"] for n in range(5)}
    assert len(ids) == 5
    assert all(uuid.UUID(i).version == 4 for i in ids)


async def test_update_is_acked_even_for_keys_that_are_not_outstanding(front_mcp: TaskCalls, gate: Path) -> None:
    created = await front_mcp.start("gated", {"gate": str(gate)})
    ack = await front_mcp.update(created["taskId"], {"unknown-key": {"ignored": True}})
    assert ack.status == 200 and set(ack.result) <= {"resultType", "_meta"}
    assert ack.result["resultType"] == "complete"
    assert (await front_mcp.get(created["taskId"])).result["status"] == "working"
    (gate / "release").write_text("1")
    await front_mcp.wait_for(created["taskId"])
    ack = await front_mcp.update(created["taskId"], {"late": {"action": "accept"}})
    assert ack.result["resultType"] == "complete"


async def test_unlimited_ttl_is_null_on_the_wire(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("unlimited", {"x": 3})
    assert created["ttlMs"] is None
    assert (await front_mcp.wait_for(created["taskId"]))["ttlMs"] is None


async def test_task_is_served_until_its_ttl_then_gone_and_its_work_stopped(open_front: OpenFront, gate: Path) -> None:
    clock = ManualClock()
    front = await open_front(clock=clock)
    async with front.http() as http:
        mcp = front.calls(http)
        created = await mcp.start("short_lived", {"gate": str(gate)})
        ttl = timedelta(milliseconds=created["ttlMs"])
        assert ttl == timedelta(seconds=2)
        assert datetime.fromisoformat(created["createdAt"]).timestamp() * 1000 == clock()
        clock.advance(ttl - timedelta(milliseconds=1))
        assert (await mcp.get(created["taskId"])).result["status"] == "working", "gone before its TTL ran out"
        clock.advance(timedelta(milliseconds=1))
        assert (await mcp.get(created["taskId"])).error["code"] == -32602
        assert (await mcp.cancel(created["taskId"])).error["code"] == -32602
        assert (await mcp.update(created["taskId"], {})).error["code"] == -32602
    # The workflow's own TTL timer (Temporal's clock, no faster while the tool runs) stops the work.
    with anyio.fail_after(20):
        while not (gate / "cancelled").exists():
            await anyio.sleep(0.05)
