"""Activities of the fixture workflows. Each step appends to a file, so a test counts how often it ran."""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporalio import activity

from mcp_tasks_temporal.temporal.workflow_api import task_error
from tests.workflow_fixture_models import StepInput


@activity.defn
async def run_step(step: StepInput) -> str:
    """Record one run of `step`; a gated step then waits (heartbeating) for its release file."""
    folder = Path(step.effects)
    with (folder / f"ran-{step.step}").open("a") as marks:
        marks.write(f"{activity.info().attempt}\n")
    if step.gated:
        release = folder / f"release-{step.step}"
        try:
            while not release.exists():
                activity.heartbeat()
                await asyncio.sleep(0.1)
        except asyncio.CancelledError:
            (folder / f"cancelled-{step.step}").write_text("1")
            raise
    return step.step


@activity.defn
async def refuse(reason: str) -> None:
    """Fails with a JSON-RPC error (`task_error` works in activities too) or with a plain exception."""
    if reason == "json-rpc":
        raise task_error(-32051, "Builder quota exhausted", {"retryAfterS": 60})
    raise ValueError("compiler crashed on main.c")
