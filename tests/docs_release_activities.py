"""The activities of docs/workflows.md's pipeline. They never heartbeat themselves: the worker does.

`build` leaves a line per attempt in `<effects>/ran-build`, waits for
`<effects>/release-build`, and writes `<effects>/cancelled-build` when a cancel
reaches it, so a test sees what ran and what was cancelled.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from temporalio import activity


@dataclass
class BuildRequest:
    ref: str
    effects: str
    start_to_close_s: float = 2 * 3600
    heartbeat_s: float = 10
    """0: no heartbeat_timeout (what the docs warn against)."""


@activity.defn
async def build(request: BuildRequest) -> str:
    folder = Path(request.effects)
    with (folder / "ran-build").open("a") as marks:
        marks.write(f"{activity.info().attempt}\n")
    try:
        while not (folder / "release-build").exists():
            await asyncio.sleep(0.1)
    except asyncio.CancelledError:
        (folder / "cancelled-build").write_text("1")
        raise
    return f"{request.ref}.tar.gz"


@activity.defn
async def deploy(artifact: str) -> None:
    return None
