"""A task-capable `tools/call` answered with the tool's own result when the tool is quick.

SEP-2663 makes the server the sole decider of whether a supported request becomes a task, and a
server may answer at once when the work is done. So a front starts the task as always and waits up to
the tool's budget (`inline_budget_ms`, capped by `FrontSettings.max_inline_budget_ms`) for the tool to
end or ask: a tool that ends in time is answered with its `CallToolResult` (or its JSON-RPC error),
exactly as a synchronous call is, while its run stays in Temporal's history like any task's; past the
budget, or at the tool's first question, the call is answered with the task, whose ID the client then
follows as always. Start and wait are one Temporal call (`TemporalTaskGateway.create_settled`).

The tool's first attempt runs inside the workflow's first task, as a local activity, for up to the budget
(at most `FIRST_ATTEMPT_MAX_MS`): a tool that ends by then closes its run in that one workflow task, with no
activity task and no second workflow task between the call and its answer. A tool still running then goes on
where it runs, adopted by an ordinary activity on the same worker (docs/design.md, "Results in the call").

Until its answer the call is a plain request: a client that leaves it (closes the stream, or sends
`notifications/cancelled` where the transport turns that into the request's cancellation) leaves no
one to hand the task to, so the task is cancelled, as an abandoned plain call's is (`held_calls`).
Once answered with the task, the call is over and nothing but `tasks/cancel` cancels it.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Final

import anyio
from mcp.server.context import HandlerResult
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, CallToolResult

from mcp_tasks_temporal.front.calls.held_calls import CANCEL_BOUND_S
from mcp_tasks_temporal.front.gateway import TemporalTaskGateway
from mcp_tasks_temporal.temporal.contract import ToolTaskInput

logger = logging.getLogger(__name__)

FIRST_ATTEMPT_MAX_MS: Final = 1000
"""The longest a first attempt runs locally: a local activity cannot heartbeat, so a status line it sets
and a cancel sent meanwhile wait for the phase to end; a second is the status lines' own freshness."""


async def answer_within(
    gateway: TemporalTaskGateway,
    task: ToolTaskInput,
    principal: str | None,
    *,
    budget_ms: int,
    pinned: bool,
    priority: int | None,
) -> HandlerResult:
    """Start `task` and answer its call: the tool's result or error if it ends within `budget_ms`, else the task.

    Raises:
        MCPError: The tool ended with a JSON-RPC error (what a synchronous call raises).
    """
    task = replace(task, first_attempt_ms=min(budget_ms, FIRST_ATTEMPT_MAX_MS))
    try:
        settled = await gateway.create_settled(task, principal, within_ms=budget_ms, pinned=pinned, priority=priority)
    except anyio.get_cancelled_exc_class():
        await _abandon(gateway, task, principal, pinned=pinned)
        raise
    if settled.result is not None:
        return CallToolResult.model_validate(settled.result)
    if settled.error is not None:
        error = settled.error
        raise MCPError(
            code=int(error.get("code", INTERNAL_ERROR)),
            message=str(error.get("message", "Tool execution failed")),
            data=error.get("data"),
        )
    assert settled.task is not None
    return {"resultType": "task", **settled.task}


async def _abandon(gateway: TemporalTaskGateway, task: ToolTaskInput, principal: str | None, *, pinned: bool) -> None:
    """Cancel the task of a call that ended before its answer; bounded, and even while being cancelled."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_BOUND_S) as bound:
        try:
            await gateway.abandon(task, principal, pinned=pinned)
        except Exception:  # the call is over either way: the TTL still ends the task
            logger.warning("could not cancel task %s, whose call ended before its answer", task.task_id, exc_info=True)
            return
        logger.info("task %s cancelled: its call ended before its answer", task.task_id)
    if bound.cancelled_caught:
        logger.warning("could not cancel task %s in %.0f s, whose call ended", task.task_id, CANCEL_BOUND_S)


def budget_of(tool_budget_ms: Any, cap_ms: int | None) -> int:
    """The budget a call of the tool gets on this front: the tool's, at most the front's cap."""
    budget = int(tool_budget_ms)
    return budget if cap_ms is None else min(budget, cap_ms)
