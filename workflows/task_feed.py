"""`TaskFeedWorkflow`: one shard of the task change feed (`feed_contract`), a workflow stream kept while it is used.

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

A shard ends when nothing uses it: every `tick_s` it looks whether a task
published, a front's poll waits on it or its index holds an open task. A poll
that waits proves little (the front may have stopped while it waited), so a
tick with nothing published appends a `TICK_TOPIC` item, which ends every
waiting poll: a running front polls again at once, a stopped one does not, and
at the next tick a shard with no poll, no publish and no open task completes.
A front starts it again when it next follows the feed (`USE_EXISTING`). A run
continues as new after `max_run_s` at the latest, so the run timeout the front
starts it with (`RUN_TIMEOUT`) closes only a shard no worker runs any more. A
shard's first run numbers its items from the microseconds of its start, not
from 0: a front still holding an offset of an earlier chain of the same shard
then reads it as truncated and re-reads its tasks, instead of waiting for an
offset the new chain has not reached.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import timedelta
from typing import Any, cast

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.common import VersioningBehavior
from temporalio.contrib.workflow_streams import PublishInput, WorkflowStream, WorkflowStreamState

with workflow.unsafe.imports_passed_through():
    from mcp_tasks_temporal.temporal.contract import TERMINAL_STATUSES, Memo
    from mcp_tasks_temporal.temporal.feed_contract import (
        INDEX_QUERY,
        STREAM_PUBLISH_SIGNAL,
        TASK_FEED_WORKFLOW,
        TICK_TOPIC,
        TRANSITION_TOPIC,
        UNKNOWN_DEADLINE,
        IndexEntry,
        TaskFeedInput,
    )

INDEX_PATCH = "carry-the-task-index"
"""Guards the continue-as-new argument that carries the index: a run from before it carried none."""
UNUSED_PATCH = "end-when-unused"
"""Guards the ticks (a timer each) after which a shard ends, or continues as new: a run from before had neither."""
FRESH_OFFSETS_PATCH = "offsets-from-start-time"
"""Guards a first run's offsets numbered from its start time (no command; the offsets fronts read)."""


@workflow.defn(name=TASK_FEED_WORKFLOW)
class TaskFeedWorkflow:
    """Holds one shard's stream; all its work is in the stream's handlers."""

    @workflow.init
    def __init__(self, feed: TaskFeedInput) -> None:
        prior = feed.state
        if prior is None and workflow.patched(FRESH_OFFSETS_PATCH):
            prior = WorkflowStreamState(base_offset=int(workflow.now().timestamp() * 1_000_000))
        self.stream = WorkflowStream(prior_state=prior)
        self._published = False
        """Whether a task published since the last tick."""
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
            self._published = True
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
        if not workflow.patched(UNUSED_PATCH):
            await workflow.wait_condition(lambda: _history_full(feed))
        elif await self._unused(feed):
            return
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
                    tick_s=feed.tick_s,
                    max_run_s=feed.max_run_s,
                )
            ]
        )

    async def _unused(self, feed: TaskFeedInput) -> bool:
        """Tick until nothing uses the shard (True) or the run must continue as new (False)."""
        started = workflow.now()
        tick = timedelta(seconds=feed.tick_s)
        while True:
            self._published = False
            try:
                await workflow.wait_condition(lambda: _history_full(feed), timeout=tick)
                return False
            except TimeoutError:
                pass
            if not self._published:
                if not workflow.all_handlers_finished():
                    # Polls wait, of running fronts or of stopped ones: ending them shows which poll again.
                    self.stream.topic(TICK_TOPIC).publish(None)
                elif not self._index:
                    return True
            if (workflow.now() - started).total_seconds() >= feed.max_run_s:
                return False

    def _carried_index(self) -> dict[str, IndexEntry]:
        """The index less the tasks past their deadline (their runs close on their own timers)."""
        now_ms = int(workflow.now().timestamp() * 1000)
        return {
            key: entry
            for key, entry in self._index.items()
            if entry[2] is None or entry[2] == UNKNOWN_DEADLINE or entry[2] > now_ms
        }


def _history_full(feed: TaskFeedInput) -> bool:
    info = workflow.info()
    return info.is_continue_as_new_suggested() or info.get_current_history_length() >= feed.continue_after_events


@workflow.defn(name=TASK_FEED_WORKFLOW, versioning_behavior=VersioningBehavior.AUTO_UPGRADE)
class AutoUpgradeTaskFeedWorkflow(TaskFeedWorkflow):
    """On a versioned worker: a feed moves to the current build at its next step (it may outlive any one build)."""

    @workflow.run
    async def run(self, feed: TaskFeedInput) -> None:
        await super().run(feed)
