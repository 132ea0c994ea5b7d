"""Input requests: which client may be asked what, what a valid answer looks like, and asking midway.

`request_input` lets tool code ask in the middle of its work and continue with
the answer. The activity asks its own workflow through a Temporal Update named
after the question's key, so the question is recorded in the history, a retried
attempt that asks again gets the recorded answer instead of asking twice, and
the client sees it as `input_required` like any other question.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, relevance
from jsonschema.validators import validator_for
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

from mcp_tasks_temporal.temporal.capabilities import missing_capability
from mcp_tasks_temporal.temporal.contract import EXTENSION_ID, REQUEST_INPUT_UPDATE, InputAsk, as_object
from mcp_tasks_temporal.temporal.progress import current_run


def missing_capability_error(request: Mapping[str, Any], capabilities: object) -> MCPError | None:
    """-32021 when the client did not declare what answering `request` needs (None when it did)."""
    refusal = missing_capability(request, capabilities)
    return None if refusal is None else MCPError(code=refusal.code, message=refusal.message, data=refusal.data)


_RESULT_MODELS: Final[Mapping[str, tuple[type[BaseModel], ...]]] = {
    "elicitation/create": (ElicitResult,),
    "sampling/createMessage": (CreateMessageResult, CreateMessageResultWithTools),
    "roots/list": (ListRootsResult,),
}


def response_problem(request: object, response: object) -> str | None:
    """Why `response` is not a valid answer to `request` (an `InputRequest` as JSON), or `None` when it is.

    The answer must be the result type of the request's method, and an accepted
    form elicitation must match the `requestedSchema` it was asked with: a tool
    that asked for a boolean never receives `"yes"`.
    """
    method = str(as_object(request).get("method"))
    models = _RESULT_MODELS.get(method, ())
    if not models:
        return f"no answer is expected to {method!r}"
    answer = as_object(response)
    if answer is not response:  # `as_object` hands a mapping back as it is
        return "an answer is a JSON object"
    for model in models:
        try:
            model.model_validate(answer, by_name=False)
        except ValidationError:
            continue
        break
    else:
        return f"not a valid {models[0].__name__}"
    if method == "elicitation/create":
        params = as_object(as_object(request).get("params"))
        return _elicited_content_problem(params, answer)
    return None


def _elicited_content_problem(params: Mapping[str, Any], answer: Mapping[str, Any]) -> str | None:
    if answer.get("action") != "accept" or params.get("mode", "form") != "form":
        return None  # declined, cancelled, or a URL-mode answer, which carries no content
    schema = as_object(params.get("requestedSchema"))
    if not schema:
        return None
    if "content" not in answer:
        return "an accepted form answer carries its content"
    validator_class = validator_for(dict(schema), default=Draft202012Validator)
    try:
        validator_class.check_schema(dict(schema))
    except SchemaError:
        # The tool's own schema is broken; refusing every answer would leave the task unanswerable.
        return None
    validator = validator_class(dict(schema), format_checker=validator_class.FORMAT_CHECKER)
    errors = list(validator.iter_errors(answer["content"]))
    if not errors:
        return None
    error = max(errors, key=relevance)  # what `jsonschema.best_match` ranks first
    where = "".join(f"/{part}" for part in error.absolute_path)
    return f"content{where}: {error.message}"


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
    normalised = {key: as_input_request(request) for key, request in requests.items()}
    run = current_run()
    if run is None:
        # What answering needs besides the task, so a client of a revision without the extension is told that.
        needed: dict[str, Any] = {}
        for request in normalised.values():
            refusal = missing_capability(request, {})
            if refusal is not None and refusal.data is not None:
                needed.update(refusal.data["requiredCapabilities"])
        raise MCPError(
            code=MISSING_REQUIRED_CLIENT_CAPABILITY,
            message="Asking for input midway needs the tool to run as a task",
            data={"requiredCapabilities": {**needed, "extensions": {EXTENSION_ID: {}}}},
        )
    for request in normalised.values() if not run.held_by_front else ():
        error = missing_capability_error(request, run.client_capabilities)
        if error is not None:
            raise error
    handle = activity.client().get_workflow_handle(run.workflow_id)
    with run.reporter.waiting_for_input():
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
