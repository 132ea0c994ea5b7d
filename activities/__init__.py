"""Temporal activities of mcp-tasks-temporal (imported as `mcp_tasks_temporal.temporal.activities`)."""

from mcp_tasks_temporal.temporal.activities.tool_call import ToolActivities

__all__ = ["ToolActivities"]
