"""What the request being served declared it can do: the gate `tools/call`, `tasks/*` and listen share."""

from __future__ import annotations

from typing import Any

from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_tasks_temporal.temporal.contract import EXTENSION_ID


def declares_tasks(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Did *this* request declare the extension? Earlier requests never count."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    caps = ctx.session.client_capabilities
    return bool(caps is not None and caps.extensions and EXTENSION_ID in caps.extensions)
