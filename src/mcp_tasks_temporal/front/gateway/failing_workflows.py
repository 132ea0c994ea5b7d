"""A task whose workflow task keeps failing: why, in one line a client may see.

Temporal keeps such a run open and retries its workflow task (a sandbox violation, a
non-deterministic change, an exception in workflow code), so the task's memo still says
`working` or `input_required`: only the workflow code could change it, and that is what
fails. `describe` shows the retry as a pending workflow task past its first attempt; the
reason is in the history's last `WorkflowTaskFailed` event (Temporal records the first
failure of a series, later attempts are transient). That event is read once per series
and remembered, so a healthy task's read costs nothing more than its `describe`.

Only what names the cause goes out (`temporal/workflow_task_failures.py`, which the
workers use too).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from mcp_tasks_temporal.front.gateway.history import last_workflow_task_failure
from mcp_tasks_temporal.temporal.workflow_task_failures import describe_failure

if TYPE_CHECKING:
    from temporalio.api.workflow.v1 import PendingWorkflowTaskInfo
    from temporalio.client import Client

_REMEMBERED: Final = 4096


@dataclass(frozen=True)
class WorkflowTaskFailure:
    """Why a task's workflow task keeps failing, and since which attempt."""

    kind: str
    """`nondeterminism`, `sandbox` or `exception`: the metric's label."""
    cause: str
    attempt: int
    first_report: bool = False
    """The first read that found this series: count it, print it, once."""

    @property
    def status_message(self) -> str:
        return f"Workflow failing (attempt {self.attempt}): {self.cause}; it resumes once a worker runs fixed code"


def failing_since(pending: PendingWorkflowTaskInfo | None) -> int | None:
    """The pending workflow task's first scheduling (ms) when an attempt before it failed, else None."""
    if pending is None or pending.attempt < 2:
        return None
    return pending.original_scheduled_time.ToMilliseconds()


class FailingWorkflows:
    """The failure of each failing series read once; a bounded memory of the ones seen."""

    def __init__(self) -> None:
        self._seen: OrderedDict[tuple[str, str, int], tuple[str, str] | None] = OrderedDict()

    async def failure(
        self, client: Client, workflow_id: str, run_id: str, pending: PendingWorkflowTaskInfo | None
    ) -> WorkflowTaskFailure | None:
        """The failure behind a pending workflow task's retries, or None for a task that is not failing."""
        since = failing_since(pending)
        if since is None or pending is None:
            return None
        key = (workflow_id, run_id, since)
        first = key not in self._seen
        if first:
            self._seen[key] = await _last_failure(client, workflow_id, run_id)
            while len(self._seen) > _REMEMBERED:
                self._seen.popitem(last=False)
        else:
            self._seen.move_to_end(key)
        found = self._seen[key]
        if found is None:
            return None
        return WorkflowTaskFailure(kind=found[0], cause=found[1], attempt=pending.attempt, first_report=first)


async def _last_failure(client: Client, workflow_id: str, run_id: str) -> tuple[str, str] | None:
    """(kind, cause) of the newest workflow-task failure, when no workflow task completed after it."""
    found = await last_workflow_task_failure(client, workflow_id, run_id)
    return describe_failure(*found) if found is not None else None
