"""The built-in demo served by `mcp-tasks-temporal dev` when no `--app` is given (`mcp_tasks_temporal.demo.server`).

The app is loaded on first use: its review activity imports `demo.duplicates`, and loading the app
from here would import the review workflow while that workflow is still being imported.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any


def __getattr__(name: str) -> Any:
    if name == "app":
        return import_module("mcp_tasks_temporal.demo.server").app
    raise AttributeError(f"module 'mcp_tasks_temporal.demo' has no attribute {name!r}")
