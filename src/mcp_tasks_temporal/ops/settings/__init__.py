"""Every process's settings: flags over `MCP_TASKS_*` variables over defaults, one typed model per process.

`model` is the base and its `Flag`, `fields` the groups of settings the processes
share, `processes` the model of each command, `options` their command-line flags.
"""

from mcp_tasks_temporal.ops.settings.environment import environment, export_variable, variable

__all__ = ["environment", "export_variable", "variable"]
