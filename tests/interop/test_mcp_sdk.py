"""The `mcp` SDK's own `Client` with `TasksClientExtension`, against fronts over real HTTP (in this process).

`extensions=[TasksClientExtension()]` declares the tasks extension and claims the
`CreateTaskResult` a task tool answers with, so `call_tool` returns the final
`CallToolResult`; `session.call_tool(..., allow_claimed=True)` hands over the task
instead. `advertise("io.modelcontextprotocol/tasks")` only declares the extension
and claims nothing: the SDK then reads the task as a `CallToolResult` and fails
with a `ValidationError`, which is why it is not the way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.extension import advertise
from mcp.client.session import ClientRequestContext
from pydantic import ValidationError

from mcp_tasks_temporal.client import EXTENSION_ID, TaskCreated, TaskFailedError, TasksClientExtension
from tests.interop.conftest import MATCHES, YES

pytestmark = pytest.mark.anyio

questions: list[str] = []


async def approve(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    questions.append(params.message)
    return types.ElicitResult(action="accept", content=YES)


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_a_plain_call_of_a_task_tool_returns_its_result(front_url: str) -> None:
    async with Client(front_url, extensions=[TasksClientExtension()]) as client:
        assert text(await client.call_tool("echo", {"text": "plain"})) == "plain"
        result = await client.call_tool("double", {"x": 21})
    assert result.structured_content == {"value": 42}


async def test_advertise_alone_claims_no_task_result(front_url: str) -> None:
    async with Client(front_url, extensions=[advertise(EXTENSION_ID)]) as client:
        with pytest.raises(ValidationError):
            await client.call_tool("needs_task", {"x": 1})


async def test_an_explicit_task_is_driven_through_a_handle(front_url: str) -> None:
    extension = TasksClientExtension()
    async with Client(front_url, extensions=[extension]) as client:
        created = await client.session.call_tool("needs_task", {"x": 5}, allow_claimed=True)
        assert isinstance(created, TaskCreated)
        handle = extension.handle(client.session, created.task_id)
        result = await handle.result()
        assert (await handle.get()).status == "completed"
    assert text(result) == "15"


async def test_a_question_is_answered_through_the_elicitation_callback(front_url: str, gate: Path) -> None:
    questions.clear()
    async with Client(front_url, extensions=[TasksClientExtension()], elicitation_callback=approve) as client:
        result = await client.call_tool("approve_step", {"gate": str(gate)})
    assert text(result) == "approved"
    assert questions == ["Go on?"]


async def test_cancel_stops_the_task(front_url: str, gate: Path) -> None:
    extension = TasksClientExtension()
    async with Client(front_url, extensions=[extension]) as client:
        created = await client.session.call_tool("gated", {"gate": str(gate)}, allow_claimed=True)
        assert isinstance(created, TaskCreated)
        handle = extension.handle(client.session, created.task_id)
        with anyio.fail_after(30):
            while not (gate / "started").exists():
                await anyio.sleep(0.1)
        await handle.cancel()
        with anyio.fail_after(30):
            assert (await handle.wait()).status == "cancelled"


async def test_a_failing_tool_is_an_error_result_or_a_failed_task(front_url: str) -> None:
    async with Client(front_url, extensions=[TasksClientExtension()]) as client:
        assert (await client.call_tool("tool_error", {})).is_error is True
        with pytest.raises(TaskFailedError) as failed:
            await client.call_tool("protocol_error", {})
    assert failed.value.code == -32042


async def test_a_workflow_tool_with_questions(wf_url: str) -> None:
    questions.clear()
    async with Client(wf_url, extensions=[TasksClientExtension()], elicitation_callback=approve) as client:
        result = await client.call_tool("questions", {})
    assert sorted(questions) == ["Deploy?", "Reviewer?"]
    answers: dict[str, Any] = result.structured_content or {}
    assert answers["approve"] == {"action": "accept", "content": YES}


async def test_a_plain_client_gets_a_workflow_tools_status_lines_as_progress(wf_url: str, gate: Path) -> None:
    """No tasks extension: a 2026-07-28 plain call with a progress callback (`_meta.progressToken`)."""
    updates: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, message))

    async with Client(wf_url) as client:
        result = await client.call_tool("release", {"ref": "v7", "effects": str(gate)}, progress_callback=on_progress)
    assert (result.structured_content or {})["steps"] == ["checkout", "compile", "test", "deploy"]
    assert updates == [(1, "checkout (1/4)"), (2, "compile (2/4)"), (3, "test (3/4)"), (4, "deploy (4/4)")]


async def test_a_plain_client_gets_a_task_tools_status_lines_as_progress(demo_url: str) -> None:
    updates: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, message))

    arguments = {"pattern": "release", "seconds_per_file": 1.2}
    async with Client(demo_url) as client:
        result = await client.call_tool("search_logs", arguments, progress_callback=on_progress)
    assert result.structured_content == {"result": MATCHES}
    assert updates[0] == (1, "searching audit.log (1/3), 0 matches so far")


async def test_a_plain_client_answers_the_demo_question_inside_the_call(demo_url: str) -> None:
    """The question comes back as an InputRequiredResult; the SDK answers it and retries by itself."""
    questions.clear()
    async with Client(demo_url, elicitation_callback=approve) as client:
        result = await client.call_tool("build_pipeline", {"ref": "v4", "step_seconds": 0.2})
    assert text(result).startswith("Built and published v4 as artifact")
    assert questions == ["Publish v4?"]
