"""The demo pipeline's steps: one activity execution per step, so a finished step is never run again.

A step that was running when its worker died runs again (Temporal runs activities at
least once), so the one with an effect outside, `publish`, does it under the step's
idempotency key: a retried publish hands the registry the same key, and the same
artifact ID, as the attempt that died.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass

from temporalio import activity

from mcp_tasks_temporal import idempotency_key

logger = logging.getLogger(__name__)

PUBLISH_STEP = "publish"


@dataclass(frozen=True)
class BuildStep:
    ref: str
    step: str
    seconds: float


@activity.defn(name="demo.build_step")
async def build_step(step: BuildStep) -> str:
    """Stand-in for real work (a checkout, a compile...): takes `seconds`, heartbeating so a cancel lands at once.

    Returns the step's output's ID; `publish` names the artifact by its idempotency key.
    """
    remaining = step.seconds
    while remaining > 0:
        activity.heartbeat()
        await asyncio.sleep(min(remaining, 0.5))
        remaining -= 0.5
    if step.step == PUBLISH_STEP:
        key = idempotency_key()
        # A real registry takes the key with the upload (an `Idempotency-Key` header, the object's name) and
        # answers a repeat with the artifact it already has.
        logger.info("publishing %s as artifact %s (attempt %d)", step.ref, key[:12], activity.info().attempt)
        return key[:12]
    return hashlib.sha256(f"{step.ref}/{step.step}".encode()).hexdigest()[:12]
