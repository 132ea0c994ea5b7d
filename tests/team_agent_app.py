"""A team's MCP app with a sub-agent tool, for a worker of the team's own given `McpTasksPlugin(tasks, app)`
and then the app's own plugins (`tasks.plugins`).

`summarise` is a pydantic-ai agent in a workflow (`sub_agent_tool`): its model requests are
activities that pydantic-ai's plugin registers from the workflow's `__pydantic_ai_agents__`, and
its model name comes from the model-name activity of the sub-agent module's own plugin. Both
plugins come after `McpTasksPlugin`, which adds the workflow they look at.
"""

from __future__ import annotations

from datetime import timedelta

from mcp.server.mcpserver import MCPServer
from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from temporalio import workflow
from temporalio.workflow import ActivityConfig

from mcp_tasks_temporal import TasksExtension
from mcp_tasks_temporal.contrib.pydantic_ai import (
    DEFAULT_MODEL,
    TaskProgress,
    agent_model,
    configured_model,
    sub_agent_tool,
)

summary_agent = Agent(
    DEFAULT_MODEL,
    name="summarise",
    output_type=str,
    instructions="Summarise the text you are given in one short sentence.",
    capabilities=[
        configured_model(),
        TaskProgress(),
        TemporalDurability(activity_config=ActivityConfig(start_to_close_timeout=timedelta(seconds=60))),
    ],
)


@workflow.defn(name="summarise")
class Summarise(PydanticAIWorkflow):
    """Summarise a text with the server's own model."""

    __pydantic_ai_agents__ = (summary_agent,)

    @workflow.run
    async def run(self, text: str) -> str:
        result = await summary_agent.run(text, model=await agent_model())
        return result.output


tasks = TasksExtension(default_poll_interval_ms=100)
app = MCPServer("team-agent-app", version="0.0.1", extensions=[tasks])
sub_agent_tool(tasks, Summarise)
