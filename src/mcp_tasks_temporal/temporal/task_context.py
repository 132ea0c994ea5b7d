"""`set_status`, `request_input(s)` and `idempotency_key`: one import for a tool, an activity and a workflow.

    from mcp_tasks_temporal import idempotency_key, request_input, set_status

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

import hashlib
import uuid
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from temporalio import activity, workflow

import mcp_tasks_temporal.temporal.workflow_api as workflow_side

__all__ = ["idempotency_key", "request_input", "request_inputs", "set_status"]

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


def idempotency_key() -> str:
    """A key for the side effects of the step running now: the same on every retry of the step, new for any other.

    Temporal runs a tool or an activity at least once: an attempt whose worker dies after
    the side effect and before its completion is recorded, whose heartbeats stop, or that
    fails or times out, is run again (docs/tools.md, "At least once"). Pass this key where
    the side effect can be made once per key (a payment API's `Idempotency-Key`, an object
    name, a unique column, a message's deduplication ID), so a repeated attempt finds its
    own earlier effect instead of making a second one.

    The step is, in a tool running as a task, the task's round (a round ends at each question
    the tool returns, so a new round has a new key); in an activity of a workflow tool, that
    activity of that workflow run. Two tasks never share a key. It is 32 hexadecimal
    characters, derived by a one-way hash, so it reveals neither the task nor its owner.
    In a tool called synchronously (not as a task), which nothing retries, it is new per call.

    Raises:
        RuntimeError: in workflow code (side effects belong in activities) or outside a tool and an activity.
    """
    if workflow.in_workflow():
        raise RuntimeError(
            "idempotency_key is for side effects, which belong in an activity: call it there, not in workflow code"
        )
    if activity.in_activity():
        from mcp_tasks_temporal.temporal.progress import current_run

        info = activity.info()
        run = current_run()
        if run is not None:
            return _key(info.namespace, run.workflow_id, f"round {run.round}")
        return _key(info.namespace, info.workflow_id or "", info.workflow_run_id or "", info.activity_id)
    if _in_tool_call.get():
        return uuid.uuid4().hex
    raise RuntimeError(_outside("idempotency_key"))


def _key(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


def _outside(name: str) -> str:
    return (
        f"{name} works in a tool, in a workflow tool's workflow or in one of its activities; "
        "it was called outside all three"
    )
