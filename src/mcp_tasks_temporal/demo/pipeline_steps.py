"""The demo pipeline's steps: one activity execution per step, so a finished step is never run again."""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass

from temporalio import activity


@dataclass(frozen=True)
class BuildStep:
    ref: str
    step: str
    seconds: float


@activity.defn(name="demo.build_step")
async def build_step(step: BuildStep) -> str:
    """Stand-in for real work (a checkout, a compile...): takes `seconds`, heartbeating so a cancel lands at once."""
    remaining = step.seconds
    while remaining > 0:
        activity.heartbeat()
        await asyncio.sleep(min(remaining, 0.5))
        remaining -= 0.5
    return hashlib.sha256(f"{step.ref}/{step.step}".encode()).hexdigest()[:12]
