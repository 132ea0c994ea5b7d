"""A TCP relay to the dev server that a test can cut: every connection dropped, new ones refused, until healed.

What a front sees when Temporal drops its calls (a restart, a cancelled long poll): the
gRPC call fails, and the next one, on a new connection, works.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Generator
from contextlib import contextmanager, suppress


class CuttableRelay:
    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._loop = asyncio.new_event_loop()
        self._writers: set[asyncio.StreamWriter] = set()
        self._cut = False
        self.port = 0
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self._thread.start()
        ready.wait(10)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self._loop.run_forever()
        server.close()
        self._loop.run_until_complete(server.wait_closed())
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Every way out closes the accepted socket, a cancellation at close() included: one left to the
        # garbage collector is a ResourceWarning in whichever test happens to run then.
        try:
            if self._cut:
                return
            try:
                up_reader, up_writer = await asyncio.open_connection(*self._target)
            except OSError:
                return
            self._writers.update((writer, up_writer))
            try:
                await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
            finally:
                up_writer.transport.abort()
                self._writers.difference_update((writer, up_writer))
        finally:
            writer.transport.abort()

    def _drop_all(self) -> None:
        self._cut = True
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    @contextmanager
    def cut(self) -> Generator[None]:
        self._loop.call_soon_threadsafe(self._drop_all)
        try:
            yield
        finally:
            self._cut = False

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._drop_all)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        with suppress(OSError):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
    finally:
        sink.transport.abort()
