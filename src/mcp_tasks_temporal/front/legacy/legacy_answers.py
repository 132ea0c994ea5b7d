"""Replies to the questions a front server asked on a request's stream, taken by whichever front they reach.

A 2025-11-25 client answers a server-to-client request by POSTing a JSON-RPC
response to the MCP endpoint, with no session to route it by. The questions
this server asks carry IDs that name their task and question
(`legacy_tasks.answer_id`), so the handshake revisions' request middleware
(`handshake_requests`), in front of the SDK's stateless transport (which would
drop the reply), turns such a reply into the answer `tasks/update` would have
delivered: a signal to the task's workflow, owned by the principal that POSTs it. The front still holding the client's
request sees the task move on and carries on there.
"""

from __future__ import annotations

import logging
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import principal_components
from mcp.server.request_state import compact_json
from mcp.shared.exceptions import MCPError

from mcp_tasks_temporal.front.gateway import TemporalTaskGateway
from mcp_tasks_temporal.front.legacy.legacy_tasks import ANSWER_ID_PREFIX, parse_answer_id
from mcp_tasks_temporal.front.unicode_params import lone_surrogate_at
from mcp_tasks_temporal.temporal.contract import as_object

logger = logging.getLogger(__name__)

_MARKER = ANSWER_ID_PREFIX.encode()


async def deliver_reply(gateway: TemporalTaskGateway, task_id: str, key: str, reply: dict[str, Any]) -> int:
    """Hand a client's reply to question `key` to its task, as the POSTing principal; the HTTP status to answer."""
    # What cannot be stored (not valid Unicode, nested past what a payload converter takes) is refused here.
    try:
        if lone_surrogate_at(reply) is not None:
            return 400
    except RecursionError:
        return 400
    token = get_access_token()
    principal = None if token is None else compact_json(principal_components(token))
    try:
        if "result" in reply:
            await gateway.update(task_id, principal, {key: as_object(reply["result"])})
        else:
            # The client cannot answer (no such capability, or it failed): nothing else will.
            logger.info("task %s: the client refused question %r; the task is cancelled", task_id, key)
            await gateway.cancel(task_id, principal)
    except MCPError as err:
        logger.info("task %s: reply to question %r not taken: %s", task_id, key, err.error.message)
        return 400
    except Exception:
        logger.exception("task %s: could not deliver the reply to question %r", task_id, key)
        return 503
    return 202


def may_be_a_reply(body: bytes) -> bool:
    """Whether `body` may answer one of this server's questions: only those carry its ID prefix."""
    return _MARKER in body


def reply_of(message: Any) -> tuple[str, str, dict[str, Any]] | None:
    """`(task_id, key, response)` when a parsed body is a JSON-RPC response to one of our questions."""
    response = as_object(message)
    if not response or "method" in response or not ("result" in response or "error" in response):
        return None
    parsed = parse_answer_id(response.get("id"))
    if parsed is None:
        return None
    return parsed[0], parsed[1], dict(response)
