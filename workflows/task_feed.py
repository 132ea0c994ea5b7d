"""`TaskFeedWorkflow`: one shard of the task change feed (`feed_contract`), a workflow stream that never ends.

Task workflows publish to it with the stream's publish signal; fronts follow it
with the stream's long-poll update, from the offset they reached. It keeps the
last `retained_items` items and continues as new before its history grows
large, carrying those items, so a front's offset stays valid across the chain.

It also keeps an index of the open tasks that publish to it, for a listen's
acknowledgement (`INDEX_QUERY`): workflow ID -> last feed number, status and
deadline, taken from each transition as it is published (and from the item 0 a
task announces itself with at its start); a terminal transition removes the
task. Built from the signals alone, it adds no command; it goes to the next
run with the stream, at most `index_max_tasks` entries.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, cast

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.common import VersioningBehavior
from temporalio.contrib.workflow_streams import PublishInput, WorkflowStream

with workflow.unsafe.imports_passed_through():
    from mcp_tasks_temporal.temporal.contract import TERMINAL_STATUSES, Memo
    from mcp_tasks_temporal.temporal.feed_contract import (
        INDEX_QUERY,
        STREAM_PUBLISH_SIGNAL,
        TASK_FEED_WORKFLOW,
        TRANSITION_TOPIC,
        UNKNOWN_DEADLINE,
        IndexEntry,
        TaskFeedInput,
    )

INDEX_PATCH = "carry-the-task-index"
"""Guards the continue-as-new argument that carries the index: a run from before it carried none."""


@workflow.defn(name=TASK_FEED_WORKFLOW)
class TaskFeedWorkflow:
    """Holds one shard's stream; all its work is in the stream's handlers."""

    @workflow.init
    def __init__(self, feed: TaskFeedInput) -> None:
        self.stream = WorkflowStream(prior_state=feed.state)
        self._index_max = feed.index_max_tasks
        self._index: dict[str, IndexEntry] = dict(feed.index or {})
        if feed.index is None and feed.state is not None:
            # Carried by a run from before the index: what it kept of the stream is a start.
            self._index_entries([(item.topic, item.data) for item in feed.state.log])
        # The SDK types a handler's parameters as unknown: this one is the stream's, which takes a `PublishInput`.
        publish = cast(
            "Callable[[PublishInput], None]",
            workflow.get_signal_handler(STREAM_PUBLISH_SIGNAL),  # pyright: ignore[reportUnknownMemberType]
        )

        def on_publish(batch: PublishInput) -> None:
            publish(batch)
            self._index_entries([(entry.topic, entry.data) for entry in batch.items])

        # The stream's own handler first, then the index; no command either way.
        workflow.set_signal_handler(STREAM_PUBLISH_SIGNAL, on_publish)  # pyright: ignore[reportUnknownMemberType]

    def _index_entries(self, entries: list[tuple[str, str]]) -> None:
        converter = workflow.payload_converter()
        for topic, data in entries:
            if topic != TRANSITION_TOPIC:
                continue
            payload = Payload()
            try:
                payload.ParseFromString(base64.b64decode(data))
                value = converter.from_payloads([payload])[0]
            except Exception:
                continue  # not a transition this code wrote: the stream keeps it, the index does not
            if isinstance(value, dict):
                self._index_transition(cast("dict[str, Any]", value))

    def _index_transition(self, item: dict[str, Any]) -> None:
        key, seq, fields = item.get("w"), item.get("s"), item.get("m")
        if not isinstance(key, str) or not isinstance(seq, int) or not isinstance(fields, dict):
            return
        held = self._index.get(key)
        if held is not None and seq <= held[0]:
            return  # already applied
        status = cast("dict[str, Any]", fields).get(Memo.STATUS, held[1] if held is not None else None)
        if status in TERMINAL_STATUSES:
            self._index.pop(key, None)
            return
        if not isinstance(status, str):
            return
        deadline = item.get("x", UNKNOWN_DEADLINE)
        if not (deadline is None or isinstance(deadline, int)):
            deadline = UNKNOWN_DEADLINE
        if deadline == UNKNOWN_DEADLINE and held is not None:
            deadline = held[2]
        self._index.pop(key, None)  # the most recently changed last: the first to leave is the longest idle
        self._index[key] = (seq, status, deadline)
        while len(self._index) > self._index_max:
            del self._index[next(iter(self._index))]

    @workflow.query(name=INDEX_QUERY)
    def indexed(self, workflow_ids: list[str]) -> dict[str, IndexEntry]:
        """The entries of those of `workflow_ids` the index holds (open tasks, as their transitions say)."""
        return {key: self._index[key] for key in workflow_ids if key in self._index}

    @workflow.run
    async def run(self, feed: TaskFeedInput) -> None:
        await workflow.wait_condition(
            lambda: (
                workflow.info().is_continue_as_new_suggested()
                or workflow.info().get_current_history_length() >= feed.continue_after_events
            )
        )
        state = self.stream.get_state()
        self.stream.truncate(max(0, state.base_offset + len(state.log) - feed.retained_items))
        carry_index = workflow.patched(INDEX_PATCH)
        await self.stream.continue_as_new(
            lambda state: [
                TaskFeedInput(
                    shard=feed.shard,
                    state=state,
                    continue_after_events=feed.continue_after_events,
                    retained_items=feed.retained_items,
                    index=self._carried_index() if carry_index else None,
                    index_max_tasks=feed.index_max_tasks,
                )
            ]
        )

    def _carried_index(self) -> dict[str, IndexEntry]:
        """The index less the tasks past their deadline (their runs close on their own timers)."""
        now_ms = int(workflow.now().timestamp() * 1000)
        return {
            key: entry
            for key, entry in self._index.items()
            if entry[2] is None or entry[2] == UNKNOWN_DEADLINE or entry[2] > now_ms
        }


@workflow.defn(name=TASK_FEED_WORKFLOW, versioning_behavior=VersioningBehavior.AUTO_UPGRADE)
class AutoUpgradeTaskFeedWorkflow(TaskFeedWorkflow):
    """On a versioned worker: a feed moves to the current build at its next step (it never ends on its own)."""

    @workflow.run
    async def run(self, feed: TaskFeedInput) -> None:
        await super().run(feed)
