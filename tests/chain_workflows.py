"""A workflow that continues as new once, and a change to its first run only: a chain for `audit --verify`.

`Chain`'s first run waits on a timer and continues as new; the second waits on another and ends. `ChainChangedFirst`
(the same workflow type, as a new build of the code would be) runs an activity where the first run waited: its
second run is unchanged, so only a replay of the first run shows the change.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

CHAIN_WORKFLOW = "tests.Chain"
PAUSE = timedelta(milliseconds=10)


@workflow.defn(name=CHAIN_WORKFLOW)
class Chain:
    @workflow.run
    async def run(self, run: int) -> str:
        await workflow.sleep(PAUSE)
        if run == 1:
            workflow.continue_as_new(2)
        return f"ended in run {run}"


@workflow.defn(name=CHAIN_WORKFLOW)
class ChainChangedFirst:
    @workflow.run
    async def run(self, run: int) -> str:
        if run == 1:
            await workflow.execute_activity("prepare", start_to_close_timeout=PAUSE)
            workflow.continue_as_new(2)
        await workflow.sleep(PAUSE)
        return f"ended in run {run}"
