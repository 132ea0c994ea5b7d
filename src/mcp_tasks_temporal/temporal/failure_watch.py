"""On a worker: a task's workflow that starts failing is counted, logged, and ended when its tool's policy says so.

The worker's runner reports each failed workflow task of a task's workflow
(`failure_runner`); this module looks at what Temporal recorded about it, once per
report and off the workflow task's thread:

- `describe` gives the task's tool (its memo) and the pending workflow task's attempt;
- the history's tail gives the series' first recorded failure: its cause, its time
  and the worker that reported it (`workflow_task_failures.failing_series`).

The worker that reported the first failure counts it (`mcp_failing_workflows_total`)
and logs it, once per series: Temporal records a series' first failure under the
reporting worker's identity, so across any number of workers and restarts exactly one
process finds its own identity there, and only when the event is younger than the
process (a restarted container may reuse a pid, so an identity). Every report is then
weighed against the tool's `FailingWorkflowPolicy`; past it, the run is terminated
with the JSON-RPC error in the details, which the fronts show as the task's error.
Nothing here runs in workflow code: a replay never meets it.

Costs one describe and one short history page per failed workflow task, which Temporal
retries about every 10 s and then less often; a healthy workflow costs nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

from temporalio.api.enums.v1 import PendingWorkflowTaskState
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.runtime import Runtime
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import UnsandboxedWorkflowRunner

from mcp_tasks_temporal.temporal.contract import Memo
from mcp_tasks_temporal.temporal.failing_policy import (
    TERMINATE_REASON_PREFIX,
    FailingWorkflowPolicy,
    attempt_that_failed,
    ended_error,
    termination_details,
)
from mcp_tasks_temporal.temporal.failure_runner import FailedWorkflowTask, FailureReports, watched_runner
from mcp_tasks_temporal.temporal.metrics import WorkerMetrics
from mcp_tasks_temporal.temporal.tool_registry import TaskToolRegistry
from mcp_tasks_temporal.temporal.workflow_task_failures import FailingSeries, failing_series

logger = logging.getLogger(__name__)

_REMEMBERED: Final = 4096
_CLOCK_SLACK_MS: Final = 5000
"""A series recorded this long before the process started is another process's (clocks differ a little)."""
_RECORDED_WITHIN_S: Final = 5.0
"""How long a first attempt's failure may take to reach the history after the worker saw it."""

PolicyFor = Callable[[str], FailingWorkflowPolicy | None]


def watch_failing_workflows(config: dict[str, Any], tasks: TaskToolRegistry) -> None:
    """Install the watch on a worker's configuration (`McpTasksPlugin.configure_worker`): both of its runners."""
    client: Client = config["client"]
    watch = FailureWatch(
        client,
        identity=config.get("identity") or client.identity,
        policy_for=tasks.failing_workflow_for,
        metrics=WorkerMetrics(_runtime(client).metric_meter),
    )
    reports = FailureReports(watch.observe)
    config["workflow_runner"] = watched_runner(config.get("workflow_runner"), reports)
    unsandboxed = config.get("unsandboxed_workflow_runner") or UnsandboxedWorkflowRunner()
    config["unsandboxed_workflow_runner"] = watched_runner(unsandboxed, reports)


def _runtime(client: Client) -> Runtime:
    return client.service_client.config.runtime or Runtime.default()


class FailureWatch:
    """Follows the reports of one worker; at most one look per run at a time, the newest report next."""

    def __init__(self, client: Client, *, identity: str, policy_for: PolicyFor, metrics: WorkerMetrics) -> None:
        self._client = client
        self._identity = identity
        self._policy_for = policy_for
        self._metrics = metrics
        self._since_ms = int(time.time() * 1000) - _CLOCK_SLACK_MS
        self._seen: OrderedDict[tuple[str, int], None] = OrderedDict()
        self._next: dict[str, FailedWorkflowTask] = {}
        self._running: set[asyncio.Task[None]] = set()

    def observe(self, failed: FailedWorkflowTask) -> None:
        """Take a report (on the worker's event loop); the look happens in the background."""
        following = failed.run_id in self._next
        self._next[failed.run_id] = failed
        if not following:
            task = asyncio.get_running_loop().create_task(self._follow(failed.run_id))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _follow(self, run_id: str) -> None:
        try:
            while (failed := self._next.get(run_id)) is not None:
                try:
                    await self.look(failed)
                except RPCError as err:
                    logger.warning("could not look at failing workflow %s: %s", failed.workflow_id, err.message)
                except Exception:
                    logger.exception("could not look at failing workflow %s", failed.workflow_id)
                if self._next.get(run_id) is failed:
                    del self._next[run_id]
        finally:
            self._next.pop(run_id, None)

    async def look(self, failed: FailedWorkflowTask) -> None:
        """Count, log and, past its tool's policy, end the task whose workflow task just failed."""
        handle = self._client.get_workflow_handle(failed.workflow_id, run_id=failed.run_id)
        described = await handle.describe()
        if described.status != WorkflowExecutionStatus.RUNNING:
            return
        memo = await described.memo()
        tool = str(memo.get(Memo.TOOL) or "")
        task_id = str(memo.get(Memo.TASK_ID) or failed.workflow_id.rsplit("/", 1)[-1])
        pending = described.raw_description.pending_workflow_task
        series = await self._series(failed, pending.attempt)
        if series is None:
            return  # it recovered, or the series began with a timed-out attempt, which Temporal does not record
        if self._first_look(failed.run_id, series):
            self._metrics.workflow_failing(tool, series.kind)
            logger.warning("task %s (%s): workflow failing: %s", task_id, tool, series.cause)
        policy = self._policy_for(tool)
        if policy is None:
            return
        started = pending.started_time.ToMilliseconds()
        is_started = pending.state == PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_STARTED
        attempts = attempt_that_failed(pending.attempt, started if is_started else None, failed.started_ms)
        failing_s = max(0.0, time.time() - series.at_ms / 1000)
        if policy.reached(attempts, failing_s):
            error = ended_error(series.kind, series.cause, attempts, failing_s, policy)
            await self._end(handle, task_id, tool, series, error)

    async def _series(self, failed: FailedWorkflowTask, pending_attempt: int) -> FailingSeries | None:
        """The series' first recorded failure; a first attempt's own failure may still be on its way."""
        deadline = time.monotonic() + (_RECORDED_WITHIN_S if pending_attempt <= 2 else 0.0)
        pause = 0.05
        while True:
            series = await failing_series(self._client, failed.workflow_id, failed.run_id)
            if series is not None or time.monotonic() >= deadline:
                return series
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.5)

    def _first_look(self, run_id: str, series: FailingSeries) -> bool:
        """Whether this process reported the series' first failure and has not counted it yet."""
        key = (run_id, series.event_id)
        if key in self._seen:
            return False
        self._seen[key] = None
        while len(self._seen) > _REMEMBERED:
            self._seen.popitem(last=False)
        return series.identity == self._identity and series.at_ms >= self._since_ms

    async def _end(self, handle: Any, task_id: str, tool: str, series: FailingSeries, error: dict[str, Any]) -> None:
        try:
            await handle.terminate(*termination_details(error), reason=TERMINATE_REASON_PREFIX + error["message"])
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return  # closed meanwhile: by another worker's decision, a fix, or its TTL
            raise
        self._metrics.failing_workflow_ended(tool, series.kind)
        logger.warning("task %s (%s): ended failed: %s", task_id, tool, error["message"])
