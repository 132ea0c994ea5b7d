"""The same product over stdio: a `serve --transport stdio` child against the session's Temporal and worker."""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process

from tests.conftest import Stack
from tests.processes import CLI, FIXTURE_APP, REPO_ROOT, child_env
from tests.wire import EVERY_SERVED_VERSION, StdioMcp, TaskCalls, envelope

pytestmark = pytest.mark.anyio

EXTENSION_ID = "io.modelcontextprotocol/tasks"
EXIT_TIMEOUT = 10


@asynccontextmanager
async def stdio_front(stack: Stack, log_path: Path) -> AsyncGenerator[Process]:
    command = [
        *CLI,
        "serve",
        "--transport",
        "stdio",
        "--temporal",
        stack.temporal,
        "--task-queue",
        stack.task_queue,
        "--app",
        FIXTURE_APP,
    ]
    assert command[0] == sys.executable
    stderr_log = log_path.open("wb")
    process = await anyio.open_process(command, cwd=REPO_ROOT, env=child_env(), stderr=stderr_log)
    try:
        yield process
    finally:
        try:
            if process.stdin is not None:
                await process.stdin.aclose()
            with anyio.move_on_after(EXIT_TIMEOUT):
                await process.wait()
            if process.returncode is None:
                process.kill()
                with anyio.move_on_after(EXIT_TIMEOUT):
                    await process.wait()
        finally:
            await process.aclose()
            stderr_log.close()


@pytest.fixture(scope="module")
async def stdio(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[TaskCalls]:
    """One stdio session for the module's tests: each sends its own requests and reads only their replies."""
    async with stdio_front(stack, tmp_path_factory.mktemp("stdio") / "stdio-front.log") as process:
        yield TaskCalls(StdioMcp(process))


@pytest.fixture
async def own_stdio_process(stack: Stack, tmp_path: Path) -> AsyncIterator[Process]:
    """A stdio child of the test's own, for a test that ends it."""
    async with stdio_front(stack, tmp_path / "stdio-front.log") as process:
        yield process


async def test_discover_over_stdio_advertises_the_extension(stdio: TaskCalls) -> None:
    reply = await stdio.client.request("server/discover", {})
    assert reply.status is None
    result = reply.result
    assert result["resultType"] == "complete"
    assert result["capabilities"]["extensions"][EXTENSION_ID] == {}
    assert "tasks" not in result["capabilities"]
    assert result["supportedVersions"] == EVERY_SERVED_VERSION


async def test_an_unsupported_revision_over_stdio_is_told_every_revision_served(stdio: TaskCalls) -> None:
    await stdio.client.request("server/discover", {})  # the first request opens a 2026-07-28 connection
    meta = {**envelope(), "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    reply = await stdio.client.request("tools/list", {"_meta": meta})
    assert reply.error["code"] == -32022
    assert reply.error["data"] == {"supported": EVERY_SERVED_VERSION, "requested": "2099-01-01"}


async def test_task_over_stdio_is_created_and_polled_to_completed_with_its_structured_result(stdio: TaskCalls) -> None:
    created = await stdio.start("double", {"x": 21})
    assert created["status"] == "working"
    task = await stdio.wait_for(created["taskId"])
    assert task["status"] == "completed"
    assert task["resultType"] == "complete"
    assert task["result"]["structuredContent"] == {"value": 42}


async def test_json_rpc_error_over_stdio_fails_the_task_with_that_error(stdio: TaskCalls) -> None:
    created = await stdio.start("protocol_error", {"code": -32042, "message": "backend refused"})
    task = await stdio.wait_for(created["taskId"])
    assert task["status"] == "failed"
    assert task["error"] == {"code": -32042, "message": "backend refused", "data": {"retryable": False}}
    assert "result" not in task


async def test_required_task_tool_over_stdio_without_the_extension_is_missing_capability(stdio: TaskCalls) -> None:
    reply = await stdio.call_tool("needs_task", {"x": 1}, tasks=False)
    assert reply.error["code"] == -32021
    assert reply.error["data"] == {"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}}


async def test_optional_task_tool_over_stdio_without_the_extension_answers_synchronously(stdio: TaskCalls) -> None:
    reply = await stdio.call_tool("double", {"x": 3}, tasks=False)
    assert reply.result["resultType"] == "complete"
    assert "taskId" not in reply.result
    assert reply.result["structuredContent"] == {"value": 6}


async def test_cancel_over_stdio_settles_a_running_task_cancelled(stdio: TaskCalls, gate: Path) -> None:
    created = await stdio.start("gated", {"gate": str(gate)})
    await stdio.wait_for(created["taskId"], lambda t: t.get("statusMessage") is not None)
    ack = await stdio.cancel(created["taskId"])
    assert ack.result["resultType"] == "complete"
    assert not {"taskId", "status", "result", "error", "inputRequests"} & ack.result.keys()
    task = await stdio.wait_for(created["taskId"], timeout=20)
    assert task["status"] == "cancelled"
    assert (gate / "cancelled").exists(), "the tool itself must have been cancelled"


async def test_tasks_get_over_stdio_of_an_unknown_id_is_invalid_params(stdio: TaskCalls) -> None:
    reply = await stdio.get("00000000-0000-4000-8000-000000000000")
    assert reply.error["code"] == -32602


async def test_task_methods_over_stdio_without_the_extension_are_missing_capability(stdio: TaskCalls) -> None:
    reply = await stdio.client.request("tasks/get", {"taskId": "00000000-0000-4000-8000-000000000000"}, tasks=False)
    assert reply.error["code"] == -32021


async def test_closing_stdin_ends_the_stdio_server_cleanly(own_stdio_process: Process) -> None:
    stdio = TaskCalls(StdioMcp(own_stdio_process))
    assert (await stdio.client.request("server/discover", {})).result["resultType"] == "complete"
    assert own_stdio_process.stdin is not None
    await own_stdio_process.stdin.aclose()
    with anyio.fail_after(EXIT_TIMEOUT):
        assert await own_stdio_process.wait() == 0
