"""Task tools for plain calls (no tasks extension): a tool steered step by step, and workflow tools.

`fail_called_only` is a workflow tool no client may hold as a task (policy `never`): every call of it is plain.

`stepped` reports one status per step and waits for the test's `next-<n>` file
before the next one, so every status line is seen before it is replaced.
"""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer

from mcp_tasks_temporal import TasksExtension, set_status
from tests.workflow_fixture_activities import refuse, run_step
from tests.workflow_fixture_workflows import FailingWorkflow, PipelineWorkflow

tasks = TasksExtension(default_poll_interval_ms=200, default_inline_budget_ms=0)
app = MCPServer("plain-calls-app", version="0.0.1", extensions=[tasks])

tasks.workflow_tool(PipelineWorkflow, name="release", activities=[run_step])
tasks.workflow_tool(FailingWorkflow, name="fail", activities=[refuse, run_step])
tasks.workflow_tool(FailingWorkflow, name="fail_called_only", policy="never", activities=[refuse, run_step])


@tasks.tool(policy="optional")
@app.tool()
async def stepped(gate: str, ctx: Context, steps: int = 3) -> str:
    """Step `n` reports its status, then waits for `gate/next-<n>`; a cancel leaves `gate/cancelled`."""
    folder = Path(gate)
    (folder / "started").write_text("1")
    try:
        for number in range(1, steps + 1):
            if number == 1:
                await ctx.report_progress(number, steps, f"step {number}")
            else:
                set_status(f"step {number}")
            while not (folder / f"next-{number}").exists():
                await anyio.sleep(0.05)
    except anyio.get_cancelled_exc_class():
        (folder / "cancelled").write_text("1")
        raise
    return f"{steps} steps"
