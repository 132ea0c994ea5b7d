"""The gateway's reads for the front's watchers (front/task_watch.py, front/feed_watch.py): the task feed's
shards, and the reads of a followed task that neither its history nor the feed carries.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import anyio
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflow.v1 import PendingActivityInfo
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHistoryEventFilterType,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.contrib.workflow_streams import PublishEntry, PublishInput
from temporalio.service import RPCError

from mcp_tasks_temporal.front.gateway.history import (
    HistoryChange,
    RunClosed,
    changes,
    closing,
    terminated_run_error,
    termination_error,
)
from mcp_tasks_temporal.front.gateway.reads import (
    FeedItem,
    FeedPosition,
    ShardRun,
    Snapshot,
    TemporalCallFailed,
    call_failed,
    rpc_reason,
    snapshot,
)
from mcp_tasks_temporal.front.gateway.views import task_view
from mcp_tasks_temporal.temporal.contract import JOIN_FEED_SIGNAL, WORKFLOW_KIND, Memo, as_object
from mcp_tasks_temporal.temporal.feed_contract import (
    FEED_SHARDS,
    INDEX_QUERY,
    RUN_TIMEOUT,
    STATUS_TOPIC,
    STREAM_PUBLISH_SIGNAL,
    TASK_FEED_WORKFLOW,
    TICK_S,
    TRANSITION_TOPIC,
    UNKNOWN_DEADLINE,
    IndexEntry,
    TaskFeedInput,
    feed_shard,
    feed_workflow_id,
)
from mcp_tasks_temporal.temporal.ids import OwnerKeying, is_task_id
from mcp_tasks_temporal.temporal.tool_results import call_tool_result, failure_outcome

__all__ = ["FEED_SHARDS", "STATUS_TOPIC", "TICK_S", "TRANSITION_TOPIC", "WatcherReads", "feed_shard"]

logger = logging.getLogger(__name__)

INDEX_TIMEOUT_S: Final = 1.5
"""How long a listen waits for a shard's index before it reads that shard's tasks from visibility instead."""


class WatcherReads:
    """Mixed into `TemporalTaskGateway`, whose client and task queue these use."""

    client: Client
    task_queue: str
    owner_keying: OwnerKeying
    now_ms: Callable[[], int]
    """The time in epoch milliseconds: a task's `createdAt`, and whether its TTL has run out (the gateway's
    `clock`: a test's moves on demand, so a TTL check needs no wait; the workflow's own TTL timer runs on
    Temporal's time)."""

    async def start_feed_shards(self) -> None:
        """Start the task feed's shard workflows of this queue, or find them running.

        A shard ends once nothing uses it (workflows/task_feed.py); its run timeout closes one no worker runs.
        """
        for shard in range(FEED_SHARDS):
            await self.client.start_workflow(
                TASK_FEED_WORKFLOW,
                TaskFeedInput(shard=shard),
                id=feed_workflow_id(self.task_queue, shard),
                task_queue=self.task_queue,
                run_timeout=RUN_TIMEOUT,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                static_summary="MCP task feed shard",
            )

    async def join_feed(self, workflow_id: str) -> None:
        """Ask a task onto the feed: a listen names it (the task publishes from then on, its state so far first).

        Raises:
            TemporalCallFailed: The call failed; `lasting` when the run has closed or is gone.
        """
        try:
            await self.client.get_workflow_handle(workflow_id).signal(JOIN_FEED_SIGNAL)
        except RPCError as err:
            raise call_failed(err) from None

    async def closed_unannounced(self, since_ms: int) -> list[str]:
        """Workflow IDs of this queue's runs closed since `since_ms` by what no workflow code runs for: an
        operator's terminate, an execution timeout. A task on the feed publishes no transition for those.

        Raises:
            TemporalCallFailed: The call failed.
        """
        since = datetime.fromtimestamp(since_ms / 1000, UTC).isoformat().replace("+00:00", "Z")
        query = (
            f"TaskQueue = '{self.task_queue}' AND ExecutionStatus IN ('Terminated', 'TimedOut')"
            f" AND CloseTime >= '{since}'"
        )
        try:
            return [execution.id async for execution in self.client.list_workflows(query)]
        except RPCError as err:
            raise TemporalCallFailed(rpc_reason(err)) from None

    async def keep_feed_shard(self, shard: int) -> None:
        """Say this front follows a feed shard, starting it if it is not running (an empty publish, signal-with-start).

        A shard that nothing publishes to for a tick, with no open task, ends (workflows/task_feed.py): a front
        that reads its history is invisible to it, so the front publishes nothing now and then.

        Raises:
            TemporalCallFailed: The call failed.
        """
        try:
            await self.client.start_workflow(
                TASK_FEED_WORKFLOW,
                TaskFeedInput(shard=shard),
                id=feed_workflow_id(self.task_queue, shard),
                task_queue=self.task_queue,
                run_timeout=RUN_TIMEOUT,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                static_summary="MCP task feed shard",
                start_signal=STREAM_PUBLISH_SIGNAL,
                start_signal_args=[PublishInput()],
            )
        except RPCError as err:
            raise TemporalCallFailed(rpc_reason(err)) from None

    async def shard_history(self, shard: int, after: FeedPosition | None) -> AsyncIterator[FeedItem | ShardRun]:
        """A feed shard's items as its history records them, then each new one as it comes: a long poll per shard.

        The items are read from the publish signals the shard received, in the order it received them, not
        from the shard itself: no workflow task of the shard stands between a task's publish and a front.
        `after` None: the latest run from its start, the items it carried over from the run before included
        (everything the shard keeps); otherwise the run `after` names, from the event after it. Each run
        followed (continue-as-new included) begins with its `ShardRun`; a run's carried items are not read
        again when the chain is followed into it. Ends when the chain ends (the shard ended unused, timed
        out, or was closed by hand).

        Raises:
            TemporalCallFailed: A long poll failed (`lasting`: the shard does not exist).
        """
        shard_id = feed_workflow_id(self.task_queue, shard)
        try:
            if after is None:
                run_id, seen, carried = (await self.client.get_workflow_handle(shard_id).describe()).run_id, 0, True
            else:
                run_id, seen, carried = after.run_id, after.event_id, False
            while True:
                next_run = ""
                handle = self.client.get_workflow_handle(shard_id, run_id=run_id)
                async for event in handle.fetch_history_events(wait_new_event=True):
                    if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
                        feed = await self._feed_input(event)
                        yield ShardRun(run_id, feed.tick_s if feed is not None else TICK_S)
                        if carried and feed is not None and feed.state is not None and event.event_id > seen:
                            position = FeedPosition(run_id, event.event_id)
                            for wire in feed.state.log:
                                yield FeedItem(position, wire.topic, base64.b64decode(wire.data))
                        continue
                    if event.event_id <= seen:
                        continue
                    if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
                        position = FeedPosition(run_id, event.event_id)
                        for entry in await self._published(event):
                            yield FeedItem(position, entry.topic, base64.b64decode(entry.data))
                    elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
                        next_run = event.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
                if not next_run:
                    return
                run_id, seen, carried = next_run, 0, False
        except RPCError as err:
            raise call_failed(err) from None

    async def _feed_input(self, started: HistoryEvent) -> TaskFeedInput | None:
        payloads = started.workflow_execution_started_event_attributes.input.payloads
        try:
            [feed] = await self.client.data_converter.decode(payloads, [TaskFeedInput])
        except Exception:
            logger.warning("a task feed shard's start input is not one this front reads; its carried items skipped")
            return None
        return feed if isinstance(feed, TaskFeedInput) else None

    async def _published(self, signaled: HistoryEvent) -> list[PublishEntry]:
        """What a publish signal carried; nothing for another signal, or one this front cannot read."""
        attributes = signaled.workflow_execution_signaled_event_attributes
        if attributes.signal_name != STREAM_PUBLISH_SIGNAL or not attributes.input.payloads:
            return []
        try:
            [batch] = await self.client.data_converter.decode(attributes.input.payloads, [PublishInput])
        except Exception:
            logger.warning("a publish to a task feed shard is not one this front reads; skipped")
            return []
        return list(batch.items) if isinstance(batch, PublishInput) else []

    async def indexed(
        self, workflow_ids: Sequence[str], *, timeout_s: float = INDEX_TIMEOUT_S
    ) -> dict[str, IndexEntry]:
        """The entries of those of `workflow_ids` their shards' indexes hold: one query per shard concerned.

        A shard that does not answer within `timeout_s` (no worker runs it, Temporal slow, code from before
        the index) answers nothing: its tasks are read as if none were indexed.
        """
        by_shard: dict[int, list[str]] = {}
        for wid in workflow_ids:
            by_shard.setdefault(feed_shard(wid), []).append(wid)
        found: dict[str, IndexEntry] = {}

        async def ask(shard: int, wids: list[str]) -> None:
            handle = self.client.get_workflow_handle(feed_workflow_id(self.task_queue, shard))
            answer: dict[str, Any] = {}
            with anyio.move_on_after(timeout_s) as scope:
                try:
                    answer = await handle.query(
                        INDEX_QUERY, wids, result_type=dict[str, Any], rpc_timeout=timedelta(seconds=timeout_s)
                    )
                except (RPCError, WorkflowQueryFailedError, WorkflowQueryRejectedError) as err:
                    reason = rpc_reason(err) if isinstance(err, RPCError) else type(err).__name__
                    logger.info("task index of feed shard %d not read: %s", shard, reason)
                    return
            if scope.cancelled_caught:
                logger.info("task index of feed shard %d not read within %.1f s", shard, timeout_s)
                return
            for wid, entry in answer.items():
                held = _index_entry(entry)
                if held is not None:
                    found[wid] = held

        async with anyio.create_task_group() as group:
            for shard, wids in by_shard.items():
                group.start_soon(ask, shard, wids)
        return found

    async def observe_indexed(self, task_ids: Sequence[str], principal: str | None) -> list[str]:
        """Those of `task_ids` this caller may see that their shards' indexes hold as open, unexpired tasks.

        The workflow ID names the principal, so another's task, like an unknown one, is not found. A task
        whose deadline the index does not know is left to the caller's other reads, as one not indexed.
        """
        wanted = {
            self.owner_keying.workflow_id(task_id, principal): task_id for task_id in task_ids if is_task_id(task_id)
        }
        entries = await self.indexed(list(wanted))
        now = self.now_ms()
        return [
            wanted[wid]
            for wid, (_, _, deadline) in entries.items()
            if wid in wanted and deadline != UNKNOWN_DEADLINE and (deadline is None or now < deadline)
        ]

    def feed_value(self, packed: bytes) -> Any:
        """A feed item's content (a JSON object, as the task published it), from `FeedItem.packed`."""
        return self.client.data_converter.payload_converter.from_payload(Payload.FromString(packed))

    async def read(self, workflow_id: str) -> Snapshot:
        """`snapshot` of a task a watcher follows.

        Raises:
            TemporalCallFailed: The read failed (the task is gone, Temporal unreachable).
        """
        try:
            return await snapshot(self.client, workflow_id)
        except RPCError as err:
            raise call_failed(err) from None

    async def ended_with(self, seen: Snapshot) -> dict[str, Any] | None:
        """The error a terminated task was ended with by a worker's failing-workflow policy, if it was."""
        if seen.status != WorkflowExecutionStatus.TERMINATED:
            return None
        return await terminated_run_error(self.client.get_workflow_handle(seen.workflow_id, run_id=seen.run_id))

    async def run_closed(self, workflow_id: str) -> RunClosed | None:
        """How the run closed, once its close event is written (a long poll for that event alone).

        Raises:
            TemporalCallFailed: The long poll failed.
        """
        handle = self.client.get_workflow_handle(workflow_id)
        try:
            async for event in handle.fetch_history_events(
                wait_new_event=True, event_filter_type=WorkflowHistoryEventFilterType.CLOSE_EVENT
            ):
                return closing(event)
        except RPCError as err:
            raise call_failed(err) from None
        return None

    async def history(self, workflow_id: str, run_id: str, *, after: int = 0) -> AsyncIterator[HistoryChange]:
        """The run's changes (`history.changes`), then each new one as it is written; those up to `after` undecoded.

        Raises:
            TemporalCallFailed: The long poll failed (`lasting`: the task is gone).
        """
        try:
            async for change in changes(self.client, workflow_id, run_id, after=after):
                yield change
        except RPCError as err:
            raise call_failed(err) from None

    async def closed_view(self, task_id: str, memo: dict[str, Any], run: RunClosed) -> dict[str, Any]:
        """The task as its run's close leaves it: what `tasks/get` answers from now on."""
        closed, event = run.status, run.event
        converter = self.client.data_converter
        closed_at = event.event_time.ToMilliseconds()  # as `describe` reports the close time
        if closed == WorkflowExecutionStatus.COMPLETED:
            payloads = event.workflow_execution_completed_event_attributes.result.payloads
            value = (await converter.decode(payloads))[0] if payloads else None
            if memo.get(Memo.KIND) == WORKFLOW_KIND:
                return task_view(task_id, memo, closed, result=call_tool_result(value), closed_at_ms=closed_at)
            return task_view(task_id, memo, closed, result=value, closed_at_ms=closed_at)
        if closed == WorkflowExecutionStatus.FAILED and memo.get(Memo.KIND) == WORKFLOW_KIND:
            failure = await converter.decode_failure(event.workflow_execution_failed_event_attributes.failure)
            outcome = failure_outcome(failure)
            shown = WorkflowExecutionStatus.COMPLETED if outcome.status == "completed" else closed
            return task_view(task_id, memo, shown, result=outcome.result, error=outcome.error, closed_at_ms=closed_at)
        if closed == WorkflowExecutionStatus.TERMINATED:
            error = await termination_error(self.client, event)
            return task_view(task_id, memo, closed, error=error, closed_at_ms=closed_at)
        return task_view(task_id, memo, closed, closed_at_ms=closed_at)

    async def current_status(self, workflow_id: str) -> tuple[str, int] | None:
        """The running tool's newest status line, read now.

        Raises:
            TemporalCallFailed: The read failed.
        """
        return await self.latest_status((await self.read(workflow_id)).pending_activities)

    async def latest_status(self, pending_activities: Sequence[PendingActivityInfo]) -> tuple[str, int] | None:
        """The newest `set_status` of the running tool, from its heartbeat details."""
        for pending in pending_activities:
            payloads = pending.heartbeat_details.payloads
            if not payloads:
                continue
            decoded = await self.client.data_converter.decode(payloads)
            details = decoded[0] if decoded else None
            status = as_object(details)
            if status.get("message"):
                return str(status["message"]), int(status.get("at_ms", 0))
        return None


def _index_entry(value: Any) -> IndexEntry | None:
    """A shard's answer for one task, checked: the front trusts its shape to no worker code."""
    if not isinstance(value, list | tuple) or len(value) != 3:  # pyright: ignore[reportUnknownArgumentType]
        return None
    seq, status, deadline = value  # pyright: ignore[reportUnknownVariableType]
    if not isinstance(seq, int) or not isinstance(status, str) or not (deadline is None or isinstance(deadline, int)):
        return None
    return (seq, status, deadline)
