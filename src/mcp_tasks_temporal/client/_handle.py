"""`TaskHandle`: one task on one server: read it, answer it, cancel it, wait for it.

handle = await client.start_tool("build", {"ref": "main"})   # a TaskHandle, or a CallToolResult
async for task in handle:                                      # every change, until terminal
    print(task.status, task.status_message)
result = await handle.result()                                 # CallToolResult, or raises
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import anyio
import mcp_types as types
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, TypeAdapter, ValidationError

from mcp_tasks_temporal.client._errors import InputDeferred, TaskCancelledError, TaskFailedError
from mcp_tasks_temporal.client._journal import Journal
from mcp_tasks_temporal.client._models import (
    AckResult,
    CancelTaskRequest,
    DetailedTask,
    GetTaskRequest,
    TaskIdParams,
    TaskStateResult,
    UpdateTaskParams,
    UpdateTaskRequest,
    parse_timestamp,
)
from mcp_tasks_temporal.client._push import Feed, PushHub

logger = logging.getLogger(__name__)

OnChange = Callable[[DetailedTask], Awaitable[None] | None]
"""Called with each new state of a task while something waits for it."""

_INPUT_REQUEST: TypeAdapter[types.InputRequest] = TypeAdapter(types.InputRequest)


@dataclass(frozen=True)
class WaitOptions:
    """How a client waits for tasks."""

    default_poll_interval_s: float = 1.0
    """Used when the server suggests no `pollIntervalMs`."""
    min_poll_interval_s: float = 0.05
    """Floor under the server's suggestion, so a bad value cannot spin the client."""
    max_poll_interval_s: float = 60.0
    push_check_interval_s: float = 30.0
    """While on push, a `tasks/get` after this long without a frame: catches a silently dead stream or a TTL expiry."""
    max_push_losses: int = 3
    """Listen streams lost during one wait before it settles for polling."""
    retry_unavailable_s: float = 600.0
    """How long a wait keeps reading through errors the server marks retryable (Temporal dropped a call)."""


@dataclass(frozen=True)
class HandleContext:
    """What a handle needs from the client that made it."""

    session: ClientSession
    server: str
    journal: Journal | None
    hub: PushHub | None
    options: WaitOptions = field(default_factory=WaitOptions)


@dataclass
class WaitStats:
    """How the last wait learned about changes (for diagnostics, and for tests)."""

    polls: int = 0
    """`tasks/get` requests sent by this handle."""
    pushed: int = 0
    """`notifications/tasks` frames taken from a listen stream."""
    source: Literal["push", "poll"] | None = None
    """How the most recent wait was following the task."""


