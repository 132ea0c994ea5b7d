"""A plain call's task reporting to its client: each new status line as `notifications/progress`.

A client that passes a `progressToken` with a plain `tools/call` asks for progress on
that call's stream. When the call is served by a task, the tool's `set_status` and
`ctx.report_progress` become the task's status line on whichever worker runs it, and the
front that holds the call sees each one as the task watcher publishes it (a history
event for a workflow tool, the running activity's heartbeat for a tool). Each new line
goes out once, in the order the watcher saw them, with a counter that only grows: the
task has no total to report, and a client must never see its progress go back.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import anyio
from mcp.server.context import ServerRequestContext

from mcp_tasks_temporal.temporal.contract import as_object

logger = logging.getLogger(__name__)


def progress_token(ctx: ServerRequestContext[Any, Any]) -> str | int | None:
    """The request's `_meta.progressToken`, if it asked for progress (a bool is no token)."""
    token = as_object((ctx.params or {}).get("_meta")).get("progressToken")
    return token if isinstance(token, str | int) and not isinstance(token, bool) else None


class CallProgress:
    """Sends a task's new status lines as progress of the request `ctx` serves."""

    def __init__(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self._ctx = ctx
        self.wanted = progress_token(ctx) is not None
        self._sent = 0
        self._last: str | None = None

    async def report(self, task: Mapping[str, Any]) -> None:
        """Send the task's status line if it is new (a no-op for a call without a progress token)."""
        message = task.get("statusMessage")
        if not self.wanted or not isinstance(message, str) or not message or message == self._last:
            return
        self._last = message
        self._sent += 1
        try:
            # The session reports for the request it serves, with that request's own token.
            await self._ctx.session.report_progress(self._sent, None, message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            logger.debug("progress not sent: the call's stream is closed")
