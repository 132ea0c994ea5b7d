"""A Nexus operation as an MCP task tool: its options, on top of a workflow tool's.

The task's workflow is `NexusToolWorkflow` (ours, on the app's task queue); the
tool's arguments are the fields of the operation's input type, its result the
operation's output. Everything else (IDs, memo, TTL, owner, `tasks/*`, the
synchronous form) is the workflow tool machinery, unchanged.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter

from mcp_tasks_temporal.temporal.nexus_contract import NEXUS_TOOL_WORKFLOW, NexusCall
from mcp_tasks_temporal.temporal.workflow_tools import TaskPolicy, WorkflowToolOptions
from mcp_tasks_temporal.temporal.workflows.nexus_tool import NexusToolWorkflow


@dataclass(frozen=True)
class NexusToolOptions(WorkflowToolOptions):
    endpoint: str = ""
    service: str = ""
    operation: str = ""
    schedule_to_close_s: float | None = None
    reply_endpoint: Callable[[], str | None] = lambda: None
    """Read per call: the deployment sets it (`--nexus-reply-endpoint`) after the app registered its tools."""

    @classmethod
    def for_operation(
        cls,
        *,
        endpoint: str,
        service: str,
        operation: str,
        input_type: Any,
        output_type: Any,
        name: str,
        description: str,
        policy: TaskPolicy,
        ttl_ms: Any,
        poll_interval_ms: Any,
        schedule_to_close_s: float | None,
        reply_endpoint: Callable[[], str | None],
    ) -> NexusToolOptions:
        for label, value in (("endpoint", endpoint), ("service", service), ("operation", operation)):
            if not value:
                raise ValueError(f"a Nexus tool needs a non-empty {label}")
        if schedule_to_close_s is not None and schedule_to_close_s <= 0:
            raise ValueError("schedule_to_close_timeout must be a positive number of seconds, or None")
        parameter = (
            None
            if input_type is None
            else inspect.Parameter("input", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=input_type)
        )
        return cls(
            workflow_class=NexusToolWorkflow,
            workflow_name=NEXUS_TOOL_WORKFLOW,
            name=name,
            description=description,
            task_queue=None,  # the app's: the reply endpoint targets it
            policy=policy,
            ttl_ms=ttl_ms,
            poll_interval_ms=poll_interval_ms,
            activities=(),
            parameter=parameter,
            return_type=output_type,
            endpoint=endpoint,
            service=service,
            operation=operation,
            schedule_to_close_s=schedule_to_close_s,
            reply_endpoint=reply_endpoint,
        )

    def workflow_args(self, arguments: Mapping[str, Any]) -> list[Any]:
        """One `NexusCall`; the operation's input in JSON form, so the front needs none of the handler's types."""
        input_value: Any = None
        if self.parameter is not None:
            adapter = TypeAdapter(self.parameter.annotation)
            raw = dict(arguments) if self.takes_fields else arguments.get(self.parameter.name)
            input_value = adapter.dump_python(adapter.validate_python(raw), mode="json")
        call = NexusCall(
            endpoint=self.endpoint,
            service=self.service,
            operation=self.operation,
            input=input_value,
            reply_endpoint=self.reply_endpoint(),
            schedule_to_close_s=self.schedule_to_close_s,
        )
        return [call]
