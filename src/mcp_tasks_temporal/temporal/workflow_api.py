"""Status and questions from inside a workflow that runs as an MCP task (`TasksExtension.workflow_tool`).

    from mcp_tasks_temporal.temporal.workflow_api import request_input, set_status, task_error

    @workflow.defn
    class Release:
        @workflow.run
        async def run(self, ref: str) -> str:
            set_status("building")
            await workflow.execute_activity(build, ref, start_to_close_timeout=timedelta(hours=1))
            answer = await request_input("approve", {"method": "elicitation/create", "params": {...}})
            ...

Everything here is workflow code: safe in the sandbox (stdlib, temporalio and
the contract only, no I/O), deterministic, and every effect is a memo upsert
the front server reads with `describe`, so `tasks/get` sees it with no worker
running. Waiting for an answer is a `wait_condition`: no activity, no worker
slot, no limit but the task's TTL. Per-run state lives on the workflow
instance, never in this module, which a sandbox passthrough may share
between runs. Outside an MCP task (the workflow started some other way)
`set_status` does nothing and `request_input` fails the run with -32021.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from mcp_tasks_temporal.temporal.capabilities import missing_capability
from mcp_tasks_temporal.temporal.contract import (
    CLIENT_CAPABILITIES_META_KEY,
    EXTENSION_ID,
    INPUT_SIGNAL,
    JSONRPC_ERROR,
    MISSING_CAPABILITY_CODE,
    PLAIN_CALL_META_KEY,
    WORKFLOW_KIND,
    Memo,
    as_object,
)
from mcp_tasks_temporal.temporal.nexus_status import ask_across, called_over_nexus, forward_status
from mcp_tasks_temporal.temporal.search_attributes import upsert_status

__all__ = ["INVALID_INPUT_REQUEST", "can_ask", "request_input", "request_inputs", "set_status", "task_error"]

INVALID_INPUT_REQUEST: Final = "InvalidInputRequest"
"""ApplicationError type of a malformed question or a key asked twice: a bug in the workflow, shown as a tool error."""

_STATE_ATTRIBUTE: Final = "_mcp_tasks_task_state"
PLAIN_CALL_PATCH: Final = "plain-call-questions-relayed"
"""Runs from before it refused every question of a plain call here, as -32021."""
CANCEL_REASON_PATCH: Final = "cancel-reason-as-status"
"""Runs from before it kept its last status line when cancelled during a question."""


def task_error(code: int, message: str, data: Any = None) -> ApplicationError:
    """An error to raise from the workflow (or an activity) that ends the task `failed` with this JSON-RPC error.

    Any other exception that fails the workflow ends the task `completed` with
    `isError: true`, as an exception in a tool does. The message reaches the
    client: keep secrets out.
    """
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return ApplicationError(message, error, type=JSONRPC_ERROR, non_retryable=True)


def set_status(text: str) -> None:
    """Show `text` as the task's `statusMessage` (next `tasks/get`, and a push to listeners).

    Each change is one memo upsert in the history, so call it per step, not in a tight loop.
    In a workflow another team runs behind a Nexus operation (started with
    `nexus_handler.start_task_workflow`), each change is instead one Nexus operation
    back to the task's reply endpoint.
    """
    if not _in_task():
        forward_status(text)
        return
    state = _state()
    if text == state.status_message:
        return
    state.status_message = text
    state.publish()


async def request_input(key: str, request: Any) -> dict[str, Any]:
    """Ask the client one question and return its answer in wire form; see `request_inputs`."""
    return (await request_inputs({key: request}))[key]


async def request_inputs(requests: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Ask the client several questions at once; returns every answer, by key, in wire form.

    The task shows `input_required` with these `inputRequests` (under exactly
    these keys) until `tasks/update` has brought all of them; answers may come
    one at a time. A request is a wire dict (`{"method": "elicitation/create",
    "params": {...}}`, likewise sampling and roots) or the matching `mcp_types`
    request model. A key names one question for the task's life: asking it
    again with the same question returns the answer already given.

    In a workflow another team runs behind a Nexus operation (started with
    `nexus_handler.start_task_workflow`), the questions go to the calling MCP task
    through its reply endpoint and are asked there, with the same rules.

    Raises:
        ApplicationError: -32021 (the task fails) when the creating client did not
            declare the capability a question needs, or did not run the tool as a task.
    """
    if not _in_task():
        if called_over_nexus():
            return await ask_across({key: _wire_request(key, request) for key, request in requests.items()})
        raise task_error(
            MISSING_CAPABILITY_CODE,
            "Asking for input needs the workflow to run as an MCP task",
            {"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}},
        )
    questions = {key: _wire_request(key, request) for key, request in requests.items()}
    if not questions:
        return {}
    envelope = as_object(workflow.memo_value(Memo.ENVELOPE, {}))
    if not (PLAIN_CALL_META_KEY in envelope and workflow.patched(PLAIN_CALL_PATCH)):
        _check_answerable(questions, envelope.get(CLIENT_CAPABILITIES_META_KEY))
    # else: the front holding the plain call relays each question inside the call, or cancels the task.
    state = _state()
    new = {key: question for key, question in questions.items() if key not in state.asked}
    for key, question in questions.items():
        if key not in new and state.asked[key] != question:
            raise ApplicationError(
                f"Input request key {key!r} was already used for another question",
                type=INVALID_INPUT_REQUEST,
                non_retryable=True,
            )
    if new:
        state.asked.update(new)
        state.outstanding.update(new)
        state.status = "input_required"
        state.publish()
    try:
        await workflow.wait_condition(lambda: all(key in state.answers for key in questions))
    except asyncio.CancelledError:
        # A front that cancels a question nobody can answer says why; the cancelled task shows it.
        reason = workflow.cancellation_reason()
        if reason and workflow.patched(CANCEL_REASON_PATCH):
            state.status_message = reason
            state.publish()
        raise
    return {key: state.answers[key] for key in questions}


def withdraw_inputs(keys: Iterable[str]) -> None:
    """Take back questions not answered yet: the task stops showing them, and their keys may be asked anew.

    Whoever awaits their answers must stop waiting (cancel it): they will not come.
    """
    state = _state()
    withdrawn = [key for key in keys if key in state.outstanding]
    if not withdrawn:
        return
    for key in withdrawn:
        del state.outstanding[key]
        state.asked.pop(key, None)
    state.status = "input_required" if state.outstanding else "working"
    state.publish()


def _check_answerable(questions: Mapping[str, dict[str, Any]], capabilities: Any) -> None:
    """-32021 (the task fails) for a question the creating client declared it cannot answer."""
    if EXTENSION_ID not in as_object(as_object(capabilities).get("extensions")):
        # Run synchronously for a client without the extension: it has no tasks/update to answer with.
        raise task_error(
            MISSING_CAPABILITY_CODE,
            "Asking for input needs a client that declares the tasks extension",
            {"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}},
        )
    for question in questions.values():
        refusal = missing_capability(question, capabilities)
        if refusal is not None:
            raise task_error(refusal.code, refusal.message, refusal.data)


def can_ask(request: Any) -> bool:
    """Whether the task's client can answer `request`, so a workflow may go on without asking instead.

    `request_input` of a question the client cannot answer fails the task with -32021
    (a client of the tasks extension), or cancels it (a plain call held open by a front);
    a workflow that can do without the answer asks this first. Reads the memo only: no
    command, so adding the check to a workflow changes nothing in its history.
    """
    if not _in_task():
        return called_over_nexus()  # the calling task decides
    question = _wire_request("question", request)
    envelope = as_object(workflow.memo_value(Memo.ENVELOPE, {}))
    plain_call = envelope.get(PLAIN_CALL_META_KEY)
    if plain_call is not None:
        return missing_capability(question, as_object(plain_call).get("answerable")) is None
    capabilities = envelope.get(CLIENT_CAPABILITIES_META_KEY)
    if EXTENSION_ID not in as_object(as_object(capabilities).get("extensions")):
        return False
    return missing_capability(question, capabilities) is None


@dataclass
class _TaskState:
    """What this run has shown and asked; held by the workflow instance."""

    status: str = "working"
    status_message: str | None = None
    asked: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    outstanding: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    answers: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])

    def receive(self, responses: Mapping[str, Any]) -> None:
        """The `tasks/update` signal. The front validated each answer; keep outstanding, unanswered keys only.

        Signals are delivered at least once and a client may resend, so anything
        else (answered, never asked) is ignored, as the spec asks.
        """
        accepted = {
            key: dict(as_object(value))
            for key, value in as_object(responses).items()
            if key in self.outstanding and key not in self.answers
        }
        if not accepted:
            return
        self.answers.update(accepted)
        for key in accepted:
            del self.outstanding[key]
        self.status = "input_required" if self.outstanding else "working"
        self.publish()

    def publish(self) -> None:
        upsert_status(self.status)
        workflow.upsert_memo(
            {
                Memo.STATUS: self.status,
                Memo.STATUS_MESSAGE: self.status_message,
                Memo.LAST_UPDATED_AT: int(workflow.now().timestamp() * 1000),
                Memo.INPUT_REQUESTS: dict(self.outstanding) or None,
            }
        )


