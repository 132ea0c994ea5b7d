"""Every protocol revision a front server answers, named the same way wherever a client asks.

A front is dual-era: 2026-07-28 requests carry their own envelope, and clients
of the `initialize` handshake revisions are served too (statelessly over HTTP,
so any front answers them). The `mcp` SDK names only the 2026-07-28 revisions,
in `server/discover` and in its -32022 errors. A client that shares no modern
revision with the server then gives up, where the handshake revisions it would
fall back to are served. The spec asks for "the versions it does support", and
`supported` of a -32022 must be among what `server/discover` advertises: so
both name the same list, rewritten here at the three places it leaves the
server (the discover result, the HTTP error body, the stdio error message).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any, Final, Protocol, Self

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION, DiscoverResult, ErrorData, JSONRPCError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from mcp_tasks_temporal.sdk_compat import lowlevel_server
from mcp_tasks_temporal.temporal.contract import as_object

SERVED_PROTOCOL_VERSIONS: Final = (*reversed(MODERN_PROTOCOL_VERSIONS), *reversed(HANDSHAKE_PROTOCOL_VERSIONS))
"""Newest first, as the spec's own example lists them."""


class AdvertiseServedVersions:
    """Server middleware: `server/discover` advertises every served revision, not only the modern ones."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method != "server/discover":
            return result
        if isinstance(result, DiscoverResult):
            return result.model_copy(update={"supported_versions": list(SERVED_PROTOCOL_VERSIONS)})
        if isinstance(result, Mapping):
            return {**as_object(result), "supportedVersions": list(SERVED_PROTOCOL_VERSIONS)}
        return result


def with_served_versions(error: Mapping[str, Any]) -> Mapping[str, Any]:
    """A JSON-RPC error object, its `supported` list completed when it is a -32022; any other as it came."""
    if error.get("code") != UNSUPPORTED_PROTOCOL_VERSION:
        return error
    return {**error, "data": {**as_object(error.get("data")), "supported": list(SERVED_PROTOCOL_VERSIONS)}}


class _MessageSink(Protocol):
    async def send(self, item: SessionMessage, /) -> None: ...
    async def aclose(self) -> None: ...
    async def __aenter__(self) -> Any: ...
    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None: ...


async def run_stdio(
    app: MCPServer[Any], stdin: anyio.AsyncFile[str] | None = None, stdout: anyio.AsyncFile[str] | None = None
) -> None:
    """`app.run_stdio_async()`, with its -32022 errors naming every served revision.

    On the process's own stdin and stdout, unless other text streams are given (a pipe's ends).
    """
    lowlevel = lowlevel_server(app)
    async with stdio_server(stdin, stdout) as (read_stream, write_stream):
        options = lowlevel.create_initialization_options()
        await lowlevel.run(read_stream, ServedVersionsWriteStream(write_stream), options)


class ServedVersionsWriteStream:
    """A write stream whose -32022 errors name every served revision on their way out."""

    def __init__(self, inner: _MessageSink) -> None:
        self._inner = inner

    async def send(self, item: SessionMessage, /) -> None:
        message = item.message
        if isinstance(message, JSONRPCError) and message.error.code == UNSUPPORTED_PROTOCOL_VERSION:
            error = with_served_versions(message.error.model_dump(mode="json", exclude_none=True))
            message = message.model_copy(update={"error": ErrorData.model_validate(error)})
            item = SessionMessage(message=message, metadata=item.metadata)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc_val, exc_tb)
