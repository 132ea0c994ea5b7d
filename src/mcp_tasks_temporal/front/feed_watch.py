"""Watching tasks through the task feed: a few long polls per front, however many tasks it watches.

`TaskWatchHub` follows each task's history with a long poll of its own, so a
front's idle calls grow with the tasks it watches. This hub instead follows
the `FEED_SHARDS` feed workflows (`feed_contract`), one long poll each, and
hands every item to the watchers of its task. A task's transitions carry their
number (`feedSeq`, also in its memo), so the hub applies each exactly once and
in order from the state the subscriber read, whatever it read first:

- an item numbered at or below what the watcher has is already in that state;
- the next number is applied and published;
- a number past the next (the front fell further behind than a shard keeps)
  re-reads the task with `describe`, and its subscribers get that snapshot.

A task that does not publish (created by a front in poll mode, a workflow
tool, a run started on code from before the feed, a shard that went missing)
has no `feedSeq` in its memo and is followed by `TaskWatchHub` as before.

A subscriber registers after it read the task, and the hub may have read that
task's next item in between: the items of the last `RECENT_S` are kept per
task and replayed to a new watcher (its number filters what it already has).
A closing transition is published once the run's close event, which carries
the result, is read: one long poll for that event, from the item on.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Final, cast

import anyio
from anyio.abc import TaskGroup
from temporalio.client import (
    WorkflowExecutionStatus,
    WorkflowHistoryEventFilterType,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.service import RPCError

from mcp_tasks_temporal.front.backoff import Backoff, GaveUpError
from mcp_tasks_temporal.front.gateway import Observed, Snapshot, TemporalTaskGateway, snapshot, task_view
from mcp_tasks_temporal.front.task_watch import CLOSE_STATUS, Listener, Lost, TaskWatchHub, attach
from mcp_tasks_temporal.temporal.contract import TERMINAL_STATUSES, Memo
from mcp_tasks_temporal.temporal.feed_contract import (
    FEED_SHARDS,
    STATUS_TOPIC,
    TASK_FEED_WORKFLOW,
    TRANSITION_TOPIC,
    TaskFeedInput,
    feed_shard,
    feed_workflow_id,
)
from mcp_tasks_temporal.temporal.ids import workflow_id

logger = logging.getLogger(__name__)

RECENT_S: Final = 120.0
RECENT_MAX: Final = 100_000
POLL_COOLDOWN: Final = timedelta(milliseconds=5)
"""Pause between two polls of a shard that had items: short, a change waits at most this long in addition."""


@dataclass
class _Watcher:
    task_id: str
    key: str
    memo: dict[str, Any]
    seq: int
    listeners: set[Listener] = field(default_factory=set[Listener])
    on_lost: dict[Listener, Lost] = field(default_factory=dict[Listener, Lost])
    heartbeat: tuple[str, int] | None = None
    last: dict[str, Any] | None = None
    ready: bool = False
    """False until the first view is published; items meanwhile wait in `pending`."""
    pending: list[tuple[str, dict[str, Any]]] = field(default_factory=list[tuple[str, dict[str, Any]]])
    closing: bool = False

    def publish(self, task: dict[str, Any]) -> None:
        if task == self.last:
            return
        self.last = task
        for listener in list(self.listeners):
            listener(task)

    def lose(self, reason: str) -> None:
        for listener in list(self.listeners):
            lost = self.on_lost.get(listener)
            if lost is not None:
                lost(reason)


class FeedWatchHub(TaskWatchHub):
    """A `TaskWatchHub` served from the task feed; the tasks not on it are followed as the base class does."""

    def __init__(self, gateway: TemporalTaskGateway, *, give_up_after_s: float = 300.0) -> None:
        super().__init__(gateway, give_up_after_s=give_up_after_s)
        # A shard refuses polls for moments while it continues as new (FAILED_PRECONDITION as its workflow task
        # retries), and every front's subscribers wait on these few polls: retry them soon, not after 30 s.
        self._feed_retry = {"initial_s": 0.5, "cap_s": 5.0, "give_up_after_s": give_up_after_s}
        self._feed_watchers: dict[str, _Watcher] = {}
        self._recent: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        """The items of the last `RECENT_S` by task; `_arrivals` says when each came, oldest first."""
        self._arrivals: deque[tuple[float, str]] = deque()
        self._feed_group: TaskGroup | None = None
        self._following: set[int] = set()
        """Shards whose offset this front has read: their tasks are followed on the feed, the others' by history."""

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[None]:
        """Follow every shard while the server runs; fronts in feed mode start the shards too."""
        if self._feed_group is not None:
            yield
            return
        async with super().running(), anyio.create_task_group() as group:
            await self._start_shards()
            self._feed_group = group
            for shard in range(FEED_SHARDS):
                group.start_soon(self._follow_shard, shard, name=f"task feed {shard}")
            try:
                yield
            finally:
                self._feed_group = None
                self._feed_watchers.clear()
                self._following.clear()
                group.cancel_scope.cancel()

    async def _start_shards(self) -> None:
        client = self._gateway.client
        for shard in range(FEED_SHARDS):
            await client.start_workflow(
                TASK_FEED_WORKFLOW,
                TaskFeedInput(shard=shard),
                id=feed_workflow_id(self._gateway.task_queue, shard),
                task_queue=self._gateway.task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                static_summary="MCP task feed shard",
            )

    def subscribe(
        self,
        task_id: str,
        principal: str | None,
        listener: Listener,
        *,
        seen: Snapshot | None = None,
        on_lost: Lost | None = None,
    ) -> Callable[[], None]:
        if self._feed_group is None:
            raise RuntimeError("FeedWatchHub is not running: enter `hub.running()` for the life of the server")
        key = workflow_id(task_id, principal)
        watcher = self._feed_watchers.get(key)
        if watcher is None:
            if not _on_feed(seen) or feed_shard(key) not in self._following:
                return super().subscribe(task_id, principal, listener, seen=seen, on_lost=on_lost)
            assert seen is not None
            memo = {name: value for name, value in seen.memo.items() if name in _VIEWED}
            memo.setdefault(Memo.CREATED_AT, seen.start_time_ms)
            watcher = self._feed_watchers[key] = _Watcher(task_id, key, memo, int(memo[Memo.FEED_SEQ]))
            watcher.pending = list(self._recent.get(key, ()))
            self._feed_group.start_soon(self._first_view, watcher, seen)
        followed = watcher

        def stop_following() -> None:
            if self._feed_watchers.get(key) is followed:
                del self._feed_watchers[key]

        return attach(watcher, listener, on_lost, self._gateway.metrics, when_left=stop_following)

    async def _first_view(self, watcher: _Watcher, seen: Snapshot) -> None:
        try:
            watcher.heartbeat = await self._gateway.latest_status(seen.pending_activities)
            watcher.publish(task_view(watcher.task_id, watcher.memo, None, heartbeat=watcher.heartbeat))
        except Exception:
            logger.exception("first view of task %s failed", watcher.task_id)
            watcher.lose("the server's watcher of this task failed")
            return
        watcher.ready = True
        pending, watcher.pending = watcher.pending, []
        for topic, item in pending:
            self._apply(watcher, topic, item)

    # -- the shards ----------------------------------------------------------------------------------

    async def _follow_shard(self, shard: int) -> None:
        stream = WorkflowStreamClient.create(self._gateway.client, feed_workflow_id(self._gateway.task_queue, shard))
        backoff = Backoff(f"following task feed shard {shard}", logger, **self._feed_retry)
        # The offset is a query, answered only once a worker runs the shard: a front may start before its
        # workers, and follows the shard's tasks by their histories until then.
        while True:
            try:
                offset = await stream.get_offset()
                break
            except (RPCError, WorkflowQueryFailedError, WorkflowQueryRejectedError) as err:
                try:
                    await backoff.failed(_failure(err))
                except GaveUpError:
                    backoff.succeeded()  # no subscriber waits on this shard yet: keep trying, one log line a streak
        backoff.succeeded()
        self._following.add(shard)
        while True:
            try:
                async for item in stream.subscribe(from_offset=offset, poll_cooldown=POLL_COOLDOWN):
                    backoff.succeeded()
                    if item.offset > offset:
                        # The shard no longer keeps what this front had not read: re-read its tasks.
                        skipped = item.offset - offset
                        logger.warning("task feed shard %d skipped %d items; re-reading its tasks", shard, skipped)
                        self._resync_shard(shard)
                    offset = item.offset + 1
                    self._take(item.topic, item.data)
            except (RPCError, WorkflowUpdateRPCTimeoutOrCancelledError, WorkflowUpdateFailedError) as err:
                # A poll's update times out on a busy or restarting server as any other call fails: retry it.
                try:
                    await backoff.failed(_failure(err))
                except GaveUpError as gave_up:
                    for watcher in [w for w in self._feed_watchers.values() if feed_shard(w.key) == shard]:
                        watcher.lose(str(gave_up))
                    backoff.succeeded()
                continue
            # The stream ended: the shard was closed by hand. Start it again and go on from where it was.
            await self._start_shards()

    def _take(self, topic: str, data: Any) -> None:
        if not isinstance(data, dict):
            return
        item = cast("dict[str, Any]", data)
        key = item.get("w")
        if not isinstance(key, str):
            return
        self._remember(key, topic, item)
        watcher = self._feed_watchers.get(key)
        if watcher is None:
            return
        if not watcher.ready:
            watcher.pending.append((topic, item))
            return
        self._apply(watcher, topic, item)

    def _remember(self, key: str, topic: str, item: dict[str, Any]) -> None:
        now = time.monotonic()
        self._recent.setdefault(key, []).append((topic, item))
        self._arrivals.append((now, key))
        while self._arrivals and (self._arrivals[0][0] < now - RECENT_S or len(self._arrivals) > RECENT_MAX):
            _, old = self._arrivals.popleft()
            kept = self._recent.get(old)
            if kept:
                kept.pop(0)
                if not kept:
                    del self._recent[old]

    def _apply(self, watcher: _Watcher, topic: str, item: dict[str, Any]) -> None:
        if watcher.closing:
            return
        if topic == STATUS_TOPIC:
            if watcher.memo.get(Memo.STATUS) == "working" and isinstance(item.get("message"), str):
                at_ms = int(item.get("at_ms") or 0)
                if at_ms >= int(watcher.memo.get(Memo.LAST_UPDATED_AT) or 0):
                    watcher.heartbeat = (item["message"], at_ms)
                    watcher.publish(task_view(watcher.task_id, watcher.memo, None, heartbeat=watcher.heartbeat))
            return
        if topic != TRANSITION_TOPIC:
            return
        seq = int(item.get("s") or 0)
        if seq <= watcher.seq:
            return
        if seq > watcher.seq + 1:
            self._resync(watcher)
            return
        watcher.seq = seq
        watcher.memo.update(item.get("m") or {})
        watcher.heartbeat = None
        if watcher.memo.get(Memo.STATUS) in TERMINAL_STATUSES:
            # The run closes right after; its close event carries the result.
            watcher.closing = True
            assert self._feed_group is not None
            self._feed_group.start_soon(self._close, watcher)
            return
        watcher.publish(task_view(watcher.task_id, watcher.memo, None, heartbeat=None))

    def _resync_shard(self, shard: int) -> None:
        for watcher in list(self._feed_watchers.values()):
            if feed_shard(watcher.key) == shard:
                self._resync(watcher)

    def _resync(self, watcher: _Watcher) -> None:
        """Publish the task as it is now: what was missed is summed up in it."""
        watcher.ready = False
        assert self._feed_group is not None
        self._feed_group.start_soon(self._read_again, watcher)

    async def _read_again(self, watcher: _Watcher) -> None:
        backoff = Backoff(f"re-reading task {watcher.task_id}", logger, **self._feed_retry)
        while True:
            try:
                current = await snapshot(self._gateway.client, watcher.key)
                break
            except RPCError as err:
                # Temporal restarting: the task is read once it is back, or lost when it does not come back.
                try:
                    await backoff.failed(_failure(err))
                except GaveUpError as gave_up:
                    watcher.lose(str(gave_up))
                    return
        if current.status != WorkflowExecutionStatus.RUNNING:
            handle = self._gateway.client.get_workflow_handle(watcher.key)
            watcher.closing = True
            watcher.publish(await self._gateway.view(watcher.task_id, Observed(handle, current)))
            return
        watcher.memo.update({name: value for name, value in current.memo.items() if name in _VIEWED})
        watcher.seq = int(current.memo.get(Memo.FEED_SEQ) or watcher.seq)
        await self._first_view(watcher, current)

    async def _close(self, watcher: _Watcher) -> None:
        handle = self._gateway.client.get_workflow_handle(watcher.key)
        backoff = Backoff(f"reading the close of task {watcher.task_id}", logger, **self._feed_retry)
        while True:
            try:
                async for event in handle.fetch_history_events(
                    wait_new_event=True, event_filter_type=WorkflowHistoryEventFilterType.CLOSE_EVENT
                ):
                    closed = CLOSE_STATUS.get(event.event_type)
                    if closed is not None:
                        watcher.publish(await self.closed_view(watcher.task_id, watcher.memo, closed, event))
                        return
            except RPCError as err:
                # A Temporal restart while the run closes: its close event is still there once it is back.
                try:
                    await backoff.failed(_failure(err))
                except GaveUpError as gave_up:
                    watcher.lose(str(gave_up))
                    return


_VIEWED: Final = frozenset(
    {
        Memo.CREATED_AT,
        Memo.TTL_MS,
        Memo.POLL_INTERVAL_MS,
        Memo.STATUS,
        Memo.STATUS_MESSAGE,
        Memo.LAST_UPDATED_AT,
        Memo.INPUT_REQUESTS,
        Memo.ERROR,
        Memo.KIND,
        Memo.FEED_SEQ,
    }
)
"""The memo keys a task's view is built from: a watcher lives as long as its listens, so it keeps no more."""


def _failure(err: Exception) -> str:
    if isinstance(err, RPCError):
        return f"Temporal answered {err.status.name}"
    return type(err).__name__


def _on_feed(seen: Snapshot | None) -> bool:
    """Whether the task publishes to the feed, as its memo says: only a running one still can."""
    if seen is None or seen.status != WorkflowExecutionStatus.RUNNING:
        return False
    return isinstance(seen.memo.get(Memo.FEED_SEQ), int)
