"""A stdio front in the test process: `serve_stdio` on a pair of pipes, as `serve --transport stdio` serves its own.

The front reads and writes newline-delimited JSON-RPC through the same code as on a process's stdin and
stdout (the SDK's `stdio_server`, given the pipes' ends instead of the process's), so a test of what a
stdio client gets needs no child process, and a failure in the front leaves its traceback in the test.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
from anyio.streams.file import FileReadStream, FileWriteStream
from mcp.server.mcpserver import MCPServer
from temporalio.client import Client

from mcp_tasks_temporal.front.settings import FrontSettings
from mcp_tasks_temporal.front.stdio import serve_stdio
from tests.wire import StdioMcp

STOP_BOUND_S = 10.0
"""How long the front may take to end once its stdin is closed, as a client leaving ends a stdio server."""


@dataclass
class ClientEnds:
    """The client's ends of the front's pipes, as a child's `stdin` and `stdout` are to its parent."""

    stdin: FileWriteStream
    stdout: FileReadStream


@asynccontextmanager
async def stdio_front(
    app: MCPServer[Any], client: Client, *, task_queue: str, **settings: Any
) -> AsyncGenerator[StdioMcp]:
    """`app` served on stdio through `serve_stdio`, on `client`, until the block ends; yields the client's side.

    Args:
        app: A configured app no front has attached yet (`tests.front_app.fresh_app()`).
        client: The front's Temporal client.
        task_queue: Where its tasks go; a worker on it runs them (`tests.app_workers.app_worker`).
        settings: `FrontSettings` fields; the session's namespace has the project's search attributes.
    """
    settings.setdefault("search_attributes", True)
    front_settings = FrontSettings(task_queue=task_queue, **settings)
    to_front, from_client = os.pipe()
    to_client, from_front = os.pipe()
    front_stdin = anyio.wrap_file(os.fdopen(to_front, encoding="utf-8"))
    front_stdout = anyio.wrap_file(os.fdopen(from_front, "w", encoding="utf-8"))
    ends = ClientEnds(
        FileWriteStream(os.fdopen(from_client, "wb", buffering=0)),
        FileReadStream(os.fdopen(to_client, "rb", buffering=0)),
    )
    try:
        async with anyio.create_task_group() as group:
            serve = partial(serve_stdio, app, client, front_settings, stdin=front_stdin, stdout=front_stdout)
            group.start_soon(serve)
            try:
                yield StdioMcp(ends)
            finally:
                # End of input, as when the client leaves: the front's session ends and `serve_stdio` returns;
                # one that does not is cancelled after the bound.
                await ends.stdin.aclose()
                group.cancel_scope.deadline = anyio.current_time() + STOP_BOUND_S
    finally:
        for file in (front_stdin, front_stdout):
            await file.aclose()
        await ends.stdout.aclose()
