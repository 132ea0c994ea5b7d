"""A task as the client sees it: the `DetailedTask` built from a workflow's memo and status, and the memo a
new task starts with. `tasks/get` and every push notification are built here, so the two always agree.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR
from temporalio.client import (
    WorkflowExecutionStatus,
)

from mcp_tasks_temporal.front.gateway.reads import (
    WorkflowTask,
)
from mcp_tasks_temporal.front.session_binding import creating_binding
from mcp_tasks_temporal.task_wire import DetailedTask
from mcp_tasks_temporal.temporal.contract import (
    INTERNAL_ERROR_CODE,
    WORKFLOW_KIND,
    Memo,
)
from mcp_tasks_temporal.temporal.result_text import expand

logger = logging.getLogger(__name__)


def unreadable(task_id: str, err: Exception) -> MCPError:
    """A task whose payloads are gone, altered, sealed for another task or under a key this front lacks.

    Refused and said of this task, never served as its own; the detail (a digest, a key ID) goes to the log.
    """
    logger.error("task %s: cannot decrypt or read its payloads: %s", task_id, err)
    return MCPError(
        code=INTERNAL_ERROR,
        message=f"Task {task_id}: its payloads cannot be read (missing, altered, or under a key this server lacks)",
    )


def _task(**fields: Any) -> dict[str, Any]:
    """A `DetailedTask` on the wire, built and checked by the model the client reads it with."""
    return DetailedTask.build(**fields).wire()


def initial_memo(
    task_id: str,
    tool: str,
    owner: str,
    created_at_ms: int,
    ttl_ms: int | None,
    poll_interval_ms: int,
    *,
    anonymous: bool,
) -> dict[str, Any]:
    memo: dict[str, Any] = {
        Memo.TASK_ID: task_id,
        Memo.TOOL: tool,
        Memo.OWNER: owner,
        Memo.CREATED_AT: created_at_ms,
        Memo.TTL_MS: ttl_ms,
        Memo.POLL_INTERVAL_MS: poll_interval_ms,
        Memo.STATUS: "working",
        Memo.LAST_UPDATED_AT: created_at_ms,
    }
    session = creating_binding()
    if anonymous and session is not None:
        memo[Memo.SESSION] = session
    return memo


def workflow_task_memo(task: WorkflowTask, owner: str, *, anonymous: bool) -> dict[str, Any]:
    memo = initial_memo(
        task.task_id, task.tool, owner, task.created_at_ms, task.ttl_ms, task.poll_interval_ms, anonymous=anonymous
    )
    memo[Memo.KIND] = WORKFLOW_KIND
    memo[Memo.ENVELOPE] = task.envelope
    return memo


def created_task(
    task_id: str,
    created_at_ms: int,
    ttl_ms: int | None,
    poll_interval_ms: int,
    *,
    status: str = "working",
    last_updated_at_ms: int | None = None,
    status_message: str | None = None,
) -> dict[str, Any]:
    """The fields of a `CreateTaskResult`: the task as it started, or as it was when its call was answered (a
    question asked within the budget: `input_required`, whose questions a `tasks/get` then reads)."""
    task = _task(
        task_id=task_id,
        status=status,
        created_at_ms=created_at_ms,
        last_updated_at_ms=last_updated_at_ms or created_at_ms,
        ttl_ms=ttl_ms,
        poll_interval_ms=poll_interval_ms,
        status_message=status_message,
    )
    # A CreateTaskResult carries the task's state, never its questions, result or error.
    for field in ("inputRequests", "result", "error"):
        task.pop(field, None)
    return task


def task_view(
    task_id: str,
    memo: Mapping[str, Any],
    status: WorkflowExecutionStatus | None,
    *,
    heartbeat: tuple[str, int] | None = None,
    result: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
    closed_at_ms: int | None = None,
    failing: str | None = None,
    no_worker: str | None = None,
) -> dict[str, Any]:
    """The `DetailedTask` of a workflow, from its memo, its Temporal status and what only a read can add.

    `tasks/get` and push notifications both go through here, so a notification
    is exactly what a `tasks/get` at that moment returns. A closed task was last
    updated when its run closed (`closed_at_ms`), whatever its memo last said;
    a completed one has no status line left: the last one described a step.
    A result whose text the worker stored once is shown whole again here, so
    every reader (get, push, 2025-11-25 tasks/result) sees what the tool returned.
    `failing` and `no_worker` say why a working task makes no progress, over its last
    status line (which a worker that is gone can no longer change).
    """
    result = expand(result) if result is not None else None
    created_at_ms = int(memo.get(Memo.CREATED_AT) or 0)
    fields: dict[str, Any] = {
        "task_id": task_id,
        "created_at_ms": created_at_ms,
        "last_updated_at_ms": int(memo.get(Memo.LAST_UPDATED_AT) or created_at_ms),
        "ttl_ms": memo.get(Memo.TTL_MS),
        "poll_interval_ms": memo.get(Memo.POLL_INTERVAL_MS),
        "status_message": memo.get(Memo.STATUS_MESSAGE),
    }
    if status in (None, WorkflowExecutionStatus.RUNNING):
        memo_status = str(memo.get(Memo.STATUS) or "working")
        if memo_status == "completed":
            # The run has its result but has not closed yet (a feed task first delivers its transitions), and only
            # the close makes the result readable: until then the task is still finishing, not completed with none.
            memo_status = "working"
        if memo_status == "working" and heartbeat is not None:
            fields["status_message"] = heartbeat[0]
            fields["last_updated_at_ms"] = max(fields["last_updated_at_ms"], heartbeat[1])
        if memo_status == "working" and no_worker is not None:
            fields["status_message"] = no_worker
        if failing is not None:
            fields["status_message"] = failing
        return _task(
            status=memo_status, input_requests=memo.get(Memo.INPUT_REQUESTS), error=memo.get(Memo.ERROR), **fields
        )
    if closed_at_ms is not None:
        fields["last_updated_at_ms"] = max(fields["last_updated_at_ms"], closed_at_ms)
    if status == WorkflowExecutionStatus.COMPLETED:
        fields["status_message"] = None
        return _task(status="completed", result=result, **fields)
    if status == WorkflowExecutionStatus.CANCELED:
        return _task(status="cancelled", **fields)
    if status == WorkflowExecutionStatus.FAILED and (error or memo.get(Memo.ERROR)):
        return _task(status="failed", error=error or memo[Memo.ERROR], **fields)
    if status == WorkflowExecutionStatus.TERMINATED and error:
        # Ended by a worker's failing-workflow policy (temporal/failing_policy.py), which says why.
        fields["status_message"] = "Workflow code kept failing: ended by the failing-workflow policy"
        return _task(status="failed", error=error, **fields)
    # Terminated or timed out by an operator or a backstop: no workflow code ran to say why.
    fields["status_message"] = "Task stopped by the Temporal service"
    return _task(status="failed", error={"code": INTERNAL_ERROR_CODE, "message": "Task stopped"}, **fields)
