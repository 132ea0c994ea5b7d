"""`TasksClientExtension`: the tasks extension as an `mcp` SDK `ClientExtension`.

Passing it to `mcp.Client(extensions=[...])` is all a plain SDK client needs:
the SDK then declares `io.modelcontextprotocol/tasks` in the `_meta` of every
request, and `Client.call_tool` hands any `CreateTaskResult` to this
extension's `ResultClaim`, which waits for the task (polling) and returns the
final `CallToolResult`:

    from mcp import Client
    from mcp_tasks_temporal.client import TasksClientExtension

    async with Client("http://127.0.0.1:8000/mcp", extensions=[TasksClientExtension()]) as client:
        result = await client.call_tool("build", {"ref": "main"})   # sync answer or task: same result

`TasksClient` builds on it to add push, the journal on by default, and handles.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.client.extension import ClaimContext, ClientExtension, NotificationBinding, ResultClaim
from mcp.client.session import ClientSession

from mcp_tasks_temporal.client._handle import HandleContext, OnChange, TaskHandle, WaitOptions
from mcp_tasks_temporal.client._journal import Journal
from mcp_tasks_temporal.client._models import EXTENSION_ID, DetailedTask, TaskCreated, TaskNotificationParams
from mcp_tasks_temporal.client._push import PushHub


@dataclass(frozen=True)
class _CallOptions:
    detach: bool = False
    on_change: OnChange | None = None


# Per-call options reach the claim's resolver this way because the SDK calls it with a fixed signature.
_CALL: ContextVar[_CallOptions | None] = ContextVar("mcp_tasks_temporal_call", default=None)


class Detached(Exception):
    def __init__(self, handle: TaskHandle) -> None:
        super().__init__(handle.task_id)
        self.handle = handle


class TasksClientExtension(ClientExtension):
    """Declares the tasks extension and finishes the tasks `tools/call` returns.

    Args:
        journal: Where task IDs are written down as they arrive; `None` keeps no journal.
        server: How the journal names this server (a URL, or `stdio:` plus the command).
        options: Poll and push settings.
    """

    identifier = EXTENSION_ID

    def __init__(
        self, *, journal: Journal | None = None, server: str = "unknown", options: WaitOptions | None = None
    ) -> None:
        self.journal = journal
        self.server = server
        self.options = options or WaitOptions()
        self.hub: PushHub | None = None
        """Set by `TasksClient` once its session's task group exists; `None` means poll only."""

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskCreated, resolve=self._resolve)]

    def notifications(self) -> Sequence[NotificationBinding[Any]]:
        return [
            NotificationBinding(method="notifications/tasks", params_type=TaskNotificationParams, handler=self._pushed)
        ]

    def handle(
        self, session: ClientSession, task_id: str, *, tool: str | None = None, last: DetailedTask | None = None
    ) -> TaskHandle:
        """A handle on `task_id` through `session`."""
        context = HandleContext(
            session=session, server=self.server, journal=self.journal, hub=self.hub, options=self.options
        )
        return TaskHandle(context, task_id, tool=tool, last=last)

    async def _resolve(self, created: TaskCreated, ctx: ClaimContext) -> types.CallToolResult:
        # Written down before anything else can fail: a crash from here on must not lose the ID.
        if self.journal is not None:
            self.journal.record(
                self.server,
                created.task_id,
                tool=ctx.tool_name,
                status=created.status,
                status_message=created.status_message,
                created_at=created.created_at,
                ttl_ms=created.ttl_ms,
            )
        first = DetailedTask.model_validate(created.model_dump(exclude={"meta", "result_type"}))
        # A born-terminal task carries no result yet: read it once instead of trusting the seed.
        handle = self.handle(ctx.session, created.task_id, tool=ctx.tool_name, last=None if first.terminal else first)
        call = _CALL.get() or _CallOptions()
        if call.detach:
            raise Detached(handle)
        return await handle.result(on_change=call.on_change)

    async def _pushed(self, params: TaskNotificationParams) -> None:
        if self.hub is not None:
            await self.hub.on_task_notification(params)


def call_options(*, detach: bool = False, on_change: OnChange | None = None) -> Token[_CallOptions | None]:
    """Set the options of the next tool call in this context; returns the token to reset them."""
    return _CALL.set(_CallOptions(detach=detach, on_change=on_change))


def reset_call_options(token: Token[_CallOptions | None]) -> None:
    _CALL.reset(token)