def _in_task() -> bool:
    return workflow.memo_value(Memo.KIND, None) == WORKFLOW_KIND


def _state() -> _TaskState:
    instance = workflow.instance()
    state = getattr(instance, _STATE_ATTRIBUTE, None)
    if isinstance(state, _TaskState):
        return state
    # A run continued-as-new inherits its predecessor's memo: keep showing the last status line.
    message = workflow.memo_value(Memo.STATUS_MESSAGE, None)
    state = _TaskState(status_message=message if isinstance(message, str) else None)
    setattr(instance, _STATE_ATTRIBUTE, state)
    # Temporal buffers a signal until a handler exists, so registering on first use loses no answer.
    workflow.set_signal_handler(INPUT_SIGNAL, state.receive)  # pyright: ignore[reportUnknownMemberType]
    return state


def _wire_request(key: str, request: Any) -> dict[str, Any]:
    """`{method, params}` from a wire dict or an `mcp_types` request model (duck-typed: no `mcp` here)."""
    dump = getattr(request, "model_dump", None)
    raw = as_object(dump(by_alias=True, mode="json", exclude_none=True) if callable(dump) else request)
    method = raw.get("method")
    if not isinstance(key, str) or not key or not isinstance(method, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ApplicationError(
            f"Input request {key!r} must be {{'method': ..., 'params': ...}} under a non-empty string key",
            type=INVALID_INPUT_REQUEST,
            non_retryable=True,
        )
    return {"method": method, "params": dict(as_object(raw.get("params")))}
