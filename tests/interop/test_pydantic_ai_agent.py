"""A pydantic-ai `Agent` that uses the server's task tools through `MCPToolset`, end to end.

The model is the scripted OpenAI-compatible server (no model, no network): it asks
for a task tool, then for a tool that asks a question, which the agent's
elicitation handler answers; the tools' results come back to the model as tool
messages and the run ends with its answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from mcp_tasks_temporal.testing.scripted_model import Reply, calls, scripted_model
from tests.conftest import Stack
from tests.interop.conftest import YES

pytestmark = pytest.mark.anyio


def tool_messages(request: dict[str, Any]) -> list[str]:
    return [str(message["content"]) for message in request["messages"] if message["role"] == "tool"]


async def test_an_agent_drives_task_tools_and_answers_their_question(stack: Stack, gate: Path) -> None:
    questions: list[str] = []

    async def approve(message: str, response_type: Any, params: Any, context: Any) -> dict[str, Any]:
        questions.append(message)
        return YES

    script = [
        calls(("needs_task", {"x": 5})),
        calls(("approve_step", {"gate": str(gate)})),
        Reply(content="Tripled to 15; the step was approved."),
    ]
    # The provider's HTTP client is the test's, so it is closed when the test ends (not left to the collector).
    async with scripted_model(script) as server, httpx2.AsyncClient() as http:
        provider = OpenAIProvider(base_url=server.base_url, api_key="scripted-key", http_client=http)
        model = OpenAIChatModel("scripted", provider=provider)
        agent = Agent(model, toolsets=[MCPToolset(stack.url, elicitation_handler=approve)])
        result = await agent.run(f"Triple 5, then run the approval step in {gate}.")
        sent = list(server.requests)
    assert result.output == "Tripled to 15; the step was approved."
    assert len(sent) == 3
    offered = {tool["function"]["name"] for tool in sent[0]["tools"]}
    assert {"needs_task", "approve_step"} <= offered
    assert tool_messages(sent[1]) == ["15"]
    assert tool_messages(sent[2])[-1] == "approved"
    assert questions == ["Go on?"]
    assert (gate / "work-runs").read_text() == "1"
