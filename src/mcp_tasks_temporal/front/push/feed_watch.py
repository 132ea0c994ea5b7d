"""Watching tasks through the task feed: a few long polls per front, however many tasks it watches.

`TaskWatchHub` follows each task's history with a long poll of its own, so a
front's idle calls grow with the tasks it watches. This hub instead follows
the `FEED_SHARDS` feed workflows (`feed_contract`), one history long poll each:
it reads the publish signals a shard received from its history, so no workflow
task of the shard stands between a task's publish and the front, and hands
every item to the watchers of its task. Twice a shard's tick it publishes
nothing to the shard (signal-with-start): a shard ends once nothing uses it,
and a history read is invisible to it. A task's transitions carry their number
(`feedSeq`, also in its memo), so the hub applies each exactly once and in
order from the state the subscriber read, whatever it read first:

- an item numbered at or below what the watcher has is already in that state;
- the next number is applied and published;
- a number past the next (an item the front never read: it started after the
  shard's run that carried it) re-reads the task with `describe`, and its
  subscribers get that snapshot.

A task that does not publish (created by a front in poll mode, a workflow
tool, a run started on code from before the feed, a shard that went missing)
has no `feedSeq` in its memo and is followed by `TaskWatchHub` as before.

A subscriber registers after it read the task, and the hub may have read that
task's next item in between: the items of the last `RECENT_S` are kept per
task and replayed to a new watcher (its number filters what it already has).
A listen reads its tasks from visibility, a few calls for thousands of tasks
(`TemporalTaskGateway.observe_listed`; those the shards' indexes held for its
ack are read so after the ack), which may be behind the task: on
start the hub reads every item the shards still keep, not only new ones, so
an item published shortly before the front started is replayed as well. A
`working` task read that way is read once more with `describe` (its status
line, which visibility does not have), at a bounded rate, before its first
view is published.
A closing transition is published once the run's close event, which carries
the result, is read: one long poll for that event, from the item on.

A watcher is kept small, since a front may hold tens of thousands: its
memo as JSON bytes, its last published view only while the memo and status
line would not rebuild it, its subscribers in one dict, no task, queue or
closure of its own while nothing happens; the recent items are kept as their
serialized payloads. What is left after a listen is about 1 KiB per watched
task (docs/performance.md, "Push at scale").
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final, cast

import anyio
from anyio.abc import TaskGroup

from mcp_tasks_temporal.front.gateway import (
    FEED_SHARDS,
    STATUS_TOPIC,
    TICK_S,
    TRANSITION_TOPIC,
    FeedPosition,
    ListedTask,
    ShardRun,
    Snapshot,
    TemporalCallFailed,
    TemporalTaskGateway,
    feed_shard,
    task_view,
)
from mcp_tasks_temporal.front.push.backoff import Backoff, GaveUpError
from mcp_tasks_temporal.front.push.task_watch import Listener, Lost, TaskWatchHub, attach, tell_lost
from mcp_tasks_temporal.temporal.contract import FEED_JOINS_ON_LISTEN, TERMINAL_STATUSES, Memo

logger = logging.getLogger(__name__)

RECENT_S: Final = 120.0
RECENT_MAX: Final = 100_000
READS_AT_ONCE: Final = 16
"""`describe`s of watched tasks in flight at once (re-reads, `working` tasks listed from visibility)."""
UNANNOUNCED_CLOSES_EVERY_S: Final = 5.0
"""How often a front that follows tasks on the feed asks visibility which of its queue's runs closed with no
transition to publish (terminated, timed out): one list call per period, however many tasks it follows."""
UNANNOUNCED_CLOSES_OVERLAP_S: Final = 60.0
"""Each look goes back this much before the previous one: visibility's lag and the clocks' skew."""
FOLLOWING_AT_START_S: Final = 5.0
"""How long a starting front waits to follow every shard (starting those that do not run) before it serves:
a task it starts before it follows the task's shard is not put on the feed (`TemporalTaskGateway.feed_runs`)."""


# -- one followed task ---------------------------------------------------------------------------------


