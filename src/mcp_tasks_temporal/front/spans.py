"""The task a request's span is about, for tracing: the SDK opens the span, the front names the task."""

from __future__ import annotations

from opentelemetry import trace

from mcp_tasks_temporal.temporal.contract import TASK_ID_ATTRIBUTE


def tag_task(task_id: str) -> None:
    """Mark the current span (the SDK's span of a `tasks/*` or `tools/call` request) with the task it is about."""
    trace.get_current_span().set_attribute(TASK_ID_ATTRIBUTE, task_id)
