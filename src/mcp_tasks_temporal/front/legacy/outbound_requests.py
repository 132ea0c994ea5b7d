"""A server-to-client request written on the stream of the request being served, its reply routed elsewhere.

A stateless front server cannot take the reply to a request it sends: the
client POSTs it separately, to any front server. The SDK therefore refuses
server-to-client requests there (`NoBackChannelError`). A question whose reply
is addressed by its own ID (`legacy_tasks.answer_id`) needs no such channel: it
is written on the POST's response stream like a notification, and the reply
is taken by whichever front it reaches (`legacy_answers`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
from mcp.shared.message import ServerMessageMetadata
from mcp_types import JSONRPCRequest

from mcp_tasks_temporal.sdk_compat import write_on_request_stream


async def send_request_on_stream(outbound: Any, request_id: str, method: str, params: Mapping[str, Any]) -> None:
    """Write a JSON-RPC request on the response stream of the request `outbound` serves; no reply is awaited.

    `outbound` is the request's dispatch context (`sdk_compat.request_outbound`).
    """
    message = JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method, params=dict(params))
    metadata = ServerMessageMetadata(related_request_id=outbound.request_id)
    try:
        await write_on_request_stream(outbound, message, metadata)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        # The client has gone: the question stays open in the task for its next tasks/result.
        return
