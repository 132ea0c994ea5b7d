"""Watching tasks for `notifications/tasks`: one observation per task per front server.

A watcher follows its workflow's history with a long poll
(`wait_new_event`), which costs nothing while nothing happens and adds no
events. Every memo upsert is a state change the workflow made, so replaying
the upserted fields in history order yields each transition, in order, none
skipped however close together they came. Progress is the one thing that is
not in the history (heartbeats are not events): while the tool's activity is
running, the watcher re-reads it with `describe` every `status_refresh_s`.
All subscribers of a task on this front share its watcher; the watchers run
in the hub's task group, which lives as long as the server (`running`), so
none outlives a shutdown.

A failing history poll (Temporal restarting, a network blip) is retried with
exponential backoff, logged once per failure streak. A watcher that cannot go
on (its task was deleted, or Temporal stayed unreachable for minutes) tells
each subscriber, whose stream then ends with an error: a stream that silently
stops updating would leave its client waiting forever.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

import anyio
from anyio.abc import TaskGroup

from mcp_tasks_temporal.front.gateway import Change, Snapshot, TemporalCallFailed, TemporalTaskGateway, task_view
from mcp_tasks_temporal.front.push.backoff import Backoff, GaveUpError
from mcp_tasks_temporal.temporal.contract import TERMINAL_STATUSES, WORKFLOW_KIND, Memo

if TYPE_CHECKING:
    from mcp_tasks_temporal.temporal.metrics import FrontMetrics

logger = logging.getLogger(__name__)

Listener = Callable[[dict[str, Any]], None]
_E = TypeVar("_E", bound=BaseException)
Lost = Callable[[str, str], None]
"""Told the task's ID and why, when the task can no longer be followed; the reason holds no secret.

The task's ID comes with it so one callable serves a listen on thousands of tasks."""


class Followed(Protocol):
    """A watcher of one task, as its subscribers see it: whichever way the hub follows the task."""

    subscribers: dict[Listener, Lost | None]
    """Each listener, with what it is told if the task can no longer be followed."""

    @property
    def last(self) -> dict[str, Any] | None:
        """The view published last; read only here (a watcher may keep it packed)."""
        ...


_W = TypeVar("_W", bound=Followed)


class Subscription(Generic[_W]):
    """A listener's hold on a watcher; calling it unsubscribes.

    A slotted object rather than a closure: a front holds one per watched task and listen.
    """

    __slots__ = ("_left", "_listener", "_metrics", "_watcher")

    def __init__(self, watcher: _W, listener: Listener, metrics: FrontMetrics, left: Callable[[_W], None]) -> None:
        self._watcher = watcher
        self._listener = listener
        self._metrics = metrics
        self._left = left

    def __call__(self) -> None:
        subscribers = self._watcher.subscribers
        if self._listener in subscribers:
            del subscribers[self._listener]
            self._metrics.subscribers_changed(-1)
        if not subscribers:
            self._left(self._watcher)


def attach(
    watcher: _W,
    listener: Listener,
    on_lost: Lost | None,
    metrics: FrontMetrics,
    *,
    when_left: Callable[[_W], None],
) -> Callable[[], None]:
    """Add `listener` to `watcher` (told the state so far at once); returns its unsubscribe.

    `when_left` is called with the watcher once its last listener has left: the hub stops following the task.
    """
    if listener not in watcher.subscribers:
        watcher.subscribers[listener] = on_lost
        metrics.subscribers_changed(+1)
    elif on_lost is not None:
        watcher.subscribers[listener] = on_lost
    if watcher.last is not None:
        listener(watcher.last)
    return Subscription(watcher, listener, metrics, when_left)


def tell_lost(subscribers: dict[Listener, Lost | None], task_id: str, reason: str) -> None:
    """Tell each subscriber that asked why its task can no longer be followed."""
    for listener in list(subscribers):
        lost = subscribers.get(listener)
        if lost is not None:
            lost(task_id, reason)


@dataclass
class _Watcher:
    task_id: str
    workflow_id: str
    subscribers: dict[Listener, Lost | None] = field(default_factory=dict[Listener, Lost | None])
    last: dict[str, Any] | None = None
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    """Cancelled when the last subscriber leaves (possibly before the watcher started)."""
    seen: Snapshot | None = None
    """What the subscriber already read of the task, so following it starts without reading it again."""

    def publish(self, task: dict[str, Any]) -> None:
        if task == self.last:
            return
        self.last = task
        for listener in list(self.subscribers):
            listener(task)

    def lose(self, reason: str) -> None:
        tell_lost(self.subscribers, self.task_id, reason)


