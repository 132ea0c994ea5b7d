"""mcp-tasks-temporal: the MCP Tasks extension (SEP-2663) as an adapter on Temporal.

The package root stays import-light because the workflow sandbox imports it;
the public names below load their modules on first use. `__all__` is the public
surface (tests/test_public_api.py pins it); `mcp_tasks_temporal.client` (the task
client) and `mcp_tasks_temporal.contrib.pydantic_ai` (sub-agents, the `agent` extra)
are the public submodules.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "ActivityPolicy": "mcp_tasks_temporal.temporal.contract",
    "BearerAuth": "mcp_tasks_temporal.front.http.endpoint",
    "FrontSettings": "mcp_tasks_temporal.front.settings",
    "FailingWorkflowPolicy": "mcp_tasks_temporal.temporal.failing_policy",
    "McpTasksPlugin": "mcp_tasks_temporal.temporal.plugin",
    "OwnerKeying": "mcp_tasks_temporal.temporal.ids",
    "TasksExtension": "mcp_tasks_temporal.front.extension",
    "TaskPolicy": "mcp_tasks_temporal.temporal.tool_registry",
    "ToolTaskOptions": "mcp_tasks_temporal.temporal.tool_registry",
    "mcp_endpoint": "mcp_tasks_temporal.front.http.endpoint",
    "idempotency_key": "mcp_tasks_temporal.temporal.task_context",
    "request_input": "mcp_tasks_temporal.temporal.task_context",
    "request_inputs": "mcp_tasks_temporal.temporal.task_context",
    "set_status": "mcp_tasks_temporal.temporal.task_context",
    "start_task_workflow": "mcp_tasks_temporal.temporal.nexus_handler",
    "task_error": "mcp_tasks_temporal.temporal.workflow_api",
}

__all__ = [
    "ActivityPolicy",
    "BearerAuth",
    "FrontSettings",
    "FailingWorkflowPolicy",
    "McpTasksPlugin",
    "OwnerKeying",
    "TaskPolicy",
    "TasksExtension",
    "ToolTaskOptions",
    "__version__",
    "mcp_endpoint",
    "idempotency_key",
    "request_input",
    "request_inputs",
    "set_status",
    "start_task_workflow",
    "task_error",
]

if TYPE_CHECKING:
    from mcp_tasks_temporal.front.extension import TasksExtension
    from mcp_tasks_temporal.front.http.endpoint import BearerAuth, mcp_endpoint
    from mcp_tasks_temporal.front.settings import FrontSettings
    from mcp_tasks_temporal.temporal.contract import ActivityPolicy
    from mcp_tasks_temporal.temporal.failing_policy import FailingWorkflowPolicy
    from mcp_tasks_temporal.temporal.ids import OwnerKeying
    from mcp_tasks_temporal.temporal.nexus_handler import start_task_workflow
    from mcp_tasks_temporal.temporal.plugin import McpTasksPlugin
    from mcp_tasks_temporal.temporal.task_context import idempotency_key, request_input, request_inputs, set_status
    from mcp_tasks_temporal.temporal.tool_registry import TaskPolicy, ToolTaskOptions
    from mcp_tasks_temporal.temporal.workflow_api import task_error


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_tasks_temporal' has no attribute {name!r}")
    return getattr(import_module(module), name)
