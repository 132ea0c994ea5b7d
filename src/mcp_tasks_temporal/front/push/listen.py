"""`subscriptions/listen` with `notifications.taskIds`: task changes pushed on the listen stream.

The SDK's listen handler has a closed vocabulary (its ack drops `taskIds` and
its bus carries only the core events) and a spec method cannot be rebound, so
a server middleware serves any listen that asks for tasks, core kinds included
(from the same bus), and leaves every other listen to the SDK.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final, Literal

import anyio
import anyio.lowlevel
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer, require_client_extension
from mcp.server.request_state import authenticated_principal
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY, ServerEvent, event_matches, event_to_notification
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    SERVER_INFO_META_KEY,
    Notification,
    SubscriptionFilter,
    SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams,
)
from mcp_types import methods as wire_methods
from pydantic import ValidationError

from mcp_tasks_temporal.front.errors import TaskExpiredError, TaskNotFoundError
from mcp_tasks_temporal.front.gateway import ListedTask, Snapshot, TemporalTaskGateway
from mcp_tasks_temporal.front.push.feed_watch import FeedWatchHub, on_feed
from mcp_tasks_temporal.front.push.heap import release_freed_heap, worth_trimming
from mcp_tasks_temporal.front.push.task_watch import TaskWatchHub
from mcp_tasks_temporal.front.request_capabilities import declares_tasks
from mcp_tasks_temporal.sdk_compat import server_info_stamp, subscription_bus
from mcp_tasks_temporal.temporal.contract import EXTENSION_ID

logger = logging.getLogger(__name__)

MAX_TASK_IDS: Final = 10_000
_BACKLOG: Final = 1024
_SUBSCRIBE_BATCH: Final = 256
_FIRST_VIEWS_BATCH: Final = 2_000
"""Tasks honored from the shards' indexes read at a time after the ack: four visibility queries."""


class TaskNotification(Notification[dict[str, Any], Literal["notifications/tasks"]]):
    method: Literal["notifications/tasks"] = "notifications/tasks"
    params: dict[str, Any]


