"""The task workflow's side of the change feed: its transitions, in order, to its feed shard.

Runs inside the task workflow. Each memo upsert is numbered and queued; one
sender at a time signals the shard with everything queued, and waits until the
signal is delivered before sending the next, so the shard receives a task's
transitions in the order they happened (two signals in flight could overtake
each other). The run waits for the queue to drain before it closes: a signal a
closed run still owed would never be delivered.

A task may first announce itself (`announce`): an item numbered 0 with its
starting state, sent ahead of every transition, so the shard's index of open
tasks holds it before it changes. Fronts' watchers apply only items numbered
above the memo's `feedSeq` (0 from the start), so item 0 notifies no one.

A feed shard that does not exist (no front in feed mode started it) fails the
signal at once; the task then stops publishing, and fronts follow it through
its history instead (its memo keeps the last number it published, or none).
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from temporalio import workflow
from temporalio.contrib.workflow_streams import PublishEntry, PublishInput

from mcp_tasks_temporal.temporal.feed_contract import (
    STREAM_PUBLISH_SIGNAL,
    TRANSITION_TOPIC,
    UNKNOWN_DEADLINE,
    task_feed_workflow_id,
    transition_item,
)


class FeedOutbox:
    """The numbered transitions of one task not yet delivered to its shard."""

    def __init__(self, deadline: int | None = UNKNOWN_DEADLINE) -> None:
        """`deadline` (`createdAt + ttlMs`, `None` without a TTL) goes with each item, for the shard's index."""
        self._deadline = deadline
        self._workflow_id = workflow.info().workflow_id
        self.feed_workflow_id = task_feed_workflow_id(workflow.info().task_queue, self._workflow_id)
        self._shard = workflow.get_external_workflow_handle(self.feed_workflow_id)
        self._queued: list[dict[str, Any]] = []
        self._sending = False
        self.seq = 0
        self.broken = False

    def post(self, fields: dict[str, Any]) -> int | None:
        """Queue one transition; returns its number, what the memo records as `feedSeq`.

        `None` once the shard proved missing: a front reading the memo then follows the history.
        """
        if self.broken:
            return None
        self.seq += 1
        self._queue(transition_item(self._workflow_id, self.seq, fields, deadline=self._deadline))
        return self.seq

    def announce(self, fields: dict[str, Any]) -> None:
        """Queue the task's starting state as item 0, ahead of its first transition: the shard indexes it.

        Number 0 is what the memo says at the start, so a front following the task applies nothing of it.
        """
        if self.broken:
            return
        self._queue(transition_item(self._workflow_id, 0, fields, deadline=self._deadline))

    def _queue(self, item: dict[str, Any]) -> None:
        self._queued.append(item)
        if not self._sending:
            self._sending = True
            asyncio.create_task(self._send())

    async def drained(self) -> None:
        await workflow.wait_condition(lambda: not self._sending)

    async def _send(self) -> None:
        converter = workflow.payload_converter()
        try:
            while self._queued:
                batch, self._queued = self._queued, []
                entries = [
                    PublishEntry(
                        topic=TRANSITION_TOPIC,
                        data=base64.b64encode(converter.to_payloads([item])[0].SerializeToString()).decode(),
                    )
                    for item in batch
                ]
                try:
                    await self._shard.signal(STREAM_PUBLISH_SIGNAL, PublishInput(items=entries))
                except Exception:
                    # The only failure of a signal to another workflow is that it does not exist.
                    self.broken = True
                    self._queued.clear()
                    return
        finally:
            self._sending = False
