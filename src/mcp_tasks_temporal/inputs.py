"""Input requests: which client may be asked what, what a valid answer looks like, and asking midway.

`request_input` lets tool code ask in the middle of its work and continue with
the answer. The activity asks its own workflow through a Temporal Update named
after the question's key, so the question is recorded in the history, a retried
attempt that asks again gets the recorded answer instead of asking twice, and
the client sees it as `input_required` like any other question.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ElicitResult,
    ListRootsResult,
)
from pydantic import BaseModel, ValidationError
from temporalio import activity

from mcp_tasks_temporal.capabilities import missing_capability
from mcp_tasks_temporal.contract import EXTENSION_ID, REQUEST_INPUT_UPDATE, InputAsk, as_object
from mcp_tasks_temporal.progress import current_run


def missing_capability_error(request: Mapping[str, Any], capabilities: object) -> MCPError | None:
    """-32021 when the client did not declare what answering `request` needs (None when it did)."""
    refusal = missing_capability(request, capabilities)
    return None if refusal is None else MCPError(code=refusal.code, message=refusal.message, data=refusal.data)


def is_valid_response(request: Any, response: Any) -> bool:
    """Whether `response` is a well-formed answer to `request` (an `InputRequest` as JSON)."""
    method = as_object(request).get("method")
    models: tuple[type[BaseModel], ...] = {
        "elicitation/create": (ElicitResult,),
        "sampling/createMessage": (CreateMessageResult, CreateMessageResultWithTools),
        "roots/list": (ListRootsResult,),
    }.get(str(method), ())
    if not isinstance(response, Mapping):
        return False
    for model in models:
        try:
            model.model_validate(response, by_name=False)
        except ValidationError:
            continue
        return True
    return False


def as_input_request(request: Any) -> dict[str, Any]:
    """Normalise an `mcp_types` request model or a plain mapping to `{method, params}`."""
    raw = as_object(
        request.model_dump(by_alias=True, mode="json", exclude_none=True) if isinstance(request, BaseModel) else request
    )
    method = raw.get("method")
    if not isinstance(method, str):
        raise ValueError("an input request is {'method': ..., 'params': ...}, e.g. an mcp_types.ElicitRequest")
    return {"method": method, "params": dict(as_object(raw.get("params")))}


async def request_inputs(requests: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Ask the client several questions at once, from inside a tool running as a task.

    Returns the answers by key once all of them are in; the task shows
    `input_required` until then. Keys name questions for the task's whole
    life: asking a key again returns the answer already given.

    Raises:
        MCPError: -32021 when the tool does not run as a task, or the creating
            request's client cannot answer that kind of request.
    """
    run = current_run()
    if run is None:
        raise MCPError(
            code=MISSING_REQUIRED_CLIENT_CAPABILITY,
            message="Asking for input midway needs the tool to run as a task",
            data={"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}},
        )
    normalised = {key: as_input_request(request) for key, request in requests.items()}
    for request in normalised.values():
        error = missing_capability_error(request, run.client_capabilities)
        if error is not None:
            raise error
    handle = activity.client().get_workflow_handle(run.workflow_id)
    answers: dict[str, dict[str, Any]] = await handle.execute_update(  # pyright: ignore[reportUnknownMemberType]
        REQUEST_INPUT_UPDATE,
        InputAsk(requests=normalised),
        # The Update ID makes a retried attempt's question the same question.
        id="ask/" + "\x1f".join(sorted(normalised)),
        result_type=dict[str, Any],
    )
    return answers


async def request_input(key: str, request: Any) -> dict[str, Any]:
    """Ask the client one question from inside a tool running as a task; see `request_inputs`."""
    return (await request_inputs({key: request}))[key]
