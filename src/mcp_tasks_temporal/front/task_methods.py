"""`tasks/get`, `tasks/update` and `tasks/cancel` on a front: checks first, then the gateway.

The front keeps no task state: each method admits the request (routing header,
the extension declared on this request), then asks Temporal through the gateway,
whose errors come back as the spec's JSON-RPC errors.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import require_client_extension
from mcp.server.request_state import authenticated_principal
from mcp.shared.inbound import decode_header_value

from mcp_tasks_temporal.front.errors import HeaderMismatchError
from mcp_tasks_temporal.front.gateway import TemporalTaskGateway, temporal_errors
from mcp_tasks_temporal.front.request_capabilities import declares_tasks
from mcp_tasks_temporal.front.spans import tag_task
from mcp_tasks_temporal.front.task_params import TaskIdParams, UpdateTaskParams
from mcp_tasks_temporal.temporal.contract import EXTENSION_ID


class TaskMethods:
    """The three methods of one attached front: each admits the request, then asks its gateway."""

    def __init__(self, gateway: TemporalTaskGateway, *, require_mcp_name: bool) -> None:
        self._gateway = gateway
        self._require_mcp_name = require_mcp_name

    async def get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> dict[str, Any]:
        admit(ctx, params.task_id, require_mcp_name=self._require_mcp_name)
        with temporal_errors():
            return await self._gateway.get(params.task_id, authenticated_principal(ctx))

    async def update(self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams) -> dict[str, Any]:
        admit(ctx, params.task_id, require_mcp_name=self._require_mcp_name)
        with temporal_errors():
            await self._gateway.update(params.task_id, authenticated_principal(ctx), params.input_responses)
        return {}

    async def cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> dict[str, Any]:
        admit(ctx, params.task_id, require_mcp_name=self._require_mcp_name)
        with temporal_errors():
            await self._gateway.cancel(params.task_id, authenticated_principal(ctx))
        return {}


def admit(ctx: ServerRequestContext[Any, Any], task_id: str, *, require_mcp_name: bool) -> None:
    """The checks every tasks/* request passes before any task is looked up.

    Routing headers first (a load balancer may already have acted on them), then
    the per-request capability gate, so a bogus ID never reaches Temporal from a
    client that could not use the answer. A missing `Mcp-Name` routes nowhere
    wrong, so it passes unless the deployment requires the header.
    """
    tag_task(task_id)
    headers = getattr(ctx.request, "headers", None)
    if headers is not None:
        name = headers.get("mcp-name")
        if (name is not None or require_mcp_name) and decode_header_value(name) != task_id:
            raise HeaderMismatchError()
    if not declares_tasks(ctx):
        require_client_extension(ctx, EXTENSION_ID)
