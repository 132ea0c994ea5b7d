"""A whole app in one module, as a newcomer writes it first: activity, workflow and server together.

The workflow's module imports `mcp` (for the server), `httpx` and `uvicorn`, none
of which loads in the workflow sandbox, and uses the package-level `set_status`
and `request_input` in the workflow, the activity and a tool.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import httpx
import uvicorn
from mcp.server.mcpserver import MCPServer
from temporalio import activity, workflow

from mcp_tasks_temporal import TasksExtension, request_input, set_status

CONFIRM = {
    "method": "elicitation/create",
    "params": {
        "message": "Go ahead?",
        "requestedSchema": {"type": "object", "properties": {"go": {"type": "boolean"}}, "required": ["go"]},
    },
}


@dataclass
class Job:
    text: str
    gate: str = ""
    """A folder: the activity waits for `<gate>/go` before it finishes."""
    confirm: bool = False
    """The workflow asks before it starts the activity."""
    ask: bool = False
    """The activity asks how loud to be."""


@activity.defn
async def shout(job: Job) -> str:
    set_status(f"shouting {job.text}")
    loud = httpx.URL(f"https://example.com/{job.text.upper()}").path.strip("/")
    if job.ask:
        answer = await request_input("loud", CONFIRM)
        if not answer.get("content", {}).get("go"):
            loud = job.text
    if job.gate:
        while not (Path(job.gate) / "go").exists():
            await asyncio.sleep(0.05)
    return loud


@workflow.defn
class OneFile:
    """Shouts a text back, in an activity."""

    @workflow.run
    async def run(self, job: Job) -> str:
        set_status("waiting for the go-ahead")
        if job.confirm:
            answer = await request_input("go", CONFIRM)
            if not answer.get("content", {}).get("go"):
                return "not shouted"
        loud = await workflow.execute_activity(
            shout, job, start_to_close_timeout=timedelta(minutes=5), heartbeat_timeout=timedelta(seconds=10)
        )
        return f"{loud}!"


tasks = TasksExtension(default_poll_interval_ms=200, default_inline_budget_ms=0)
app = MCPServer("one-file-app", version="0.0.1", extensions=[tasks])
tasks.workflow_tool(OneFile, name="shout", activities=[shout])


@tasks.tool(policy="optional")
@app.tool()
async def whisper(text: str, gate: str = "", ask: bool = False) -> str:
    """The same from a tool: the package-level `set_status` and `request_input` work here too."""
    set_status(f"whispering {text}")
    if ask:
        answer = await request_input("quiet", CONFIRM)
        if not answer.get("content", {}).get("go"):
            return text
    if gate:
        while not (Path(gate) / "go").exists():
            await asyncio.sleep(0.05)
    return text.lower()


if __name__ == "__main__":
    uvicorn.run(app.streamable_http_app(), port=8000)
