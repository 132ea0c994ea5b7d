"""The gateway's reads for the front's watchers (front/task_watch.py, front/feed_watch.py): the task feed's
shards, and the reads of a followed task that neither its history nor the feed carries.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflow.v1 import PendingActivityInfo
from temporalio.client import (
    Client,
    WorkflowHistoryEventFilterType,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import RawValue, WorkflowIDConflictPolicy
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.service import RPCError

from mcp_tasks_temporal.front.gateway_reads import (
    FeedItem,
    Observed,
    Snapshot,
    TemporalCallFailed,
    call_failed,
    rpc_reason,
    snapshot,
)
from mcp_tasks_temporal.temporal.contract import as_object
from mcp_tasks_temporal.temporal.feed_contract import FEED_SHARDS, TASK_FEED_WORKFLOW, TaskFeedInput, feed_workflow_id


class WatcherReads:
    """Mixed into `TemporalTaskGateway`, whose client and task queue these use."""

    client: Client
    task_queue: str

    async def start_feed_shards(self) -> None:
        """Start the task feed's shard workflows of this queue, or find them running."""
        for shard in range(FEED_SHARDS):
            await self.client.start_workflow(
                TASK_FEED_WORKFLOW,
                TaskFeedInput(shard=shard),
                id=feed_workflow_id(self.task_queue, shard),
                task_queue=self.task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                static_summary="MCP task feed shard",
            )

    async def feed_items(self, shard: int, from_offset: int, cooldown: timedelta) -> AsyncIterator[FeedItem]:
        """The items of a feed shard from `from_offset` (0: all it keeps), as they come; ends if the shard closes.

        Undecoded and serialized: a front decodes an item to route it, and keeps those of the last minutes
        (up to every item the shards keep) compact.

        Raises:
            TemporalCallFailed: The shard's long poll failed.
        """
        stream = WorkflowStreamClient.create(self.client, feed_workflow_id(self.task_queue, shard))
        try:
            async for item in stream.subscribe(from_offset=from_offset, result_type=RawValue, poll_cooldown=cooldown):
                yield FeedItem(item.offset, item.topic, item.data.payload.SerializeToString())
        except RPCError as err:
            raise TemporalCallFailed(rpc_reason(err)) from None
        except (WorkflowUpdateRPCTimeoutOrCancelledError, WorkflowUpdateFailedError) as err:
            # A poll's update times out on a busy or restarting server as any other call fails.
            raise TemporalCallFailed(type(err).__name__) from None

    async def feed_offset(self, shard: int) -> int:
        """A feed shard's next offset: a query, so answered only once a worker runs the shard.

        Raises:
            TemporalCallFailed: No worker answered, or the call failed.
        """
        stream = WorkflowStreamClient.create(self.client, feed_workflow_id(self.task_queue, shard))
        try:
            return await stream.get_offset()
        except RPCError as err:
            raise TemporalCallFailed(rpc_reason(err)) from None
        except (WorkflowQueryFailedError, WorkflowQueryRejectedError) as err:
            raise TemporalCallFailed(type(err).__name__) from None

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

    async def close_event(self, workflow_id: str) -> HistoryEvent | None:
        """The run's close event once it is written (a long poll for that event alone), which holds the result.

        Raises:
            TemporalCallFailed: The long poll failed.
        """
        handle = self.client.get_workflow_handle(workflow_id)
        try:
            async for event in handle.fetch_history_events(
                wait_new_event=True, event_filter_type=WorkflowHistoryEventFilterType.CLOSE_EVENT
            ):
                return event
        except RPCError as err:
            raise call_failed(err) from None
        return None

    def observed(self, seen: Snapshot) -> Observed:
        return Observed(self.client.get_workflow_handle(seen.workflow_id), seen)

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
