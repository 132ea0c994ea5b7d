"""Runs that Temporal ends without the workflow's say: terminated by an operator, or past a run deadline.

No workflow code runs on the way out, so nothing recorded why; such a task
must read `failed`, never `cancelled` (which means the client asked), on
`tasks/get` and on the listen stream alike. Through the in-process front and its workers.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from temporalio.client import (
    Client,
    Interceptor,
    OutboundInterceptor,
    StartWorkflowInput,
    WorkflowExecutionStatus,
    WorkflowHandle,
)

from mcp_tasks_temporal.front.gateway import TemporalTaskGateway
from mcp_tasks_temporal.temporal.contract import Memo
from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.conftest import OpenFront
from tests.front_app import InProcessFront
from tests.test_push import collect_until_terminal, http_listen, listen_message
from tests.tool_tasks import tool_task
from tests.wire import TERMINAL, envelope

pytestmark = pytest.mark.anyio

INTERNAL_ERROR = -32603
WAIT = 30


class _RunDeadline(Interceptor):
    """Gives every workflow this client starts an execution timeout, as a deployment's client may."""

    def __init__(self, deadline: timedelta) -> None:
        self.deadline = deadline

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _DeadlineOutbound(next, self.deadline)


class _DeadlineOutbound(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, deadline: timedelta) -> None:
        super().__init__(next)
        self.deadline = deadline

    async def start_workflow(self, input: StartWorkflowInput) -> WorkflowHandle[Any, Any]:
        return await super().start_workflow(dataclasses.replace(input, execution_timeout=self.deadline))


async def watch_until_stopped(
    front: InProcessFront, http: httpx.AsyncClient, task_id: str, stop: Any
) -> list[dict[str, Any]]:
    """Listen to the task, run `stop` once its first view arrived, and return the task notifications.

    Not right after the ack: a front may send a task's first view a little later, read then. A first
    view that is already the last (a deadline that ran out first) ends the watch.
    """
    seen: list[dict[str, Any]] = []
    with anyio.fail_after(WAIT):
        async with http_listen(front.url, http, listen_message([task_id])) as frames:
            ack = await anext(frames)
            assert ack["params"]["notifications"]["taskIds"] == [task_id]
            async for frame in frames:
                seen.append(frame)
                if frame.get("method") == "notifications/tasks":
                    break
            await stop()
            if seen[-1]["params"]["status"] not in TERMINAL:
                await collect_until_terminal(frames, task_id, seen)
    return [frame["params"] for frame in seen if frame.get("method") == "notifications/tasks"]


def assert_failed_by_the_service(task: dict[str, Any]) -> None:
    assert task["status"] == "failed", task
    assert task["error"]["code"] == INTERNAL_ERROR
    assert task["statusMessage"]
    assert not {"result", "inputRequests"} & task.keys()


def without_envelope(task: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in task.items() if key not in ("_meta", "resultType")}


# A task on the task feed publishes nothing as it is stopped so: its front learns it from visibility instead.
PUSH_MODES = pytest.mark.parametrize("push", ["poll", "feed"])


async def on_the_feed(client: Client, task_id: str) -> bool:
    """Whether the task's run published to the feed (its memo keeps the number, closed or not)."""
    memo = await (await client.get_workflow_handle(UNKEYED.workflow_id(task_id, None)).describe()).memo()
    return isinstance(memo.get(Memo.FEED_SEQ), int)


@PUSH_MODES
async def test_a_terminated_task_reads_failed_on_get_and_push_and_its_tool_stops(
    open_front: OpenFront, temporal_client: Client, gate: Path, push: str
) -> None:
    front = await open_front(push=push)
    async with front.http() as http:
        await _terminated(front, http, temporal_client, gate, push)


async def _terminated(
    front: InProcessFront, front_http: httpx.AsyncClient, temporal_client: Client, gate: Path, push: str
) -> None:
    mcp = front.calls(front_http)
    task_id = (await mcp.start("gated", {"gate": str(gate)}))["taskId"]
    await mcp.wait_for(task_id, lambda t: t.get("statusMessage") is not None, timeout=WAIT)
    assert await on_the_feed(temporal_client, task_id) == (push == "feed")
    handle = temporal_client.get_workflow_handle(UNKEYED.workflow_id(task_id, None))

    async def terminate() -> None:
        await handle.terminate(reason="stopped by an operator")

    notes = await watch_until_stopped(front, front_http, task_id, terminate)
    assert (await handle.describe()).status == WorkflowExecutionStatus.TERMINATED
    assert notes[0]["status"] == "working"
    assert_failed_by_the_service(notes[-1])
    got = (await mcp.get(task_id)).result
    assert_failed_by_the_service(got)
    assert without_envelope(notes[-1]) == without_envelope(got)
    with anyio.fail_after(WAIT):  # the next heartbeat finds the run gone and cancels the tool
        while not (gate / "cancelled").exists():
            await anyio.sleep(0.1)
    assert not (gate / "runs").exists()


@PUSH_MODES
async def test_a_task_past_its_run_deadline_reads_failed_on_get_and_push(
    open_front: OpenFront, app_queue: str, temporal_client: Client, gate: Path, push: str
) -> None:
    front = await open_front(push=push)
    async with front.http() as http:
        await _past_its_deadline(front, http, app_queue, temporal_client, gate, push)


async def _past_its_deadline(
    front: InProcessFront,
    front_http: httpx.AsyncClient,
    app_queue: str,
    temporal_client: Client,
    gate: Path,
    push: str,
) -> None:
    front_mcp = front.calls(front_http)
    # Real time: the tool's activity runs throughout, so the run's clock cannot skip. Short, then.
    deadline = timedelta(seconds=1.5)
    config = temporal_client.config()
    config["interceptors"] = [_RunDeadline(deadline)]
    gateway = TemporalTaskGateway(Client(**config), task_queue=app_queue)
    if push == "feed":
        gateway.feed_runs = front.gateway.feed_runs  # started as the feed front starts its tasks
    # Its TTL (600 s) is far beyond the deadline: the TTL must not be what ends it.
    task = tool_task("gated", {"gate": str(gate)}, meta=envelope())
    await gateway.create(task, None)
    handle = temporal_client.get_workflow_handle(UNKEYED.workflow_id(task.task_id, None))

    async def run_out() -> None:
        pass  # the deadline ends the run by itself

    notes = await watch_until_stopped(front, front_http, task.task_id, run_out)
    assert await on_the_feed(temporal_client, task.task_id) == (push == "feed")
    assert (await handle.describe()).status == WorkflowExecutionStatus.TIMED_OUT
    assert_failed_by_the_service(notes[-1])
    got = (await front_mcp.get(task.task_id)).result
    assert_failed_by_the_service(got)
    assert without_envelope(notes[-1]) == without_envelope(got)
