"""Two releases of one app (same `MCPServer` name, so the same default task queue) for rolling-deploy tests.

`v2` adds a tool that `v1` does not have: while only `v1` workers run, a task of
the new tool must wait for a `v2` worker instead of failing. `ask` (a pinned
tool task), `ask_moving` (the same, auto-upgrade) and `gate` (a workflow tool,
pinned by default) wait for an answer and say which release ran them, for the
worker-versioning deploy.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from mcp_tasks_temporal import TasksExtension, request_input
from tests.rolling_workflows import APPROVE, ReleaseGateV1, ReleaseGateV2

NAME = "rolling-app"


def _release(version: str, *, with_new_tool: bool) -> MCPServer:
    tasks = TasksExtension(default_poll_interval_ms=250, default_inline_budget_ms=0)
    app = MCPServer(NAME, version=version, extensions=[tasks])

    @tasks.tool(policy="optional")
    @app.tool()
    async def stable(x: int) -> dict[str, int]:
        """In every release."""
        return {"value": x + 1}

    @tasks.tool(policy="optional", versioning="pinned", asks=["elicitation"])
    @app.tool()
    async def ask() -> dict[str, str]:
        """Waits for an answer; this release's code finishes what it started."""
        answer = await request_input("ship", APPROVE)
        return {"release": version, "action": str(answer.get("action"))}

    @tasks.tool(policy="optional", asks=["elicitation"])
    @app.tool()
    async def ask_moving() -> dict[str, str]:
        """The same, auto-upgrade (the default): its task moves to the current build at its next step."""
        answer = await request_input("ship", APPROVE)
        return {"release": version, "action": str(answer.get("action"))}

    tasks.workflow_tool(ReleaseGateV1 if version == "1" else ReleaseGateV2, name="gate", asks=["elicitation"])

    if with_new_tool:

        @tasks.tool(policy="optional")
        @app.tool()
        async def added(x: int) -> dict[str, str]:
            """Only in v2."""
            return {"value": f"v2 ran {x}"}

    return app


v1 = _release("1", with_new_tool=False)
v2 = _release("2", with_new_tool=True)
