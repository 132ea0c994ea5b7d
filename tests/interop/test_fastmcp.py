"""FastMCP 4's `Client` with fastmcp-tasks, as its users run it, against fronts over real HTTP (in this process).

Importing `fastmcp_tasks` is what gives every FastMCP `Client` task support: a task
tool's result arrives through `call_tool` as if it were synchronous, and
`call_tool_task` returns a handle. Neither sends `Mcp-Name` on `tasks/*`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError
from fastmcp_tasks import ToolTask
from fastmcp_tasks import call_tool_task as _call_tool_task  # pyright: ignore[reportUnknownVariableType]
from mcp.shared.exceptions import MCPError

from tests.interop.conftest import YES

pytestmark = pytest.mark.anyio

questions: list[str] = []

# fastmcp-tasks types its `client` parameter as a bare generic `Client`.
call_tool_task: Callable[..., Awaitable[ToolTask]] = _call_tool_task  # pyright: ignore[reportUnknownVariableType]


def text(result: Any) -> str:
    return result.content[0].text


async def approve(message: str, response_type: Any, params: Any, context: Any) -> dict[str, Any]:
    questions.append(message)
    return YES


async def test_a_plain_call_of_a_task_tool_returns_its_result(front_url: str) -> None:
    async with Client(front_url) as client:
        assert text(await client.call_tool("echo", {"text": "plain"})) == "plain"
        result = await client.call_tool("double", {"x": 21})
    assert result.structured_content == {"value": 42}


async def test_an_explicit_task_is_driven_through_its_handle(front_url: str) -> None:
    async with Client(front_url) as client:
        task = await call_tool_task(client, "needs_task", {"x": 5})
        assert task.task_id
        result = await task.result()
        assert (await task.status()).status == "completed"
    assert text(result) == "15"


async def test_a_question_is_answered_through_the_elicitation_handler(front_url: str, gate: Path) -> None:
    questions.clear()
    async with Client(front_url, elicitation_handler=approve) as client:
        result = await client.call_tool("approve_step", {"gate": str(gate)})
    assert text(result) == "approved"
    assert questions == ["Go on?"]
    assert (gate / "work-runs").read_text() == "1"


async def test_a_client_without_an_elicitation_handler_is_refused_a_tool_that_asks(front_url: str, gate: Path) -> None:
    async with Client(front_url) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("approve_step", {"gate": str(gate)})
    assert refused.value.code == -32021
    assert refused.value.data["requiredCapabilities"] == {"elicitation": {}}
    assert not (gate / "work-runs").exists()


async def test_cancel_stops_the_task(front_url: str, gate: Path) -> None:
    async with Client(front_url) as client:
        task = await call_tool_task(client, "gated", {"gate": str(gate)})
        with anyio.fail_after(30):
            while not (gate / "started").exists():
                await anyio.sleep(0.1)
        await task.cancel()
        final = await task.wait(timeout=30)
        assert final.status == "cancelled"
        with pytest.raises(ToolError):
            await task.result()


async def test_a_failing_tool_raises_tool_error(front_url: str) -> None:
    async with Client(front_url) as client:
        with pytest.raises(ToolError, match="tool_error"):  # the SDK hides the exception text, task or not
            await client.call_tool("tool_error", {"reason": "bad input"})
        with pytest.raises(ToolError, match="backend refused"):
            await client.call_tool("protocol_error", {})


async def test_a_workflow_tool_with_questions(wf_url: str) -> None:
    questions.clear()
    async with Client(wf_url, elicitation_handler=approve) as client:
        result = await client.call_tool("questions", {})
    assert sorted(questions) == ["Deploy?", "Reviewer?"]
    assert result.structured_content is not None
    assert result.structured_content["approve"] == {"action": "accept", "content": YES}
