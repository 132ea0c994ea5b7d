"""A 2025-11-25 client on stdio: its plain calls of workflow tools judged by its own revision, and cancelled by it.

The front runs `serve_stdio` in the test process, on a pair of pipes (`tests.stdio_front`), with the workflow
fixture app's workers beside it: the bytes are a stdio client's, and a failure leaves its traceback here.
On stdio a call is not held by the 2025-era tasks layer (that needs an HTTP stream to carry questions), so a
workflow tool's plain call is a task only the front knows, held open until it ends: a question it asks
cannot be answered inside the call at that revision, and a `notifications/cancelled` for the call stops it.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from temporalio.client import Client

from mcp_tasks_temporal.front.calls import plain_calls
from mcp_tasks_temporal.front.calls.held_calls import CANCEL_BOUND_S
from mcp_tasks_temporal.temporal.contract import MISSING_CAPABILITY_CODE
from tests.front_app import fresh_app
from tests.held_tasks import the_running_task, until_cancel_requested
from tests.polling import until_file
from tests.stdio_front import stdio_front
from tests.wire import StdioMcp

pytestmark = pytest.mark.anyio

LEGACY_VERSION = "2025-11-25"
WAIT_S = 10


@pytest.fixture(scope="module")
def app_spec() -> str:
    return "tests.workflow_fixture_app:app"


class FollowedCalls:
    """How many plain calls the front has stopped following: a call it stopped following has had its cancel."""

    def __init__(self) -> None:
        self.ended = 0

    def settled(self) -> bool:
        return self.ended > 0


@pytest.fixture
def followed_calls(monkeypatch: pytest.MonkeyPatch) -> FollowedCalls:
    """Counts each end of the front's `follow_call`, which makes the cancel of a call that ends without its result
    before it returns: a task not asked to cancel by then never will be."""
    seen = FollowedCalls()
    follow = plain_calls.follow_call

    async def counted(*args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return await follow(*args, **kwargs)
        finally:
            seen.ended += 1

    monkeypatch.setattr(plain_calls, "follow_call", counted)
    return seen


@pytest.fixture
async def stdio(app_client: Client, app_spec: str, app_queue: str) -> AsyncIterator[StdioMcp]:
    async with stdio_front(fresh_app(app_spec), app_client, task_queue=app_queue) as client:
        yield client


async def handshake(stdio: StdioMcp, capabilities: dict[str, Any]) -> None:
    """`initialize` at 2025-11-25, then `notifications/initialized`: the session every later request is of."""
    params = {
        "protocolVersion": LEGACY_VERSION,
        "capabilities": capabilities,
        "clientInfo": {"name": "stdio-host", "version": "1"},
    }
    reply = await stdio.post({"jsonrpc": "2.0", "id": stdio.next_id(), "method": "initialize", "params": params})
    assert reply.result["protocolVersion"] == LEGACY_VERSION, reply.body
    await stdio.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def plain_call(stdio: StdioMcp, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A 2025-11-25 `tools/call`: no `_meta` envelope, no `task`."""
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": stdio.next_id(), "method": "tools/call", "params": params}


@pytest.mark.parametrize("capabilities", [{}, {"elicitation": {}}], ids=["without elicitation", "with elicitation"])
async def test_a_2025_plain_call_whose_workflow_asks_gets_the_refusal_of_its_own_revision(
    stdio: StdioMcp, capabilities: dict[str, Any]
) -> None:
    """Not `input_required` (a 2026-07-28 answer) and no `alternativeCapabilities` (a 2026 extension it cannot have)."""
    await handshake(stdio, capabilities)
    with anyio.fail_after(WAIT_S):
        reply = await stdio.post(plain_call(stdio, "questions", {"kinds": ["elicitation"]}))
    assert "result" not in reply.body, reply.body
    assert reply.error["code"] == MISSING_CAPABILITY_CODE, reply.body
    assert reply.error["data"] == {"requiredCapabilities": {"elicitation": {}}}, reply.body


async def test_notifications_cancelled_stops_a_2025_plain_workflow_tool_call(
    stdio: StdioMcp, followed_calls: FollowedCalls, app_client: Client, app_queue: str, tmp_path: Path
) -> None:
    effects = tmp_path / f"effects-{uuid.uuid4().hex[:8]}"
    effects.mkdir()
    await handshake(stdio, {})
    call = plain_call(stdio, "fail", {"mode": "hang", "effects": str(effects)})
    await stdio.send(call)
    await until_file(effects / "ran-hang", WAIT_S)
    task = await the_running_task(app_client, app_queue, "fail")
    await stdio.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": call["id"]}})
    # Requests are taken in the order they come: once the ping is answered, the cancel has reached the call,
    # and the front cancels its task within its own bound for that, before it stops following the call.
    assert (await stdio.post({"jsonrpc": "2.0", "id": stdio.next_id(), "method": "ping"})).result == {}
    await until_cancel_requested(task, CANCEL_BOUND_S, settled=followed_calls.settled)
    await until_file(effects / "cancelled-hang", WAIT_S)
