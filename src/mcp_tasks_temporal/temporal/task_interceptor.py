"""The worker interceptor for workflow tools: heartbeats and a relay for their activities, a timeout warning.

`dev` and `worker` install it; a team running its own workers adds
`interceptors=[TaskInterceptor(...)]` and `workflow_runner=workflow_runner()`
(`mcp_tasks_temporal.temporal.sandbox`) to theirs to get the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from temporalio import activity, workflow
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    ExecuteWorkflowInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from mcp_tasks_temporal.temporal.activity_bridge import flush_status, register_handlers
from mcp_tasks_temporal.temporal.contract import WORKFLOW_KIND, Memo
from mcp_tasks_temporal.temporal.heartbeats import HeartbeatingActivity, WarnWithoutHeartbeatTimeout


class TaskInterceptor(Interceptor):
    """Applies to the given workflow types (workflow tools) and activity types (their activities)."""

    def __init__(self, workflow_types: Iterable[str], activity_types: Iterable[str]) -> None:
        self._workflow_types = frozenset(workflow_types)
        self._activity_types = frozenset(activity_types)

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _FlushStatus(HeartbeatingActivity(next, self._activity_types))

    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
        workflow_types, activity_types = self._workflow_types, self._activity_types

        class _WorkflowTask(WorkflowInboundInterceptor):
            def init(self, outbound: WorkflowOutboundInterceptor) -> None:
                super().init(WarnWithoutHeartbeatTimeout(outbound, workflow_types, activity_types))

            async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
                # Registering handlers issues no command: histories recorded without them replay unchanged.
                if workflow.info().workflow_type in workflow_types and _is_task():
                    register_handlers()
                return await super().execute_workflow(input)

        return _WorkflowTask


class _FlushStatus(ActivityInboundInterceptor):
    """The activity's result is reported only after its status lines reached the workflow."""

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        try:
            return await super().execute_activity(input)
        finally:
            if activity.in_activity():
                await flush_status(activity.info().task_token)


def _is_task() -> bool:
    return workflow.memo_value(Memo.KIND, None) == WORKFLOW_KIND
