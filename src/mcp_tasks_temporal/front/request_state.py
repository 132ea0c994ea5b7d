"""Sealing MRTR `requestState` with keys every front of an app shares, so any front takes another's."""

from __future__ import annotations

from typing import Any, Final

from mcp.server.mcpserver import MCPServer
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

REQUEST_STATE_TTL_S: Final = 24 * 60 * 60
"""How long a sealed `requestState` is taken back: a question inside a plain call waits for a person,
for as long as a task lives by default (a day), not the SDK's ten minutes."""


def request_state_security(app: MCPServer[Any], keys: list[str]) -> RequestStateSecurity:
    """The shared `keys` (`keys[0]` seals), or a key of this process's own; either way for a day."""
    if keys:
        return RequestStateSecurity(keys=keys, audience=app.name, ttl=REQUEST_STATE_TTL_S)
    return RequestStateSecurity.ephemeral(ttl=REQUEST_STATE_TTL_S, audience=app.name)


def use_request_state_keys(app: MCPServer[Any], keys: list[str]) -> None:
    """Seal MRTR `requestState` with shared keys, so any front server accepts any other's.

    An `MCPServer` defaults to a per-process key: fine for one process, but behind
    a load balancer the retry of a `tools/call` may reach another front server.
    `keys[0]` seals and every key unseals, which allows rotation. Without keys, a
    per-process key as before, with the same lifetime.
    """
    boundary = RequestStateBoundary(request_state_security(app, keys), default_audience=app.name)
    middleware = app.middleware
    for index, layer in enumerate(middleware):
        if isinstance(layer, RequestStateBoundary):
            middleware[index] = boundary
            return
    middleware.insert(0, boundary)
