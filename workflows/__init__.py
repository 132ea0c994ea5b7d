"""Temporal workflows of mcp-tasks-temporal (imported as `mcp_tasks_temporal.temporal.workflows`)."""

from mcp_tasks_temporal.temporal.workflows.nexus_tool import NexusToolWorkflow
from mcp_tasks_temporal.temporal.workflows.tool_task import (
    AutoUpgradeToolTaskWorkflow,
    PinnedToolTaskWorkflow,
    ToolTaskWorkflow,
)

__all__ = ["AutoUpgradeToolTaskWorkflow", "NexusToolWorkflow", "PinnedToolTaskWorkflow", "ToolTaskWorkflow"]
