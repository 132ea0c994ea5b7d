"""`notifications/cancelled` from a 2025-11-25 client over HTTP: it stops the plain call it names, never a task.

A plain call's client never learns the ID of the task that serves it, so it cancels the call by its request ID,
and any front names the task from the session and request IDs. That holds for a call the 2025-era layer holds
open (a task tool's) and for a workflow tool no client may hold as a task (policy `never`). A call created as a
task (`params.task`) belongs to the client, who holds its ID: a `notifications/cancelled` for that request must
leave it running. The front and the worker run in the test process; each check waits for the front's own cancel
to have run (a `gateway.cancel`, taken or refused), then reads the task's history: a wrong outcome fails then.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from temporalio.client import Client

from mcp_tasks_temporal.front.calls.held_calls import CANCEL_BOUND_S
from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.front_app import InProcessFront
from tests.held_tasks import cancel_requested, the_running_task
from tests.legacy_wire import LegacyMcp, legacy_headers
from tests.polling import until_file
from tests.wire import TERMINAL, Reply, sse_frames

pytestmark = pytest.mark.anyio

WAIT_S = 10


@pytest.fixture(scope="module")
def app_spec() -> str:
    return "tests.plain_calls_app:app"


class FrontCancels:
    """The cancels the front asks of Temporal, each counted once it is done (taken, or refused: no such task)."""

    def __init__(self) -> None:
        self.done = 0
        self._more = anyio.Event()

    def finished(self) -> None:
        self.done += 1
        self._more.set()
        self._more = anyio.Event()

    async def until_done(self, count: int = 1) -> None:
        """Until the front has made `count` cancels: a notification's cancel runs after its POST is answered."""
        with anyio.fail_after(CANCEL_BOUND_S):
            while self.done < count:
                await self._more.wait()


@pytest.fixture
def front_cancels(front: InProcessFront, monkeypatch: pytest.MonkeyPatch) -> FrontCancels:
    seen = FrontCancels()
    cancel = front.gateway.cancel

    async def counted(task_id: str, principal: str | None, *, reason: str = "") -> None:
        try:
            await cancel(task_id, principal, reason=reason)
        finally:
            seen.finished()

    monkeypatch.setattr(front.gateway, "cancel", counted)
    return seen


@pytest.fixture
async def host(front: InProcessFront, front_http: httpx.AsyncClient) -> LegacyMcp:
    """A 2025-11-25 host that declared no tasks, echoing the session ID its `initialize` was given."""
    return await LegacyMcp(front.url, front_http).handshake()


def headers(host: LegacyMcp) -> dict[str, str]:
    return {**legacy_headers(), **host.extra_headers}


def tools_call(request_id: int, name: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, **extra}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def cancel_notification(host: LegacyMcp, request_id: int) -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
    response = await host.http.post(host.url, content=json.dumps(note), headers=headers(host))
    assert response.status_code == 202, response.text


@asynccontextmanager
async def held(host: LegacyMcp, call: dict[str, Any]) -> AsyncGenerator[AsyncIterator[dict[str, Any]]]:
    """The call sent, its streamed answer open while the block runs."""
    async with host.http.stream("POST", host.url, content=json.dumps(call), headers=headers(host)) as response:
        assert response.status_code == 200, await response.aread()
        yield sse_frames(response)


async def outcome(frames: AsyncIterator[dict[str, Any]]) -> dict[str, Any]:
    with anyio.fail_after(WAIT_S):
        async for frame in frames:
            if "result" in frame or "error" in frame:
                return frame
    raise AssertionError("the call's stream ended without its answer")


async def test_notifications_cancelled_stops_a_held_2025_call_of_a_task_tool(
    host: LegacyMcp, front_cancels: FrontCancels, app_client: Client, app_queue: str, gate: Path
) -> None:
    call = tools_call(41, "stepped", {"gate": str(gate)})
    async with held(host, call) as frames:
        await until_file(gate / "started", WAIT_S)
        task = await the_running_task(app_client, app_queue, "stepped")
        await cancel_notification(host, call["id"])
        await front_cancels.until_done()
        assert await cancel_requested(task), "the front's cancel for the call missed the call's task"
        assert "error" in await outcome(frames)
    await until_file(gate / "cancelled", WAIT_S)


async def test_notifications_cancelled_stops_a_2025_call_of_a_workflow_tool_no_client_holds_as_a_task(
    host: LegacyMcp, front_cancels: FrontCancels, app_client: Client, app_queue: str, gate: Path
) -> None:
    call = tools_call(42, "fail_called_only", {"mode": "hang", "effects": str(gate)})
    async with held(host, call) as frames:
        await until_file(gate / "ran-hang", WAIT_S)
        task = await the_running_task(app_client, app_queue, "fail_called_only")
        await cancel_notification(host, call["id"])
        await front_cancels.until_done()
        assert await cancel_requested(task), "the front's cancel for the call missed the call's task"
        assert "error" in await outcome(frames)
    await until_file(gate / "cancelled-hang", WAIT_S)


async def test_notifications_cancelled_leaves_a_task_created_as_a_task_running(
    host: LegacyMcp, front_cancels: FrontCancels, app_client: Client, gate: Path
) -> None:
    call = tools_call(43, "stepped", {"gate": str(gate)}, task={"ttl": 60_000})
    created = Reply.of(await host.http.post(host.url, content=json.dumps(call), headers=headers(host)))
    task_id = created.result["task"]["taskId"]
    await until_file(gate / "started", WAIT_S)
    await cancel_notification(host, call["id"])
    await front_cancels.until_done()
    task = app_client.get_workflow_handle(UNKEYED.workflow_id(task_id, None))
    assert not await cancel_requested(task), "a notification for the creating request cancelled the client's task"
    for step in (1, 2, 3):
        (gate / f"next-{step}").write_text("1")
    with anyio.fail_after(WAIT_S):
        while (seen := (await host.request("tasks/get", {"taskId": task_id})).result)["status"] not in TERMINAL:
            await anyio.sleep(0.1)
    assert seen["status"] == "completed", seen
    assert not (gate / "cancelled").exists()
