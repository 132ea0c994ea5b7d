"""A pydantic-ai `Agent` that uses the server's task tools through `MCPToolset`, end to end.

The models are scripted OpenAI-compatible servers (no model, no network). The first
test drives the fixture app's task tools; the second is the demo's main agent
delegating to its `review_code` sub-agent across the protocol: an `Agent` whose
toolset points at a front of the demo app (in this process, over real HTTP) calls
`review_code`, the sub-agent (its own scripted model, on the demo's worker) asks a
question, the main agent's elicitation handler answers it, and the review comes
back to the main agent's model as the tool's result.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from temporalio.client import Client

from mcp_tasks_temporal.contrib.pydantic_ai import AgentModel, configure_model
from mcp_tasks_temporal.demo.review_files import REVIEW_ROOT_ENV
from mcp_tasks_temporal.testing.scripted_model import Reply, ScriptedModel, calls, scripted_model
from tests.front_app import DEMO_SERVER, in_process_app
from tests.interop.conftest import YES

pytestmark = pytest.mark.anyio

SUB_AGENT_MODEL = "sub-agent-scripted"
DUPLICATED = """\
def total(order):
    lines = [line for line in order["lines"] if line["qty"] > 0]
    subtotal = sum(line["qty"] * line["price"] for line in lines)
    discount = subtotal * 0.1 if subtotal > 100 else 0
    return round((subtotal - discount) * 1.2, 2)
"""
"""Planted in two files of the reviewed directory: the block `find_duplicates` reports."""


def tool_messages(request: dict[str, Any]) -> list[str]:
    return [str(message["content"]) for message in request["messages"] if message["role"] == "tool"]


def main_agent(model_url: str, http: httpx2.AsyncClient, toolset: MCPToolset) -> Agent[None, str]:
    # The provider's HTTP client is the test's, so it is closed when the test ends (not left to the collector).
    provider = OpenAIProvider(base_url=model_url, api_key="scripted-key", http_client=http)
    return Agent(OpenAIChatModel("scripted", provider=provider), toolsets=[toolset])


async def test_an_agent_drives_task_tools_and_answers_their_question(front_url: str, gate: Path) -> None:
    questions: list[str] = []

    async def approve(message: str, response_type: Any, params: Any, context: Any) -> dict[str, Any]:
        questions.append(message)
        return YES

    script = [
        calls(("needs_task", {"x": 5})),
        calls(("approve_step", {"gate": str(gate)})),
        Reply(content="Tripled to 15; the step was approved."),
    ]
    async with scripted_model(script) as server, httpx2.AsyncClient() as http:
        agent = main_agent(server.base_url, http, MCPToolset(front_url, elicitation_handler=approve))
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


# -- the demo's main agent and its review_code sub-agent -------------------------------------------


@pytest.fixture(scope="module")
async def sub_agent_model() -> AsyncIterator[ScriptedModel]:
    """The model the dev's worker gives `review_code`: each test sets its script."""
    async with scripted_model([]) as server:
        yield server


@pytest.fixture(scope="module")
def review_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("review-root")
    (root / "shop").mkdir()
    for name in ("orders.py", "invoices.py"):
        (root / "shop" / name).write_text(DUPLICATED)
    return root


@pytest.fixture(scope="module")
async def demo_with_sub_agents(
    app_client: Client, sub_agent_model: ScriptedModel, review_root: Path
) -> AsyncIterator[str]:
    """The demo served here, its sub-agents on the scripted model (as `--agent-model` sets it up): its MCP URL."""
    configure_model(AgentModel(SUB_AGENT_MODEL, base_url=sub_agent_model.base_url, api_key="scripted-key"))
    try:
        with pytest.MonkeyPatch.context() as env:
            env.setenv(REVIEW_ROOT_ENV, str(review_root))
            async with in_process_app(app_client, DEMO_SERVER) as front, front.listening() as url:
                yield url
    finally:
        configure_model(None)


async def test_the_main_agent_delegates_a_review_to_the_sub_agent_and_answers_its_question(
    demo_with_sub_agents: str, sub_agent_model: ScriptedModel
) -> None:
    question = "Is invoices.py generated code that the rules exempt?"
    answer = "No, it is hand-written."
    finding = {
        "file": "invoices.py",
        "lines": {"start": 1, "end": 5},
        "rule": "duplicate-code",
        "message": "total repeats orders.py: share one function.",
    }
    sub_agent_model.reset(
        [
            calls(("find_duplicates", {})),
            calls(("ask_user", {"question": question})),
            calls(("final_result", {"findings": [finding], "summary": "One duplicated block."})),
        ]
    )
    asked: list[str] = []

    async def answer_for_the_user(message: str, response_type: Any, params: Any, context: Any) -> dict[str, Any]:
        asked.append(message)
        return {"answer": answer}

    async with scripted_model([calls(("review_code", {"path": "shop"}))]) as main_model, httpx2.AsyncClient() as http:
        main_model.hold(2)
        agent = main_agent(
            main_model.base_url, http, MCPToolset(demo_with_sub_agents, elicitation_handler=answer_for_the_user)
        )
        outcome: dict[str, Any] = {}
        review: dict[str, Any] = {}

        async def run() -> None:
            outcome["result"] = await agent.run("Review the shop directory for duplicated code.")

        async with anyio.create_task_group() as group:
            group.start_soon(run)
            # The main model's second turn carries the sub-agent's review; it answers by quoting it.
            turn = await main_model.arrived(2, bound_s=180)
            review.update(json.loads(tool_messages(turn)[-1]))
            main_model.script.append(Reply(content=f"The sub-agent says: {review['summary']}"))
            main_model.release(2)
        sent = list(main_model.requests)
    result = outcome["result"]

    assert "review_code" in {tool["function"]["name"] for tool in sent[0]["tools"]}
    assert review["complete"] is True and review["findings"] == [finding] and review["turns"] == 3
    assert result.output == "The sub-agent says: One duplicated block."
    returned = [part for message in result.all_messages() for part in message.parts if part.part_kind == "tool-return"]
    assert [getattr(part, "tool_name", None) for part in returned] == ["review_code"]
    # The question went to the main agent's handler, and its answer reached the sub-agent's model.
    assert asked == [question]
    assert tool_messages(sub_agent_model.requests[2])[-1] == answer
    assert json.loads(tool_messages(sub_agent_model.requests[1])[0]) == [
        {"lines": 5, "locations": ["invoices.py:1-5", "orders.py:1-5"]}
    ]
    assert {request["model"] for request in sub_agent_model.requests} == {SUB_AGENT_MODEL}
