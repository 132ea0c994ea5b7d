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
from collections.abc import Iterable
from typing import Any, Final, cast

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

MAX_REPLY_NESTING: Final = 100
"""How deep a reply's JSON may nest. Far deeper than any answer to a question, and far within what every
process reads back once the task has put the answer in records of its own: the pydantic converter writes 255
levels but reads 201. Any other request's body is parsed by the SDK's own parser, which stops at the same 201."""


async def deliver_reply(gateway: TemporalTaskGateway, task_id: str, key: str, reply: dict[str, Any]) -> int:
    """Hand a client's reply to question `key` to its task, as the POSTing principal; the HTTP status to answer."""
    # What cannot be stored (nested past what a payload converter takes back, not valid Unicode) is refused here.
    if nested_deeper_than(reply, MAX_REPLY_NESTING) or lone_surrogate_at(reply) is not None:
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


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` nests lists and objects more than `limit` deep; read without recursion, however deep it is."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if not isinstance(item, dict | list):
            continue
        if depth > limit:
            return True
        children = cast("Iterable[Any]", item.values() if isinstance(item, dict) else item)  # pyright: ignore[reportUnknownMemberType]
        pending.extend((child, depth + 1) for child in children)
    return False


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
