"""The built-in example app served by `mcp-tasks-temporal dev` when no `--app` is given.

`build_pipeline` is a Temporal workflow exposed as a tool (`demo/pipeline.py`):
each step an activity, its status and an approval question written in the
workflow. `search_logs` is an ordinary `mcp` tool made a task with one line;
it reports progress with `set_status`, shown as the task's `statusMessage`.
`review_code` is a sub-agent (`demo/review.py`); it needs the agent extra, and
without it the demo serves everything else and says at start what it left out.
"""

from __future__ import annotations

import logging

import anyio
from mcp.server.mcpserver import MCPServer

from mcp_tasks_temporal.contrib import MissingExtra
from mcp_tasks_temporal.demo.pipeline import BuildPipeline
from mcp_tasks_temporal.demo.pipeline_steps import build_step
from mcp_tasks_temporal.front.extension import TasksExtension
from mcp_tasks_temporal.temporal.progress import set_status

logger = logging.getLogger(__name__)

tasks = TasksExtension()
app = MCPServer(
    "mcp-tasks-temporal-demo",
    version="0.1.0",
    instructions="Long-running tools that run as durable tasks on Temporal.",
    extensions=[tasks],
)

_CORPUS = {
    "build.log": "compiling module core\nwarning: unused import\nlinking binary\nbuild succeeded",
    "deploy.log": "pushing image registry/app:1.4\nrollout started\nreplica 3/3 ready",
    "audit.log": "user alice approved release 1.4\nuser bob rolled back release 1.3",
}


# A Temporal workflow as a tool: every step an activity, status and an approval question from the workflow.
tasks.workflow_tool(BuildPipeline, name="build_pipeline", activities=[build_step], asks=["elicitation"])


@tasks.tool(policy="optional")
@app.tool()
async def search_logs(pattern: str, seconds_per_file: float = 1.5) -> list[str]:
    """Search every log file for lines containing `pattern`, slowly, as a real log search would."""
    matches: list[str] = []
    for index, (name, text) in enumerate(sorted(_CORPUS.items()), start=1):
        set_status(f"searching {name} ({index}/{len(_CORPUS)}), {len(matches)} matches so far")
        await anyio.sleep(seconds_per_file)
        matches.extend(f"{name}: {line}" for line in text.splitlines() if pattern.lower() in line.lower())
    return matches


@app.tool()
def add(a: int, b: int) -> int:
    """Add two numbers (an ordinary synchronous tool, for comparison)."""
    return a + b


try:
    from mcp_tasks_temporal.contrib.pydantic_ai import sub_agent_tool
except MissingExtra as missing:
    logger.warning("review_code left out: needs the %s extra (%s)", missing.extra, missing.install)
else:
    from mcp_tasks_temporal.demo.review import ReviewCode, prepare_review

    # A sub-agent in a task: its own model (--agent-model, OPENAI_BASE_URL) and tools, asking through the task.
    sub_agent_tool(tasks, ReviewCode, activities=[prepare_review])
