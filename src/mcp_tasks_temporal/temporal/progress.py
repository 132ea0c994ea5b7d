"""What a tool running as a task can reach: its status line, its workflow, its client's capabilities.

Progress travels as activity heartbeat details: no history event per update, and
the front server reads the latest one with `describe`, so it stays visible with
no worker polling. Temporal throttles heartbeats (the worker's
`max_heartbeat_throttle_interval`), which bounds both the write rate and the
staleness of what `tasks/get` shows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity

from mcp_tasks_temporal.temporal.contract import StatusDetails


@dataclass
class StatusReporter:
    """Holds the running tool's latest status and pushes it out with each heartbeat."""

    current: StatusDetails | None = None
    last_report_at: float = field(default_factory=time.monotonic)
    """When the tool last said anything (the same status again counts): what `progress_timeout` measures."""
    waiting: int = 0
    """Questions the tool is waiting on: a tool waiting for its client is not hung."""
    beat: Callable[..., None] | None = None
    """Where heartbeats go: the current activity's when `None`; an attempt that moves from a local activity
    to the activity adopting it points this at the adopter, and holds its status meanwhile."""
    on_ask: Callable[[], None] | None = None
    """Called when the tool starts waiting for an answer: a local first attempt hands off at once."""

    def set(self, message: str) -> None:
        self.last_report_at = time.monotonic()
        if self.current is not None and self.current.message == message:
            return
        self.current = StatusDetails(message=message, at_ms=int(time.time() * 1000))
        self.heartbeat()

    def heartbeat(self) -> None:
        beat = self.beat or activity.heartbeat
        if self.current is None:
            beat()
        else:
            beat(self.current)

    def silent_for(self) -> float:
        """Seconds since the tool last reported, or 0 while it waits for an answer."""
        return 0.0 if self.waiting else time.monotonic() - self.last_report_at

    @contextmanager
    def waiting_for_input(self) -> Generator[None]:
        self.waiting += 1
        if self.on_ask is not None:
            self.on_ask()
        try:
            yield
        finally:
            self.waiting -= 1
            self.last_report_at = time.monotonic()


@dataclass(frozen=True)
class TaskRun:
    """The task a tool is running for, bound for the duration of one activity attempt."""

    reporter: StatusReporter = field(default_factory=StatusReporter)
    workflow_id: str = ""
    round: int = 0
    """The task's round the tool runs (a round ends at each question the tool returns): its step."""
    client_capabilities: Any = None
    """The creating request's `clientCapabilities` (raw JSON)."""
    held_by_front: bool = False
    """The task serves a plain `tools/call` a front holds open: that front relays each question inside
    the call, or cancels the task for a client that cannot answer it (`front/plain_calls.py`)."""


_run: ContextVar[TaskRun | None] = ContextVar("mcp_tasks_run", default=None)


def current_run() -> TaskRun | None:
    """The task this code runs for, or `None` outside a task (a synchronous call, the front server)."""
    return _run.get()


def bind_run(run: TaskRun) -> None:
    """Bind `run` to this context and the tasks it spawns."""
    _run.set(run)


def set_status(message: str) -> None:
    """Report what the tool is doing now; `tasks/get` shows it as `statusMessage`.

    A no-op when the tool runs synchronously (not as a task), so tools can call
    it unconditionally. The text is shown to users and models: keep secrets out.
    """
    run = _run.get()
    if run is not None:
        run.reporter.set(message)


def progress_message(progress: float, total: float | None, message: str | None) -> str:
    """Render an MCP progress report (`ctx.report_progress`) as a status line a person reads as written.

    `compiling (2/6)`, or `2 of 6 done` without a message; a report without a total (its
    unit unknown, its end open) says what it has: `indexing (40 so far)`, `40 done so far`.
    """
    if total:
        return f"{message} ({progress:g}/{total:g})" if message else f"{progress:g} of {total:g} done"
    return f"{message} ({progress:g} so far)" if message else f"{progress:g} done so far"
