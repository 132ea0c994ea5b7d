"""An app whose task tools are the fixture workflows (`tests/workflow_fixture_workflows.py`)."""

from __future__ import annotations

import os

import anyio
from mcp.server.mcpserver import MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams

from mcp_tasks_temporal import TasksExtension, request_input, set_status
from tests.workflow_fixture_activities import refuse, run_step
from tests.workflow_fixture_workflows import (
    FailingWorkflow,
    GreetingWorkflow,
    LoopingWorkflow,
    NothingWorkflow,
    OptionalApprovalWorkflow,
    PipelineWorkflow,
    QuestionsWorkflow,
    WaitingWorkflow,
)

OWN_QUEUE_ENV = "WF_FIXTURE_OWN_QUEUE"

tasks = TasksExtension(default_poll_interval_ms=200, default_inline_budget_ms=0)
app = MCPServer("workflow-fixture-app", version="0.0.1", extensions=[tasks])

tasks.workflow_tool(GreetingWorkflow, name="greet")
tasks.workflow_tool(PipelineWorkflow, name="release", activities=[run_step])
tasks.workflow_tool(PipelineWorkflow, name="release_asking", activities=[run_step], asks=["elicitation"])
tasks.workflow_tool(FailingWorkflow, name="fail", activities=[refuse, run_step])
tasks.workflow_tool(LoopingWorkflow, name="loop", activities=[run_step])
tasks.workflow_tool(QuestionsWorkflow, name="questions")
tasks.workflow_tool(OptionalApprovalWorkflow, name="maybe_ask")
tasks.workflow_tool(QuestionsWorkflow, name="questions_short_lived", ttl_ms=3000)
tasks.workflow_tool(QuestionsWorkflow, name="declared_questions", asks=["elicitation", "sampling"])
tasks.workflow_tool(NothingWorkflow, name="nothing", policy="required")
tasks.workflow_tool(FailingWorkflow, name="short_lived", ttl_ms=2000, activities=[refuse, run_step])
# A queue of its own, served by a second worker in the same `worker` process.
tasks.workflow_tool(WaitingWorkflow, name="wait_days", task_queue=os.environ.get(OWN_QUEUE_ENV, "wf-fixture-own"))


STEPS = ("fetching", "building", "checking")


@tasks.tool()
@app.tool()
async def steps_then_ask(tag: str, step_seconds: float = 3.0) -> str:
    """A task tool that reports three status lines, then asks midway; `tag` finds its run in Temporal."""
    for step in STEPS:
        set_status(f"{step} {tag}")
        # Each line stays up longer than a heartbeat throttle plus a front's status refresh (1 s each).
        await anyio.sleep(step_seconds)
    schema = {"type": "object", "properties": {"approve": {"type": "boolean"}}, "required": ["approve"]}
    question = ElicitRequestFormParams(message=f"Ship {tag}?", requested_schema=schema)
    answer = await request_input("approve", ElicitRequest(params=question))
    content: dict[str, object] = answer.get("content") or {}  # pyright: ignore[reportAssignmentType]
    return f"shipped {tag}" if answer.get("action") == "accept" and content.get("approve") else f"kept {tag}"
