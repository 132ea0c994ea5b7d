"""`set_status`, `request_input` and `request_inputs`: one import for a tool, an activity and a workflow.

    from mcp_tasks_temporal import request_input, set_status

Each call does what fits where it runs:

- in workflow code (a workflow tool): `mcp_tasks_temporal.temporal.workflow_api`'s, a memo upsert and a durable wait;
- in a tool running as a task: the tool's heartbeat status and its question to its task workflow;
- in an activity of a workflow tool: relayed to its workflow, which shows or asks it
  (`mcp_tasks_temporal.temporal.activity_bridge`, on `dev`'s and `worker`'s workers);
- in a tool called synchronously: `set_status` does nothing (nobody polls a synchronous call) and
  `request_input` is `-32021`, as before.

Anywhere else (a script, a test, code of the front server) they raise
`RuntimeError`: silently doing nothing there hid a status line that never
showed. This module is safe in the workflow sandbox: it imports the
activity-side modules, which need `mcp`, only when called in an activity.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from temporalio import activity, workflow

import mcp_tasks_temporal.temporal.workflow_api as workflow_side

__all__ = ["request_input", "request_inputs", "set_status"]

_in_tool_call: ContextVar[bool] = ContextVar("mcp_tasks_in_tool_call", default=False)


@contextmanager
def tool_call() -> Generator[None]:
    """Mark the code below as running inside an MCP `tools/call` (the extension's tool interceptor)."""
    token = _in_tool_call.set(True)
    try:
        yield
    finally:
        _in_tool_call.reset(token)


def set_status(message: str) -> None:
    """Show `message` as the task's `statusMessage`, from a tool, an activity or a workflow.

    Each change is one memo upsert (workflow) or one signal (activity of a workflow tool) in the history, so call
    it per step, not per item of a large loop. The text is shown to users and models: keep secrets out.

    Raises:
        RuntimeError: outside a tool, an activity and a workflow.
    """
    if workflow.in_workflow():
        workflow_side.set_status(message)
        return
    if activity.in_activity():
        from mcp_tasks_temporal.temporal.progress import current_run
        from mcp_tasks_temporal.temporal.progress import set_status as tool_status

        if current_run() is not None:
            tool_status(message)
            return
        from mcp_tasks_temporal.temporal.activity_bridge import send_status

        send_status(message)
        return
    if _in_tool_call.get():
        return
    raise RuntimeError(_outside("set_status"))


async def request_input(key: str, request: Any) -> dict[str, Any]:
    """Ask the client one question and return its answer in wire form; see `request_inputs`."""
    return (await request_inputs({key: request}))[key]


async def request_inputs(requests: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Ask the client several questions at once, from a tool, an activity or a workflow; the answers by key.

    A request is a wire dict (`{"method": "elicitation/create", "params": {...}}`, likewise sampling and roots)
    or the matching `mcp_types` request model; answers come back in wire form. The task shows
    `input_required` until every answer is in. A key names one question for the task's life: asking it again
    returns the answer already given.

    Raises:
        RuntimeError: outside a tool, an activity and a workflow.
    """
    if workflow.in_workflow():
        return await workflow_side.request_inputs(requests)
    if activity.in_activity():
        from mcp_tasks_temporal.temporal.inputs import as_input_request
        from mcp_tasks_temporal.temporal.inputs import request_inputs as tool_inputs
        from mcp_tasks_temporal.temporal.progress import current_run

        if current_run() is not None:
            return await tool_inputs(requests)
        from mcp_tasks_temporal.temporal.activity_bridge import ask

        return await ask({key: as_input_request(request) for key, request in requests.items()})
    if _in_tool_call.get():
        from mcp_tasks_temporal.temporal.inputs import request_inputs as tool_inputs

        return await tool_inputs(requests)  # -32021: a synchronous call cannot be asked midway
    raise RuntimeError(_outside("request_input"))


def _outside(name: str) -> str:
    return (
        f"{name} works in a tool, in a workflow tool's workflow or in one of its activities; "
        "it was called outside all three"
    )