class TaskWatchHub:
    """Fans one watcher per task out to every subscriber of it on this front server."""

    def __init__(
        self,
        gateway: TemporalTaskGateway,
        *,
        status_refresh_s: float = 1.0,
        retry_initial_s: float = 1.0,
        retry_cap_s: float = 30.0,
        give_up_after_s: float = 300.0,
    ) -> None:
        self._gateway = gateway
        self._status_refresh_s = status_refresh_s
        self._retry = {"initial_s": retry_initial_s, "cap_s": retry_cap_s, "give_up_after_s": give_up_after_s}
        self._watchers: dict[str, _Watcher] = {}
        self._group: TaskGroup | None = None
        self._left = self._stop_following  # one bound method for every subscription, not one each

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[None]:
        """Own the watchers while the server runs; leaving stops every one of them.

        A nested entry (the same app entered as worker and front in one process)
        shares the outer one, which stays the owner.
        """
        if self._group is not None:
            yield
            return
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                self._watchers.clear()
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
        """Call `listener` with the task's current state, then with every change; returns the unsubscribe.

        `seen` is the task as the caller just read it, if it did; a new watcher starts from it.
        `on_lost` is called instead, once, if the task can no longer be followed.
        """
        if self._group is None:
            raise RuntimeError("TaskWatchHub is not running: enter `hub.running()` for the life of the server")
        key = self._gateway.owner_keying.workflow_id(task_id, principal)
        watcher = self._watchers.get(key)
        if watcher is None:
            watcher = self._watchers[key] = _Watcher(task_id, key, seen=seen)
            self._group.start_soon(self._run, key, watcher, name=f"watch {key}")
        return attach(watcher, listener, on_lost, self._gateway.metrics, when_left=self._left)

    def _stop_following(self, watcher: _Watcher) -> None:
        key = watcher.workflow_id
        if self._watchers.get(key) is watcher:
            del self._watchers[key]
            watcher.scope.cancel()

    async def _run(self, key: str, watcher: _Watcher) -> None:
        reason: str | None = None
        try:
            with watcher.scope:
                await self._follow(watcher)
        # `except*`: what `_follow` raises comes through its refresher task group.
        except* TemporalCallFailed as group:
            reason = str(_first(group, TemporalCallFailed))
        except* GaveUpError as group:
            reason = str(_first(group, GaveUpError))
        except* Exception:
            logger.exception("watcher of task %s crashed", watcher.task_id)
            reason = "the server's watcher of this task failed"
        finally:
            if reason is not None:
                # The task id only: the workflow id (`key`) can carry the principal.
                logger.warning("stopped watching task %s: %s", watcher.task_id, reason)
                if self._watchers.get(key) is watcher:
                    del self._watchers[key]  # a new listen starts a new watcher
                watcher.lose(reason)
            elif self._watchers.get(key) is watcher and not watcher.subscribers:
                del self._watchers[key]

    async def _follow(self, watcher: _Watcher) -> None:
        key = watcher.workflow_id
        current = watcher.seen or await self._gateway.read(key)
        watcher.seen = None
        memo = current.memo
        memo.setdefault(Memo.CREATED_AT, current.start_time_ms)
        seen = current.history_length
        run_id = current.run_id
        workflow_kind = memo.get(Memo.KIND) == WORKFLOW_KIND
        heartbeat = (
            await self._gateway.latest_status(current.pending_activities)
            if current.running and not workflow_kind
            else None
        )
        if current.running:
            failure = await self._gateway.failing(current)
            failing = failure.status_message if failure is not None else None
            watcher.publish(task_view(watcher.task_id, memo, None, heartbeat=heartbeat, failing=failing))
        else:
            watcher.publish(await self._gateway.view(watcher.task_id, current))
            return
        state = _Followed(memo=memo, heartbeat=heartbeat)
        # A workflow tool's activities are the user's: their heartbeats are not status lines.
        activities = 0 if workflow_kind else len(current.pending_activities)
        del current  # a watcher lives as long as its task: keep only what it needs
        async with anyio.create_task_group() as refreshers:
            refresher: anyio.CancelScope | None = None

            def poll_status_while_running() -> None:
                # A started activity writes no event until it ends, so its status line must be polled.
                nonlocal refresher
                if activities and refresher is None:
                    refresher = anyio.CancelScope()
                    refreshers.start_soon(self._refresh_status, watcher, state, refresher)
                elif not activities and refresher is not None:
                    refresher.cancel()
                    refresher = None

            try:
                poll_status_while_running()
                # A workflow that continues-as-new is still one task: follow each run of the chain in turn.
                backoff = Backoff(f"following the history of task {watcher.task_id}", logger, **self._retry)
                while run_id:
                    next_run = ""
                    try:
                        # A retry reads the run's history again from its start: what was seen is skipped.
                        async for change in self._gateway.history(key, run_id, after=seen):
                            backoff.succeeded()
                            # A close is never old news: a failing run's retries show as events Temporal drops
                            # when it closes, so its close event may reuse a number already seen.
                            if change.event_id <= seen and change.change is not Change.CLOSED:
                                continue  # already part of the state described above
                            seen = change.event_id
                            if change.change is Change.CONTINUED:
                                next_run = change.next_run_id
                                break
                            if change.closed is not None:
                                view = await self._gateway.closed_view(watcher.task_id, state.memo, change.closed)
                                watcher.publish(view)
                                return
                            if not workflow_kind and change.change is Change.ROUND_STARTED:
                                activities += 1
                            elif not workflow_kind and change.change is Change.ROUND_ENDED:
                                activities = max(activities - 1, 0)
                                state.heartbeat = None
                            elif change.change is Change.WORKFLOW_TASK_FAILED:
                                # Temporal records a failing series' first failure only: say it once, as get does.
                                await self._publish_failing(watcher, state)
                            elif change.change is Change.MEMO:
                                state.memo.update(change.memo)
                                # A terminal status is upserted just before the run closes; the close event
                                # that follows carries the result, so that is the one to publish.
                                if state.memo.get(Memo.STATUS) not in TERMINAL_STATUSES:
                                    if activities and state.memo.get(Memo.STATUS) == "working":
                                        # The refresher's last read may be up to a period old: a frame built on
                                        # it would show an older status message than a tasks/get made meanwhile.
                                        state.heartbeat = await self._current_heartbeat(watcher) or state.heartbeat
                                    watcher.publish(
                                        task_view(watcher.task_id, state.memo, None, heartbeat=state.heartbeat)
                                    )
                            poll_status_while_running()
                    except TemporalCallFailed as err:
                        if err.lasting:
                            raise
                        await backoff.failed(str(err))
                        continue
                    run_id, seen = next_run, 0
            finally:
                refreshers.cancel_scope.cancel()

    async def _publish_failing(self, watcher: _Watcher, state: _Followed) -> None:
        """The task as `tasks/get` shows it once its workflow task is being retried after a failure."""
        try:
            current = await self._gateway.read(watcher.workflow_id)
        except TemporalCallFailed:
            return  # the next get or event says it
        failure = await self._gateway.failing(current)
        if failure is not None:
            watcher.publish(task_view(watcher.task_id, state.memo, None, failing=failure.status_message))

    async def _current_heartbeat(self, watcher: _Watcher) -> tuple[str, int] | None:
        try:
            return await self._gateway.current_status(watcher.workflow_id)
        except TemporalCallFailed:
            return None

    async def _refresh_status(self, watcher: _Watcher, state: _Followed, scope: anyio.CancelScope) -> None:
        """Heartbeats are not history events: poll the running tool's status line while it runs."""
        backoff = Backoff(f"reading the status line of task {watcher.task_id}", logger, **self._retry)
        with scope:
            while True:
                await anyio.sleep(self._status_refresh_s)
                try:
                    current = await self._gateway.read(watcher.workflow_id)
                except TemporalCallFailed as err:
                    # The history poll ends the watcher if this lasts: this one only waits longer each time.
                    await backoff.failed(str(err))
                    continue
                backoff.succeeded()
                if not current.running:
                    return  # the history stream delivers the close
                heartbeat = await self._gateway.latest_status(current.pending_activities)
                if heartbeat is not None and heartbeat != state.heartbeat:
                    state.heartbeat = heartbeat
                    watcher.publish(task_view(watcher.task_id, state.memo, None, heartbeat=heartbeat))


@dataclass
class _Followed:
    memo: dict[str, Any]
    heartbeat: tuple[str, int] | None


def _first(group: BaseExceptionGroup[_E], kind: type[_E]) -> _E:
    """The first leaf of an `except*` group."""
    member = group.exceptions[0]
    while isinstance(member, BaseExceptionGroup):
        member = cast("BaseExceptionGroup[_E]", member).exceptions[0]
    assert isinstance(member, kind)
    return member
