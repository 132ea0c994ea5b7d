"""Push: `subscriptions/listen` with `notifications.taskIds`, feeding `notifications/tasks` to waiters.

The SDK's `Client.listen()` knows only the four core filter flags, so the
listen is sent as a raw request on the session, in the client's own task
group (its response arrives only when the stream ends). Two SDK facts shape
the rest:

* A raw listen's acknowledgement is not consumed by the SDK: it reaches the
  client's `message_handler`, without anything that ties it to our request
  (the SDK mints the JSON-RPC id). So listens are opened one at a time under
  a lock, and an acknowledgement that arrives while one waits is its own.
* `notifications/tasks` reaches a `NotificationBinding` (the SDK routes
  methods the core protocol does not define there), and bindings may see
  near-simultaneous frames out of wire order. Each frame is a full task, so a
  feed keeps only the newest, and a terminal state is never replaced.

Anything short of an acknowledgement that lists the task (an error, a stock
server whose acknowledgement drops `taskIds`, no acknowledgement in time)
means "no push for this task": the waiter polls instead.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, Final

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.client.session import ClientSession, IncomingMessage
from mcp.shared.exceptions import MCPError

from mcp_tasks_temporal.client._models import DetailedTask, TaskNotificationParams, parse_timestamp

logger = logging.getLogger(__name__)

# Codes that say "this server has no such listen at all": stop asking for the rest of the session.
_UNSUPPORTED: Final = frozenset({types.METHOD_NOT_FOUND, types.MISSING_REQUIRED_CLIENT_CAPABILITY})


class Feed:
    """The newest pushed state of one task, for one waiter."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.lost = False
        """The listen stream ended: nothing more will be pushed on it."""
        self._pending: DetailedTask | None = None
        self._terminal_seen = False
        self._newest: datetime | None = None
        self._wake = anyio.Event()

    def offer(self, task: DetailedTask) -> None:
        if self._terminal_seen:
            return  # terminal states are final; a reordered older frame must not replace one
        updated = parse_timestamp(task.last_updated_at)
        if updated is not None and self._newest is not None and updated < self._newest:
            return  # overtaken by a newer frame already taken or pending
        self._newest = updated or self._newest
        self._terminal_seen = task.terminal
        self._pending = task
        self._wake.set()

    def end(self) -> None:
        self.lost = True
        self._wake.set()

    async def next(self, within_s: float) -> DetailedTask | None:
        """The newest state pushed since the last call; `None` after `within_s` or once the stream is lost."""
        with anyio.move_on_after(within_s):
            while self._pending is None and not self.lost:
                # Offers are synchronous, so nothing can land between this check and the new event.
                self._wake = anyio.Event()
                await self._wake.wait()
        task, self._pending = self._pending, None
        return task


class _AckSlot:
    def __init__(self) -> None:
        self.done = anyio.Event()
        self.task_ids: list[str] | None = None
        self.error: MCPError | None = None


class PushHub:
    """One per client session: opens task listens and routes their frames to feeds."""

    def __init__(self, task_group: TaskGroup, *, ack_timeout_s: float = 10.0) -> None:
        self._task_group = task_group
        self._ack_timeout_s = ack_timeout_s
        self._feeds: dict[str, set[Feed]] = {}
        self._ack_lock = anyio.Lock()
        self._waiting_ack: _AckSlot | None = None
        self.unsupported = False
        """The server refused task listens outright; nobody on this session asks again."""

    async def on_task_notification(self, params: TaskNotificationParams) -> None:
        feeds = self._feeds.get(params.task_id)
        if not feeds:
            return
        task = DetailedTask.model_validate(params.model_dump(exclude={"meta"}))
        for feed in list(feeds):
            feed.offer(task)

    async def on_message(self, message: IncomingMessage) -> None:
        slot = self._waiting_ack
        if slot is None or not isinstance(message, types.SubscriptionsAcknowledgedNotification):
            return
        extra: dict[str, Any] = message.params.notifications.model_extra or {}
        task_ids = extra.get("taskIds")
        slot.task_ids = [str(t) for t in task_ids] if isinstance(task_ids, list) else []  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        slot.done.set()

    @asynccontextmanager
    async def subscribe(self, session: ClientSession, task_id: str) -> AsyncGenerator[Feed | None]:
        """Listen for one task: yields its feed, or `None` when the server will not push it."""
        if self.unsupported:
            yield None
            return
        feed = Feed(task_id)
        scope = anyio.CancelScope()
        slot = _AckSlot()
        request = types.SubscriptionsListenRequest(
            params=types.SubscriptionsListenRequestParams(
                notifications=types.SubscriptionFilter.model_validate({"taskIds": [task_id]})
            )
        )

        async def listen() -> None:
            with scope:
                try:
                    # Returns only when the server closes the stream gracefully.
                    await session.send_request(request, types.SubscriptionsListenResult)
                    logger.debug("task listen for %s closed by the server", task_id)
                except MCPError as error:
                    logger.debug("task listen for %s refused or lost: %s", task_id, error)
                    slot.error = error
                except Exception:  # a transport fault ends push, never the waiter: it polls instead
                    logger.debug("task listen for %s ended", task_id, exc_info=True)
                finally:
                    feed.end()
                    slot.done.set()

        # Registered before the request goes out: the current state follows the ack at once.
        self._feeds.setdefault(task_id, set()).add(feed)
        try:
            async with self._ack_lock:
                self._waiting_ack = slot
                try:
                    self._task_group.start_soon(listen)
                    with anyio.move_on_after(self._ack_timeout_s):
                        await slot.done.wait()
                finally:
                    self._waiting_ack = None
            accepted = slot.task_ids is not None and task_id in slot.task_ids and not feed.lost
            if slot.error is not None and slot.error.code in _UNSUPPORTED:
                self.unsupported = True
            if not accepted:
                scope.cancel()
                yield None
                return
            yield feed
        finally:
            scope.cancel()
            feeds = self._feeds.get(task_id)
            if feeds is not None:
                feeds.discard(feed)
                if not feeds:
                    del self._feeds[task_id]
