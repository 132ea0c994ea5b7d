"""Tools the tests drive through real front servers and workers.

Tools that must be steered from a test wait on files in a directory the test
owns (`gate`), because the tool runs in another process (the worker) and a
file is the simplest event both sides can see.
"""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from mcp_tasks_temporal import TasksExtension, set_status

tasks = TasksExtension(default_poll_interval_ms=250)
app = MCPServer("fixture-app", version="0.0.1", extensions=[tasks])


async def _wait_for(path: Path) -> None:
    while not path.exists():
        await anyio.sleep(0.05)


@app.tool()
def echo(text: str) -> str:
    """Not a task tool: always synchronous."""
    return text


@tasks.tool(policy="optional")
@app.tool()
async def double(x: int) -> dict[str, int]:
    """A quick task with structured output."""
    return {"value": 2 * x}


@tasks.tool(policy="never")
@app.tool()
async def never_task(x: int) -> int:
    """Declared task-incapable: synchronous even for declaring clients."""
    return x + 1


@tasks.tool(policy="required")
@app.tool()
async def needs_task(x: int) -> int:
    """Only runs as a task."""
    return x * 3


@tasks.tool(policy="optional")
@app.tool()
async def gated(gate: str, ctx: Context) -> str:
    """Report progress, then wait until `gate/release` exists; record a cancel in `gate/cancelled`."""
    folder = Path(gate)
    (folder / "started").write_text("1")
    await ctx.report_progress(1, 3, "waiting for release")
    set_status("waiting for the release file")
    try:
        await _wait_for(folder / "release")
    except anyio.get_cancelled_exc_class():
        (folder / "cancelled").write_text("1")
        raise
    runs = folder / "runs"
    runs.write_text(str(int(runs.read_text()) + 1 if runs.exists() else 1))
    return f"released {folder.name}"


@tasks.tool(policy="optional")
@app.tool()
async def tool_error(reason: str = "bad input") -> str:
    """A tool exception: the task completes with isError."""
    raise ValueError(reason)


@tasks.tool(policy="optional")
@app.tool()
async def protocol_error(code: int = -32042, message: str = "backend refused") -> str:
    """A JSON-RPC error: the task fails with exactly this error."""
    raise MCPError(code=code, message=message, data={"retryable": False})


@tasks.tool(policy="optional", ttl_ms=2000)
@app.tool()
async def short_lived(gate: str) -> str:
    """Waits for a release that never comes; its 2 s TTL ends it."""
    folder = Path(gate)
    (folder / "started").write_text("1")
    try:
        await _wait_for(folder / "release")
    except anyio.get_cancelled_exc_class():
        (folder / "cancelled").write_text("1")
        raise
    return "released"


@tasks.tool(policy="optional", ttl_ms=None)
@app.tool()
async def unlimited(x: int) -> int:
    """A task without a TTL."""
    return x
