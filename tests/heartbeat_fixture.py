"""A workflow whose activity outlives its heartbeat timeout only if the worker heartbeats for it."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RetryPolicy

HEARTBEAT_TIMEOUT = timedelta(seconds=1)
WORK_S = 2.5
"""How long each first attempt runs without heartbeating itself: longer than the heartbeat timeout."""


@activity.defn
async def checkpointed(fail_first: bool) -> str:
    """Attempt 1 heartbeats a checkpoint once, works on silently, then returns or fails; attempt 2 reports it."""
    info = activity.info()
    if info.attempt > 1:
        return f"attempt {info.attempt} resumed from {list(info.heartbeat_details)}"
    activity.heartbeat("step-3")
    await asyncio.sleep(WORK_S)
    if fail_first:
        raise RuntimeError("first attempt fails after its checkpoint")
    return "attempt 1 finished"


@workflow.defn
class Checkpointed:
    @workflow.run
    async def run(self) -> list[str]:
        return [
            await workflow.execute_activity(
                checkpointed,
                fail_first,
                start_to_close_timeout=timedelta(minutes=1),
                heartbeat_timeout=HEARTBEAT_TIMEOUT,
                retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=100)),
            )
            for fail_first in (False, True)
        ]
