"""Moved to `mcp_tasks_temporal.temporal.workflow_api`; its helpers are also at the package root.

This path keeps working for a release, with a `DeprecationWarning` naming the new one.
"""

from mcp_tasks_temporal._moved import warn_moved
from mcp_tasks_temporal.temporal.workflow_api import *  # noqa: F403

warn_moved(__name__, "mcp_tasks_temporal.temporal.workflow_api")
