"""The built-in demo served by `mcp-tasks-temporal dev` when no `--app` is given (`mcp_tasks_temporal.demo:app`).

`server` is the app; `pipeline` and `review` hold its workflows, `pipeline_steps` and
`review_files` their activities, `duplicates` the review's duplicate finder. The Nexus
demo (`nexus_app`, `nexus_team`, `report_workflow`) is served with `--app` instead.

`app` is built on first use, not when the package is imported: the workflow sandbox
imports this package again for every run of the demo's workflows, and the Nexus demo's
other team imports its workflow from here without wanting an MCP server.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any


def __getattr__(name: str) -> Any:
    if name == "app":
        return import_module("mcp_tasks_temporal.demo.server").app
    raise AttributeError(f"module 'mcp_tasks_temporal.demo' has no attribute {name!r}")
