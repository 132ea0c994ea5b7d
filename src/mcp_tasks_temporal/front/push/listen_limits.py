"""What one caller may ask of a front's listens: task IDs per listen, and listens open at once.

A listen holds a stream, a watcher share per task and the reads its acknowledgement
makes, for as long as the client keeps it open; without a bound one principal could
hold any number of them and cost every other client of the front. Listens are
counted per caller on this front: an authenticated principal, else the client's
network address (an anonymous caller has no other identity a stateless front can
check), else the one peer of a stdio front. The count is this front's: a client may
hold as many on each front behind a load balancer.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from mcp_tasks_temporal.front.errors import TOO_MANY_LISTENS


def listen_caller(ctx: ServerRequestContext[Any, Any], principal: str | None) -> str:
    """Whom a listen is counted against: the principal, the client's address, or the stdio peer."""
    if principal is not None:
        return f"principal {principal}"
    request = ctx.request
    client = getattr(request, "client", None)
    host = getattr(client, "host", None)
    if isinstance(host, str) and host:
        return f"address {host}"
    return "local" if request is None else "address unknown"


class ListenLimits:
    """At most `max_task_ids` task IDs per listen and `max_listens` listens open at once per caller."""

    def __init__(self, *, max_task_ids: int, max_listens: int) -> None:
        self.max_task_ids = max_task_ids
        self.max_listens = max_listens
        self._open: dict[str, int] = {}
        self._acks: dict[str, anyio.Lock] = {}

    @asynccontextmanager
    async def acknowledging(self, caller: str) -> AsyncGenerator[None]:
        """One acknowledgement at a time per caller: its listens queue for their Temporal reads, not everyone's.

        Only while the caller has a listen open, so the lock goes with its last listen (`held`).
        """
        lock = self._acks.setdefault(caller, anyio.Lock())
        async with lock:
            yield

    def check_task_ids(self, count: int) -> None:
        """Refuse a listen naming more task IDs than a listen may (-32602, the limit in `data`)."""
        if count > self.max_task_ids:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"At most {self.max_task_ids} taskIds per subscription; split them over several listens",
                data={"maxTaskIds": self.max_task_ids},
            )

    def open_listens(self, caller: str) -> int:
        return self._open.get(caller, 0)

    @contextmanager
    def held(self, caller: str) -> Generator[None]:
        """Count one listen of `caller` while the block runs, or refuse it when the caller holds the most it may.

        Raises:
            MCPError: `TOO_MANY_LISTENS`, the limit in `data`.
        """
        held = self._open.get(caller, 0)
        if held >= self.max_listens:
            raise MCPError(
                code=TOO_MANY_LISTENS,
                message=(
                    f"Too many open listens: at most {self.max_listens} at once per client on this server;"
                    " close one, or follow more tasks on one listen"
                ),
                data={"maxListens": self.max_listens},
            )
        self._open[caller] = held + 1
        try:
            yield
        finally:
            left = self._open[caller] - 1
            if left:
                self._open[caller] = left
            else:
                del self._open[caller]
                self._acks.pop(caller, None)
