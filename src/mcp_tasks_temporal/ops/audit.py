"""A task's whole story, read back from its Temporal history (`mcp-tasks-temporal audit`).

Everything comes from what Temporal recorded: the start event (the tool call,
its arguments, the owner key, the creating request's `_meta`), the memo
upserts (every status transition and question), the signals (every answer),
cancel requests, the activity events (every round of the tool, its attempts,
failures and workers) and the close event. It needs no worker, works for
running and closed tasks, for tool tasks and workflow tasks, and follows
continue-as-new back to the first run. The JSON form is versioned
(`SCHEMA_VERSION`, documented in docs/audit.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal, cast

from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.api.failure.v1 import Failure
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowExecutionDescription, WorkflowHistory
from temporalio.common import SearchAttributePair
from temporalio.converter import DataConverter
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    FailureError,
    TerminatedError,
    TimeoutError,
)
from temporalio.runtime import Runtime
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Replayer

from mcp_tasks_temporal.ops.replay_divergence import (
    CommandRecorder,
    Divergence,
    find_divergence,
    is_nondeterminism,
    replayer_reason,
)
from mcp_tasks_temporal.temporal.contract import INPUT_SIGNAL, TOOL_TASK_WORKFLOWS, Memo, as_object, to_iso
from mcp_tasks_temporal.temporal.result_text import expand

SCHEMA_VERSION: Final = 1
WORKFLOW_KIND: Final = "workflow"
ENVELOPE_MEMO_KEYS: Final = ("envelope", "meta")
"""Memo keys under which a workflow task may keep the creating request's `_meta`."""


class TaskNotFound(LookupError):
    """No workflow under that ID (or it is gone past the namespace's retention)."""


@dataclass(frozen=True)
class TaskRuns:
    """All runs of one task, first to last, with the latest run's description."""

    workflow_id: str
    histories: list[WorkflowHistory]
    description: WorkflowExecutionDescription


async def load_runs(client: Client, workflow_id: str) -> TaskRuns:
    """Fetch the latest run's history and, through continue-as-new, every earlier one."""
    handle = client.get_workflow_handle(workflow_id)
    try:
        description = await handle.describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise TaskNotFound(workflow_id) from None
        raise
    histories: list[WorkflowHistory] = []
    run_id: str | None = description.run_id
    while run_id:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        histories.insert(0, history)
        started = history.events[0].workflow_execution_started_event_attributes if history.events else None
        run_id = started.continued_execution_run_id if started is not None else None
    return TaskRuns(workflow_id, histories, description)


@dataclass(frozen=True)
class Verification:
    """What replaying a task's runs against the code installed here found.

    Attributes:
        verdict: `compatible` (every run replays), `incompatible` (the code does not reproduce a run:
            other commands, or it fails on it) or `error` (the replay could not be carried out).
        reason: Why, in one line, when not compatible.
        runs_replayed: The runs that replayed before the verdict (all of them when compatible).
        divergence: For an incompatible run, the first step at which the code and the history part.
    """

    verdict: Literal["compatible", "incompatible", "error"]
    reason: str | None = None
    runs_replayed: int = 0
    divergence: Divergence | None = None


async def verify(
    runs: TaskRuns | Sequence[WorkflowHistory],
    workflows: Sequence[type],
    converter: DataConverter,
    *,
    plugins: Sequence[Any] = (),
    runtime: Runtime | None = None,
) -> Verification:
    """Replay every run against `workflows`; the verdict, with the first diverging step of an incompatible run."""
    histories = runs.histories if isinstance(runs, TaskRuns) else runs
    recorder = CommandRecorder()
    # debug_mode turns off the deadlock detector only: a verdict must not depend on the machine's load
    # (a workflow's first import under replay can take over its 2 s); the sandbox stays on.
    replayer = Replayer(
        workflows=list(workflows),
        data_converter=converter,
        plugins=list(plugins),
        interceptors=[recorder],
        debug_mode=True,
        runtime=runtime,
    )
    for replayed, history in enumerate(histories):
        recorder.steps.clear()
        try:
            await replayer.replay_workflow(history)
        except Exception as err:  # the replayer reports a mismatch as any of several error types
            if not _code_ran(err):
                return Verification("error", f"the history could not be replayed: {replayer_reason(err)}", replayed)
            divergence = await find_divergence(history, err, list(recorder.steps), converter)
            return Verification("incompatible", divergence.reason(), replayed, divergence)
    return Verification("compatible", None, len(histories))


def _code_ran(err: BaseException) -> bool:
    """Whether the replay got as far as running the workflow code (a mismatch, or the code failing on this history).

    Anything else (the workflow module not loading in the sandbox, a payload that cannot be decoded) says
    nothing about this history.
    """
    return is_nondeterminism(err) or "Workflow activation completion failed" in str(err)


