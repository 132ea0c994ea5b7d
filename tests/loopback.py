"""An ASGI app under uvicorn on a free loopback port of the test process: real HTTP over a socket, served here.

For the clients that take a URL rather than an HTTP client, and for a team's own service as uvicorn runs it.
The server leaves the process as it found it: no signal handlers (a Ctrl-C stays pytest's, and sse-starlette,
which finds a uvicorn server through its SIGTERM handler, cannot take this one's shutdown for the process's and
end the SSE streams of every other app in it), and no connection left open for the garbage collector.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import uvicorn
from starlette.types import ASGIApp

__all__ = ["serving"]


@asynccontextmanager
async def serving(app: ASGIApp, **config: Any) -> AsyncGenerator[int]:
    """`app` served on a free loopback port until the block ends; yields the port.

    `config` goes to `uvicorn.Config` (e.g. `lifespan="off"`). Streams a client still holds at the end (a
    listen) are given a second, then cut.
    """
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    port: int = listener.getsockname()[1]
    options: dict[str, Any] = {"log_level": "warning", "timeout_graceful_shutdown": 1, **config}
    server = _LoopbackServer(uvicorn.Config(app, **options))
    with listener:
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve, [listener])
            with anyio.fail_after(30):
                while not server.started:
                    await anyio.sleep(0.01)
            try:
                yield port
            finally:
                server.should_exit = True


class _LoopbackServer(uvicorn.Server):
    @contextmanager
    def capture_signals(self) -> Generator[None]:
        yield

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await super().shutdown(sockets)
        # A stream its client still held is cancelled at the graceful bound, but its connection is left open.
        for connection in list(self.server_state.connections):
            transport = getattr(connection, "transport", None)
            if transport is not None:
                transport.close()
