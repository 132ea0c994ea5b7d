"""Moved to `mcp_tasks_temporal.temporal.task_interceptor`, and a worker of your own gets it from `McpTasksPlugin`.

This path keeps working for a release, with a `DeprecationWarning` naming the new one.
"""

from mcp_tasks_temporal._moved import warn_moved
from mcp_tasks_temporal.temporal.task_interceptor import *  # noqa: F403

warn_moved(__name__, "mcp_tasks_temporal.temporal.task_interceptor")
