"""Moved to `mcp_tasks_temporal.contrib.pydantic_ai.sub_agent`; what a sub-agent needs is exported by
`mcp_tasks_temporal.contrib.pydantic_ai`.

This path keeps working for a release, with a `DeprecationWarning` naming the new one.
"""

from mcp_tasks_temporal._moved import warn_moved
from mcp_tasks_temporal.contrib.pydantic_ai.sub_agent import *  # noqa: F403

warn_moved(__name__, "mcp_tasks_temporal.contrib.pydantic_ai.sub_agent")
