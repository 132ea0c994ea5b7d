"""Request bodies taken in at once, across every request of a front: a ceiling in bytes.

`max_body_bytes` bounds one body; a hundred clients sending one each at the
same time would still make the front hold a hundred of them, each parsed into
objects several times its size. The outermost middleware admits a request
only once its body fits within `max_body_bytes_in_flight` beside the bodies
already taken in, and counts it until its response starts (by then the front
has parsed it and handed it on: a `tools/call` has started its task), or
until it ends. A request that does not fit waits for room, in arrival order
unless a smaller one fits first, up to `body_wait_s`; then it is refused with
HTTP 503, a `Retry-After` and the JSON-RPC error -32051, never read.

A request is counted with the size it declares (`Content-Length`); one that
declares none, with `max_body_bytes`, the most it may send. Requests without a
body (GET, DELETE) are not counted.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_tasks_temporal.front.errors import BODIES_IN_FLIGHT

_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})
RETRY_AFTER_S = 1


@dataclass(eq=False)
class _Waiting:
    size: int
    admitted: anyio.Event = field(default_factory=anyio.Event)


class BodyBudget:
    """Bytes of request bodies admitted at once, at most `capacity`: a semaphore counted in bytes."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.in_flight = 0
        self.peak = 0
        """The most bytes admitted at once so far."""
        self._waiting: deque[_Waiting] = deque()

    async def take(self, size: int, wait_s: float) -> bool:
        """Admit `size` bytes, waiting up to `wait_s` for room; False when there was none in time."""
        size = min(size, self.capacity)
        if self.in_flight + size <= self.capacity:
            self._admit(size)
            return True
        waiting = _Waiting(size)
        self._waiting.append(waiting)
        try:
            with anyio.move_on_after(wait_s):
                await waiting.admitted.wait()
        except BaseException:
            if waiting.admitted.is_set():
                self.give_back(size)  # admitted as the caller went away
            else:
                self._waiting.remove(waiting)
            raise
        if waiting.admitted.is_set():
            return True
        self._waiting.remove(waiting)
        return False

    def give_back(self, size: int) -> None:
        """Release what `take` admitted; those waiting that now fit are admitted, oldest first."""
        self.in_flight -= min(size, self.capacity)
        for waiting in list(self._waiting):
            if self.in_flight + waiting.size <= self.capacity:
                self._waiting.remove(waiting)
                self._admit(waiting.size)
                waiting.admitted.set()

    def _admit(self, size: int) -> None:
        self.in_flight += size
        self.peak = max(self.peak, self.in_flight)


class BoundedBodies:
    """ASGI middleware: a request is read only once its body fits in the front's `BodyBudget`."""

    def __init__(self, app: ASGIApp, *, budget: BodyBudget, max_body_bytes: int, wait_s: float) -> None:
        self.app = app
        self.budget = budget
        self.max_body_bytes = max_body_bytes
        self.wait_s = wait_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _WITH_BODY:
            await self.app(scope, receive, send)
            return
        size = self._declared(scope)
        if not await self.budget.take(size, self.wait_s):
            await refuse_busy(send, self.budget.capacity)
            return
        counted = True

        def release() -> None:
            nonlocal counted
            if counted:
                counted = False
                self.budget.give_back(size)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                release()
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            release()

    def _declared(self, scope: Scope) -> int:
        """The body's declared size, at most `max_body_bytes` (a larger one is refused unread); unknown: the most."""
        for key, value in scope["headers"]:
            if key == b"content-length":
                return min(int(value), self.max_body_bytes) if value.isdigit() else self.max_body_bytes
        return self.max_body_bytes


async def refuse_busy(send: Send, capacity: int) -> None:
    """HTTP 503 with the JSON-RPC error -32051: the request was not read, and may succeed if sent again."""
    error = {
        "code": BODIES_IN_FLIGHT,
        "message": "Server busy: too many request bytes in flight; retry shortly",
        "data": {"maxBodyBytesInFlight": capacity},
    }
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(RETRY_AFTER_S).encode()),
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})
