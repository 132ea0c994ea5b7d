"""The params of `tasks/get`, `tasks/update` and `tasks/cancel`, as the extension declares its methods.

Kept apart from their handlers (`task_methods`): an `MCPServer` reads an extension's
methods when it is built, on a worker too, which must not load the front to do so.
"""

from __future__ import annotations

from typing import Any

from mcp_types import RequestParams
from pydantic import Field


class TaskIdParams(RequestParams):
    task_id: str


class UpdateTaskParams(RequestParams):
    task_id: str
    # Values stay raw: entries under keys that are not outstanding must be acked, whatever they hold.
    input_responses: dict[str, Any] = Field(default_factory=dict[str, Any])
