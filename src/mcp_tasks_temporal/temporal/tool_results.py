"""How a workflow tool's outcome reads as an MCP result: pure mapping, shared by `tasks/get`, push and sync calls.

A workflow tool's return value is decoded without the workflow class (the
front server never imports it), so it arrives as plain JSON and is mapped
the way the `mcp` SDK maps a tool's return value. Failures map as for tool
tasks: an error that carries a JSON-RPC error (`task_error`) fails the task
with it; any other failure completes it with `isError: true` and its message,
as an exception in a tool does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError, FailureError

from mcp_tasks_temporal.temporal.contract import JSONRPC_ERROR


def call_tool_result(value: Any) -> dict[str, Any]:
    """The `CallToolResult` (wire form) of a workflow's return value.

    `str` is one text block; `None` no content; anything else (an object, a list, a
    number) is `structuredContent` plus its JSON as text, a non-object wrapped as
    `{"result": ...}` as the `mcp` SDK wraps a tool's non-object output.
    """
    if value is None:
        return {"resultType": "complete", "content": [], "isError": False}
    if isinstance(value, str):
        return {"resultType": "complete", "content": [_text(value)], "isError": False}
    structured = dict(cast(Mapping[str, Any], value)) if isinstance(value, Mapping) else {"result": value}
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return {"resultType": "complete", "content": [_text(text)], "structuredContent": structured, "isError": False}


def tool_error_result(message: str) -> dict[str, Any]:
    """A `CallToolResult` with `isError: true`, the shape a failing tool gives."""
    return {"resultType": "complete", "content": [_text(message)], "isError": True}


@dataclass(frozen=True)
class FailureOutcome:
    """What a failed workflow run means for its task."""

    status: Literal["completed", "failed"]
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


def failure_outcome(failure: BaseException) -> FailureOutcome:
    """Map the failure that closed a workflow run (as decoded from its history) onto the task.

    A JSON-RPC error anywhere in the cause chain wins (a `task_error` raised in an
    activity arrives wrapped in an `ActivityError`); otherwise the message of the
    innermost activity or child failure is the tool error's text.
    """
    node: BaseException | None = failure
    while node is not None:
        if isinstance(node, ApplicationError) and node.type == JSONRPC_ERROR and node.details:
            error = node.details[0]
            if isinstance(error, Mapping) and isinstance(error.get("code"), int):  # pyright: ignore[reportUnknownMemberType]
                return FailureOutcome("failed", error=dict(cast(Mapping[str, Any], error)))
        node = node.cause if isinstance(node, FailureError) else node.__cause__
    reason: BaseException = failure
    while isinstance(reason, ActivityError | ChildWorkflowError) and reason.cause is not None:
        reason = reason.cause
    message = reason.message if isinstance(reason, FailureError) else str(reason)
    return FailureOutcome("completed", result=tool_error_result(message or type(reason).__name__))


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}
