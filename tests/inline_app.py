"""Tools whose task-capable calls may be answered in the call: the extension's default budget, and tools that set
their own. Driven by tests/test_inline_results.py through an in-process front and worker.

Tools that must be steered wait on files in a folder the test owns (`gate`), as tests/fixture_app.py's do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import anyio
from mcp.server.mcpserver import Elicit, MCPServer, Resolve
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from mcp_tasks_temporal import TasksExtension, set_status
from mcp_tasks_temporal.temporal.contract import ActivityPolicy
from mcp_tasks_temporal.temporal.inputs import request_input

LONG_BUDGET_MS = 60_000
"""Longer than any test waits: a call of such a tool is answered with its task only when the tool asks."""
SHORT_BUDGET_MS = 300

tasks = TasksExtension(default_poll_interval_ms=250)
app = MCPServer("inline-app", version="0.0.1", extensions=[tasks])


async def _wait_for(path: Path) -> None:
    while not path.exists():
        await anyio.sleep(0.05)


@tasks.tool(policy="optional")
@app.tool()
async def double(x: int) -> dict[str, int]:
    """Quick, with structured output: answered in the call under the default budget."""
    return {"value": 2 * x}


@tasks.tool(policy="optional", inline_budget_ms=0)
@app.tool()
async def double_as_task(x: int) -> dict[str, int]:
    """Just as quick, but its callers always get a task."""
    return {"value": 2 * x}


@tasks.tool(policy="optional")
@app.tool()
async def long_answer(chars: int) -> str:
    """A result too large to come back twice: read from the run's close event alone."""
    return "x" * chars


@tasks.tool(policy="optional")
@app.tool()
async def refuses(code: int = -32042) -> str:
    """A JSON-RPC error, as a synchronous call of it raises."""
    raise MCPError(code=code, message="backend refused", data={"retryable": False})


@tasks.tool(policy="optional")
@app.tool()
async def crashes() -> str:
    """A tool exception: a result with `isError`, as a synchronous call of it returns."""
    raise ValueError("bad input")


async def _gated(gate: str) -> str:
    folder = Path(gate)
    (folder / "started").write_text("1")
    set_status("waiting for the release file")
    try:
        await _wait_for(folder / "release")
    except anyio.get_cancelled_exc_class():
        (folder / "cancelled").write_text("1")
        raise
    return f"released {folder.name}"


@tasks.tool(policy="optional", inline_budget_ms=SHORT_BUDGET_MS)
@app.tool()
async def outlasts_budget(gate: str) -> str:
    """Waits for `gate/release`: its call is answered with the task once the short budget passes."""
    return await _gated(gate)


@tasks.tool(policy="optional", inline_budget_ms=LONG_BUDGET_MS)
@app.tool()
async def held(gate: str) -> str:
    """Waits for `gate/release` under a budget no test waits out; records a cancel in `gate/cancelled`."""
    return await _gated(gate)


class Confirmation(BaseModel):
    confirm: bool


def ask_confirmation(filename: str) -> Elicit[Confirmation]:
    return Elicit(f"Delete {filename}?", Confirmation)


@tasks.tool(policy="optional", inline_budget_ms=LONG_BUDGET_MS)
@app.tool()
async def asks_first(filename: str, answer: Annotated[Confirmation, Resolve(ask_confirmation)]) -> str:
    """Asks before its body runs (a round that returns `input_required`)."""
    return f"Deleted {filename}" if answer.confirm else f"Kept {filename}"


@tasks.tool(policy="optional", inline_budget_ms=LONG_BUDGET_MS)
@app.tool()
async def asks_midway(filename: str) -> str:
    """Asks from inside its running body (`request_input`)."""
    answers = await request_input(
        "confirm",
        {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": f"Delete {filename}?",
                "requestedSchema": {"type": "object", "properties": {"confirm": {"type": "boolean"}}},
            },
        },
    )
    return f"answered {answers}"


@tasks.tool(policy="optional", inline_budget_ms=SHORT_BUDGET_MS)
@app.tool()
async def counted(gate: str) -> str:
    """Writes a line to `gate/runs` each time it starts, then waits for `gate/release`: it outlives its budget."""
    with (Path(gate) / "runs").open("a") as runs:
        runs.write("run\n")
    return await _gated(gate)


@tasks.tool(
    policy="optional",
    inline_budget_ms=LONG_BUDGET_MS,
    progress_timeout=0.3,
    activity=ActivityPolicy(initial_retry_interval_s=0.1, maximum_attempts=3),
)
@app.tool()
async def silent_once(gate: str) -> str:
    """Goes silent past its progress timeout on its first run (a hung attempt, retried); answers on the next."""
    runs = Path(gate) / "runs"
    with runs.open("a") as written:
        written.write("run\n")
    if len(runs.read_text().splitlines()) == 1:
        await anyio.sleep(30)
    return "answered on a later attempt"


SHORT_HEARTBEAT = ActivityPolicy(heartbeat_timeout_s=1.0, maximum_attempts=1)
"""A heartbeat timeout well under the workers' 2 s keep-alive, and no second attempt to hide a lost one. Not
shorter: Temporal sends a heartbeat at most every 0.8 timeouts, which leaves a loaded event loop 0.2 s here."""


async def _quiet(gate: str, seconds: float) -> str:
    with (Path(gate) / "runs").open("a") as runs:
        runs.write("run\n")
    await anyio.sleep(seconds)
    return f"quiet for {seconds:g} s"


@tasks.tool(policy="optional", inline_budget_ms=0, activity=SHORT_HEARTBEAT)
@app.tool()
async def quiet_activity(gate: str, seconds: float) -> str:
    """Sets no status line for `seconds`, as an activity from the start: only the keep-alive says it lives."""
    return await _quiet(gate, seconds)


@tasks.tool(policy="optional", inline_budget_ms=50, activity=SHORT_HEARTBEAT)
@app.tool()
async def quiet_adopted(gate: str, seconds: float) -> str:
    """As `quiet_activity`, but starting locally: the activity that adopts it past its short budget heartbeats."""
    return await _quiet(gate, seconds)


@tasks.tool(
    policy="optional", inline_budget_ms=0, activity=ActivityPolicy(start_to_close_timeout_s=2, maximum_attempts=1)
)
@app.tool()
async def stops_late(gate: str) -> str:
    """Waits for `gate/release`; a cancel it acts on only once `gate/cleaned` exists (a cleanup that cannot be cut
    short, which the test lets end once it has seen the task end), so its attempt's 2 s timeout ends it first."""
    folder = Path(gate)
    (folder / "started").write_text("1")
    try:
        await _wait_for(folder / "release")
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True), anyio.move_on_after(30):
            await _wait_for(folder / "cleaned")
        raise
    return "released"
