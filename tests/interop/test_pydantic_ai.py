"""pydantic-ai's `MCPToolset` (FastMCP 4 + fastmcp-tasks underneath) against fronts over real HTTP (in this process).

A task tool is called like any tool (the toolset drives the task through
fastmcp-tasks) or with `use_task=True`; questions go to the toolset's
`elicitation_handler`. The toolset has no cancel of its own: its FastMCP client
takes `call_tool_task`, whose handle cancels.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp.exceptions import ToolError
from fastmcp_tasks import ToolTask
from fastmcp_tasks import call_tool_task as _call_tool_task  # pyright: ignore[reportUnknownVariableType]
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.mcp import MCPToolset

from tests.interop.conftest import YES

pytestmark = pytest.mark.anyio

call_tool_task: Callable[..., Awaitable[ToolTask]] = _call_tool_task  # pyright: ignore[reportUnknownVariableType]
questions: list[str] = []


async def approve(message: str, response_type: Any, params: Any, context: Any) -> dict[str, Any]:
    questions.append(message)
    return YES


async def test_a_plain_call_of_a_task_tool_returns_its_result(front_url: str) -> None:
    async with MCPToolset(front_url) as toolset:
        assert await toolset.direct_call_tool("echo", {"text": "plain"}) == "plain"
        assert await toolset.direct_call_tool("double", {"x": 21}) == {"value": 42}
        assert await toolset.direct_call_tool("needs_task", {"x": 2}) == 6


async def test_an_explicit_task_with_use_task(front_url: str) -> None:
    async with MCPToolset(front_url) as toolset:
        assert await toolset.direct_call_tool("needs_task", {"x": 5}, use_task=True) == 15
        assert await toolset.direct_call_tool("double", {"x": 4}, use_task=True) == {"value": 8}


async def test_a_question_is_answered_through_the_elicitation_handler(front_url: str, gate: Path) -> None:
    questions.clear()
    async with MCPToolset(front_url, elicitation_handler=approve) as toolset:
        assert await toolset.direct_call_tool("approve_step", {"gate": str(gate)}, use_task=True) == "approved"
    assert questions == ["Go on?"]


async def test_cancel_through_the_toolsets_client(front_url: str, gate: Path) -> None:
    async with MCPToolset(front_url) as toolset:
        task = await call_tool_task(toolset.client, "gated", {"gate": str(gate)})
        with anyio.fail_after(30):
            while not (gate / "started").exists():
                await anyio.sleep(0.1)
        await task.cancel()
        assert (await task.wait(timeout=30)).status == "cancelled"


async def test_a_failing_tool_is_a_retry_for_the_model_or_an_error_for_the_caller(front_url: str) -> None:
    async with MCPToolset(front_url) as toolset:
        with pytest.raises(ModelRetry):
            await toolset.direct_call_tool("tool_error", {}, use_task=True)
        with pytest.raises(ModelRetry, match="backend refused"):
            await toolset.direct_call_tool("protocol_error", {})
    async with MCPToolset(front_url, tool_error_behavior="error") as toolset:
        with pytest.raises(ToolError, match="backend refused"):
            await toolset.direct_call_tool("protocol_error", {}, use_task=True)


async def test_a_workflow_tool_with_questions(wf_url: str) -> None:
    questions.clear()
    async with MCPToolset(wf_url, elicitation_handler=approve) as toolset:
        answers = await toolset.direct_call_tool("questions", {})
    assert sorted(questions) == ["Deploy?", "Reviewer?"]
    assert answers["approve"] == {"action": "accept", "content": YES}
