"""The app of the scale-out tests (`tests/test_scale_out.py`): a slow tool whose effects can be counted.

Served by several front servers and run by several workers at once, with
processes killed under it; every attempt of `crunch` leaves one line in a file
the test reads afterwards, so a lost or repeated effect shows.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import anyio
from mcp.server.mcpserver import Elicit, MCPServer, Resolve
from pydantic import BaseModel
from temporalio import activity

from mcp_tasks_temporal import TasksExtension, set_status

tasks = TasksExtension(default_poll_interval_ms=250, default_inline_budget_ms=0)
app = MCPServer("scale-app", version="0.0.1", extensions=[tasks])


def effect_line(attempt: int, workflow_id: str, activity_id: str) -> str:
    """What one finished attempt of `crunch` appends to its effect file."""
    return f"attempt={attempt} workflow={workflow_id} activity={activity_id}\n"


@tasks.tool(policy="optional")
@app.tool()
async def crunch(n: int, effects: str, steps: int = 6, step_s: float = 0.5) -> dict[str, int]:
    """Work for `steps * step_s` seconds (3 s by default), then record the effect and return n².

    Progress: `set_status(f"step {i}/{steps}")` before each step, so `tasks/get`
    shows how far it got.

    Effect: when the work is done, one line `attempt=A workflow=W activity=I` is
    appended to the file `<effects>/<n>` (one `O_APPEND` write, so lines from
    concurrent attempts never interleave). A cancelled attempt records nothing.

    Idempotency contract. A task tool runs in a Temporal activity, and activities
    are *at least once*: an attempt whose worker dies after the effect but before
    Temporal recorded the completion is retried, and the retry does the effect
    again. So for one task:

    - attempt 1 leaves at most one line; every further line comes from an attempt
      > 1 (a retry), and no attempt number appears twice;
    - a file with two lines of attempt 1, or two tasks' lines in one file, would
      be a duplicate the runtime must never cause (a task started twice, say).

    This tool keeps every repeat visible on purpose. A tool whose effect must
    happen once makes itself idempotent with the activity's identity: the pair
    (`activity.info().workflow_id`, `activity.info().activity_id`) names this
    tool run of this task and is the same on every attempt, so it is the
    idempotency key to hand to the downstream system (or to check before the
    effect), while `activity.info().attempt` tells a first try from a retry.
    """
    for i in range(1, steps + 1):
        set_status(f"step {i}/{steps}")
        await anyio.sleep(step_s)
    try:
        info = activity.info()
    except RuntimeError:  # called synchronously, outside any task: no activity, attempt 1
        line = effect_line(1, "-", "-")
    else:
        line = effect_line(info.attempt, info.workflow_id or "-", info.activity_id)
    fd = os.open(Path(effects) / str(n), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    return {"n": n, "square": n * n}


class Approval(BaseModel):
    approve: bool


def ask_approval(n: int) -> Elicit[Approval]:
    return Elicit(f"Square {n}?", Approval)


@tasks.tool(policy="optional")
@app.tool()
async def approve_square(n: int, answer: Annotated[Approval, Resolve(ask_approval)]) -> dict[str, int]:
    """Ask for approval from the task (input_required), then return n² if approved, else 0."""
    return {"n": n, "square": n * n if answer.approve else 0}