def _as_returned(value: Any) -> Any:
    """A tool result as the tool returned it (text stored once is put back, as `tasks/get` does)."""
    return expand(cast(dict[str, Any], value)) if isinstance(value, dict) else value


def _iso(event: HistoryEvent) -> str:
    return event.event_time.ToDatetime(tzinfo=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _iso_dt(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Reader:
    """Decodes payloads and failures with the client's converter (and so its codec, if any)."""

    def __init__(self, converter: DataConverter) -> None:
        self._converter = converter

    async def values(self, payloads: Payloads | Sequence[Payload]) -> list[Any]:
        items = list(payloads.payloads) if isinstance(payloads, Payloads) else list(payloads)
        return list(await self._converter.decode(items)) if items else []

    async def first(self, payloads: Payloads) -> Any:
        values = await self.values(payloads)
        return values[0] if values else None

    async def memo(self, fields: Mapping[str, Payload]) -> dict[str, Any]:
        return {key: (await self._converter.decode([value]))[0] for key, value in fields.items()}

    async def failure(self, failure: Failure) -> dict[str, Any]:
        return _failure_json(await self._converter.decode_failure(failure))


def _failure_json(err: BaseException) -> dict[str, Any]:
    out: dict[str, Any] = {"message": err.message if isinstance(err, FailureError) else str(err)}
    if isinstance(err, ApplicationError):
        out.update(kind="application", type=err.type, nonRetryable=err.non_retryable)
        if err.details:
            out["details"] = list(err.details)
    elif isinstance(err, TimeoutError):
        out.update(kind="timeout", timeoutType=err.type.name if err.type else None)
    elif isinstance(err, CancelledError):
        out["kind"] = "cancelled"
    elif isinstance(err, TerminatedError):
        out["kind"] = "terminated"
    elif isinstance(err, ActivityError | ChildWorkflowError):
        out["kind"] = "activity" if isinstance(err, ActivityError) else "child_workflow"
    else:
        out["kind"] = type(err).__name__
    if err.__cause__ is not None:
        out["cause"] = _failure_json(err.__cause__)
    return out


class _Story:
    """Accumulates the story while walking the events of every run in order."""

    def __init__(self, reader: _Reader) -> None:
        self.reader = reader
        self.task: dict[str, Any] = {}
        self.times: dict[str, Any] = {}
        self.transitions: list[dict[str, Any]] = []
        self.questions: dict[str, dict[str, Any]] = {}
        self.answers: list[dict[str, Any]] = []
        self.cancel_requests: list[dict[str, Any]] = []
        self.activities: dict[int, dict[str, Any]] = {}
        self.outcome: dict[str, Any] = {"status": "running"}
        self.run_ids: list[str] = []
        self._state: dict[str, Any] = {}

    async def start(self, event: HistoryEvent) -> None:
        attrs = event.workflow_execution_started_event_attributes
        self.run_ids.append(attrs.original_execution_run_id or "")
        if self.task:
            return  # a continued run: the task was described by the first one
        memo = await self.reader.memo(attrs.memo.fields)
        workflow_type = attrs.workflow_type.name
        args = await self.reader.values(attrs.input)
        if workflow_type in TOOL_TASK_WORKFLOWS and args:
            call = as_object(args[0])
            kind = "tool"
            arguments: Any = call.get("arguments")
            meta = as_object(call.get("meta"))
            created_at_ms = call.get("created_at_ms")
            ttl_ms = call.get("ttl_ms")
            owner = call.get("owner") or memo.get(Memo.OWNER)
            task_id = call.get("task_id") or memo.get(Memo.TASK_ID)
        else:
            kind = WORKFLOW_KIND if memo.get("kind") == WORKFLOW_KIND else "other"
            arguments = args[0] if len(args) == 1 else args
            meta = as_object(next((memo[k] for k in ENVELOPE_MEMO_KEYS if k in memo), None))
            created_at_ms = memo.get(Memo.CREATED_AT)
            ttl_ms = memo.get(Memo.TTL_MS)
            owner = memo.get(Memo.OWNER)
            task_id = memo.get(Memo.TASK_ID)
        if created_at_ms is None:
            created_at_ms = int(event.event_time.ToDatetime(tzinfo=UTC).timestamp() * 1000)
        self.task = {
            "taskId": task_id,
            "kind": kind,
            "workflowType": workflow_type,
            "tool": memo.get(Memo.TOOL) or (args and as_object(args[0]).get("tool")) or workflow_type,
            "arguments": arguments,
            "owner": owner,
            "client": {
                "protocolVersion": meta.get(PROTOCOL_VERSION_META_KEY),
                "info": meta.get(CLIENT_INFO_META_KEY),
                "capabilities": meta.get(CLIENT_CAPABILITIES_META_KEY),
            },
            "taskQueue": attrs.task_queue.name,
            "startedBy": attrs.identity or None,
        }
        self.times = {
            "createdAt": to_iso(int(created_at_ms)),
            "startedAt": _iso(event),
            "closedAt": None,
            "ttlMs": ttl_ms,
            "expiresAt": to_iso(int(created_at_ms) + int(ttl_ms)) if ttl_ms is not None else None,
        }
        await self._memo(event, memo)

    async def _memo(self, event: HistoryEvent, upserted: Mapping[str, Any]) -> None:
        before = (self._state.get(Memo.STATUS), self._state.get(Memo.STATUS_MESSAGE))
        self._state.update(upserted)
        after = (self._state.get(Memo.STATUS), self._state.get(Memo.STATUS_MESSAGE))
        if after != before and after[0] is not None:
            self.transitions.append({"at": _iso(event), "status": after[0], "statusMessage": after[1]})
        if Memo.INPUT_REQUESTS in upserted:
            for key, request in as_object(upserted[Memo.INPUT_REQUESTS]).items():
                if key not in self.questions:
                    self.questions[key] = {"key": key, "request": request, "askedAt": _iso(event), "answeredAt": None}

    async def properties_modified(self, event: HistoryEvent) -> None:
        attrs = event.workflow_properties_modified_event_attributes
        await self._memo(event, await self.reader.memo(attrs.upserted_memo.fields))

    async def signaled(self, event: HistoryEvent) -> None:
        attrs = event.workflow_execution_signaled_event_attributes
        if attrs.signal_name != INPUT_SIGNAL:
            return
        responses = as_object(await self.reader.first(attrs.input))
        for key, response in responses.items():
            question = self.questions.get(key)
            # The workflow counts an answer only to a question that is outstanding and not yet answered.
            accepted = question is not None and question["answeredAt"] is None
            if accepted and question is not None:
                question["answeredAt"] = _iso(event)
            self.answers.append(
                {
                    "at": _iso(event),
                    "key": key,
                    "response": response,
                    "accepted": accepted,
                    "identity": attrs.identity or None,
                }
            )

    async def cancel_requested(self, event: HistoryEvent) -> None:
        attrs = event.workflow_execution_cancel_requested_event_attributes
        self.cancel_requests.append(
            {"at": _iso(event), "identity": attrs.identity or None, "reason": attrs.cause or None}
        )

    async def activity_scheduled(self, event: HistoryEvent) -> None:
        attrs = event.activity_task_scheduled_event_attributes
        args = await self.reader.values(attrs.input)
        call = as_object(args[0] if args else None)
        self.activities[event.event_id] = {
            "activityId": attrs.activity_id,
            "activityType": attrs.activity_type.name,
            "round": call.get("round"),
            "scheduledAt": _iso(event),
            "startedAt": None,
            "closedAt": None,
            "attempts": 0,
            "maximumAttempts": attrs.retry_policy.maximum_attempts or None,
            "outcome": "scheduled",
            "worker": None,
            "retryFailure": None,
            "failure": None,
            "result": None,
        }

    async def activity_started(self, event: HistoryEvent) -> None:
        attrs = event.activity_task_started_event_attributes
        activity = self.activities.get(attrs.scheduled_event_id)
        if activity is None:
            return
        # Temporal writes one started event per activity, for its last attempt; the failure that led
        # to that attempt is kept with it.
        activity.update(startedAt=_iso(event), attempts=attrs.attempt, worker=attrs.identity or None, outcome="running")
        if attrs.HasField("last_failure"):
            activity["retryFailure"] = await self.reader.failure(attrs.last_failure)

    async def activity_closed(self, event: HistoryEvent) -> None:
        kind = event.WhichOneof("attributes")
        attrs: Any = getattr(event, kind or "")
        activity = self.activities.get(attrs.scheduled_event_id)
        if activity is None:
            return
        activity["closedAt"] = _iso(event)
        if getattr(attrs, "identity", ""):
            activity["worker"] = attrs.identity
        if kind == "activity_task_completed_event_attributes":
            activity["outcome"] = "completed"
            activity["result"] = _as_returned(await self.reader.first(attrs.result))
        elif kind == "activity_task_canceled_event_attributes":
            activity["outcome"] = "cancelled"
        else:
            activity["outcome"] = "failed" if kind == "activity_task_failed_event_attributes" else "timed_out"
            activity["failure"] = await self.reader.failure(attrs.failure)

    async def closed(self, event: HistoryEvent) -> None:
        kind = event.WhichOneof("attributes") or ""
        self.times["closedAt"] = _iso(event)
        if kind == "workflow_execution_completed_event_attributes":
            attrs = event.workflow_execution_completed_event_attributes
            result = _as_returned(await self.reader.first(attrs.result))
            self.outcome = {"status": "completed", "at": _iso(event), "result": result}
        elif kind == "workflow_execution_failed_event_attributes":
            failure = await self.reader.failure(event.workflow_execution_failed_event_attributes.failure)
            details = failure.get("details") or [None]
            error = as_object(details[0]) or {"message": failure["message"]}
            self.outcome = {"status": "failed", "at": _iso(event), "error": dict(error), "failure": failure}
        elif kind == "workflow_execution_canceled_event_attributes":
            self.outcome = {"status": "cancelled", "at": _iso(event)}
        elif kind == "workflow_execution_terminated_event_attributes":
            attrs = event.workflow_execution_terminated_event_attributes
            self.outcome = {
                "status": "terminated",
                "at": _iso(event),
                "reason": attrs.reason or None,
                "identity": attrs.identity or None,
            }
            self.transitions.append(
                {"at": _iso(event), "status": "failed", "statusMessage": "Task stopped by the Temporal service"}
            )
        elif kind == "workflow_execution_timed_out_event_attributes":
            self.outcome = {"status": "timed_out", "at": _iso(event)}
            self.transitions.append(
                {"at": _iso(event), "status": "failed", "statusMessage": "Task stopped by the Temporal service"}
            )


_ACTIVITY_CLOSES = (
    "activity_task_completed_event_attributes",
    "activity_task_failed_event_attributes",
    "activity_task_timed_out_event_attributes",
    "activity_task_canceled_event_attributes",
)
_CLOSES = (
    "workflow_execution_completed_event_attributes",
    "workflow_execution_failed_event_attributes",
    "workflow_execution_canceled_event_attributes",
    "workflow_execution_terminated_event_attributes",
    "workflow_execution_timed_out_event_attributes",
)


async def build_story(runs: TaskRuns, converter: DataConverter, *, web_ui: str | None = None) -> dict[str, Any]:
    """The task's story as the versioned JSON document `audit --format json` prints."""
    story = _Story(_Reader(converter))
    for history in runs.histories:
        for event in history.events:
            kind = event.WhichOneof("attributes")
            if kind == "workflow_execution_started_event_attributes":
                await story.start(event)
            elif kind == "workflow_properties_modified_event_attributes":
                await story.properties_modified(event)
            elif kind == "workflow_execution_signaled_event_attributes":
                await story.signaled(event)
            elif kind == "workflow_execution_cancel_requested_event_attributes":
                await story.cancel_requested(event)
            elif kind == "activity_task_scheduled_event_attributes":
                await story.activity_scheduled(event)
            elif kind == "activity_task_started_event_attributes":
                await story.activity_started(event)
            elif kind in _ACTIVITY_CLOSES:
                await story.activity_closed(event)
            elif kind in _CLOSES:
                await story.closed(event)
            elif kind == "workflow_execution_continued_as_new_event_attributes":
                story.transitions.append({"at": _iso(event), "status": "continued_as_new", "statusMessage": None})
    await _add_pending(story, runs.description)
    description = runs.description
    return {
        "schemaVersion": SCHEMA_VERSION,
        "task": {
            **story.task,
            "workflowId": runs.workflow_id,
            "runIds": story.run_ids,
            "namespace": description.namespace,
            "searchAttributes": _search_attributes(description),
        },
        "times": story.times,
        "temporalStatus": description.status.name if description.status else None,
        "statusTransitions": story.transitions,
        "questions": list(story.questions.values()),
        "answers": story.answers,
        "cancelRequests": story.cancel_requests,
        "activities": list(story.activities.values()),
        "outcome": story.outcome,
        "webUi": web_ui,
    }


def _search_attributes(description: WorkflowExecutionDescription) -> dict[str, Any]:
    typed: Any = description.typed_search_attributes
    pairs = cast(Sequence[SearchAttributePair[Any]], typed.search_attributes)
    return {pair.key.name: pair.value for pair in pairs}


async def _add_pending(story: _Story, description: WorkflowExecutionDescription) -> None:
    """A running activity's attempts live in the mutable state, not (yet) in the history."""
    by_id = {activity["activityId"]: activity for activity in story.activities.values()}
    for pending in description.raw_description.pending_activities:
        activity = by_id.get(pending.activity_id)
        if activity is None:
            continue
        activity["attempts"] = pending.attempt
        activity["outcome"] = "running" if pending.HasField("last_started_time") else "scheduled"
        if pending.last_worker_identity:
            activity["worker"] = pending.last_worker_identity
        if pending.HasField("last_started_time"):
            activity["startedAt"] = _iso_dt(pending.last_started_time.ToDatetime(tzinfo=UTC))
        if pending.HasField("last_failure"):
            activity["retryFailure"] = await story.reader.failure(pending.last_failure)
