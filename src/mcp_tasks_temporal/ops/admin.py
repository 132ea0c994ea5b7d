"""Operator listing and bulk cancellation of tasks, from Temporal visibility (`mcp-tasks-temporal admin`).

MCP has no `tasks/list`, so a client that lost its task IDs cannot find them;
an operator can, here. The owner and age filters go into the visibility query
(the owner is the hashed key inside every task's workflow ID); tool and task
status are matched against the memo that comes back with each listed workflow,
so tasks started before the search attributes were registered are found too.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from temporalio.api.common.v1 import WorkflowExecution as ExecutionRef
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionRequest
from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus

from mcp_tasks_temporal.front.gateway.failing_workflows import FailingWorkflows
from mcp_tasks_temporal.temporal.contract import TERMINAL_STATUSES, Memo, as_object, to_iso
from mcp_tasks_temporal.temporal.deployment import build_of
from mcp_tasks_temporal.temporal.ids import WORKFLOW_ID_PREFIX
from mcp_tasks_temporal.temporal.search_attributes import query_literal

logger = logging.getLogger(__name__)

_CLOSED_AS: Final = {
    WorkflowExecutionStatus.COMPLETED: "completed",
    WorkflowExecutionStatus.CANCELED: "cancelled",
    WorkflowExecutionStatus.FAILED: "failed",
    WorkflowExecutionStatus.TERMINATED: "failed",
    WorkflowExecutionStatus.TIMED_OUT: "failed",
}
_VISIBILITY_STATUS: Final = {
    "completed": ["Completed"],
    "cancelled": ["Canceled"],
    "failed": ["Failed", "Terminated", "TimedOut"],
    "working": ["Running"],
    "input_required": ["Running"],
}


@dataclass(frozen=True)
class TaskFilter:
    owner_key: str | None = None
    tool: str | None = None
    status: str | None = None
    older_than: timedelta | None = None
    running_only: bool = False

    def query(self, now: datetime) -> str:
        """The visibility query; what visibility cannot match (tool, working vs input_required) is matched later."""
        prefix = f"{WORKFLOW_ID_PREFIX}/{self.owner_key}/" if self.owner_key else f"{WORKFLOW_ID_PREFIX}/"
        clauses = [f"WorkflowId STARTS_WITH {query_literal(prefix)}"]
        if self.older_than is not None:
            clauses.append(f"StartTime < {query_literal((now - self.older_than).astimezone(UTC).isoformat())}")
        statuses = _VISIBILITY_STATUS[self.status] if self.status else None
        if self.running_only:
            statuses = [s for s in statuses or ["Running"] if s == "Running"]
        if statuses is not None:
            if not statuses:
                return ""
            clauses.append("(" + " OR ".join(f"ExecutionStatus = {query_literal(s)}" for s in statuses) + ")")
        return " AND ".join(clauses)


@dataclass(frozen=True)
class ListedTask:
    task_id: str
    workflow_id: str
    run_id: str
    tool: str
    status: str
    owner: str
    created_at: str
    closed_at: str | None
    kind: str
    build: str | None = None
    """`<deployment>:<build ID>` the task runs (or last ran) on under worker versioning; `None` unversioned."""
    failing: str | None = None
    """Why the task's workflow task keeps failing (a running task only), as `tasks/get`'s statusMessage says."""

    def as_json(self) -> dict[str, Any]:
        return {
            "taskId": self.task_id,
            "tool": self.tool,
            "status": self.status,
            "owner": self.owner,
            "createdAt": self.created_at,
            "closedAt": self.closed_at,
            "kind": self.kind,
            "build": self.build,
            "failing": self.failing,
            "workflowId": self.workflow_id,
            "runId": self.run_id,
        }


async def list_tasks(
    client: Client, task_filter: TaskFilter, *, now: datetime | None = None
) -> AsyncIterator[ListedTask]:
    """The tasks that match, newest first (visibility's order)."""
    query = task_filter.query(now or datetime.now(UTC))
    if not query:
        return
    failing = FailingWorkflows()
    async for execution in client.list_workflows(query):
        task = await listed_task(execution)
        if not is_terminal(task.status):
            task = await _with_failure(client, failing, task)
        if task_filter.tool is not None and task.tool != task_filter.tool:
            continue
        if task_filter.status is not None and task.status != task_filter.status:
            continue
        yield task


async def _with_failure(client: Client, failing: FailingWorkflows, task: ListedTask) -> ListedTask:
    """The task marked when its workflow task keeps failing (one describe per running task)."""
    request = DescribeWorkflowExecutionRequest(
        namespace=client.namespace, execution=ExecutionRef(workflow_id=task.workflow_id, run_id=task.run_id)
    )
    response = await client.workflow_service.describe_workflow_execution(request)
    pending = response.pending_workflow_task if response.HasField("pending_workflow_task") else None
    failure = await failing.failure(client, task.workflow_id, task.run_id, pending)
    return dataclasses.replace(task, failing=failure.cause) if failure is not None else task


async def listed_task(execution: WorkflowExecution) -> ListedTask:
    """A listed or described workflow as a task: its status from the memo while it runs."""
    memo: Mapping[str, Any]
    try:
        memo = as_object(await execution.memo())
    except Exception:  # one task written through a codec we were not given must not hide the rest
        logger.warning("%s: its memo cannot be decoded (a payload codec not given here?)", execution.id)
        memo = {}
    _, owner, task_id = (execution.id.split("/", 2) + ["", ""])[:3]
    if execution.status in (None, WorkflowExecutionStatus.RUNNING):
        status = str(memo.get(Memo.STATUS) or "working")
    else:
        status = _CLOSED_AS.get(execution.status, "failed")
    created_ms = memo.get(Memo.CREATED_AT)
    created = (
        to_iso(int(created_ms)) if created_ms is not None else to_iso(int(execution.start_time.timestamp() * 1000))
    )
    closed = to_iso(int(execution.close_time.timestamp() * 1000)) if execution.close_time else None
    return ListedTask(
        task_id=str(memo.get(Memo.TASK_ID) or task_id),
        workflow_id=execution.id,
        run_id=execution.run_id,
        tool=str(memo.get(Memo.TOOL) or execution.workflow_type),
        status=status,
        owner=str(memo.get(Memo.OWNER) or owner),
        created_at=created,
        closed_at=closed,
        kind=str(memo.get("kind") or "tool"),
        build=build_of(execution.raw_info),
    )


def is_terminal(status: str) -> bool:
    return status in TERMINAL_STATUSES