class TaskHandle:
    """A task the server created for a tool call. Made by `TasksClient`, never directly.

    Every request it sends declares the tasks extension and carries `Mcp-Name:
    <taskId>` (on Streamable HTTP). The handle records what it learns in the
    client's journal, and crosses the task out when it sees it terminal.
    """

    def __init__(
        self, context: HandleContext, task_id: str, *, tool: str | None = None, last: DetailedTask | None = None
    ) -> None:
        self._context = context
        self.task_id = task_id
        self.tool = tool
        self.last = last
        """The newest state seen, or `None` before the first read."""
        self.stats = WaitStats()
        self._answered: set[str] = set()

    def __repr__(self) -> str:
        status = self.last.status if self.last is not None else "unknown"
        return f"TaskHandle({self.task_id!r}, tool={self.tool!r}, status={status!r})"

    # -- the three task methods ---------------------------------------------------

    async def get(self) -> DetailedTask:
        """`tasks/get`: the task's current state.

        Raises:
            MCPError: -32602 when the server does not know the task (never issued, expired, purged,
                or someone else's); the journal forgets it.
        """
        request = GetTaskRequest(params=TaskIdParams(task_id=self.task_id))
        try:
            reply = await self._context.session.send_request(request, TaskStateResult)
        except MCPError as error:
            if error.code == types.INVALID_PARAMS:
                self._forget()
            raise
        self.stats.polls += 1
        task = reply.task()
        self._observe(task)
        return task

    async def update(self, responses: Mapping[str, types.InputResponse | Mapping[str, Any]]) -> None:
        """`tasks/update`: answer outstanding input requests, by key.

        The server ignores keys that are not outstanding, so answering twice is harmless.
        """
        wire = {
            key: value.model_dump(by_alias=True, mode="json", exclude_none=True)
            if isinstance(value, BaseModel)
            else dict(value)
            for key, value in responses.items()
        }
        request = UpdateTaskRequest(params=UpdateTaskParams(task_id=self.task_id, input_responses=wire))
        await self._context.session.send_request(request, AckResult)
        self._answered.update(wire)

    async def cancel(self) -> None:
        """`tasks/cancel`: ask the server to stop the task.

        Cancellation is cooperative: the task may still finish another way, so
        it stays in the journal until it is seen terminal (or expires).
        """
        await self._context.session.send_request(
            CancelTaskRequest(params=TaskIdParams(task_id=self.task_id)), AckResult
        )

    # -- waiting --------------------------------------------------------------------

    def __aiter__(self) -> AsyncGenerator[DetailedTask]:
        return self.changes()

    async def changes(self, *, answer_inputs: bool = True) -> AsyncGenerator[DetailedTask]:
        """Yield the task's state now, then each change, ending with the terminal state.

        Follows the task by push when the server accepts a listen for it, else by
        polling `tasks/get` at the server's `pollIntervalMs` (re-read at every poll).
        With `answer_inputs`, each input request is handed to the client's
        elicitation / sampling / roots callback once (keys are tracked across
        polls) and its answer sent with `tasks/update` as soon as it is ready.

        Close the iterator if you stop early (`contextlib.aclosing`), so its
        listen stream ends at once.

        Raises:
            MCPError: From the server, or a callback that returned `ErrorData` for an input request.
        """
        task = self.last if self.last is not None else await self.get()
        yield task
        losses = 0
        while not task.terminal:
            push = self._context.hub is not None and losses < self._context.options.max_push_losses
            async with self._follow(push) as feed:
                self.stats.source = "push" if feed is not None else "poll"
                while not task.terminal:
                    if answer_inputs and task.status == "input_required" and await self._answer(task):
                        following = await self._read()  # the answers show at once on a fresh read
                    else:
                        following = await self._next(task, feed)
                    if following is None:
                        break  # the listen stream is gone: catch up, then listen again (or poll)
                    if _older(following, task):
                        continue  # a read that left before the newest one arrived after it
                    if following.wire() != task.wire():
                        yield following
                    task = following
            if not task.terminal and feed is not None:
                losses += 1
                following = await self._read()
                if not _older(following, task):
                    if following.wire() != task.wire():
                        yield following
                    task = following

    async def wait(self, *, answer_inputs: bool = True, on_change: OnChange | None = None) -> DetailedTask:
        """Wait until the task is terminal and return its final state (see `changes`)."""
        async with aclosing(self.changes(answer_inputs=answer_inputs)) as changes:
            async for task in changes:
                if on_change is not None:
                    maybe = on_change(task)
                    if maybe is not None:
                        await maybe
        assert self.last is not None
        return self.last

    async def result(self, *, on_change: OnChange | None = None) -> types.CallToolResult:
        """Wait for the task and return its `CallToolResult`, as the tool call would have.

        A tool error is a result (`isError: true`), not an exception.

        Raises:
            TaskFailedError: The task failed; an `MCPError` with the task's JSON-RPC error.
            TaskCancelledError: The task was cancelled.
        """
        task = await self.wait(on_change=on_change)
        if task.status == "completed":
            return task.call_tool_result()
        if task.status == "cancelled":
            raise TaskCancelledError(task)
        raise TaskFailedError(task)

    # -- internals --------------------------------------------------------------------

    def _follow(self, push: bool) -> AbstractAsyncContextManager[Feed | None]:
        hub = self._context.hub
        if push and hub is not None:
            return hub.subscribe(self._context.session, self.task_id)
        return _no_feed()

    async def _next(self, task: DetailedTask, feed: Feed | None) -> DetailedTask | None:
        """The next state: pushed, or polled after the server's suggested interval."""
        if feed is None:
            await anyio.sleep(poll_delay_s(task, self._context.options))
            return await self._read()
        pushed = await feed.next(self._context.options.push_check_interval_s)
        if pushed is not None:
            self.stats.pushed += 1
            self._observe(pushed)
            return pushed
        if feed.lost:
            return None
        return await self._read()

    async def _read(self) -> DetailedTask:
        """`get` during a wait: an error the server marks retryable is read through, with backoff, for a while."""
        delay_s, started = 0.5, anyio.current_time()
        while True:
            try:
                return await self.get()
            except MCPError as error:
                data: Any = error.data
                retryable = isinstance(data, dict) and cast("dict[str, Any]", data).get("retryable") is True
                waited = anyio.current_time() - started
                if not retryable or waited + delay_s > self._context.options.retry_unavailable_s:
                    raise
                logger.info("task %s: %s; reading it again in %.1fs", self.task_id, error.message, delay_s)
                await anyio.sleep(delay_s)
                delay_s = min(delay_s * 2, 10.0)

    async def _answer(self, task: DetailedTask) -> bool:
        """Route each not-yet-answered input request to its callback; send each answer when ready; True if any was."""
        fresh = {key: raw for key, raw in (task.input_requests or {}).items() if key not in self._answered}
        sent = False
        for key, raw in fresh.items():
            try:
                request = _INPUT_REQUEST.validate_python(raw, by_name=False)
            except ValidationError:
                raise MCPError(
                    code=types.METHOD_NOT_FOUND, message=f"input request {key!r} is of a kind this client cannot answer"
                ) from None
            context = ClientRequestContext(
                session=self._context.session,
                request_id=key,
                meta=request.params.meta if request.params is not None else None,
            )
            try:
                response = await self._context.session.dispatch_input_request(context, request)
            except InputDeferred:
                self._answered.add(key)  # asked once; someone else answers it
                continue
            if isinstance(response, types.ErrorData):
                raise MCPError.from_error_data(response)
            await self.update({key: response})
            sent = True
        return sent

    def _observe(self, task: DetailedTask) -> None:
        if self.last is not None and _older(task, self.last):
            return
        previous, self.last = self.last, task
        journal = self._context.journal
        if journal is None:
            return
        if previous is not None and (previous.status, previous.status_message, previous.ttl_ms) == (
            task.status,
            task.status_message,
            task.ttl_ms,
        ):
            return  # nothing the journal keeps has changed
        journal.record(
            self._context.server,
            self.task_id,
            tool=self.tool,
            status=task.status,
            status_message=task.status_message,
            created_at=task.created_at,
            ttl_ms=task.ttl_ms,
        )

    def _forget(self) -> None:
        if self._context.journal is not None:
            self._context.journal.forget(self._context.server, self.task_id)


