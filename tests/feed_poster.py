"""A workflow that publishes through a task's feed outbox while its first signal is still on its way.

`FeedPoster` posts one transition, lets the outbox's sender issue that signal, then posts the rest while the
signal is in flight (its delivery comes in a later workflow task), and waits for the outbox to drain, as a
task does before it closes. Every transition must have been sent by then.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from mcp_tasks_temporal.temporal.feed_publisher import FeedOutbox

FEED_POSTER_WORKFLOW = "tests.FeedPoster"


@workflow.defn(name=FEED_POSTER_WORKFLOW)
class FeedPoster:
    @workflow.run
    async def run(self, statuses: list[str]) -> int:
        outbox = FeedOutbox(deadline=None)
        first, *rest = statuses
        outbox.post({"status": first})
        await asyncio.sleep(0)  # the sender runs, and its signal is issued with this workflow task
        for status in rest:
            outbox.post({"status": status})  # queued behind the signal in flight
        await outbox.drained()
        return outbox.seq