class TaskListen:
    """The middleware; install with `server.middleware.append(TaskListen(...))`."""

    def __init__(self, server: MCPServer[Any], gateway: TemporalTaskGateway, hub: TaskWatchHub) -> None:
        self._server = server
        self._gateway = gateway
        self._hub = hub

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "subscriptions/listen":
            return await call_next(ctx)
        notifications = (ctx.params or {}).get("notifications")
        if not isinstance(notifications, dict) or "taskIds" not in notifications:
            return await call_next(ctx)
        if not declares_tasks(ctx):
            require_client_extension(ctx, EXTENSION_ID)
        raw_ids: list[Any] = notifications["taskIds"] if isinstance(notifications["taskIds"], list) else [None]  # pyright: ignore[reportUnknownVariableType]
        task_ids = [t for t in raw_ids if isinstance(t, str)]
        if len(task_ids) != len(raw_ids):
            raise MCPError(code=INVALID_PARAMS, message="notifications.taskIds must be a list of strings")
        if len(task_ids) > MAX_TASK_IDS:
            raise MCPError(code=INVALID_PARAMS, message=f"At most {MAX_TASK_IDS} taskIds per subscription")
        try:
            wire_methods.validate_client_request("subscriptions/listen", ctx.protocol_version, ctx.params)
            params = SubscriptionsListenRequestParams.model_validate(ctx.params, by_name=False)
        except (KeyError, ValueError, ValidationError):
            raise MCPError(code=INVALID_PARAMS, message="Invalid request parameters") from None
        if ctx.request_id is None:
            raise MCPError(INVALID_REQUEST, "subscriptions/listen requires a request id")
        return await self._serve(ctx, params, task_ids)

    async def _honored(self, task_ids: list[str], principal: str | None) -> dict[str, Snapshot | ListedTask | None]:
        """The requested tasks this caller may see, in request order, with the read each was honored from.

        The rest are left out, indistinguishably. A hub that follows the task feed first asks the
        shards' indexes of open tasks (one query per shard): a task they hold is honored at once
        (`None`), its first view read after the ack (`_serve`). The rest are read (`_read`), and
        what was read is handed to the watchers, so following a task starts without a second read.
        """
        unique = list(dict.fromkeys(task_ids))
        indexed: set[str] = set()
        if isinstance(self._hub, FeedWatchHub):
            indexed = set(await self._gateway.observe_indexed(unique, principal))
        read, _ = await self._read([t for t in unique if t not in indexed], principal)
        return {t: read.get(t) for t in unique if t in indexed or t in read}

    async def _read(
        self, task_ids: list[str], principal: str | None
    ) -> tuple[dict[str, Snapshot | ListedTask], list[str]]:
        """`task_ids` as this caller may see them now, and those it may not (gone, expired, another's, unknown).

        A hub that follows the task feed takes its running tasks as visibility lists them, a few calls
        for thousands of tasks; it catches up what visibility has not caught up yet (front/feed_watch.py).
        Anything not listed so (just created, closed, another's, unknown) is read with `describe`, one by
        one, as a single `tasks/get` would. A listed task's memo stays packed until its watcher starts
        (`ListedTask`).
        """
        found: dict[str, Snapshot | ListedTask] = {}
        missing: list[str] = []
        if isinstance(self._hub, FeedWatchHub) and task_ids:
            listed = await self._gateway.observe_listed(task_ids, principal)
            found.update((task_id, seen) for task_id, seen in listed.items() if on_feed(seen))
            del listed
        limiter = anyio.CapacityLimiter(32)

        async def check(task_id: str) -> None:
            async with limiter:
                try:
                    found[task_id] = await self._gateway.observe(task_id, principal)
                except (TaskNotFoundError, TaskExpiredError):
                    missing.append(task_id)

        async with anyio.create_task_group() as group:
            for task_id in task_ids:
                if task_id not in found:
                    group.start_soon(check, task_id)
        return found, missing

    async def _serve(
        self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams, task_ids: list[str]
    ) -> dict[str, Any]:
        subscription_id = ctx.request_id
        assert subscription_id is not None
        principal = authenticated_principal(ctx)
        requested = params.notifications
        core = SubscriptionFilter(
            tools_list_changed=True if requested.tools_list_changed else None,
            prompts_list_changed=True if requested.prompts_list_changed else None,
            resources_list_changed=True if requested.resources_list_changed else None,
            resource_subscriptions=list(requested.resource_subscriptions) if requested.resource_subscriptions else None,
        )
        honored = await self._honored(task_ids, principal)
        honored_ids = list(honored)
        ack = SubscriptionFilter.model_validate(
            {**core.model_dump(by_alias=True, exclude_none=True), "taskIds": honored_ids}
        )
        uris = frozenset(core.resource_subscriptions or ())
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
        # Room for every task's first view besides the backlog a slow reader may build up.
        send, receive = anyio.create_memory_object_stream[tuple[str, Any]](_BACKLOG + len(honored))

        def offer(kind: str, item: Any) -> None:
            try:
                send.send_nowait((kind, item))
            except anyio.WouldBlock:
                # A client that stopped reading: end its stream; it re-listens and tasks/get tells the rest.
                logger.warning("listen stream %r backlog full; ending it", subscription_id)
                send.close()
            except anyio.ClosedResourceError:
                pass

        def on_core(event: ServerEvent) -> None:
            if event_matches(core, uris, event):
                offer("core", event)

        # One listener and one `on_lost` for all its tasks: a listen on thousands of tasks holds no closure per task.
        def on_task(task: dict[str, Any]) -> None:
            offer("task", task)

        def on_lost(task_id: str, reason: str) -> None:
            offer("lost", (task_id, reason))

        # The app's bus carries the core events; MCPServer exposes it to no one but its own handler.
        # Subscribed before the ack goes out, so no core event that happens meanwhile is lost.
        bus = subscription_bus(self._server)
        unsubscribe_core = bus.subscribe(on_core)
        unsubscribes: list[Callable[[], None]] = []
        try:
            await ctx.session.send_notification(
                SubscriptionsAcknowledgedNotification(
                    params=SubscriptionsAcknowledgedNotificationParams(notifications=ack, _meta=meta)
                ),
                related_request_id=subscription_id,
            )

            async def deliver(kind: str, item: Any) -> None:
                if kind == "lost":
                    raise _lost_error(*item)
                if kind == "core":
                    note: Any = event_to_notification(item, meta)
                else:
                    note = TaskNotification(params={**item, "_meta": meta})
                await ctx.session.send_notification(note, related_request_id=subscription_id)

            async def drain() -> None:
                while True:
                    try:
                        queued = receive.receive_nowait()
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        return
                    await deliver(*queued)

            def follow(task_id: str, read: Snapshot | ListedTask) -> None:
                seen = read.snapshot() if isinstance(read, ListedTask) else read
                unsubscribes.append(self._hub.subscribe(task_id, principal, on_task, seen=seen, on_lost=on_lost))

            # The tasks after the ack, which thousands of them would hold up: each watcher starts from
            # the read the ack was made from and brings every change since, so nothing is lost either.
            # Their first views go out a batch at a time: thousands queued at once would leave the
            # front's heap that much larger for good.
            indexed = [task_id for task_id, seen in honored.items() if seen is None]
            for count, task_id in enumerate(list(honored), start=1):
                read = honored.pop(task_id)  # the watcher keeps what it needs of the read, no more
                if read is not None:
                    follow(task_id, read)
                if count % _SUBSCRIBE_BATCH == 0:
                    await drain()
                    await anyio.lowlevel.checkpoint()  # other requests meanwhile
            # The tasks honored from the shards' indexes are read now, a batch at a time: a read after the
            # ack is as good a start as one before it (the hub replays what came since, feed_watch.py).
            # One gone meanwhile (expired, deleted) ends the listen as any task lost while followed.
            for start in range(0, len(indexed), _FIRST_VIEWS_BATCH):
                batch = indexed[start : start + _FIRST_VIEWS_BATCH]
                found, missing = await self._read(batch, principal)
                for task_id in missing:
                    on_lost(task_id, "the task no longer exists or expired")
                for count, task_id in enumerate(batch, start=1):
                    read = found.pop(task_id, None)
                    if read is not None:
                        follow(task_id, read)
                    if count % _SUBSCRIBE_BATCH == 0:
                        await drain()
                        await anyio.lowlevel.checkpoint()  # other requests meanwhile
                del found
                await drain()
            if worth_trimming(len(unsubscribes)):
                # What the listen read and queued is freed; glibc would keep those pages mapped for good.
                await drain()
                release_freed_heap()
            async with receive:
                async for kind, item in receive:
                    await deliver(kind, item)
        finally:
            unsubscribe_core()
            for unsubscribe in unsubscribes:
                unsubscribe()
            send.close()
            receive.close()  # a listen ended before its reading loop (a task lost in a first view) left it open
        # A middleware that answers by itself owns the whole envelope.
        stamp = server_info_stamp(self._server)
        return {"resultType": "complete", "_meta": {**meta, SERVER_INFO_META_KEY: stamp}}


def _lost_error(task_id: str, reason: str) -> MCPError:
    """Ends a listen whose task can no longer be followed: the client listens again, or polls `tasks/get`.

    Silently dropping the task from the stream would leave the client waiting for changes that never come.
    """
    return MCPError(
        code=INTERNAL_ERROR,
        message=f"Stopped following task {task_id}: {reason}; listen again or poll tasks/get",
        data={"taskIds": [task_id]},
    )
