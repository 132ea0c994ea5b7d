"""Free-text progress from inside a running tool, shown as the task's `statusMessage`.

Progress travels as activity heartbeat details: no history event per update, and
the front server reads the latest one with `describe`, so it stays visible with
no worker polling. Temporal throttles heartbeats (the worker's
`max_heartbeat_throttle_interval`), which bounds both the write rate and the
staleness of what `tasks/get` shows.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from dataclasses import dataclass

from temporalio import activity

from mcp_tasks_temporal.contract import StatusDetails


@dataclass
class StatusReporter:
    """Holds the running tool's latest status and pushes it out with each heartbeat."""

    current: StatusDetails | None = None

    def set(self, message: str) -> None:
        if self.current is not None and self.current.message == message:
            return
        self.current = StatusDetails(message=message, at_ms=int(time.time() * 1000))
        self.heartbeat()

    def heartbeat(self) -> None:
        if self.current is None:
            activity.heartbeat()
        else:
            activity.heartbeat(self.current)


_reporter: ContextVar[StatusReporter | None] = ContextVar("mcp_tasks_status_reporter", default=None)


def current_reporter() -> StatusReporter | None:
    """The reporter of the task tool running in this context, if any."""
    return _reporter.get()


def bind_reporter(reporter: StatusReporter) -> None:
    """Make `set_status` in this context (and the tasks it spawns) report to `reporter`."""
    _reporter.set(reporter)


def set_status(message: str) -> None:
    """Report what the tool is doing now; `tasks/get` shows it as `statusMessage`.

    A no-op when the tool runs synchronously (not as a task), so tools can call
    it unconditionally. The text is shown to users and models: keep secrets out.
    """
    reporter = _reporter.get()
    if reporter is not None:
        reporter.set(message)


def progress_message(progress: float, total: float | None, message: str | None) -> str:
    """Render an MCP progress report (`ctx.report_progress`) as a status line."""
    amount = f"{progress:g}/{total:g}" if total else f"{progress:g}"
    return f"{message} ({amount})" if message else f"Progress {amount}"
