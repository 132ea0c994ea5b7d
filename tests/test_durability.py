"""State lives in Temporal: fronts and workers come and go, tasks do not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import Stack
from tests.processes import free_port
from tests.wire import HttpMcp, TaskCalls

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_task_survives_a_front_server_killed_mid_task(
    stack_factory: Any, stack: Stack, http: Any, gate: Path
) -> None:
    private: Stack = stack_factory()
    private.task_queue = stack.task_queue
    port = free_port()
    mcp = TaskCalls(HttpMcp(private.add_front(port=port), http))
    created = await mcp.start("gated", {"gate": str(gate)})
    await mcp.wait_for(created["taskId"], lambda t: t.get("statusMessage") is not None)
    private.fronts[0][0].kill()
    (gate / "release").write_text("1")
    mcp = TaskCalls(HttpMcp(private.add_front(port=port), http))
    done = await mcp.wait_for(created["taskId"])
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == f"released {gate.name}"
    assert (gate / "runs").read_text() == "1"


async def test_reads_answer_quickly_with_no_worker_running(stack_factory: Any, http: Any, gate: Path) -> None:
    private: Stack = stack_factory()
    worker = private.add_worker()
    # A short heartbeat timeout lets the lost attempt be retried soon after the worker comes back.
    mcp = TaskCalls(HttpMcp(private.add_front(extra=["--heartbeat-timeout", "2"]), http))
    finished = await mcp.start("double", {"x": 5})
    await mcp.wait_for(finished["taskId"])
    failed = await mcp.start("protocol_error", {})
    await mcp.wait_for(failed["taskId"])
    running = await mcp.start("gated", {"gate": str(gate)})
    await mcp.wait_for(running["taskId"], lambda t: t.get("statusMessage") is not None)
    worker.kill()

    # Every state is served from describe + memo + close event: no read may wait for a poller.
    with anyio.fail_after(3):
        completed = (await mcp.get(finished["taskId"])).result
        failure = (await mcp.get(failed["taskId"])).result
        working = (await mcp.get(running["taskId"])).result
    assert completed["status"] == "completed" and completed["result"]["structuredContent"] == {"value": 10}
    assert failure["status"] == "failed" and failure["error"]["code"] == -32042
    assert working["status"] == "working" and working["statusMessage"]

    # A cancel is acked with no worker too, and takes effect when one comes back.
    with anyio.fail_after(3):
        assert (await mcp.cancel(running["taskId"])).result["resultType"] == "complete"
    private.add_worker()
    cancelled = await mcp.wait_for(running["taskId"], timeout=30)
    assert cancelled["status"] == "cancelled"


async def test_task_created_with_no_worker_runs_when_one_starts(stack_factory: Any, http: Any) -> None:
    private: Stack = stack_factory()
    mcp = TaskCalls(HttpMcp(private.add_front(), http))
    created = await mcp.start("double", {"x": 7})
    with anyio.fail_after(3):
        assert (await mcp.get(created["taskId"])).result["status"] == "working"
    private.add_worker()
    done = await mcp.wait_for(created["taskId"])
    assert done["result"]["structuredContent"] == {"value": 14}
