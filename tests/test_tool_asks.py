"""Tools that declare what they ask (`asks=`): a client that cannot answer is refused at `tools/call`.

The refusal is -32021 with the capabilities it lacks, before any step runs: no
task, no activity, no workflow. Through the in-process front and its workers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mcp_tasks_temporal import TasksExtension
from mcp_tasks_temporal.front.extension import ToolTaskOptions
from mcp_tasks_temporal.temporal.capabilities import undeclared_asks
from tests.conftest import OpenApp
from tests.wire import TaskCalls
from tests.workflow_fixture_workflows import QuestionsWorkflow

MISSING_CAPABILITY = -32021
WF_APP = "tests.workflow_fixture_app:app"
YES = {"action": "accept", "content": {"approve": True}}


# -- the rule ------------------------------------------------------------------------------------


def test_declared_capabilities_pass_and_each_missing_one_is_named() -> None:
    asks = ("elicitation", "sampling", "roots")
    assert undeclared_asks(asks, {"elicitation": {}, "sampling": {}, "roots": {}}) is None
    refusal = undeclared_asks(asks, {"sampling": {}})
    assert refusal is not None
    assert refusal.code == MISSING_CAPABILITY
    assert refusal.data == {"requiredCapabilities": {"elicitation": {}, "roots": {}}}


def test_a_url_only_elicitation_capability_does_not_cover_form_questions() -> None:
    refusal = undeclared_asks(["elicitation"], {"elicitation": {"url": {}}})
    assert refusal is not None
    assert refusal.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}
    assert undeclared_asks(["elicitation"], {"elicitation": {"form": {}}}) is None


@pytest.mark.parametrize("asks", [["elicit"], "elicitation", ["tasks"]])
def test_asks_takes_only_known_capabilities(asks: Any) -> None:
    with pytest.raises(ValueError):
        ToolTaskOptions(asks=asks)
    with pytest.raises(ValueError):
        TasksExtension().tool(asks=asks)
    with pytest.raises(ValueError):
        TasksExtension().workflow_tool(QuestionsWorkflow, asks=asks)


# -- tool tasks ----------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("tasks", [True, False])
async def test_a_tool_that_asks_is_refused_to_a_client_without_elicitation_before_it_runs(
    front_mcp: TaskCalls, gate: Path, tasks: bool
) -> None:
    reply = await front_mcp.call_tool("approve_step", {"gate": str(gate)}, tasks=tasks, capabilities={"sampling": {}})
    error = reply.error
    assert error["code"] == MISSING_CAPABILITY, reply.body
    assert error["data"]["requiredCapabilities"] == {"elicitation": {}}
    assert not (gate / "work-runs").exists(), "the step must not have run"


@pytest.mark.anyio
async def test_a_tool_that_asks_runs_for_a_client_that_declared_elicitation(front_mcp: TaskCalls, gate: Path) -> None:
    created = await front_mcp.start("approve_step", {"gate": str(gate)}, capabilities={"elicitation": {}})
    task = await front_mcp.wait_for(created["taskId"], {"input_required"})
    await front_mcp.update(created["taskId"], dict.fromkeys(task["inputRequests"], YES))
    done = await front_mcp.wait_for(created["taskId"])
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "approved"
    assert (gate / "work-runs").read_text() == "1"


# -- workflow tools --------------------------------------------------------------------------------


@pytest.fixture
async def workflows(open_app: OpenApp) -> AsyncIterator[TaskCalls]:
    """The task operations on a front of the workflow fixture app, its workers running."""
    front = await open_app(WF_APP)
    async with front.http() as http:
        yield front.calls(http)


@pytest.mark.anyio
@pytest.mark.parametrize("tasks", [True, False])
async def test_a_workflow_tool_that_asks_is_refused_to_a_client_without_what_it_asks(
    workflows: TaskCalls, tasks: bool
) -> None:
    reply = await workflows.call_tool("declared_questions", {}, tasks=tasks, capabilities={"elicitation": {}})
    error = reply.error
    assert error["code"] == MISSING_CAPABILITY, reply.body
    assert error["data"]["requiredCapabilities"] == {"sampling": {}}


@pytest.mark.anyio
async def test_a_workflow_tool_that_asks_runs_for_a_client_that_declared_it(workflows: TaskCalls) -> None:
    created = await workflows.start("declared_questions", {}, capabilities={"elicitation": {}, "sampling": {}})
    task = await workflows.wait_for(created["taskId"], {"input_required"})
    assert set(task["inputRequests"]) == {"approve", "reviewer"}
    await workflows.cancel(created["taskId"])
    assert (await workflows.wait_for(created["taskId"], {"cancelled"}))["status"] == "cancelled"