def _pack(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


class FeedWatcher:
    """One followed task: its memo packed, and its last view only while no memo and status line rebuild it.

    Most of the time the view last published is the view of the memo and status line as they are
    (`shown`): it is rebuilt when asked for, not kept as a second copy. Before either changes without
    being published (a closing transition, a re-read), the view is packed and kept (`_last`).
    """

    __slots__ = (
        "_heartbeat",
        "_last",
        "_memo",
        "_shown",
        "closing",
        "key",
        "pending",
        "ready",
        "seq",
        "subscribers",
    )

    def __init__(self, key: str, memo: dict[str, Any], seq: int) -> None:
        self.key = key
        self._memo = _pack(memo)
        self.seq = seq
        self.subscribers: dict[Listener, Lost | None] = {}
        self._heartbeat: tuple[str, int] | None = None
        self._last: bytes | None = None
        self._shown = False
        """The view published last is `_view()` of the memo and status line as they are; `_last` is then None."""
        self.ready = False
        """False until the first view is published; items meanwhile wait in `pending`."""
        self.pending: list[tuple[str, bytes]] | None = None
        self.closing = False

    @property
    def task_id(self) -> str:
        return self.key.rsplit("/", 1)[-1]  # the workflow ID ends with it: one string less per watcher

    @property
    def memo(self) -> dict[str, Any]:
        """A copy: store a change with `update_memo`."""
        return json.loads(self._memo)

    def update_memo(self, fields: dict[str, Any]) -> dict[str, Any]:
        memo = json.loads(self._memo)
        self._keep_last(memo)
        memo.update(fields)
        self._memo = _pack(memo)
        return memo

    @property
    def heartbeat(self) -> tuple[str, int] | None:
        """The running tool's newest status line (message, at_ms) when it is newer than the memo's."""
        return self._heartbeat

    @heartbeat.setter
    def heartbeat(self, value: tuple[str, int] | None) -> None:
        if value != self._heartbeat:
            self._keep_last(self.memo)
            self._heartbeat = value

    def _view(self, memo: dict[str, Any]) -> dict[str, Any]:
        return task_view(self.task_id, memo, None, heartbeat=self._heartbeat)

    def _keep_last(self, memo: dict[str, Any]) -> None:
        """The memo (as given) or the status line is about to change: pack the view they made, if it was shown."""
        if self._shown:
            self._last = _pack(self._view(memo))
            self._shown = False

    @property
    def last(self) -> dict[str, Any] | None:
        if self._shown:
            return self._view(self.memo)
        return json.loads(self._last) if self._last is not None else None

    def show(self, memo: dict[str, Any]) -> None:
        """Publish the task as its memo (`memo`, as stored) and status line say, unless that is what it showed."""
        if self._shown:
            return  # neither changed since it was published
        task = self._view(memo)
        last, self._last, self._shown = self._last, None, True
        if last is not None and _pack(task) == last:
            return
        for listener in list(self.subscribers):
            listener(task)

    def publish(self, task: dict[str, Any]) -> None:
        """Publish a view the memo and status line do not make (the task closed), unless that is what it showed."""
        packed = _pack(task)
        shown = _pack(self._view(self.memo)) if self._shown else self._last
        if packed == shown:
            return
        self._last, self._shown = packed, False
        for listener in list(self.subscribers):
            listener(task)

    def lose(self, reason: str) -> None:
        # The task ID only, as the history watchers say it: the workflow ID (`key`) can carry the principal.
        logger.warning("stopped watching task %s: %s", self.task_id, reason)
        tell_lost(self.subscribers, self.task_id, reason)


# -- the hub -------------------------------------------------------------------------------------------


class FeedWatchHub(TaskWatchHub):
    """A `TaskWatchHub` served from the task feed; the tasks not on it are followed as the base class does."""

    def __init__(self, gateway: TemporalTaskGateway, *, give_up_after_s: float = 300.0) -> None:
        super().__init__(gateway, give_up_after_s=give_up_after_s)
        self._feed_retry = {"initial_s": 1.0, "cap_s": 30.0, "give_up_after_s": give_up_after_s}
        self._feed_watchers: dict[str, FeedWatcher] = {}
        self._recent: dict[str, list[tuple[str, bytes]]] = {}
        """The items of the last `RECENT_S` by task; `_arrivals` says when each came, oldest first."""
        self._arrivals: deque[tuple[float, str]] = deque()
        self._feed_group: TaskGroup | None = None
        self._reads = anyio.CapacityLimiter(READS_AT_ONCE)
        self._following: set[int] = set()
        """Shards whose history this front reads: their tasks are followed on the feed, the others' by history."""
        self._following_all = anyio.Event()
        self._ticks = [TICK_S] * FEED_SHARDS
        """Each shard's tick, as its run says: the front says it follows the shard twice a tick."""
        self._tick_changed = [anyio.Event() for _ in range(FEED_SHARDS)]
        self._feed_left = self._stop_following_feed  # one bound method for every subscription

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[None]:
        """Follow every shard while the server runs, and keep each in use: fronts in feed mode start them too."""
        if self._feed_group is not None:
            yield
            return
        async with super().running(), anyio.create_task_group() as group:
            self._feed_group = group
            for shard in range(FEED_SHARDS):
                group.start_soon(self._keep_shard, shard, name=f"task feed {shard} in use")
                group.start_soon(self._follow_shard, shard, name=f"task feed {shard}")
            group.start_soon(self._watch_unannounced_closes, name="task feed: closes no task announced")
            # Its first tasks on the feed too, unless Temporal is slow to answer: then they are followed by history.
            with anyio.move_on_after(FOLLOWING_AT_START_S):
                await self._following_all.wait()
            try:
                yield
            finally:
                self._feed_group = None
                self._feed_watchers.clear()
                self._following.clear()
                self._following_all = anyio.Event()
                group.cancel_scope.cancel()

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
        key = self._gateway.owner_keying.workflow_id(task_id, principal)
        watcher = self._feed_watchers.get(key)
        if watcher is None:
            if not on_feed(seen) or feed_shard(key) not in self._following:
                return super().subscribe(task_id, principal, listener, seen=seen, on_lost=on_lost)
            assert seen is not None
            memo = {name: value for name, value in seen.memo.items() if name in _VIEWED}
            memo.setdefault(Memo.CREATED_AT, seen.start_time_ms)
            watcher = self._feed_watchers[key] = FeedWatcher(key, memo, int(memo[Memo.FEED_SEQ]))
            recent = self._recent.get(key)
            watcher.pending = list(recent) if recent else None
            if watcher.seq == FEED_JOINS_ON_LISTEN:
                # Not on the feed yet: the first listen that names it asks it on. Its item 0 is its state then.
                self._feed_group.start_soon(self._join, watcher)
            if seen.listed and memo.get(Memo.STATUS) == "working":
                # Visibility has no status line, and a working task's next item may be a while coming.
                self._feed_group.start_soon(self._read_again, watcher)
            elif seen.pending_activities:
                self._feed_group.start_soon(self._first_view, watcher, seen)
            else:
                self._show(watcher, memo, None)
        return attach(watcher, listener, on_lost, self._gateway.metrics, when_left=self._feed_left)

    def follows_shard_of(self, workflow_id: str) -> bool:
        """Whether this front reads the feed shard of the task `workflow_id`: a task on it is followed there."""
        return feed_shard(workflow_id) in self._following

    def _stop_following_feed(self, watcher: FeedWatcher) -> None:
        if self._feed_watchers.get(watcher.key) is watcher:
            del self._feed_watchers[watcher.key]

    async def _first_view(self, watcher: FeedWatcher, seen: Snapshot) -> None:
        try:
            heartbeat = await self._gateway.latest_status(seen.pending_activities)
        except Exception:
            logger.exception("first view of task %s failed", watcher.task_id)
            watcher.lose("the server's watcher of this task failed")
            return
        self._show(watcher, watcher.memo, heartbeat)

    def _show(self, watcher: FeedWatcher, memo: dict[str, Any], heartbeat: tuple[str, int] | None) -> None:
        """Publish the task as first read, then what came for it meanwhile.

        A read between the task's terminal transition and its close (a listen on a task that was just
        answered, a front reading a shard from its start) has that transition behind it: the items that
        come later are all numbered at or below it, so the close is read now, as the transition would have.
        """
        if memo.get(Memo.STATUS) in TERMINAL_STATUSES:
            watcher.ready, watcher.pending = True, None
            self._closing(watcher)
            return
        watcher.heartbeat = heartbeat
        watcher.show(memo)
        watcher.ready = True
        pending, watcher.pending = watcher.pending, None
        for topic, packed in pending or ():
            self._apply(watcher, topic, self._gateway.feed_value(packed))

    async def _watch_unannounced_closes(self) -> None:
        """Close the watchers of tasks that ended with nothing published: an operator's terminate, a run's
        execution timeout. Their close event says how (`closed_view`), as a history long poll would have seen."""
        since_ms: int | None = None
        while True:
            await anyio.sleep(UNANNOUNCED_CLOSES_EVERY_S)
            if not self._feed_watchers:
                since_ms = None  # nothing followed: nothing to tell, and no look back needed later
                continue
            looked_at_ms = int(time.time() * 1000)  # against Temporal's close times: the wall clock
            if since_ms is None:
                since_ms = looked_at_ms - int(UNANNOUNCED_CLOSES_EVERY_S * 1000)
            try:
                closed = await self._gateway.closed_unannounced(since_ms - int(UNANNOUNCED_CLOSES_OVERLAP_S * 1000))
            except TemporalCallFailed as err:
                logger.debug("looking for tasks closed off the feed: %s", err)
                continue
            since_ms = looked_at_ms
            for key in closed:
                watcher = self._feed_watchers.get(key)
                if watcher is not None and watcher.ready and not watcher.closing:
                    self._closing(watcher)

    # -- the shards ----------------------------------------------------------------------------------

    async def _keep_shard(self, shard: int) -> None:
        """Say twice a tick that this front follows the shard, so it does not end; start it if it has."""
        backoff = Backoff(f"keeping task feed shard {shard} in use", logger, **self._feed_retry)
        while True:
            try:
                await self._gateway.keep_feed_shard(shard)
                backoff.succeeded()
            except TemporalCallFailed as err:
                try:
                    await backoff.failed(str(err))
                except GaveUpError:
                    backoff.succeeded()  # nothing to end: keep trying, one log line a streak
                continue
            with anyio.move_on_after(self._ticks[shard] / 2):
                await self._tick_changed[shard].wait()

    async def _follow_shard(self, shard: int) -> None:
        # Its history from the latest run's start: everything the shard keeps, so what a listen read from a
        # lagging visibility is caught up.
        position: FeedPosition | None = None
        ended = False
        started_missing = False
        backoff = Backoff(f"following task feed shard {shard}", logger, **self._feed_retry)
        while True:
            try:
                if ended:
                    # The chain ended (nothing used it, or it was closed by hand): start the next one.
                    await self._gateway.keep_feed_shard(shard)
                    ended = False
                async for item in self._gateway.shard_history(shard, position):
                    backoff.succeeded()
                    started_missing = False
                    if isinstance(item, ShardRun):
                        self._following.add(shard)
                        if len(self._following) == FEED_SHARDS:
                            self._following_all.set()
                        self._on_run(shard, item)
                        if position is None or position.run_id != item.run_id:
                            position = FeedPosition(item.run_id, 0)
                        continue
                    position = item.position
                    self._take(item.topic, item.packed)
            except TemporalCallFailed as err:
                if err.lasting:
                    position = None  # the shard is not started yet, or its run is gone: read the latest
                    if not started_missing:
                        # Start it (an empty publish) and read it at once: a front that started before any
                        # worker or publisher must not wait out a backoff before its first notification.
                        ended = started_missing = True
                        continue
                try:
                    await backoff.failed(str(err))
                except GaveUpError as gave_up:
                    for watcher in [w for w in self._feed_watchers.values() if feed_shard(w.key) == shard]:
                        watcher.lose(str(gave_up))
                    backoff.succeeded()
                continue
            # Its open tasks, if any were left out of its index, no longer publish: read them again.
            position, ended = None, True
            self._resync_shard(shard)

    def _on_run(self, shard: int, run: ShardRun) -> None:
        if run.tick_s != self._ticks[shard]:
            self._ticks[shard] = run.tick_s
            self._tick_changed[shard].set()
            self._tick_changed[shard] = anyio.Event()

    def _take(self, topic: str, packed: bytes) -> None:
        data = self._gateway.feed_value(packed)
        if not isinstance(data, dict):
            return
        item = cast("dict[str, Any]", data)
        key = item.get("w")
        if not isinstance(key, str):
            return
        self._remember(key, topic, packed)
        watcher = self._feed_watchers.get(key)
        if watcher is None:
            return
        if not watcher.ready:
            if watcher.pending is None:
                watcher.pending = []
            watcher.pending.append((topic, packed))
            return
        self._apply(watcher, topic, item)

    def _remember(self, key: str, topic: str, packed: bytes) -> None:
        now = time.monotonic()
        self._recent.setdefault(key, []).append((topic, packed))
        self._arrivals.append((now, key))
        while self._arrivals and (self._arrivals[0][0] < now - RECENT_S or len(self._arrivals) > RECENT_MAX):
            _, old = self._arrivals.popleft()
            kept = self._recent.get(old)
            if kept:
                kept.pop(0)
                if not kept:
                    del self._recent[old]

    def _apply(self, watcher: FeedWatcher, topic: str, data: Any) -> None:
        if watcher.closing or not isinstance(data, dict):
            return
        item = cast("dict[str, Any]", data)
        if topic == STATUS_TOPIC:
            memo = watcher.memo
            if memo.get(Memo.STATUS) == "working" and isinstance(item.get("message"), str):
                at_ms = int(item.get("at_ms") or 0)
                if at_ms >= int(memo.get(Memo.LAST_UPDATED_AT) or 0):
                    watcher.heartbeat = (item["message"], at_ms)
                    watcher.show(memo)
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
        memo = watcher.update_memo(item.get("m") or {})
        watcher.heartbeat = None
        if memo.get(Memo.STATUS) in TERMINAL_STATUSES:
            self._closing(watcher)
            return
        watcher.show(memo)

    def _closing(self, watcher: FeedWatcher) -> None:
        """The task made its terminal transition: the run closes right after, and its close event has the result."""
        watcher.closing = True
        assert self._feed_group is not None
        self._feed_group.start_soon(self._close, watcher)

    def _resync_shard(self, shard: int) -> None:
        for watcher in list(self._feed_watchers.values()):
            if feed_shard(watcher.key) == shard:
                self._resync(watcher)

    def _resync(self, watcher: FeedWatcher) -> None:
        """Publish the task as it is now: what was missed is summed up in it."""
        watcher.ready = False
        assert self._feed_group is not None
        self._feed_group.start_soon(self._read_again, watcher)

    async def _read_again(self, watcher: FeedWatcher) -> None:
        backoff = Backoff(f"re-reading task {watcher.task_id}", logger, **self._feed_retry)
        while True:
            try:
                async with self._reads:
                    current = await self._gateway.read(watcher.key)
                break
            except TemporalCallFailed as err:
                # Temporal restarting: the task is read once it is back, or lost when it does not come back.
                if not await _retried(backoff, err, watcher):
                    return
        if not current.running:
            watcher.closing = True
            watcher.publish(await self._gateway.view(watcher.task_id, current))
            return
        read_seq = current.memo.get(Memo.FEED_SEQ)
        if isinstance(read_seq, int) and read_seq < watcher.seq:
            return  # answered after a newer re-read of it (two at once: a shard's chain ended meanwhile)
        memo = watcher.update_memo({name: value for name, value in current.memo.items() if name in _VIEWED})
        read = current.memo.get(Memo.FEED_SEQ)
        if isinstance(read, int):
            watcher.seq = read
        try:
            heartbeat = await self._gateway.latest_status(current.pending_activities)
        except Exception:
            logger.exception("first view of task %s failed", watcher.task_id)
            watcher.lose("the server's watcher of this task failed")
            return
        self._show(watcher, memo, heartbeat)

    async def _join(self, watcher: FeedWatcher) -> None:
        backoff = Backoff(f"asking task {watcher.task_id} onto the feed", logger, **self._feed_retry)
        while True:
            try:
                async with self._reads:
                    await self._gateway.join_feed(watcher.key)
                return
            except TemporalCallFailed as err:
                if err.lasting:
                    # Closed before it could join: what is left to tell is its close, read from its run.
                    self._resync(watcher)
                    return
                if not await _retried(backoff, err, watcher):
                    return

    async def _close(self, watcher: FeedWatcher) -> None:
        backoff = Backoff(f"reading the close of task {watcher.task_id}", logger, **self._feed_retry)
        while True:
            try:
                closed = await self._gateway.run_closed(watcher.key)
                break
            except TemporalCallFailed as err:
                # A Temporal restart while the run closes: its close event is still there once it is back.
                if not await _retried(backoff, err, watcher):
                    return
        if closed is not None:
            watcher.publish(await self._gateway.closed_view(watcher.task_id, watcher.memo, closed))


async def _retried(backoff: Backoff, err: TemporalCallFailed, watcher: FeedWatcher) -> bool:
    """Wait to try a watcher's read again; False (and the watcher lost) when it may not be."""
    if err.lasting:
        watcher.lose(str(err))
        return False
    try:
        await backoff.failed(str(err))
    except GaveUpError as gave_up:
        watcher.lose(str(gave_up))
        return False
    return True


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


def on_feed(seen: Snapshot | ListedTask | None) -> bool:
    """Whether the task publishes to the feed, as its memo says: only a running one still can."""
    if seen is None or not seen.running:
        return False
    return isinstance(seen.memo.get(Memo.FEED_SEQ), int)