def _older(task: DetailedTask, than: DetailedTask) -> bool:
    """Whether `task` is a stale copy of the state `than` is a newer copy of.

    Pushed frames and `tasks/get` answers travel separately, and a frame the
    server built from an older read can arrive after a newer answer: within one
    status, ordering by `lastUpdatedAt` keeps the status message (and the status
    line) from going backwards. A change of status is always taken: its time
    comes from another clock than the tool's status messages, and dropping a
    real `input_required` would leave the task waiting for an answer forever.
    A terminal state is final.
    """
    if than.terminal:
        return True
    if task.status != than.status:
        return False
    mine, theirs = parse_timestamp(task.last_updated_at), parse_timestamp(than.last_updated_at)
    return mine is not None and theirs is not None and mine < theirs


@asynccontextmanager
async def _no_feed() -> AsyncGenerator[Feed | None]:
    yield None


def poll_delay_s(task: DetailedTask, options: WaitOptions) -> float:
    """How long to wait before the next `tasks/get`: the server's latest suggestion, within the client's bounds."""
    if task.poll_interval_ms is None or not math.isfinite(task.poll_interval_ms):
        return options.default_poll_interval_s
    return min(max(task.poll_interval_ms / 1000, options.min_poll_interval_s), options.max_poll_interval_s)
